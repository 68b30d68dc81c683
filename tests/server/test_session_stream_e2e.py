"""The session stream end to end, through the reference client of ``examples/session_stream_client.py``.

That client is written from ``http-websocket-api.md`` alone (its message models are its own, not ours): every test
here drives a real Jupyter server with the extension, over a real WebSocket, with the scripted LLM server as the
model. A message the server sends that does not match the spec's shape is recorded by the client as a violation and
fails the test (checked when each stream closes).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from eca_notebook.testing.llm_server import Error, Reasoning, Reply, Stall, Text, ToolCall

_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "session_stream_client.py"
_spec = importlib.util.spec_from_file_location("session_stream_client", _EXAMPLE)
assert _spec is not None and _spec.loader is not None
ssc = importlib.util.module_from_spec(_spec)
sys.modules["session_stream_client"] = ssc  # pydantic resolves the models' annotations through it
_spec.loader.exec_module(ssc)

pytestmark = pytest.mark.timeout(300)

WAIT = 60  # seconds: a generous ceiling for any one message on a busy 2-core machine

OLD = "".join(f"value_{i} = {i}\n" for i in range(1, 31))
NEW = OLD.replace("value_2 = 2\n", "value_2 = 200\n").replace("value_15 = 15\n", "value_15 = 1500\n") \
    .replace("value_28 = 28\n", "value_28 = 2800\n")
ONLY_1_3 = OLD.replace("value_2 = 2\n", "value_2 = 200\n").replace("value_28 = 28\n", "value_28 = 2800\n")
ONLY_2 = OLD.replace("value_15 = 15\n", "value_15 = 1500\n")

CONTEXT = {
    "active_editor": {
        "file_path": "app.py", "language": "python",
        "selection": {"start": {"line": 2, "character": 0}, "end": {"line": 3, "character": 5}},
        "visible_range": {"start": 1, "end": 30}, "content_hash": "sha256:0",
    },
    "open_editors": [{"file_path": "README.md", "is_dirty": False, "visible": True}],
    "diagnostics": [{"file_path": "app.py", "severity": "error", "line": 15, "character": 0, "source": "pyright",
                     "message": "Marker-DIAG-4711: value_15 is too small"}],
    "terminal_output": {"command": "pytest", "exit_code": 1, "stdout": "Marker-TERM-0815 FAILED", "stderr": ""},
    "git_context": {"branch": "feature/marker-branch", "staged_files": [], "modified_files": ["app.py"],
                    "recent_commits": [{"sha": "abc123", "message": "Add values", "author": "Kevin"}]},
    "mentions": [{"type": "file", "path": "README.md"}],
}


def write_call(call_id: str, path: str, content: str, **extra: Any) -> ToolCall:
    args = {"path": path, "content": content, **extra}
    return ToolCall(call_id, "eca__write_file", json.dumps(args), chunks=2)


def tool_call(call_id: str, name: str, **args: Any) -> ToolCall:
    return ToolCall(call_id, f"eca__{name}", json.dumps(args), chunks=2)


def request_text(llm, index: int) -> str:
    """The JSON of the model request number ``index`` (0-based), to look for what reached the model."""
    return json.dumps(llm.requests[index].body)


async def wait_requests(llm, count: int, timeout: float = WAIT) -> None:
    async def poll() -> None:
        while len(llm.requests) < count:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(poll(), timeout)


async def expect_error(stream, code: str, start: int):
    """The next ``server.error`` with ``code``; recoverable, and the socket is still open."""
    error = await stream.wait_for(ssc.ServerError, start=start, timeout=WAIT)
    assert error.error.code == code, error
    assert error.error.recoverable is True, error
    assert not stream.closed
    return error


@pytest.fixture
def base(jp_serverapp, http_server_client, jp_http_port, jp_base_url) -> tuple[str, str]:
    """(base URL, token) of the running Jupyter server."""
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}", jp_serverapp.identity_provider.token


@pytest.fixture
async def session(base, workspace):
    """``await session(capabilities)`` → (stream after the handshake, server.hello, session id)."""
    url, token = base
    opened = []

    async def start(capabilities: list[str] | None = None, hello: bool = True):
        created = await ssc.create_session(url, token, title="reference client")
        stream = await ssc.SessionStream.open(url, created["id"], token)
        opened.append(stream)
        reply = await stream.hello(capabilities) if hello else None
        return stream, reply, created["id"]

    yield start
    for stream in opened:
        await stream.close()
        print("frames received:", *stream.frames, sep="\n  ")  # shown when the test fails
    for stream in opened:
        assert not stream.violations, "\n\n".join(str(v) for v in stream.violations)


@pytest.fixture
def app_py(workspace: Path) -> Path:
    path = workspace / "app.py"
    path.write_text(OLD)
    return path


# -- the client's own patch application, on the diffs this server writes ------------------------------------------


@pytest.mark.parametrize(("old", "new"), [
    (OLD, NEW), (OLD, ONLY_2), ("", "a\nb\n"), ("a\nb", "a\nB"), ("x\ny\n", "x\ny"), (OLD, OLD[:40]),
])
def test_apply_unified_diff_takes_the_servers_diffs(old: str, new: str):
    from eca_notebook.tools._diff import unified_diff

    diff, _, _ = unified_diff(old, new, "a/f.txt", "b/f.txt")
    assert ssc.apply_unified_diff(old, diff) == new


def test_apply_unified_diff_refuses_a_changed_file():
    from eca_notebook.tools._diff import unified_diff

    diff, _, _ = unified_diff(OLD, NEW, "a/f.txt", "b/f.txt")
    with pytest.raises(ssc.PatchConflict):
        ssc.apply_unified_diff(OLD.replace("value_14 = 14", "value_14 = -1"), diff)


# -- the whole turn: context, thinking, tokens, a patch approved hunk by hunk ----------------------------------------


async def test_turn_with_context_and_hunk_approval(session, llm, app_py, base):
    stream, hello, sid = await session(["diff_preview", "git_integration"])
    assert hello.session_id == sid
    assert hello.patch_mode == "server"
    assert "hunk_approval" in hello.capabilities
    await stream.wait_for(ssc.SessionState, timeout=WAIT)  # sent right after the hello

    llm.enqueue(
        Reply([Reasoning("Looking at the values."), Text("I'll fix "), Text("three values."),
               write_call("call_w1", "app.py", NEW, rationale="Scale the three values",
                          acceptance_criteria=["value_2 is 200", "tests pass"])]),
        Reply.text("Done: two of three applied.", chunks=3),
    )
    start = stream.mark
    await stream.send_user_message("Fix the values", context=CONTEXT)

    patch = await stream.wait_for(ssc.PatchProposed, start=start, timeout=WAIT)
    assert patch.patch_id == "patch_call_w1"
    assert patch.file_path == "app.py"
    assert patch.diff.startswith("--- a/app.py\n+++ b/app.py\n"), patch.diff
    assert patch.rationale == "Scale the three values"
    assert patch.acceptance_criteria == ["value_2 is 200", "tests pass"]
    assert patch.requires_approval is True
    assert [h.id for h in patch.hunks] == ["h1", "h2", "h3"], patch.hunks
    assert [(h.old_start, h.new_start) for h in patch.hunks][0] == (1, 1)
    assert "+value_15 = 1500" in patch.hunks[1].content

    ask = await stream.wait_for(ssc.ToolApprovalRequest, start=start, timeout=WAIT)
    assert ask.request_id == "req_call_w1"
    assert ask.tool_name == "write_file"
    assert ask.args.get("file_path") == "app.py" and ask.args.get("patch_id") == "patch_call_w1", ask.args
    pending = await stream.wait_for(ssc.SessionState, lambda m: "req_call_w1" in m.state.pending_approvals,
                                    start=start, timeout=WAIT)
    assert "patch_call_w1" in pending.state.pending_patches, pending
    assert app_py.read_text() == OLD  # nothing written before the approval

    await stream.approve("req_call_w1", "hunk", "app.py", hunks=["h1", "h3"])
    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.success is True and final.metadata.stop_reason == "completed", final
    assert "two of three applied" in final.message
    assert app_py.read_text() == ONLY_1_3
    await stream.wait_for(ssc.SessionState, lambda m: "patch_call_w1" in m.state.applied_patches, start=start,
                          timeout=WAIT)

    # the automatic context reached the model
    first = request_text(llm, 0)
    for marker in ("Marker-DIAG-4711", "Marker-TERM-0815", "feature/marker-branch", "app.py",
                   "value_3 = 3",  # the selection
                   "# demo project"):  # the mentioned README.md
        assert marker in first, marker
    assert "value_2 = 200" in request_text(llm, 1)  # the tool result (what was applied) reached the model

    # thinking before the tokens; tokens carry the text so far
    thinking = stream.of(ssc.Thinking, start)
    assert any(t.phase == "analyzing" for t in thinking), thinking
    tokens = stream.of(ssc.Token, start)
    assert "".join(t.token for t in tokens).startswith("I'll fix three values.")
    assert any(t.cumulative_text == "I'll fix three values." for t in tokens), tokens
    assert all(t.cumulative_text.endswith(t.token) for t in tokens)
    kinds = [type(m).__name__ for m in stream.received[start:]]
    assert kinds.index("Thinking") < kinds.index("Token"), kinds
    writes = [e for e in stream.of(ssc.ToolExecute, start) if e.tool_name == "write_file"]
    assert [e.status for e in writes] == ["started", "completed"], writes
    assert len(stream.of(ssc.MessageFinal, start)) == 1

    # the session is a chat like any other: REST lists it
    url, token = base
    assert sid in [s["id"] for s in await ssc.list_sessions(url, token)]


# -- client-applied patches ----------------------------------------------------------------------------------------


async def test_client_applies_the_approved_hunks(session, llm, app_py):
    stream, hello, _ = await session(["apply_patches", "diff_preview"])
    assert hello.patch_mode == "client"
    llm.enqueue(Reply([write_call("call_c1", "app.py", NEW)]), Reply.text("Applied by the editor."))
    start = stream.mark
    await stream.send_user_message("Change value_15 only")

    ask = await stream.wait_for(ssc.ToolApprovalRequest, start=start, timeout=WAIT)
    first = stream.of(ssc.PatchProposed, start)[0]
    assert first.patch_id == "patch_call_c1" and first.requires_approval is True and len(first.hunks) == 3
    assert first.rationale is None and first.acceptance_criteria == []  # the model gave none
    mark = stream.mark
    await stream.approve(ask.request_id, "hunk", "app.py", hunks=["h2"])

    final_patch = await stream.wait_for(ssc.PatchProposed, lambda p: p.patch_id == "patch_call_c1", start=mark,
                                        timeout=WAIT)
    assert final_patch.requires_approval is False
    assert len(final_patch.hunks) == 1, final_patch
    assert app_py.read_text() == OLD  # the server leaves the file to the client
    result = ssc.apply_patch_file(app_py.parent, final_patch)
    assert result.success, result
    assert app_py.read_text() == ONLY_2
    await stream.send(result)

    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.success is True, final
    assert app_py.read_text() == ONLY_2
    await wait_requests(llm, 2)


async def test_patch_conflict_reaches_the_model(session, llm, app_py):
    stream, _, _ = await session(["apply_patches"])
    llm.enqueue(Reply([write_call("call_x1", "app.py", NEW)]), Reply.text("The file changed; I'll re-read it."))
    start = stream.mark
    await stream.send_user_message("Change the values")
    ask = await stream.wait_for(ssc.ToolApprovalRequest, start=start, timeout=WAIT)
    mark = stream.mark
    await stream.approve(ask.request_id, "file", "app.py")
    patch = await stream.wait_for(ssc.PatchProposed, lambda p: not p.requires_approval, start=mark, timeout=WAIT)
    assert len(patch.hunks) == 3
    await stream.patch_apply_result(patch.patch_id, "app.py", False,
                                    ssc.PatchError(type="conflict", message="Conflict-7731: app.py changed on disk"))
    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.stop_reason == "completed", final
    await wait_requests(llm, 2)
    assert "Conflict-7731" in request_text(llm, 1)
    assert app_py.read_text() == OLD
    writes = [e for e in stream.of(ssc.ToolExecute, start) if e.tool_name == "write_file"]
    assert writes[-1].status == "failed", writes
    state = stream.of(ssc.SessionState, start)[-1].state
    assert "patch_call_x1" not in state.applied_patches, state


# -- commands: in the client's terminal, or on the server ------------------------------------------------------------


async def test_local_terminal_round_trip(session, llm, workspace):
    stream, hello, _ = await session(["terminal_exec"])
    assert hello.command_mode == "local_terminal"
    assert "local_terminal" in hello.capabilities
    llm.enqueue(
        Reply([tool_call("call_s1", "shell_command", command="echo local-$((6*7))")]),
        Reply([tool_call("call_s2", "shell_command", command="echo again-$((6*8)) >&2; exit 3")]),
        Reply.text("The command said local-42."),
    )
    start = stream.mark
    await stream.send_user_message("Run the check")

    req = await stream.wait_for(ssc.CommandApprovalRequest, start=start, timeout=WAIT)
    assert req.command_id == "cmd_call_s1"
    assert req.command == "echo local-$((6*7))"
    assert Path(req.working_directory).resolve() == workspace.resolve()
    assert not any("KEY" in name or "TOKEN" in name for name in req.environment), req.environment
    if req.requires_approval:  # answered first with an approval, then with the result
        await stream.approve(req.command_id, "file")
    result = await ssc.run_command(req)
    assert result.stdout == "local-42\n"
    await stream.command_result(result)

    # the second: a result alone counts as the approval
    req2 = await stream.wait_for(ssc.CommandApprovalRequest, lambda r: r.command_id == "cmd_call_s2", start=start,
                                 timeout=WAIT)
    result2 = await ssc.run_command(req2)
    assert result2.exit_code == 3 and result2.stderr == "again-48\n"
    await stream.command_result(result2)

    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.success is True, final
    assert "local-42" in request_text(llm, 1)
    assert "again-48" in request_text(llm, 2)
    assert not [a for a in stream.of(ssc.ToolApprovalRequest, start) if a.tool_name == "execute_command"]


async def test_server_runner_when_the_client_has_no_terminal(session, llm):
    stream, hello, _ = await session(["diff_preview"])
    assert hello.command_mode == "server_runner"
    assert "server_runner" in hello.capabilities
    llm.enqueue(Reply([tool_call("call_r1", "shell_command", command="echo server-$((6*7))")]),
                Reply.text("The server said server-42."))
    start = stream.mark
    await stream.send_user_message("Run the check")
    ask = await stream.wait_for(ssc.ToolApprovalRequest, start=start, timeout=WAIT)
    assert ask.request_id == "req_call_r1" and ask.tool_name == "execute_command", ask
    assert ask.risk_level in ("low", "medium", "high")
    await stream.approve(ask.request_id, "file")
    done = await stream.wait_for(ssc.ToolExecute, lambda e: e.status != "started", start=start, timeout=WAIT)
    assert done.status == "completed", done
    assert "server-42" in json.dumps(done.result), done
    assert any(t.phase == "executing" for t in stream.of(ssc.Thinking, start))
    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.success is True
    assert "server-42" in request_text(llm, 1)
    assert not stream.of(ssc.CommandApprovalRequest, start)


async def test_command_policy_forbids_commands(session, llm, workspace):
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps({"commandExecution": {"modes": ["local_terminal"]}}))
    stream, hello, _ = await session(["diff_preview"])  # no terminal_exec: no allowed mode left
    assert hello.command_mode is None, hello
    assert "server_runner" not in hello.capabilities and "local_terminal" not in hello.capabilities
    llm.enqueue(Reply([tool_call("call_f1", "shell_command", command="echo forbid-$((6*7))")]),
                Reply.text("Commands are off."))
    start = stream.mark
    await stream.send_user_message("Run it")
    error = await expect_error(stream, "POLICY_VIOLATION", start)
    assert "echo forbid" in json.dumps(error.error.details), error
    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.stop_reason == "completed", final
    assert not stream.of(ssc.CommandApprovalRequest, start) and not stream.of(ssc.ToolApprovalRequest, start)
    await wait_requests(llm, 2)
    assert "forbid-42" not in request_text(llm, 1)  # it never ran


async def test_command_policy_server_runner_only(session, llm, workspace):
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps({"commandExecution": {"modes": ["server_runner"]}}))
    _, hello, _ = await session(["terminal_exec"])
    assert hello.command_mode == "server_runner", hello
    assert "local_terminal" not in hello.capabilities


# -- approval scopes, cancel ---------------------------------------------------------------------------------------


async def test_scope_all_approves_the_rest_of_the_turn(session, llm, app_py, workspace):
    stream, _, _ = await session()
    llm.enqueue(Reply([write_call("call_a1", "app.py", NEW)]),
                Reply([write_call("call_a2", "notes.txt", "second change\n")]), Reply.text("All in."))
    start = stream.mark
    await stream.send_user_message("Change everything")
    ask = await stream.wait_for(ssc.ToolApprovalRequest, start=start, timeout=WAIT)
    await stream.approve(ask.request_id, "all")
    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.success is True
    assert app_py.read_text() == NEW
    assert (workspace / "notes.txt").read_text() == "second change\n"  # approved by the same "all"
    assert [a.request_id for a in stream.of(ssc.ToolApprovalRequest, start)] == ["req_call_a1"]
    second = [p for p in stream.of(ssc.PatchProposed, start) if p.patch_id == "patch_call_a2"]
    assert second and second[0].requires_approval is False, second
    state = stream.of(ssc.SessionState, start)[-1].state
    assert state.pending_approvals == [] and {"patch_call_a1", "patch_call_a2"} <= set(state.applied_patches), state

    llm.enqueue(Reply([write_call("call_a3", "notes.txt", "next turn\n")]), Reply.text("Asked again."))
    mark = stream.mark
    await stream.send_user_message("One more")  # a new turn asks again
    ask = await stream.wait_for(ssc.ToolApprovalRequest, start=mark, timeout=WAIT)
    assert ask.request_id == "req_call_a3"
    await stream.approve(ask.request_id, "file", file_path="notes.txt")
    await stream.wait_for(ssc.MessageFinal, start=mark, timeout=WAIT)


async def test_cancel_mid_turn_and_busy(session, llm):
    stream, _, _ = await session()
    llm.enqueue(Reply([Text("Working on it"), Stall(60)]))
    start = stream.mark
    await stream.send_user_message("Something long")
    await stream.wait_for(ssc.Token, start=start, timeout=WAIT)

    mark = stream.mark
    await stream.send_user_message("And another thing")  # a second message while the turn runs
    await expect_error(stream, "SESSION_BUSY", mark)

    await stream.cancel()
    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.stop_reason == "cancelled" and final.metadata.success is False, final
    assert await asyncio.to_thread(llm.wait_for_disconnect, WAIT)

    llm.enqueue(Reply.text("Back again."))
    mark = stream.mark
    await stream.send_user_message("Still there?")
    final = await stream.wait_for(ssc.MessageFinal, start=mark, timeout=WAIT)
    assert final.metadata.success is True and "Back again." in final.message


async def test_cancel_rejects_a_pending_approval(session, llm, app_py):
    stream, _, _ = await session()
    llm.enqueue(Reply([write_call("call_p1", "app.py", NEW)]))
    start = stream.mark
    await stream.send_user_message("Change everything")
    await stream.wait_for(ssc.ToolApprovalRequest, start=start, timeout=WAIT)
    await stream.cancel("user_cancelled")
    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.stop_reason == "cancelled", final
    state = await stream.wait_for(ssc.SessionState, lambda m: not m.state.pending_approvals, start=start,
                                  timeout=WAIT)
    assert "patch_call_p1" not in state.state.applied_patches
    assert app_py.read_text() == OLD


# -- context updates, file changes, plans --------------------------------------------------------------------------


async def test_context_update_between_turns(session, llm):
    stream, _, _ = await session()
    llm.enqueue(Reply.text("First."), Reply.text("Second."))
    start = stream.mark
    await stream.send_user_message("First question", context={"diagnostics": CONTEXT["diagnostics"]})
    await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    await stream.context_update({"terminal_output": {"command": "make", "exit_code": 2,
                                                     "stdout": "Marker-UPDATE-9001 broke", "stderr": ""}})
    mark = stream.mark
    await stream.send_user_message("Second question")
    await stream.wait_for(ssc.MessageFinal, start=mark, timeout=WAIT)
    assert "Marker-UPDATE-9001" in request_text(llm, 1)
    assert "Marker-UPDATE-9001" not in request_text(llm, 0)


async def test_context_update_mid_turn(session, llm, app_py):
    stream, _, _ = await session()
    llm.enqueue(Reply([write_call("call_m1", "app.py", NEW)]), Reply.text("Noted."))
    start = stream.mark
    await stream.send_user_message("Change it", context={"diagnostics": CONTEXT["diagnostics"]})
    ask = await stream.wait_for(ssc.ToolApprovalRequest, start=start, timeout=WAIT)
    await stream.context_update({"diagnostics": [{"file_path": "app.py", "severity": "warning", "line": 3,
                                                  "message": "Marker-MIDTURN-88"}]})
    await stream.approve(ask.request_id, "file", "app.py")
    await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert "Marker-MIDTURN-88" in request_text(llm, 1)  # used from the next model request on


async def test_file_changes_feed_text_search(session, llm, workspace):
    stream, hello, _ = await session()
    assert "text_search" in hello.capabilities
    helper = workspace / "src" / "new_helper.py"
    helper.parent.mkdir()
    helper.write_text("def zanzibar_helper(x):\n    return x * 2\n")
    await stream.file_changes([{"type": "created", "file_path": "src/new_helper.py",
                                "content_hash": ssc.content_hash(helper.read_text()),
                                "timestamp": "2025-12-30T10:35:12Z"}])
    llm.enqueue(Reply([tool_call("call_t1", "search_text", query="zanzibar_helper")]), Reply.text("Found it."))
    start = stream.mark
    await stream.send_user_message("Where is zanzibar_helper?")
    final = await stream.wait_for(ssc.BaseModel, lambda m: isinstance(m, (ssc.MessageFinal, ssc.ToolApprovalRequest)),
                                  start=start, timeout=WAIT)
    assert isinstance(final, ssc.MessageFinal), f"a read-only search asked for approval: {final}"
    assert final.metadata.success is True
    assert not stream.of(ssc.ServerError)  # file_changes was accepted
    status = stream.of(ssc.RetrieveStatus, start)
    assert status and status[-1].stage == "text_search" and status[-1].results_count >= 1, status
    assert any(t.phase == "retrieving" for t in stream.of(ssc.Thinking, start))
    searches = [e for e in stream.of(ssc.ToolExecute, start) if e.tool_name == "search_text"]
    assert [e.status for e in searches] == ["started", "completed"], searches
    assert "new_helper.py" in request_text(llm, 1)

    helper.unlink()
    await stream.file_changes([{"type": "deleted", "file_path": "src/new_helper.py"}])
    llm.enqueue(Reply([tool_call("call_t2", "search_text", query="zanzibar_helper")]), Reply.text("Gone."))
    mark = stream.mark
    await stream.send_user_message("And now?")
    await stream.wait_for(ssc.MessageFinal, start=mark, timeout=WAIT)
    assert stream.of(ssc.RetrieveStatus, mark)[-1].results_count == 0


async def test_symbol_search_status(session, llm, workspace):
    (workspace / "geometry.py").write_text("class Polygon:\n    def perimeter_of_shape(self):\n        return 0\n")
    stream, _, _ = await session()
    llm.enqueue(Reply([tool_call("call_y1", "search_symbols", query="perimeter_of_shape")]), Reply.text("There."))
    start = stream.mark
    await stream.send_user_message("Where is perimeter_of_shape defined?")
    await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    status = stream.of(ssc.RetrieveStatus, start)
    assert [s.stage for s in status] == ["symbol_search"] and status[0].results_count >= 1, status
    done = [e for e in stream.of(ssc.ToolExecute, start) if e.tool_name == "search_symbols" and e.status != "started"]
    assert done and done[0].status == "completed" and "geometry.py" in json.dumps(done[0].result), done
    assert "geometry.py" in request_text(llm, 1)


async def test_plan_and_steps(session, llm):
    stream, _, _ = await session()
    entries = [{"content": "Read the values", "status": "completed", "files": ["app.py"]},
               {"content": "Scale them", "status": "in_progress", "files": ["app.py", "lib.py"]},
               {"content": "Run the tests", "status": "pending"}]
    llm.enqueue(Reply([tool_call("call_plan", "update_plan", entries=entries, explanation="Small steps")]),
                Reply.text("Planned."))
    start = stream.mark
    await stream.send_user_message("Plan it")
    plan = await stream.wait_for(ssc.Plan, start=start, timeout=WAIT)
    assert [s.step_number for s in plan.steps] == [1, 2, 3]
    assert plan.steps[1].description == "Scale them" and plan.steps[1].files_involved == ["app.py", "lib.py"]
    assert plan.rationale == "Small steps"
    assert any(t.phase == "planning" for t in stream.of(ssc.Thinking, start))
    state = await stream.wait_for(ssc.SessionState, lambda m: m.state.total_steps == 3, start=start, timeout=WAIT)
    assert state.state.current_step == 2, state
    await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)


# -- errors: malformed messages, refusals, provider faults ---------------------------------------------------------


async def test_malformed_messages_keep_the_socket_open(session, llm):
    stream, _, _ = await session(hello=False)
    start = stream.mark
    await stream.send_user_message("Too early")
    await expect_error(stream, "HANDSHAKE_REQUIRED", start)
    hello = await stream.hello()
    assert hello.server_info.version

    for raw, code in [("{not json", "INVALID_MESSAGE"), ("[1, 2]", "INVALID_MESSAGE"), ('"text"', "INVALID_MESSAGE"),
                      ('{"type": "client.bogus"}', "UNKNOWN_MESSAGE_TYPE")]:
        mark = stream.mark
        await stream.send_raw(raw)
        await expect_error(stream, code, mark)

    mark = stream.mark
    await stream.send_raw(json.dumps({"type": "client.approval_response", "request_id": 5, "approved": "maybe"}))
    error = await expect_error(stream, "INVALID_MESSAGE", mark)
    assert error.error.details, error  # lists the problems

    mark = stream.mark
    await stream.send_raw(json.dumps({"type": "client.user_message"}))  # no message
    await expect_error(stream, "INVALID_MESSAGE", mark)

    mark = stream.mark
    await stream.approve("req_does_not_exist", "file")
    await expect_error(stream, "NOT_FOUND", mark)

    llm.enqueue(Reply.text("Still listening."))
    mark = stream.mark
    await stream.send_user_message("Hello?")
    final = await stream.wait_for(ssc.MessageFinal, start=mark, timeout=WAIT)
    assert final.metadata.success is True and "Still listening." in final.message


@pytest.mark.parametrize("eca_limits", [{"max_message_size": 64 * 1024}])
async def test_message_too_large(session, llm, eca_limits):
    stream, _, _ = await session()
    start = stream.mark
    await stream.send_user_message("x" * (100 * 1024))
    error = await expect_error(stream, "MESSAGE_TOO_LARGE", start)
    assert error.error.details, error
    llm.enqueue(Reply.text("Small is fine."))
    mark = stream.mark
    await stream.send_user_message("small")
    final = await stream.wait_for(ssc.MessageFinal, start=mark, timeout=WAIT)
    assert final.metadata.success is True
    assert "x" * 1000 not in request_text(llm, 0)  # the refused message never reached the model


async def test_refusals_before_the_upgrade(base, workspace):
    url, token = base
    created = await ssc.create_session(url, token)
    sid = created["id"]

    async def status(**kwargs: Any) -> int:
        with pytest.raises(InvalidStatus) as info:
            stream = await ssc.SessionStream.open(url, kwargs.pop("session_id", sid), **kwargs)
            await stream.close()
        return info.value.response.status_code

    assert await status(token=None) in (401, 403)
    assert await status(token="wrong-token") in (401, 403)
    assert await status(token=token, origin="http://evil.example.com") == 403
    assert await status(token=token, session_id="no-such-session") == 404
    assert await status(token=token, workspace_id="no-such-workspace") == 404

    for token_in_url in (False, True):  # Bearer header, then ?token=
        stream = await ssc.SessionStream.open(url, sid, token, token_in_url=token_in_url,
                                              workspace_id=created["workspace_id"] if token_in_url else None)
        try:
            assert (await stream.hello()).session_id == sid
        finally:
            await stream.close()
        assert not stream.violations


async def test_provider_fault_is_a_model_error_and_the_next_turn_works(session, llm):
    stream, _, _ = await session()
    llm.enqueue(*[Reply([Error(500, "upstream exploded")]) for _ in range(4)])  # the provider retries 3 times
    start = stream.mark
    await stream.send_user_message("Break")
    error = await stream.wait_for(ssc.ServerError, start=start, timeout=120)
    assert error.error.code == "MODEL_ERROR" and error.error.recoverable is True, error
    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.success is False and final.metadata.stop_reason == "error", final

    llm.clear()
    llm.enqueue(Reply.text("Recovered."))
    mark = stream.mark
    await stream.send_user_message("Again")
    final = await stream.wait_for(ssc.MessageFinal, start=mark, timeout=WAIT)
    assert final.metadata.success is True and "Recovered." in final.message
    assert "Break" in request_text(llm, 0)  # history intact: the failed turn's question is still there


# -- the terminal client itself ------------------------------------------------------------------------------------


async def test_terminal_client_runs_a_turn(base, llm, app_py):
    """``python examples/session_stream_client.py …``: prints the answer, asks on stdin, runs the command itself
    and applies the approved hunks itself."""
    url, token = base
    llm.enqueue(
        Reply([Text("Checking first."), tool_call("call_cli1", "shell_command", command="echo cli-$((6*7))")]),
        Reply([write_call("call_cli2", "app.py", NEW)]),
        Reply.text("All done from the terminal."),
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(_EXAMPLE), "--url", url, "--token", token, "--message", "Do it", "--run-commands",
        "--apply-patches", "--root", str(app_py.parent),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(b"y\nh1,h3\n"), 120)
    out, err = stdout.decode(), stderr.decode()
    assert proc.returncode == 0, (out, err)
    assert "Checking first." in out and "All done from the terminal." in out, out
    assert "cli-42" in out and "cli-42" in request_text(llm, 1)
    assert "+value_15 = 1500" in out  # the proposed patch, shown as a diff
    assert app_py.read_text() == ONLY_1_3


async def test_terminal_client_prints_no_escape_sequence_from_the_model(base, llm):
    """Model output is untrusted in a terminal too: an answer carrying a fake hyperlink (OSC 8), a clipboard write
    (OSC 52), a screen clear and bidi controls prints as plain text."""
    url, token = base
    llm.enqueue(Reply.text("\x1b]8;;https://evil.example\x07Docs\x1b]8;;\x07 \x1b]52;c;cm0gLXJmIH4=\x07"
                           "\x1b[2J\x1b[31mred\x1b[0m a\u202eb\u2066c\rdone\x00."))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(_EXAMPLE), "--url", url, "--token", token, "--message", "Hi",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(b""), 120)
    out = stdout.decode()
    assert proc.returncode == 0, (out, stderr.decode())
    assert "Docs red abcdone." in out, repr(out)
    assert not [ch for ch in out if (ord(ch) < 32 and ch not in "\n\t") or 0x7f <= ord(ch) <= 0x9f
                or ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"], repr(out)


def test_terminal_safe_strips_sequences_and_controls():
    safe = ssc.terminal_safe
    assert safe("\x1b[1;31mred\x1b[0m\ttab\nline") == "red\ttab\nline"
    assert safe("\x1b]0;title\x1b\\x\x1bPdcs\x1b\\y\x9b2Jz") == "xyz"
    assert safe("\x1b[") == "[", "a sequence cut between two tokens cannot form: its ESC is gone"
    assert safe("é ✓ 日本") == "é ✓ 日本"


async def test_terminal_client_prints_a_commands_answer(base, llm):
    """A slash command's answer comes as the final message only (no tokens): the terminal client prints it."""
    url, token = base
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(_EXAMPLE), "--url", url, "--token", token, "--message", "/context",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(b""), 120)
    out = stdout.decode()
    assert proc.returncode == 0, (out, stderr.decode())
    assert "Context of the next request" in out and "System prompt" in out, out
    assert not llm.requests  # a command: no model call


@pytest.mark.parametrize(("extra", "says"), [
    (["--token", "wrong"], "the server refused the request (403): check --token"),
    (["--session", "no-such-session"], "not found (404): no session 'no-such-session'"),
])
async def test_terminal_client_explains_a_refusal(base, llm, extra: list[str], says: str):
    """A wrong token or session is one line saying what to check, exit code 1 — not a traceback."""
    url, token = base
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(_EXAMPLE), "--url", url, "--token", token, "--message", "hi", *extra,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(b""), 120)
    err = stderr.decode()
    assert proc.returncode == 1, (stdout.decode(), err)
    assert err.startswith("error: ") and says in err and "Traceback" not in err, err
    assert not llm.requests


async def test_client_applies_a_patch_that_needs_no_approval(session, llm, app_py, workspace):
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps({"toolCall": {"approval": {"byDefault": "allow"}}}))
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "eca" / "config.json"  # trusted: its approvals apply
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(json.dumps({"trustedWorkspaces": [str(workspace)]}))
    stream, _, _ = await session(["apply_patches"])
    llm.enqueue(Reply([write_call("call_n1", "app.py", NEW)]), Reply.text("Written without asking."))
    start = stream.mark
    await stream.send_user_message("Change the values")
    # the patch to apply: requires_approval false (the only kind of proposal, as nothing needs approval)
    patch = await stream.wait_for(ssc.PatchProposed, start=start, timeout=WAIT)
    assert patch.requires_approval is False, patch
    result = ssc.apply_patch_file(app_py.parent, patch)
    assert result.success, result
    await stream.send(result)
    final = await stream.wait_for(ssc.MessageFinal, start=start, timeout=WAIT)
    assert final.metadata.success is True, final
    assert app_py.read_text() == NEW
    assert not stream.of(ssc.ServerError, start), stream.of(ssc.ServerError, start)
    assert not stream.of(ssc.ToolApprovalRequest, start)
    proposals = stream.of(ssc.PatchProposed, start)
    assert [p.patch_id for p in proposals] == ["patch_call_n1"], proposals  # one proposal: the one to apply

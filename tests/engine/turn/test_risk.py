"""Risk levels of prepared tool calls (engine/turn/_risk.py) and what ``toolCall.approval.risk`` does with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine.config import DEFAULTS, ApprovalConfig, Config
from eca_notebook.engine.turn._approval import ApprovalRequest, SessionApprovals, decide
from eca_notebook.engine.turn._risk import assess_risk
from eca_notebook.mcp._tool import McpTool
from eca_notebook.protocol import ToolCallRisk
from eca_notebook.tools import EditFileTool, MoveFileTool, ReadFileTool, ShellCommandTool, WriteFileTool
from eca_notebook.tools.base import Prepared, Tool, ToolContext


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "build").mkdir(parents=True)
    (root / "existing.txt").write_text("old\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    return root


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace_folders=[ws])


def assessed(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> tuple[str, str]:
    prepared = tool.prepare(args, ctx)
    assert isinstance(prepared, Prepared) and prepared.error is None, prepared
    risk = assess_risk(tool, prepared, ctx)
    return risk.level, risk.reason


# -- native tools --------------------------------------------------------------------------------------------------


def test_shell_commands_are_classified_by_their_parse(ctx: ToolContext) -> None:
    shell = ShellCommandTool()
    assert assessed(shell, {"command": "rm -rf build"}, ctx) == ("high", "deletes recursively: build")
    assert assessed(shell, {"command": "ls"}, ctx) == ("low", "only reads: ls")
    assert assessed(shell, {"command": "echo hi > out.txt"}, ctx) == ("medium", "writes: out.txt")
    # from a working directory below the root, paths resolve from there
    assert assessed(shell, {"command": "echo hi > ../existing.txt", "working_directory": "build"},
                    ctx) == ("medium", "overwrites: ../existing.txt")


def test_file_tools_by_what_they_touch(ws: Path, ctx: ToolContext) -> None:
    outside = str(ws.parent / "outside.txt")
    assert assessed(ReadFileTool(), {"path": "existing.txt"}, ctx) == ("low", "only reads")
    assert assessed(ReadFileTool(), {"path": outside}, ctx) == ("medium", f"reads outside the workspace: {outside}")
    assert assessed(WriteFileTool(), {"path": "new.txt", "content": "x"}, ctx) == ("low",
                                                                                    "creates a new file: new.txt")
    assert assessed(WriteFileTool(), {"path": "existing.txt", "content": "x"}, ctx) == ("medium",
                                                                                         "overwrites existing.txt")
    assert assessed(WriteFileTool(), {"path": outside, "content": "x"}, ctx) == (
        "high", f"writes outside the workspace: {outside}")
    assert assessed(EditFileTool(), {"path": "existing.txt", "original_content": "old", "new_content": "new"},
                    ctx) == ("medium", "edits existing.txt")
    assert assessed(MoveFileTool(), {"source": "existing.txt", "destination": "moved.txt"}, ctx) == (
        "medium", "moves existing.txt to moved.txt")
    level, reason = assessed(MoveFileTool(), {"source": "existing.txt", "destination": "../gone.txt"}, ctx)
    assert level == "high" and reason.startswith("moves a file outside the workspace")


def test_file_tools_writing_under_dot_git_are_high(ws: Path, ctx: ToolContext) -> None:
    """A hook or the config in .git/ runs as code on the next git command: creating one is not "a new file"."""
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    assert assessed(WriteFileTool(), {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nid\n"}, ctx) == (
        "high", "writes git's internals: .git/hooks/pre-commit (runs as code on the next git command)")
    assert assessed(EditFileTool(), {"path": ".git/config", "original_content": "[core]", "new_content": "[x]"},
                    ctx)[0] == "high"
    level, reason = assessed(MoveFileTool(), {"source": "existing.txt", "destination": ".git/hooks/post-checkout"},
                             ctx)
    assert (level, reason.startswith("writes git's internals: .git/hooks/post-checkout")) == ("high", True)
    assert assessed(ReadFileTool(), {"path": ".git/config"}, ctx) == ("low", "only reads")
    assert assessed(WriteFileTool(), {"path": "src/.gitignore", "content": "x"}, ctx)[0] == "low"


class _Plugin:
    """A plug-in's tool the engine has no table entry for."""

    name = "frob"
    server = "frobs"
    description = "frob"
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    def __init__(self, *, mutates: bool, default_approval: str) -> None:
        self.mutates = mutates
        self.default_approval = default_approval

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        return Prepared(args=args, summary="frob")

    async def run(self, prepared: Prepared, ctx: ToolContext) -> Any:
        raise NotImplementedError


def test_unknown_tools_go_by_what_they_declare(ctx: ToolContext) -> None:
    assert assessed(_Plugin(mutates=False, default_approval="allow"), {}, ctx)[0] == "low"
    assert assessed(_Plugin(mutates=True, default_approval="ask"), {}, ctx) == ("medium", "no risk profile for frob")


def test_a_failing_assessment_is_medium_and_never_fails_the_call(ctx: ToolContext) -> None:
    class Broken(_Plugin):
        def assess_risk(self, prepared: Prepared, ctx: ToolContext) -> ToolCallRisk:
            raise RuntimeError("bug")

    assert assessed(Broken(mutates=False, default_approval="allow"), {}, ctx) == (
        "medium", "the risk could not be assessed")


# -- MCP tools -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("annotations", "level", "reason"), [
    (None, "medium", "MCP tool without annotations"),
    ({"title": "Query"}, "medium", "MCP tool without annotations"),
    ({"readOnlyHint": True}, "low", "marked read-only"),
    ({"readOnlyHint": True, "openWorldHint": True}, "medium", "openWorldHint"),
    ({"readOnlyHint": False, "destructiveHint": True}, "high", "destructive"),
    ({"destructiveHint": True}, "high", "destructive"),
    ({"readOnlyHint": True, "destructiveHint": True}, "low", "read-only"),  # destructive only means something
    ({"readOnlyHint": False, "destructiveHint": False}, "medium", "changes things"),  # when not read-only
    ({"destructiveHint": False, "openWorldHint": True}, "medium", "reaches outside"),
])
def test_mcp_tools_by_their_annotations(annotations: Any, level: str, reason: str, ctx: ToolContext) -> None:
    spec: dict[str, Any] = {"name": "query", "inputSchema": {"type": "object"}}
    if annotations is not None:
        spec["annotations"] = annotations
    tool = McpTool(None, "db", spec)  # type: ignore[arg-type]  # prepare never reaches the manager
    assert tool.annotations == annotations
    got_level, got_reason = assessed(tool, {"sql": "select 1"}, ctx)
    assert got_level == level and reason in got_reason


# -- toolCall.approval.risk ----------------------------------------------------------------------------------------


def approval(**data: Any) -> ApprovalConfig:
    return ApprovalConfig.model_validate(data)


LOW = ToolCallRisk(level="low", reason="only reads: ls")
MEDIUM = ToolCallRisk(level="medium", reason="writes: out.txt")
HIGH = ToolCallRisk(level="high", reason="deletes recursively: build")


def shell(command: str, risk: ToolCallRisk | None, **extra: Any) -> ApprovalRequest:
    return ApprovalRequest(tool="shell_command", server="eca", args={"command": command}, risk=risk, **extra)


def test_default_config_leaves_decisions_to_the_rules() -> None:
    defaults = Config.model_validate(DEFAULTS).tool_call.approval
    assert defaults.risk == {}
    for risk in (LOW, MEDIUM, HIGH, None):
        assert decide(shell("ls", risk), defaults, SessionApprovals()).decision == "ask"
    read = ApprovalRequest(tool="read_file", server="eca", args={"path": "a"}, risk=HIGH)
    assert decide(read, defaults, SessionApprovals()).decision == "allow"


def test_low_risk_calls_are_auto_allowed() -> None:
    cfg = approval(risk={"low": "allow"})
    verdict = decide(shell("ls", LOW), cfg, SessionApprovals())
    assert verdict.decision == "allow" and verdict.reason == 'risk "low" is set to allow (only reads: ls)'
    assert decide(shell("echo hi > out.txt", MEDIUM), cfg, SessionApprovals()).decision == "ask"
    assert decide(shell("ls", None), cfg, SessionApprovals()).decision == "ask"  # not assessed: no level to act on


def test_high_risk_asks_even_where_an_allow_rule_matches() -> None:
    cfg = approval(byDefault="allow", allow={"eca__shell_command": {}}, risk={"high": "ask"})
    verdict = decide(shell("rm -rf build", HIGH), cfg, SessionApprovals())
    assert verdict.decision == "ask" and "deletes recursively: build" in verdict.reason
    assert decide(shell("ls", LOW), cfg, SessionApprovals()).decision == "allow"


def test_deny_rules_outside_paths_and_ask_rules_still_come_first() -> None:
    cfg = approval(risk={"low": "allow"}, deny={"eca__shell_command": {"argsMatchers": {"command": ["ls /secret"]}}},
                   ask={"eca__shell_command": {"argsMatchers": {"command": ["git .*"]}}})
    assert decide(shell("ls /secret", LOW), cfg, SessionApprovals()).decision == "deny"
    assert decide(shell("cat /etc/hosts", LOW, outside_workspace=True), cfg, SessionApprovals()).decision == "ask"
    assert decide(shell("git status", LOW), cfg, SessionApprovals()).decision == "ask"  # the user's own ask rule
    assert decide(shell("ls x", LOW, must_ask="the argument is only known when it runs"), cfg,
                  SessionApprovals()).decision == "ask"


def test_risk_deny_rejects_without_asking() -> None:
    cfg = approval(byDefault="allow", risk={"high": "deny"})
    verdict = decide(shell("rm -rf build", HIGH), cfg, SessionApprovals())
    assert verdict.decision == "deny" and verdict.reason.startswith('risk "high" is set to deny')


def test_a_remembered_prefix_does_not_cover_a_high_risk_call_the_config_wants_asked() -> None:
    cfg = approval(risk={"high": "ask"})
    session = SessionApprovals()
    session.remember(shell("git push origin main", MEDIUM))
    assert decide(shell("git push origin dev", MEDIUM), cfg, session).decision == "allow"  # prefix, as before
    assert decide(shell("git push --force origin main", HIGH), cfg, session).decision == "ask"
    session.remember(shell("git push --force origin main", HIGH))  # the user approved this very line
    assert decide(shell("git push --force origin main", HIGH), cfg, session).decision == "allow"


def test_config_values_are_checked_and_null_removes_a_level() -> None:
    with pytest.raises(ValueError, match="risk"):
        approval(risk={"low": "sometimes"})
    with pytest.raises(ValueError, match="risk"):
        approval(risk={"extreme": "ask"})
    assert approval(risk={"low": None, "high": "ask"}).risk == {"high": "ask"}

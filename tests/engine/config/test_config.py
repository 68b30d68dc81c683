"""Config loading, merging, interpolation, validation problems and provider resolution.

Every test builds its own files under tmp_path and passes an explicit env mapping: the real home is never read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine.config import (
    Config,
    ModelInfo,
    global_config_path,
    interpolate_env,
    load_config,
    mask_secret,
    parse_jsonc,
    resolve_providers,
)

SECRET = "sk-test-0123456789abcdefSECRET"


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return {"HOME": str(home)}


def global_file(home: Path) -> Path:
    return home / ".config" / "eca" / "config.json"


def ws_file(folder: Path) -> Path:
    return folder / ".eca" / "config.json"


def source(loaded, name):
    return next(s for s in loaded.sources if s.name == name)


# ---------------------------------------------------------------------------------------------------------------
# layering
# ---------------------------------------------------------------------------------------------------------------

LAYERS = ["initializationOptions", "ECA_CONFIG", "global", "ws1", "ws2"]


@pytest.mark.parametrize("top", range(len(LAYERS)))
async def test_merge_order_highest_layer_wins(tmp_path: Path, home: Path, env: dict[str, str], top: int) -> None:
    ws1, ws2 = tmp_path / "ws1", tmp_path / "ws2"
    ws1.mkdir()
    ws2.mkdir()
    init = None
    for i, layer in enumerate(LAYERS[: top + 1]):
        data = {"defaultModel": f"p/{layer}", "marker": layer, f"only_{layer}": i}
        if layer == "initializationOptions":
            init = data
        elif layer == "ECA_CONFIG":
            env["ECA_CONFIG"] = json.dumps(data)
        elif layer == "global":
            write_json(global_file(home), data)
        else:
            write_json(ws_file(tmp_path / layer), data)

    loaded = load_config(workspace_folders=[ws1, ws2], initialization_options=init, env=env)

    assert loaded.problems == []
    assert loaded.config.default_model == f"p/{LAYERS[top]}"
    assert loaded.raw["marker"] == LAYERS[top]
    for i, layer in enumerate(LAYERS[: top + 1]):
        assert loaded.raw[f"only_{layer}"] == i  # every lower layer still contributed its own keys


async def test_sources_are_recorded_in_order(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    write_json(ws_file(ws), {})
    loaded = load_config(workspace_folders=[ws], initialization_options={}, env=env)
    names = [s.name for s in loaded.sources]
    assert names == ["defaults", "initializationOptions", "ECA_CONFIG", "global", f"workspace:{ws}"]
    assert source(loaded, "global").applied is False and source(loaded, "global").problem is None
    assert source(loaded, "global").path == str(global_file(home))
    assert source(loaded, f"workspace:{ws}").applied is True


async def test_arrays_replaced_and_dicts_merged(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    write_json(
        global_file(home),
        {"disabledTools": ["a", "b"], "providers": {"openai": {"key": "k1", "models": {"m1": {}}}}},
    )
    write_json(ws_file(ws), {"disabledTools": ["c"], "providers": {"openai": {"models": {"m2": {"inputCost": 1}}}}})
    cfg = load_config(workspace_folders=[ws], env=env).config
    assert cfg.disabled_tools == ["c"]
    openai = cfg.providers["openai"]
    assert openai.key == "k1"
    assert set(openai.models) == {"m1", "m2"}
    assert openai.models["m2"].input_cost == 1


async def test_defaults_survive_partial_override(env: dict[str, str]) -> None:
    init = {"toolCall": {"approval": {"allow": {"eca__shell_command": {}}}}}
    cfg = load_config(initialization_options=init, env=env).config
    allow = cfg.tool_call.approval.allow
    assert "eca__shell_command" in allow and "eca__read_file" in allow  # nested merge kept the default rules
    assert cfg.tool_call.max_rounds == 40
    assert cfg.default_behavior == "code"


async def test_pure_config_skips_disk_layers(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    write_json(global_file(home), {"defaultModel": "p/global"})
    write_json(ws_file(ws), {"defaultModel": "p/ws"})
    loaded = load_config(workspace_folders=[ws], initialization_options={"pureConfig": True}, env=env)
    assert loaded.config.pure_config is True
    assert loaded.config.default_model is None
    assert not source(loaded, "global").applied and source(loaded, "global").note == "skipped: pureConfig"
    assert not source(loaded, f"workspace:{ws}").applied

    env["ECA_CONFIG"] = json.dumps({"pureConfig": True})
    assert load_config(workspace_folders=[ws], env=env).config.default_model is None


async def test_pure_config_in_a_disk_file_does_not_skip_later_files(
    tmp_path: Path, home: Path, env: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    write_json(global_file(home), {"pureConfig": True})
    write_json(ws_file(ws), {"defaultModel": "p/ws"})
    assert load_config(workspace_folders=[ws], env=env).config.default_model == "p/ws"


async def test_config_file_replaces_global(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    write_json(global_file(home), {"defaultModel": "p/global", "fromGlobal": True})
    custom = write_json(tmp_path / "custom.json", {"defaultModel": "p/custom"})
    loaded = load_config(config_file=custom, env=env)
    assert loaded.config.default_model == "p/custom"
    assert "fromGlobal" not in loaded.raw
    assert [s.name for s in loaded.sources if s.name in ("global", "config-file")] == ["config-file"]


async def test_missing_config_file_is_a_problem(tmp_path: Path, env: dict[str, str]) -> None:
    missing = tmp_path / "nope.json"
    loaded = load_config(config_file=missing, env=env)
    assert any(str(missing) in p and "not found" in p for p in loaded.problems)


async def test_xdg_config_home_honoured(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    xdg = tmp_path / "xdg"
    env["XDG_CONFIG_HOME"] = str(xdg)
    write_json(xdg / "eca" / "config.json", {"defaultModel": "p/xdg"})
    write_json(global_file(home), {"defaultModel": "p/home"})
    assert global_config_path(env) == xdg / "eca" / "config.json"
    assert load_config(env=env).config.default_model == "p/xdg"


async def test_global_path_defaults_to_home(home: Path, env: dict[str, str]) -> None:
    assert global_config_path(env) == home / ".config" / "eca" / "config.json"
    env["XDG_CONFIG_HOME"] = "relative/dir"  # invalid per the XDG spec: ignored
    assert global_config_path(env) == home / ".config" / "eca" / "config.json"


# ---------------------------------------------------------------------------------------------------------------
# problems
# ---------------------------------------------------------------------------------------------------------------


async def test_invalid_json_file_is_skipped_and_named(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    bad = write_json(global_file(home), '{"defaultModel": "p/global", ')
    write_json(ws_file(ws), {"marker": "ws"})
    loaded = load_config(workspace_folders=[ws], initialization_options={"defaultModel": "p/init"}, env=env)
    assert len(loaded.problems) == 1
    assert str(bad) in loaded.problems[0] and "invalid JSON" in loaded.problems[0]
    assert loaded.config.default_model == "p/init"
    assert loaded.raw["marker"] == "ws"
    assert source(loaded, "global").applied is False and source(loaded, "global").problem


async def test_invalid_known_key_skips_that_layer_with_dotted_path(
    tmp_path: Path, home: Path, env: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    path = write_json(
        global_file(home),
        {"defaultModel": "p/global", "toolCall": {"maxRounds": "many"}, "providers": {"openai": {"key": SECRET}}},
    )
    write_json(ws_file(ws), {"marker": "ws"})
    loaded = load_config(workspace_folders=[ws], initialization_options={"defaultModel": "p/init"}, env=env)
    assert loaded.problems == [
        f"{path}: toolCall.maxRounds: Input should be a valid integer, unable to parse string as an integer"
    ]
    assert loaded.config.default_model == "p/init"  # the whole bad layer is skipped…
    assert "openai" not in loaded.config.providers
    assert loaded.raw["marker"] == "ws"  # …and the layers after it still apply
    assert SECRET not in repr(loaded.sources)


async def test_invalid_provider_is_skipped_alone_and_named(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    init = {
        "defaultModel": "good/m",
        "providers": {
            "good": {"api": "openai-chat", "url": "http://127.0.0.1:1", "models": {"m": {}}},
            "typo": {"api": "openai-chatt", "url": "http://127.0.0.1:2", "key": SECRET},
            "wrong": {"url": 42},
        },
    }
    loaded = load_config(initialization_options=init, env=env)
    assert loaded.config.default_model == "good/m"  # the rest of the layer applies
    assert set(loaded.config.providers) == {"good"}
    assert len(loaded.problems) == 2
    typo = next(p for p in loaded.problems if "providers.typo" in p)
    assert typo.startswith("initializationOptions: providers.typo.api: unsupported api 'openai-chatt'")
    assert "provider 'typo' skipped" in typo and "rest of this layer applies" in typo
    assert any(p.startswith("initializationOptions: providers.wrong.url:") and "provider 'wrong' skipped" in p
               for p in loaded.problems)
    init_source = source(loaded, "initializationOptions")
    assert init_source.applied is True and "provider 'typo' skipped" in (init_source.problem or "")
    assert SECRET not in repr(loaded.sources) and all(SECRET not in p for p in loaded.problems)

    # In a later layer, a broken override of a provider leaves what earlier layers said about it in place.
    write_json(global_file(home), {"defaultModel": "good/m", "providers": {"good": {"url": ["not", "a", "url"]}}})
    loaded = load_config(initialization_options=init, env=env)
    assert loaded.config.providers["good"].url == "http://127.0.0.1:1"
    assert loaded.config.default_model == "good/m"
    assert any("providers.good.url" in p and "provider 'good' skipped" in p for p in loaded.problems)


async def test_invalid_model_is_skipped_alone_and_named(env: dict[str, str]) -> None:
    init = {"providers": {"p": {"api": "openai-chat", "url": "http://127.0.0.1:1",
                                "models": {"ok": {"limit": {"output": 512}}, "bad": {"limit": {"output": "lots"}}}}}}
    loaded = load_config(initialization_options=init, env=env)
    assert list(loaded.config.providers["p"].models) == ["ok"]
    assert loaded.config.providers["p"].models["ok"].output_limit == 512
    [problem] = loaded.problems
    assert problem.startswith("initializationOptions: providers.p.models.bad.limit.output:")
    assert "model 'p/bad' skipped" in problem


async def test_reference_api_spellings_accepted(env: dict[str, str]) -> None:
    init = {"providers": {"litellm": {"api": "openai", "url": "http://127.0.0.1:1", "models": {"m": {}}},
                          "aws": {"api": "bedrock", "url": "http://127.0.0.1:2"}}}
    loaded = load_config(initialization_options=init, env=env)
    assert loaded.config.providers["litellm"].api == "openai-responses"
    assert resolve_providers(loaded.config, {})["litellm"].api == "openai-responses"
    [problem] = loaded.problems  # an API we don't speak is named, not silently dropped
    assert "providers.aws.api: unsupported api 'bedrock'" in problem and "provider 'aws' skipped" in problem


async def test_broken_approval_rule_still_rejects_the_whole_layer(env: dict[str, str]) -> None:
    # Dropping one deny rule while the rest of the layer applied could loosen what the user asked for.
    init = {"toolCall": {"approval": {"byDefault": "allow",
                                      "deny": {"eca__shell_command": {"argsMatchers": {"command": ["(x"]}}}}}}
    loaded = load_config(initialization_options=init, env=env)
    assert loaded.config.tool_call.approval.by_default == "ask"
    assert source(loaded, "initializationOptions").applied is False


async def test_literal_and_nested_errors_name_the_key(env: dict[str, str]) -> None:
    loaded = load_config(
        initialization_options={"toolCall": {"approval": {"byDefault": "maybe"}, "maxRounds": 0}}, env=env
    )
    assert len(loaded.problems) == 2
    prefix = "initializationOptions: toolCall.approval.byDefault: Input should be"
    assert any(p.startswith(prefix) for p in loaded.problems)
    assert any("toolCall.maxRounds" in p for p in loaded.problems)


async def test_secret_values_never_in_problems(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    env["ECA_CONFIG"] = '{"providers": {"openai": {"key": "' + SECRET + '"}}, oops}'
    write_json(global_file(home), {"providers": {"anthropic": {"key": SECRET, "models": {"m": {"inputCost": SECRET}}}}})
    loaded = load_config(env=env)
    assert len(loaded.problems) == 2
    assert all(SECRET not in p for p in loaded.problems)
    assert all(SECRET not in (s.problem or "") for s in loaded.sources)


async def test_eca_config_not_an_object(env: dict[str, str]) -> None:
    env["ECA_CONFIG"] = "[1, 2]"
    loaded = load_config(env=env)
    assert loaded.problems == ["ECA_CONFIG: expected a JSON object, got an array"]


async def test_mcp_server_needs_exactly_one_transport(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    loaded = load_config(
        initialization_options={"mcpServers": {"both": {"command": "x", "url": "http://h"}, "ok": {"command": "y"}}},
        env=env,
    )
    assert len(loaded.problems) == 1 and "mcpServers.both" in loaded.problems[0]
    assert "MCP server 'both' skipped" in loaded.problems[0]
    assert list(loaded.config.mcp_servers) == ["ok"]  # the other server in the same layer still applies

    loaded = load_config(initialization_options={"mcpServers": {"none": {"args": ["a"]}}}, env=env)
    assert "mcpServers.none" in loaded.problems[0]

    # Judged after merging: a workspace adding url to a global stdio server conflicts, unless it nulls command.
    ws = tmp_path / "ws"
    write_json(global_file(home), {"mcpServers": {"mem": {"command": "npx", "args": ["-y", "mem"]}}})
    write_json(ws_file(ws), {"mcpServers": {"mem": {"url": "http://remote/mcp"}}})
    loaded = load_config(workspace_folders=[ws], env=env)
    assert loaded.config.mcp_servers["mem"].command == "npx"
    assert "mcpServers.mem" in loaded.problems[0]
    write_json(ws_file(ws), {"mcpServers": {"mem": {"url": "http://remote/mcp", "command": None}}})
    loaded = load_config(workspace_folders=[ws], env=env)
    assert loaded.problems == []
    assert loaded.config.mcp_servers["mem"].url == "http://remote/mcp"
    assert loaded.config.mcp_servers["mem"].command is None


async def test_bad_regex_in_approval_rule_is_reported(env: dict[str, str]) -> None:
    loaded = load_config(
        initialization_options={
            "toolCall": {"approval": {"deny": {"eca__shell_command": {"argsMatchers": {"command": ["(unclosed"]}}}}}
        },
        env=env,
    )
    assert len(loaded.problems) == 1
    assert "toolCall.approval.deny.eca__shell_command.argsMatchers" in loaded.problems[0]


# ---------------------------------------------------------------------------------------------------------------
# interpolation
# ---------------------------------------------------------------------------------------------------------------


async def test_env_interpolation_with_and_without_default(home: Path, env: dict[str, str]) -> None:
    env["MY_URL"] = "http://localhost:9999"
    write_json(
        global_file(home),
        {
            "providers": {
                "local": {
                    "api": "openai-chat",
                    "url": "${env:MY_URL}/v1",
                    "key": "${env:MY_MISSING_KEY}",
                    "headers": {"X-Org": "${env:ORG:acme}", "X-List": "a-${env:MY_URL}-b"},
                }
            },
            "extraList": ["${env:MY_URL}", {"deep": "${env:ALSO_MISSING:fallback:with:colons}"}],
        },
    )
    loaded = load_config(env=env)
    local = loaded.config.providers["local"]
    assert local.url == "http://localhost:9999/v1"
    assert local.key == ""
    assert local.headers == {"X-Org": "acme", "X-List": "a-http://localhost:9999-b"}
    assert loaded.raw["extraList"] == ["http://localhost:9999", {"deep": "fallback:with:colons"}]
    assert len(loaded.problems) == 1 and "MY_MISSING_KEY" in loaded.problems[0]


async def test_interpolated_value_validated_after_merge(env: dict[str, str]) -> None:
    env["ROUNDS"] = "7"
    loaded = load_config(initialization_options={"toolCall": {"maxRounds": "${env:ROUNDS}"}}, env=env)
    assert loaded.problems == []
    assert loaded.config.tool_call.max_rounds == 7


def test_interpolate_env_leaves_keys_and_non_strings() -> None:
    value = {"${env:A}": ["${env:A}", 3, None, True], "n": 1.5}
    problems: list[str] = []
    assert interpolate_env(value, {"A": "x"}, problems) == {"${env:A}": ["x", 3, None, True], "n": 1.5}
    assert problems == []
    assert interpolate_env("${env:A:d}", {"A": ""}) == "d"  # empty counts as unset for defaults
    assert interpolate_env("${file:/etc/x} ${netrc:h}", {}) == "${file:/etc/x} ${netrc:h}"


# ---------------------------------------------------------------------------------------------------------------
# compatibility with users' existing files
# ---------------------------------------------------------------------------------------------------------------


async def test_unknown_keys_kept_and_not_rejected(home: Path, env: dict[str, str]) -> None:
    write_json(
        global_file(home),
        {
            "hooks": {"h": {"type": "preToolCall", "actions": []}},
            "netrcFile": None,
            "providers": {"openai": {"keyRc": "api.openai.com", "models": {"gpt-5": {"variants": {"high": {}}}}}},
            "toolCall": {"readFile": {"maxLines": 100}},
            "mcpServers": {"s": {"url": "https://x/mcp", "clientId": "abc"}},
        },
    )
    loaded = load_config(env=env)
    assert loaded.problems == []
    assert loaded.raw["hooks"]["h"]["type"] == "preToolCall"
    assert "netrcFile" in loaded.raw
    cfg = loaded.config
    assert cfg.model_extra["hooks"]["h"]["type"] == "preToolCall"
    assert cfg.providers["openai"].model_extra["keyRc"] == "api.openai.com"
    assert cfg.tool_call.model_extra["readFile"] == {"maxLines": 100}
    assert cfg.mcp_servers["s"].model_extra["clientId"] == "abc"


async def test_early_client_initialization_options(env: dict[str, str]) -> None:
    loaded = load_config(initialization_options={"chatBehavior": "plan", "chatAgent": None}, env=env)
    assert loaded.problems == []
    assert loaded.config.default_behavior == "plan"

    loaded = load_config(initialization_options={"chatBehavior": None, "defaultBehavior": None}, env=env)
    assert loaded.problems == []
    assert loaded.config.default_behavior == "code"


async def test_reference_agent_spelling(env: dict[str, str]) -> None:
    loaded = load_config(
        initialization_options={"defaultAgent": "code", "agent": {"reviewer": {"systemPrompt": "Review."}}}, env=env
    )
    assert loaded.problems == []
    assert loaded.config.default_behavior == "code"
    assert loaded.config.behavior["reviewer"].system_prompt == "Review."
    assert "plan" in loaded.config.behavior  # defaults merged, not replaced
    # the deprecated id of the built-in `code` agent, as a default and as a key of either map
    old = load_config(initialization_options={"defaultBehavior": "agent", "behavior": {"agent": {"maxSteps": 3}},
                                              "agent": {"agent": {"description": "d"}}}, env=env)
    assert old.problems == [] and old.config.default_behavior == "code" and "agent" not in old.config.behavior
    assert (old.config.behavior["code"].max_steps, old.config.behavior["code"].description) == (3, "d")


async def test_null_resets_defaults_and_removes_entries(home: Path, env: dict[str, str], tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_json(global_file(home), {"providers": {"corp": {"api": "openai-chat", "url": "http://c"}}, "maxX": 1})
    write_json(ws_file(ws), {"providers": {"corp": None}, "toolCall": None, "streamIdleTimeoutSeconds": None})
    loaded = load_config(workspace_folders=[ws], env=env)
    assert loaded.problems == []
    assert "corp" not in loaded.config.providers
    assert loaded.config.tool_call.max_rounds == 40
    assert loaded.config.stream_idle_timeout_seconds is None  # nullable: null disables the idle timeout


async def test_defaults_for_timeouts_and_retention(env: dict[str, str]) -> None:
    cfg = load_config(env=env).config
    assert cfg.stream_idle_timeout_seconds == 120
    assert cfg.request_timeout_seconds is None
    assert cfg.mcp_timeout_seconds == 60
    assert cfg.chat_retention_days == 14
    assert cfg.welcome_message


async def test_legacy_chat_welcome_message(env: dict[str, str]) -> None:
    cfg = Config.model_validate({"chat": {"welcomeMessage": "hi"}})
    assert cfg.welcome_message == "hi"
    cfg = Config.model_validate({"chat": {"welcomeMessage": "old"}, "welcomeMessage": "new"})
    assert cfg.welcome_message == "new"


async def test_jsonc_comments_and_trailing_commas(home: Path, env: dict[str, str]) -> None:
    write_json(
        global_file(home),
        """{
  // a comment
  "defaultModel": "openai/gpt-5", /* block
  comment */
  "providers": {"openai": {"url": "https://api.openai.com/v1//x", "models": {"a": {},},},},
  "s": "not // a comment /* either */",
}""",
    )
    loaded = load_config(env=env)
    assert loaded.problems == []
    assert loaded.config.default_model == "openai/gpt-5"
    assert loaded.config.providers["openai"].url == "https://api.openai.com/v1//x"
    assert loaded.raw["s"] == "not // a comment /* either */"


def test_parse_jsonc_edge_cases() -> None:
    assert parse_jsonc("   \n") == {}
    assert parse_jsonc('{"a": "x\\"//y", "b": [1, 2,]}') == {"a": 'x"//y', "b": [1, 2]}
    with pytest.raises(json.JSONDecodeError):
        parse_jsonc('{"a": }')


async def test_model_config_reference_cost_and_limit_objects(env: dict[str, str]) -> None:
    cfg = load_config(
        initialization_options={
            "providers": {
                "openai": {
                    "models": {
                        "x": {
                            "cost": {"input": 1, "output": 2, "cacheRead": 0.5},
                            "limit": {"context": 1000, "output": 10},
                        },
                        "y": {"cost": {"input": 1}, "inputCost": 3},
                    }
                }
            }
        },
        env=env,
    ).config
    x = cfg.providers["openai"].models["x"]
    assert (x.input_cost, x.output_cost, x.cache_read_cost, x.context_limit, x.output_limit) == (1, 2, 0.5, 1000, 10)
    assert cfg.providers["openai"].models["y"].input_cost == 3


async def test_tool_call_for_behaviour(env: dict[str, str]) -> None:
    cfg = load_config(env=env).config
    plan = cfg.tool_call_for("plan")
    assert "eca__shell_command" in plan.approval.deny
    assert "eca__read_file" in plan.approval.allow
    assert cfg.tool_call_for("agent") == cfg.tool_call
    assert cfg.tool_call_for("nope") == cfg.tool_call
    assert set(cfg.disabled_tools_for("plan")) >= {"edit_file", "write_file", "move_file"}


def test_null_in_extra_payload_survives_layering(home: Path, env: dict[str, str], tmp_path: Path) -> None:
    """Layers keep ``null`` (the request-body merge is what deletes): a workspace can drop a field a global layer
    or the provider would send."""
    model = {"extraPayload": {"stream_options": {"include_usage": True}, "thinking": {"type": "enabled"}}}
    write_json(global_file(home), {"providers": {"openai": {"models": {"gpt-5": model}}}})
    ws = tmp_path / "ws"
    override = {"extraPayload": {"stream_options": None, "thinking": {"budget": 1}}}
    write_json(ws_file(ws), {"providers": {"openai": {"models": {"gpt-5": override}}}})
    cfg = load_config(workspace_folders=[ws], env=env).config
    assert cfg.providers["openai"].models["gpt-5"].extra_payload == {
        "stream_options": None, "thinking": {"type": "enabled", "budget": 1}}


# ---------------------------------------------------------------------------------------------------------------
# providers
# ---------------------------------------------------------------------------------------------------------------


def resolve(data: dict[str, Any], env: dict[str, str], problems: list[str] | None = None):
    return resolve_providers(Config.model_validate(data), env, problems=problems)


def test_builtin_providers_with_empty_config() -> None:
    providers = resolve({}, {})
    assert set(providers) == {"openai", "anthropic", "ollama"}
    assert providers["openai"].api == "openai-responses" and providers["openai"].url == "https://api.openai.com"
    assert providers["anthropic"].api == "anthropic" and providers["anthropic"].url == "https://api.anthropic.com"
    assert providers["ollama"].api == "ollama" and providers["ollama"].url == "http://localhost:11434"
    assert not providers["openai"].authenticated and not providers["anthropic"].authenticated
    assert providers["ollama"].authenticated
    assert "gpt-5" in providers["openai"].models and "claude-sonnet-4-5" in providers["anthropic"].models
    assert providers["ollama"].models == {}


def test_keys_and_urls_from_env() -> None:
    env = {
        "OPENAI_API_KEY": SECRET,
        "ANTHROPIC_API_URL": "https://proxy.example/",
        "OLLAMA_API_URL": "http://gpu:11434",
    }
    providers = resolve({}, env)
    assert providers["openai"].key == SECRET and providers["openai"].key_source == "env"
    assert providers["openai"].authenticated
    assert providers["anthropic"].url == "https://proxy.example"
    assert providers["ollama"].url == "http://gpu:11434"


def test_config_key_and_url_win_over_env() -> None:
    env = {"OPENAI_API_KEY": "sk-from-env-xxxxxxxxxxxxxxxx", "OPENAI_API_URL": "http://env"}
    providers = resolve({"providers": {"openai": {"key": SECRET, "url": "http://cfg"}}}, env)
    assert providers["openai"].key == SECRET and providers["openai"].key_source == "config"
    assert providers["openai"].url == "http://cfg"
    # An empty configured key (e.g. an unset ${env:...}) falls back to the env var.
    providers = resolve({"providers": {"openai": {"key": ""}}}, env)
    assert providers["openai"].key_source == "env"


def test_custom_openai_chat_provider() -> None:
    data = {"providers": {"my-vllm": {"api": "openai-chat", "url": "http://127.0.0.1:8000", "models": {"qwen3": {}}}}}
    p = resolve(data, {})["my-vllm"]
    assert p.api == "openai-chat" and p.key is None
    assert p.authenticated  # explicit url + models, no key needed
    assert list(p.models) == ["qwen3"]
    assert p.models["qwen3"].id == "my-vllm/qwen3" and p.models["qwen3"].name == "qwen3"

    no_models = {"providers": {"my-vllm": {"api": "openai-chat", "url": "http://127.0.0.1:8000"}}}
    assert not resolve(no_models, {})["my-vllm"].authenticated


def test_custom_provider_env_names() -> None:
    data = {"providers": {"my-company": {"api": "anthropic", "models": {"m": {}}}}}
    env = {"MY_COMPANY_API_URL": "https://llm.corp", "MY_COMPANY_API_KEY": SECRET}
    p = resolve(data, env)["my-company"]
    assert p.url == "https://llm.corp" and p.key == SECRET and p.key_source == "env" and p.authenticated


def test_custom_provider_without_api_or_url_is_a_problem() -> None:
    problems: list[str] = []
    providers = resolve(
        {"providers": {"noapi": {"url": "http://x"}, "nourl": {"api": "openai-chat", "key": SECRET}}}, {}, problems
    )
    assert "noapi" not in providers and "nourl" not in providers
    assert any("providers.noapi" in p and "api" in p for p in problems)
    assert any("providers.nourl" in p and "NOURL_API_URL" in p for p in problems)
    assert all(SECRET not in p for p in problems)


def test_catalog_values_and_config_overrides() -> None:
    data = {
        "providers": {
            "openai": {
                "models": {
                    "gpt-5": {"inputCost": 9.0},
                    "gpt-5-high": {"modelName": "gpt-5", "extraPayload": {"reasoning": {"effort": "high"}}},
                }
            },
            "corp": {"api": "openai-responses", "url": "http://corp", "key": SECRET, "models": {"gpt-4.1": {}}},
        }
    }
    providers = resolve(data, {})
    gpt5 = providers["openai"].models["gpt-5"]
    assert gpt5.input_cost == 9.0 and gpt5.output_cost == 10.0 and gpt5.context_limit == 400_000 and gpt5.reasoning
    high = providers["openai"].models["gpt-5-high"]
    assert high.name == "gpt-5" and high.id == "openai/gpt-5-high"
    assert high.input_cost == 1.25 and high.extra_payload == {"reasoning": {"effort": "high"}}
    corp = providers["corp"].models["gpt-4.1"]
    assert corp.context_limit == 1_047_576  # limits borrowed from the catalog…
    assert corp.input_cost is None and corp.cost(1000, 1000) is None  # …prices are not: they may differ
    sonnet4 = providers["anthropic"].models["claude-sonnet-4"]
    assert sonnet4.name == "claude-sonnet-4-20250514" and sonnet4.cache_write_cost == 3.75


def test_model_info_cost() -> None:
    info = ModelInfo(
        id="p/m", provider="p", name="m", input_cost=3.0, output_cost=15.0, cache_read_cost=0.3, cache_write_cost=3.75
    )
    assert info.cost(1_000_000, 0) == pytest.approx(3.0)
    expected = (1000 * 3 + 2000 * 15 + 10_000 * 0.3 + 4000 * 3.75) / 1e6
    assert info.cost(1000, 2000, 10_000, 4000) == pytest.approx(expected)
    no_cache_price = ModelInfo(id="p/m", provider="p", name="m", input_cost=2.0, output_cost=8.0)
    assert no_cache_price.cost(0, 0, 1_000_000, 1_000_000) == pytest.approx(4.0)
    assert ModelInfo(id="p/m", provider="p", name="m", input_cost=1.0).cost(1, 1) is None


def test_mask_secret() -> None:
    assert mask_secret(None) == "(not set)" and mask_secret("") == "(not set)"
    masked = mask_secret("sk-proj-abcdefghijklmnopqrstuvwxyzWXYZ")
    assert masked == "sk-proj-…WXYZ"
    masked = mask_secret("0123456789abcdefghijklmnop")
    assert masked == "…mnop"
    assert mask_secret("short-key") == "…"  # nothing revealed of a short secret
    for secret in (SECRET, "abcdefghijklmnopqrstuv", "sk-0123456789abcdefghij"):
        visible = mask_secret(secret).split("…")[1]
        assert len(visible) <= 4 and secret[-5:] not in mask_secret(secret)


def test_key_never_in_repr() -> None:
    providers = resolve({"providers": {"openai": {"key": SECRET}}}, {"ANTHROPIC_API_KEY": SECRET + "2"})
    assert providers["openai"].key == SECRET
    assert SECRET not in repr(providers)
    assert SECRET not in str(providers["openai"])

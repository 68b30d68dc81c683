from __future__ import annotations

from eca_notebook.protocol import ConfigUpdatedChat, ConfigUpdatedParams


def test_round_trip() -> None:
    wire = {"chat": {"models": ["openai/gpt-5", "ollama/qwen3"], "behaviors": ["agent", "plan"],
                     "selectModel": "openai/gpt-5", "selectBehavior": "agent", "welcomeMessage": "Hi"}}
    assert ConfigUpdatedParams.model_validate(wire).dump() == wire


def test_missing_means_unchanged_so_none_is_omitted() -> None:
    assert ConfigUpdatedParams(chat=ConfigUpdatedChat(models=["m"])).dump() == {"chat": {"models": ["m"]}}
    assert ConfigUpdatedParams().dump() == {}


def test_agents_beside_behaviors() -> None:
    chat = ConfigUpdatedChat(behaviors=["code", "plan"], agents=["code", "plan"], select_agent="plan")
    assert ConfigUpdatedParams(chat=chat).dump() == {
        "chat": {"behaviors": ["code", "plan"], "agents": ["code", "plan"], "selectAgent": "plan"}}

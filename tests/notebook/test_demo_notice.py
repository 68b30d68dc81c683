"""``%eca`` on the embedded model says what it is, once per chat (issue #30): the engine's notice reaches the
notebook like any system text, with how to connect a real model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.engine.turn._small_model import DEMO_NOTICE_MARK
from eca_notebook.notebook import _magics
from eca_notebook.notebook._session import NotebookSession
from eca_notebook.providers import local

pytestmark = [
    pytest.mark.local,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not local.local_model_status().available, reason=local.local_model_status().message),
]


def test_eca_on_the_embedded_model_says_once_that_it_is_a_demo_model(shell, home: Path, workspace: Path, capsys):
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
           "OLLAMA_API_URL": "http://127.0.0.1:9", "ECA_CONFIG": json.dumps({"defaultModel": local.MODEL_ID})}
    session = NotebookSession(shell, workspace=workspace, env=env)
    _magics._state["session"] = session
    try:
        assert shell.run_cell("%eca Say hi.").success
        first = capsys.readouterr().out
        assert shell.run_cell("%eca Say hi again.").success
        second = capsys.readouterr().out
    finally:
        session.close()
        import asyncio

        asyncio.run(local.shutdown_local_runtimes())
    assert first.count(DEMO_NOTICE_MARK) == 1 and "Connect a model" in first and "config.json" in first
    assert DEMO_NOTICE_MARK not in second  # the same chat: said once

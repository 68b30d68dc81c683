"""The extension's packaging and lifecycle: entry points, jupyter-config, settings, server stop."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import eca_notebook
from eca_notebook.server import extension_points, labextension_paths
from eca_notebook.server.app import EcaExtensionApp

REPO = Path(__file__).resolve().parents[2]


def test_entry_points():
    assert extension_points() == [{"module": "eca_notebook", "app": EcaExtensionApp}]
    assert eca_notebook._jupyter_server_extension_points() == extension_points()
    assert labextension_paths() == [{"src": "labextension", "dest": "eca-notebook"}]
    import eca_notebook.server as server

    assert server._jupyter_labextension_paths() == labextension_paths()


def test_importing_the_package_does_not_import_jupyter():
    code = ("import sys, eca_notebook.server; "
            "print(any(m.startswith(('tornado', 'jupyter_server')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_shipped_jupyter_config_enables_the_extension(tmp_path):
    shipped = REPO / "jupyter-config" / "jupyter_server_config.d" / "eca_notebook.json"
    assert json.loads(shipped.read_text()) == {"ServerApp": {"jpserver_extensions": {"eca_notebook": True}}}
    # where the wheel puts it (etc/jupyter/jupyter_server_config.d), here under a throwaway config dir
    config_dir = tmp_path / "cfg"
    (config_dir / "jupyter_server_config.d").mkdir(parents=True)
    shutil.copy(shipped, config_dir / "jupyter_server_config.d" / shipped.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env.update(JUPYTER_CONFIG_DIR=str(config_dir), JUPYTER_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "jupyter_server", "extension", "list"], capture_output=True,
                            text=True, env=env, timeout=60)
    output = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)
    section = output.split(f"Config dir: {config_dir}", 1)[1].split("Config dir:", 1)[0]
    assert "eca_notebook enabled" in section, output
    assert re.search(r"eca_notebook\s+[\d.]+\s+OK", section), output


@pytest.mark.parametrize("eca_limits", [{"max_message_size": 1000, "max_pending_bytes": 5000, "write_timeout": 2.5,
                                         "inbox_size": 3}])
async def test_settings_reach_every_socket(jp_serverapp, state, eca_limits):
    point = jp_serverapp.extension_manager.extension_points["eca_notebook"]
    assert isinstance(point.app, EcaExtensionApp)
    limits = state.limits
    assert (limits.max_message_size, limits.max_pending_bytes, limits.write_timeout, limits.inbox_size) == (
        1000, 5000, 2.5, 3)
    assert limits.hard_max_message_size == 1000 + 1024 * 1024


@pytest.mark.parametrize("eca_limits", [{"idle_engine_timeout": 90.0}])
async def test_the_idle_engine_timeout_reaches_the_workspaces(state, eca_limits):
    assert state.manager.idle_timeout == 90.0


async def test_engines_are_released_after_30_idle_minutes_by_default(state):
    assert state.manager.idle_timeout == 30 * 60


async def test_server_stop_closes_the_sockets_and_the_engines(jp_serverapp, api, connect, state, workspace):
    sock = await connect()
    await sock.initialize()
    await api("POST", "workspaces", "register", body={"path": ""})
    engine = state.manager.default.engine
    assert engine is not None
    await state.aclose()  # what EcaExtensionApp.stop_extension runs when the server stops
    await sock.wait_closed()
    assert sock.conn.close_code == 1001
    assert state.manager.default.engine is None and engine._closed
    assert not state.sockets
    with pytest.raises(RuntimeError):
        state.manager.engine_for(state.manager.default)


async def test_stop_extension_runs_on_server_cleanup(jp_serverapp, api, state, workspace):
    status, _ = await api("GET", "models")
    assert status == 200
    engine = state.manager.default.engine
    await jp_serverapp.extension_manager.stop_all_extensions()
    assert engine._closed

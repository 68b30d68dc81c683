""":class:`OwnKernelRunner` with a real kernel: cells share state, outputs are saved into the ``.ipynb``, and the
kernel talks over Unix sockets in a private directory that closing removes (no TCP port to race for or reach)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import nbformat
import pytest

from eca_notebook.protocol import NotebookCell
from eca_notebook.tools.notebook_kernel import OwnKernelRunner

pytestmark = pytest.mark.skipif(os.name != "posix", reason="zmq has Unix sockets on POSIX only")


async def test_cells_run_in_a_kernel_on_private_unix_sockets(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("x = 21"), nbformat.v4.new_code_cell("print(x * 2)")]
    path = tmp_path / "own.ipynb"
    nbformat.write(nb, path)
    cells = [NotebookCell(id=c.id, index=i, cell_type="code", source=c.source) for i, c in enumerate(nb.cells)]
    runner = OwnKernelRunner()
    try:
        runs = await runner.run(path, cells, [c.id for c in cells], timeout=120)
        assert [r.status for r in runs] == ["ok", "ok"]
        assert runs[1].outputs == [{"output_type": "stream", "name": "stdout", "text": "42\n"}]
        [(manager, _client)] = runner._kernels.values()
        info = manager.get_connection_info()
        sockets = Path(info["ip"]).parent
        assert info["transport"] == "ipc" and sockets == Path(runner._sockets)
        assert stat.S_IMODE(sockets.stat().st_mode) == 0o700
        assert any(stat.S_ISSOCK(p.stat().st_mode) for p in sockets.iterdir())  # the kernel bound its sockets there
    finally:
        await runner.aclose()
    assert not sockets.exists()
    assert nbformat.read(path, as_version=4).cells[1].outputs[0]["text"] == "42\n"  # saved for the user


async def test_a_temporary_directory_too_deep_for_a_socket_path_falls_back_to_tcp(tmp_path: Path, monkeypatch) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    runner = OwnKernelRunner()
    assert runner._transport() == {}  # jupyter_client's default, TCP on 127.0.0.1
    await runner.aclose()
    monkeypatch.setattr("tempfile.tempdir", None)
    runner = OwnKernelRunner()
    assert runner._transport()["transport"] == "ipc"
    sockets = Path(runner._sockets or "")
    await runner.aclose()
    assert sockets.name.startswith("eca-kernels-") and not sockets.exists() and not any(deep.iterdir())

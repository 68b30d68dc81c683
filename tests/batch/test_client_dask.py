"""``EcaClient.batch(prompts, executor=dask_client)``: the Python client takes a ``dask.distributed.Client`` as it
is — the cluster runs the prompts — though the client layer never imports :mod:`eca_notebook.batch` (the adapter is
named in the client's table and imported by name on first need). A LocalCluster of threads keeps it light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient, SyncEcaClient, _executor
from eca_notebook.testing.llm_server import ScriptedLLMServer

from .conftest import Echo, user_text

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def threads_cluster():
    client = distributed.Client(processes=False, n_workers=1, threads_per_worker=4, dashboard_address=None)
    yield client
    client.close()


async def test_the_client_takes_a_dask_client_as_it_is(echo: Echo, llm: ScriptedLLMServer, threads_cluster: Any,
                                                       workspace: Path, config: dict[str, Any],
                                                       env: dict[str, str]):
    async with await EcaClient.start(workspace=workspace, config=config, env=env) as eca:
        results = await eca.batch(["k1", {"message": "k2"}, "k3"], executor=threads_cluster)
    assert [r.text for r in results] == ["echo: k1", "echo: k2", "echo: k3"]
    assert all(r.error is None for r in results)
    assert sorted(user_text(r.body) for r in llm.requests) == ["k1", "k2", "k3"]
    # the cluster ran them: its scheduler saw the tasks
    assert threads_cluster.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.task_prefixes)) > 0


def test_the_sync_client_takes_it_too(echo: Echo, llm: ScriptedLLMServer, threads_cluster: Any, workspace: Path,
                                      config: dict[str, Any], env: dict[str, str]):
    with SyncEcaClient.start(workspace=workspace, config=config, env=env) as eca:
        (result,) = eca.batch(["s1"], executor=threads_cluster)
    assert result.text == "echo: s1" and [user_text(r.body) for r in llm.requests] == ["s1"]


def test_the_adapter_is_named_not_imported() -> None:
    """Importing the client imports neither the batch package nor Dask; the table names the adapter, which is a
    batch executor taking the Dask client."""
    code = ("import sys, eca_notebook, eca_notebook.client; "
            "print('eca_notebook.batch' in sys.modules, 'distributed' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "False"]
    assert _executor.ADAPTERS == {"distributed": "eca_notebook.batch:DaskExecutor"}

"""The panel's ``@`` kernel-variable listing on a kernel with 500 variables (50 of them DataFrames): p50/p95 of one
listing through the server extension's kernel client (``server/_kernels.py``: a silent execute whose
``user_expressions`` run the probe), against the cheapest round trip the same client can make — a silent execute
evaluating ``len(globals())``. Run: ``.venv/bin/python benchmarks/bench_kernel_vars.py``."""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from jupyter_client.multikernelmanager import AsyncMultiKernelManager

from eca_notebook.server._kernels import JupyterKernels
from eca_notebook.tools.live_kernel import probe

ROUNDS = 40
SETUP = """
import pandas as pd, numpy as np
for i in range(450):
    globals()[f"value_{i}"] = [i] * (i % 20) if i % 3 else i
for i in range(50):
    globals()[f"frame_{i}"] = pd.DataFrame(np.zeros((1000, 8)), columns=[f"c{j}" for j in range(8)])
"""


class Sessions:
    def __init__(self, kernel_id: str) -> None:
        self.kernel_id = kernel_id

    async def list_sessions(self) -> list[dict[str, Any]]:
        return [{"path": "bench.ipynb", "kernel": {"id": self.kernel_id}}]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


async def main() -> None:
    manager = AsyncMultiKernelManager()
    kernel_id = await manager.start_kernel(kernel_name="python3")
    client = manager.get_kernel(kernel_id).client()
    client.start_channels()
    await client.wait_for_ready(timeout=120)
    await client.execute_interactive(SETUP, timeout=300)
    kernels = JupyterKernels(Sessions(kernel_id), manager, Path.cwd())
    notebook = Path("bench.ipynb")
    try:
        listing, baseline = [], []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            await kernels.evaluate(notebook, "len(globals())", timeout=30)
            baseline.append(time.perf_counter() - start)
            start = time.perf_counter()
            answer = await probe(kernels, notebook, {"op": "list", "query": "", "limit": 30}, timeout=30)
            listing.append(time.perf_counter() - start)
        assert len(answer["variables"]) == 30 and answer["more"] >= 470, answer
        b50, b95 = percentiles(baseline)
        l50, l95 = percentiles(listing)
        print(f"@ listing, 500 variables: p50 {l50 * 1000:.1f} ms, p95 {l95 * 1000:.1f} ms")
        print(f"bare silent round trip:   p50 {b50 * 1000:.1f} ms, p95 {b95 * 1000:.1f} ms")
        print(f"ratio p95 listing / round trip: {l95 / b95:.2f}")
    finally:
        kernels.close()
        client.stop_channels()
        await manager.shutdown_all(now=True)


if __name__ == "__main__":
    asyncio.run(main())

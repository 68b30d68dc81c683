"""The notebook tools on a big notebook: what ``notebook_read`` sends the model, and what reading and editing cost.

Generates a notebook of N cells (default 500) shaped like a real analysis notebook: a markdown cell every 5th cell,
code cells printing a few lines (stream), every 10th with a plot (a ~50 KB PNG as base64, with its text/plain
fallback), every 7th with a pandas-style HTML table (and its text/plain repr), and one with an error and a coloured
traceback. Then, in one run so the ratios compare like with like (best of ``--repeat``):

  size   the raw ``.ipynb`` vs. the text ``notebook_read`` returns to the model, with the default 50 KB budget (where
         it lists as many cells as fit and says how to read the rest) and with a budget big enough for every cell
         (the summarising alone: images and HTML named by type and size);
  read   ``notebook_read`` (prepare + run, as the engine calls it) vs. ``json.load`` of the same file, and
         ``nbformat.read`` (parse + validate) for where the time goes;
  edit   ``notebook_edit_cell`` of one cell (prepare + run: read, diff, apply, validate, atomic write) vs.
         ``nbformat.read`` + ``nbformat.write`` of the same notebook.

Ratios are tool / baseline: above 1 means the tool is slower (or, for sizes, bigger).

Usage: python benchmarks/bench_notebook_tools.py [--cells 500] [--repeat 5] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nbformat

from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.notebook import NotebookEditCellTool, NotebookReadTool

WORDS = "load clean merge group plot fit predict score model feature sample train test value column row".split()
TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mKeyError\x1b[0m                                  Traceback (most recent call last)",
    *(f"File \x1b[0;32m/opt/conda/lib/python3.11/site-packages/pandas/core/frame.py:{3700 + i}\x1b[0m, in "
      f"\x1b[0;36mDataFrame.__getitem__\x1b[0;34m(self, key)\x1b[0m" for i in range(12)),
    "\x1b[0;31mKeyError\x1b[0m: 'revenue_2023'",
]


def html_table(rnd: random.Random, rows: int) -> tuple[str, str]:
    """A pandas-style HTML table and its text/plain repr."""
    cols = rnd.sample(WORDS, 6)
    body = "".join("<tr><th>" + str(r) + "</th>" + "".join(f"<td>{rnd.random():.4f}</td>" for _ in cols) + "</tr>\n"
                   for r in range(rows))
    html = ('<div>\n<style scoped>\n.dataframe tbody tr th:only-of-type { vertical-align: middle; }\n</style>\n'
            '<table border="1" class="dataframe">\n<thead><tr><th></th>'
            + "".join(f"<th>{c}</th>" for c in cols) + f"</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n</div>")
    plain = "  ".join(cols) + "\n" + "\n".join(f"{r}  " + "  ".join("0.1234" for _ in cols) for r in range(10))
    return html, plain + f"\n\n[{rows} rows x {len(cols)} columns]"


def generate(path: Path, n_cells: int, seed: int) -> dict[str, int]:
    rnd = random.Random(seed)
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    counts = {"code": 0, "markdown": 0, "images": 0, "tables": 0, "errors": 0}
    count = 0
    for i in range(n_cells):
        if i % 5 == 0:
            nb.cells.append(v4.new_markdown_cell(f"## Step {i // 5}: {' '.join(rnd.choices(WORDS, k=8))}\n\n"
                                                 + " ".join(rnd.choices(WORDS, k=40))))
            counts["markdown"] += 1
            continue
        count += 1
        lines = [f"{rnd.choice(WORDS)}_{i} = {rnd.choice(WORDS)}({rnd.choice(WORDS)!r}, n={rnd.randint(1, 99)})"
                 for _ in range(rnd.randint(2, 12))]
        outputs = [v4.new_output("stream", name="stdout",
                                 text="".join(f"{rnd.choice(WORDS)}: {rnd.random():.6f}\n"
                                              for _ in range(rnd.randint(1, 20))))]
        if i % 10 == 1:
            png = b"\x89PNG\r\n\x1a\n" + rnd.randbytes(50 * 1024)  # incompressible, like a real plot's pixels
            outputs.append(v4.new_output("display_data", data={
                "image/png": base64.b64encode(png).decode(), "text/plain": "<Figure size 640x480 with 1 Axes>"}))
            lines.append("plt.show()")
            counts["images"] += 1
        elif i % 7 == 3:
            html, plain = html_table(rnd, rnd.randint(20, 60))
            outputs.append(v4.new_output("execute_result", data={"text/html": html, "text/plain": plain},
                                         execution_count=count))
            lines.append("df.head(60)")
            counts["tables"] += 1
        if i == n_cells // 2 + 1:
            outputs.append(v4.new_output("error", ename="KeyError", evalue="'revenue_2023'", traceback=TRACEBACK))
            counts["errors"] += 1
        nb.cells.append(v4.new_code_cell("\n".join(lines), execution_count=count, outputs=outputs))
        counts["code"] += 1
    nbformat.write(nb, path)
    return counts


async def best_of(repeat: int, fn: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = await fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def fmt_size(n: int) -> str:
    return f"{n / 1024:,.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.2f} MB"


async def bench(path: Path, repeat: int) -> None:
    root = path.parent
    read_tool, edit_tool = NotebookReadTool(), NotebookEditCellTool()

    async def read(ctx: ToolContext) -> str:
        prepared = await read_tool.prepare({"path": path.name}, ctx)
        if prepared.error:
            raise SystemExit(prepared.error)
        return (await read_tool.run(prepared, ctx)).output

    raw = path.stat().st_size
    default_ctx = ToolContext(workspace_folders=[root])
    whole_ctx = ToolContext(workspace_folders=[root], max_output_bytes=64 * 1024 * 1024, max_output_lines=10**7)
    out_default = await read(default_ctx)
    out_whole = await read(whole_ctx)
    n_cells = len(nbformat.read(path, as_version=4).cells)
    shown_default = out_default.count("\n### cell ")
    print(f"\nsize (the notebook: {fmt_size(raw)}, {n_cells} cells):")
    print(f"  notebook_read, default 50 KB budget   {fmt_size(len(out_default.encode())):>10}  "
          f"({shown_default} of {n_cells} cells listed; the last line: {out_default.splitlines()[-1][:90]!r})")
    print(f"  notebook_read, every cell             {fmt_size(len(out_whole.encode())):>10}  "
          f"({out_whole.count(chr(10) + '### cell ')} cells)")

    print(f"\ntimes (best of {repeat}):")

    def line(label: str, t: float) -> float:
        print(f"  {label:<52} {t * 1000:9.1f} ms")
        return t

    async def json_load() -> Any:
        with path.open(encoding="utf-8") as f:
            return json.load(f)

    async def nbformat_read() -> Any:
        return nbformat.read(path, as_version=4)

    async def read_write() -> None:
        nb = nbformat.read(path, as_version=4)
        nb.cells[2].source += "\n# touched"
        nbformat.write(nb, path)

    # the edit changes the notebook each time: alternate between two sources of one code cell
    target = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    turn = [0]

    async def edit() -> str:
        turn[0] += 1
        args = {"path": path.name, "cell_id": target.id, "source": f"{target.source}\n# edit {turn[0]}"}
        prepared = await edit_tool.prepare(args, default_ctx)
        if prepared.error:
            raise SystemExit(prepared.error)
        result = await edit_tool.run(prepared, default_ctx)
        if result.error:
            raise SystemExit(result.output)
        return result.output

    t_json = line("json.load (baseline)", (await best_of(repeat, json_load))[0])
    t_nbread = line("nbformat.read (parse + validate)", (await best_of(repeat, nbformat_read))[0])
    t_read = line("notebook_read, prepare + run (default budget)",
                  (await best_of(repeat, lambda: read(default_ctx)))[0])
    t_read_all = line("notebook_read, prepare + run (every cell)", (await best_of(repeat, lambda: read(whole_ctx)))[0])
    t_rw = line("nbformat.read + nbformat.write (baseline)", (await best_of(repeat, read_write))[0])
    t_edit = line("notebook_edit_cell, prepare + run", (await best_of(repeat, edit))[0])
    nbformat.validate(nbformat.read(path, as_version=4))

    rows = [
        ("size: notebook_read output (default budget) / .ipynb", len(out_default.encode()) / raw),
        ("size: notebook_read output (every cell) / .ipynb", len(out_whole.encode()) / raw),
        ("time: notebook_read (default budget) / json.load", t_read / t_json),
        ("time: notebook_read (every cell) / json.load", t_read_all / t_json),
        ("time: nbformat.read / json.load (for reference)", t_nbread / t_json),
        ("time: notebook_edit_cell / nbformat.read+write", t_edit / t_rw),
    ]
    print("\nratios (tool / baseline):")
    for label, ratio in rows:
        print(f"  {label:<58} {ratio:9.4f}x" if ratio < 0.1 else f"  {label:<58} {ratio:9.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-notebook-tools-"))
    try:
        path = tmp / "analysis.ipynb"
        t0 = time.perf_counter()
        counts = generate(path, opts.cells, opts.seed)
        print(f"generated {opts.cells} cells in {time.perf_counter() - t0:.1f} s: {counts}")
        asyncio.run(bench(path, opts.repeat))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Native search tools on a big workspace: ``grep`` (both backends) and ``directory_tree`` against the Unix tools.

Generates a workspace of N files (default 100,000) in a temp dir — nested package-like directories of small text
files, plus an ignored ``vendor/`` subtree (a quarter of the files) and ignored ``*.log`` files, listed in a
``.gitignore`` — then times, best of ``--repeat`` (default 3):

  grep            the ``grep`` tool through ``prepare`` + ``run`` (files_with_matches and content modes), with the
                  ripgrep backend and the pure-Python backend;
  baselines       ``rg`` run directly with the same ignore flags (if installed), and ``grep -rlE`` (which does not
                  know .gitignore, so it also reads the ignored subtree);
  directory_tree  the tool (full depth; it walks everything to count entries even though it lists only the first
                  ~2000) vs. ``find . -not -path './.git*'`` on the same tree (which does not prune ignored entries).

Ratios are tool / baseline: above 1 means the tool is slower. The ignored subtree makes the baselines do *more*
work than the tools; that is the point of respecting .gitignore, and part of what is measured.

Usage: python benchmarks/bench_tools.py [--files 100000] [--repeat 3] [--seed 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.search import DirectoryTreeTool, GrepTool

WORDS = (
    "alpha beta gamma delta epsilon config handler request response session cache index query token model "
    "provider engine widget kernel notebook stream buffer parser render update value result error status"
).split()
RARE = "needle_7f3a"  # appears in about 1 file out of 2000


def generate(root: Path, n_files: int, seed: int) -> dict[str, int]:
    """Write the tree; returns counts. Roughly 100k files in well under a minute on a laptop SSD."""
    rnd = random.Random(seed)
    (root / ".gitignore").write_text("vendor/\n*.log\n")
    n_vendor = n_files // 4
    n_logs = n_files // 50
    n_src = n_files - n_vendor - n_logs
    counts = {"src": n_src, "vendor (ignored)": n_vendor, "*.log (ignored)": n_logs, "rare hits": 0}

    def body() -> str:
        lines = [" ".join(rnd.choices(WORDS, k=rnd.randint(4, 12))) for _ in range(rnd.randint(5, 40))]
        if rnd.random() < 1 / 2000:
            lines[rnd.randrange(len(lines))] += f" {RARE}"
            counts["rare hits"] += 1
        return "\n".join(lines) + "\n"

    def tree(base: Path, n: int, per_dir: int, exts: tuple[str, ...]) -> None:
        made = 0
        d = 0
        while made < n:
            # three levels: pkgNN/modNN/subNN, ~per_dir files each
            directory = base / f"pkg{d // 100:02d}" / f"mod{(d // 10) % 10:02d}" / f"sub{d % 10:02d}"
            directory.mkdir(parents=True, exist_ok=True)
            for i in range(min(per_dir, n - made)):
                (directory / f"f{i:03d}{rnd.choice(exts)}").write_text(body())
                made += 1
            d += 1

    tree(root / "src", n_src, 50, (".py", ".txt", ".md", ".ts"))
    tree(root / "vendor", n_vendor, 50, (".js", ".py"))
    for i in range(n_logs):
        (root / "src" / f"pkg{i % 10:02d}" / f"run{i:05d}.log").write_text(body())
    return counts


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run_tool(tool: Any, args: dict[str, Any], ctx: ToolContext) -> str:
    async def go() -> str:
        prepared = tool.prepare(args, ctx)
        if prepared.error:
            raise SystemExit(prepared.error)
        result = await tool.run(prepared, ctx)
        return result.output

    return asyncio.run(go())


def sh(cmd: list[str], cwd: Path) -> str:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", type=Path, help="generate into (or reuse) this directory and keep it")
    opts = ap.parse_args()

    tmp = None
    if opts.keep:
        root = opts.keep
        fresh = not root.exists()
        root.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.mkdtemp(prefix="bench-tools-")
        root = Path(tmp)
        fresh = True
    try:
        if fresh:
            t0 = time.perf_counter()
            counts = generate(root, opts.files, opts.seed)
            print(f"generated {opts.files} files in {time.perf_counter() - t0:.1f} s: {counts}")
        else:
            print(f"reusing {root}")
        ctx = ToolContext(workspace_folders=[root])
        rg = shutil.which("rg")
        rows: list[tuple[str, float, str, float | None]] = []

        def measure(label: str, fn: Callable[[], Any]) -> tuple[float, Any]:
            t, out = best_of(opts.repeat, fn)
            print(f"  {label:<44} {t * 1000:9.1f} ms")
            return t, out

        for mode, pattern in (("files_with_matches", RARE), ("content", RARE), ("files_with_matches", r"pars\w+r")):
            print(f"\ngrep {pattern!r} ({mode}):")
            args = {"path": ".", "pattern": pattern, "output_mode": mode, "max_results": 100_000}
            results: dict[str, Any] = {}
            if rg:
                results["tool/rg"] = measure("tool, ripgrep backend", lambda: run_tool(GrepTool("rg"), args, ctx))
            results["tool/python"] = measure(
                "tool, Python backend", lambda: run_tool(GrepTool("python"), args, ctx)
            )
            if rg:
                rg_cmd = [rg, "--no-config", "--no-require-git", "--no-ignore-dot", "--no-ignore-global",
                          "-l" if mode == "files_with_matches" else "-n", "-e", pattern, "."]  # fmt: skip
                results["rg"] = measure("rg directly", lambda: sh(rg_cmd, root))
            ere = pattern.replace(r"\w", "[[:alnum:]_]")
            grep_cmd = ["grep", "-rlE" if mode == "files_with_matches" else "-rnE", ere, "--exclude-dir=.git", "."]
            results["grep"] = measure("grep -r (no .gitignore: reads vendor/ too)", lambda: sh(grep_cmd, root))
            if rg:
                same = results["tool/rg"][1] == results["tool/python"][1]
                print(f"  backends give identical output: {same}")
            for tool_key in ("tool/rg", "tool/python"):
                for base in ("rg", "grep"):
                    if tool_key in results and base in results:
                        label = f"grep {mode} {pattern!r} {tool_key}"
                        rows.append((label, results[tool_key][0], base, results[base][0]))

        print("\ndirectory_tree vs find:")
        t_tree, out = measure(
            "directory_tree tool (max_depth 10)", lambda: run_tool(DirectoryTreeTool(), {"path": "."}, ctx)
        )
        t_find, found = measure("find . (no .gitignore)", lambda: sh(["find", ".", "-not", "-path", "./.git*"], root))
        print(f"  tool summary: {out.splitlines()[-2] if out.count(chr(10)) > 2 else out!r}")
        print(f"  find entries: {found.count(chr(10)) - 1}")
        rows.append(("directory_tree", t_tree, "find", t_find))

        print("\nratios (tool / baseline; > 1 = tool slower):")
        for label, t, base, tb in rows:
            print(f"  {label:<58} vs {base:<5} {t / tb:6.2f}x" if tb else f"  {label}: no baseline")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

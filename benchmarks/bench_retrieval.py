"""Content index (code retrieval): build time and disk size, incremental updates, and search latency against ``rg``.

Uses the 100,000-file tree of ``bench_query_context.py`` (its generator, imported — the same names, the same
ignored ``node_modules``/``dist``), then writes code into it: every ``.py``/``.ts``/``.tsx``/``.js`` file gets a few
classes and functions named from its own path words (so symbols repeat across files the way real ones do), every
other file a few lines of prose. Then:

  1. builds the content index (symbols + full text; no vectors): wall time, files/symbols/chunks, disk size, and how
     late a 10 ms timer on the event loop fires meanwhile;
  2. a second open of the same database (a restart): how long the first search waits (it answers from the stored
     index, flagged as possibly stale, while the check against the disk runs in the background), how long that
     check (reopen + scan) takes, files re-read and re-parsed (should be 0); then a scan of the unchanged tree;
  3. modifies 100 files and applies the 100 ``modified`` events (``apply_changes``); time, files re-indexed;
  4. ``search_symbols`` and ``search_text`` for generated names and words: p50 / p95 in ms; then the ``@``
     completion (``chat/queryContext``) while typing symbol names, with and without the code index's symbols;
  5. the baseline, measured in the same run: ``rg`` for the same queries over the same tree (a definition regex for
     symbols, the words for text), p50 / p95, and the ratios rg / index.

Usage: python benchmarks/bench_retrieval.py [--files 100000] [--queries 100] [--rg-queries 20] [--seed 7] [--dir D]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_query_context import WORDS, _default_dir, generate  # noqa: E402 - the shared tree generator

from eca_notebook.retrieval import CodeIndex, FileChange  # noqa: E402

CODE_SUFFIXES = (".py", ".ts", ".tsx", ".js")


def _camel(words: list[str]) -> str:
    return words[0] + "".join(w.capitalize() for w in words[1:])


def code_for(rel: str, rng: random.Random) -> str:
    """A small source file whose definitions are named after words of its path (plus random ones)."""
    stem_words = [w for w in rel.replace("-", "_").replace("/", "_").split("_") if w.isalpha()][-3:] or ["thing"]
    cls = "".join(w.capitalize() for w in stem_words[-2:]) + rng.choice(("Service", "Store", "Handler", "Model"))
    funcs = [_camel([rng.choice(("get", "load", "make", "update", "parse", "render")), *rng.sample(WORDS, 2)])
             for _ in range(rng.randint(2, 5))]
    if rel.endswith(".py"):
        lines = [f'"""{" ".join(stem_words)} module."""', "import os", "", "", f"class {cls}:",
                 f'    """Keeps the {stem_words[0]} state."""', ""]
        for f in funcs[:2]:
            lines += [f"    def {f}(self, value):", f"        return os.path.join(self.root, value, '{f}')", ""]
        for f in funcs[2:]:
            lines += ["", f"def {f}(items):", f"    total = sum(len(i) for i in items)  # {rng.choice(WORDS)}",
                      "    return total", ""]
        return "\n".join(lines)
    lines = [f"// {' '.join(stem_words)} module", f"export class {cls} {{"]
    for f in funcs[:2]:
        lines += [f"  {f}(value) {{", f"    return this.root + '/' + value + '{f}';", "  }"]
    lines.append("}")
    for f in funcs[2:]:
        lines += [f"export const {f} = (items) => {{", f"  // {rng.choice(WORDS)} {rng.choice(WORDS)}",
                  "  return items.length;", "};"]
    if rel.endswith((".ts", ".tsx")):
        lines += [f"export interface {cls}Options {{ {rng.choice(WORDS)}: string }}"]
    return "\n".join(lines) + "\n"


def prose_for(rng: random.Random) -> str:
    return "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) for _ in range(rng.randint(3, 12)))


def fill(root: Path, paths: list[str], seed: int) -> None:
    rng = random.Random(seed + 1)
    for rel in paths:
        text = code_for(rel, rng) if rel.endswith(CODE_SUFFIXES) else prose_for(rng)
        (root / rel).write_text(text)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary(label: str, ms: list[float]) -> str:
    return f"{label:<34} p50 {statistics.median(ms):8.2f} ms   p95 {pct(ms, 95):8.2f} ms   (n={len(ms)})"


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


async def loop_lag(out: list[float]) -> None:
    """How late a 10 ms timer fires while the index works in its threads: what other coroutines would wait."""
    while True:
        started = time.perf_counter()
        await asyncio.sleep(0.01)
        out.append(max(0.0, (time.perf_counter() - started) * 1000 - 10))


def rg_ms(args: list[str], root: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["rg", *args, str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - started) * 1000


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} CPUs)"


async def run(args: argparse.Namespace) -> None:
    print(load())
    tmp = Path(tempfile.mkdtemp(prefix="eca-bench-retrieval-", dir=args.dir))
    try:
        root = tmp / "ws"
        t0 = time.perf_counter()
        paths = generate(root, args.files, args.seed)
        fill(root, paths, args.seed)
        print(f"workspace: {len(paths):,} files generated and filled in {time.perf_counter() - t0:.1f} s ({root})")
        db = tmp / "index" / "content.sqlite"

        # 1. build
        index = CodeIndex([root], db, vectors=False, refresh_interval=1e9)
        lags: list[float] = []
        ticker = asyncio.create_task(loop_lag(lags))
        t0 = time.perf_counter()
        await index.ensure_built()
        build_s = time.perf_counter() - t0
        ticker.cancel()
        status = index.status()
        print(f"build (symbols + text):            {build_s:8.1f} s   {status['files']:,} files, "
              f"{status['symbols']:,} symbols, {status['chunks']:,} chunks; "
              f"disk {dir_bytes(db) / 1e6:.1f} MB ({dir_bytes(db) / max(status['files'], 1):.0f} B/file)")
        print(f"event loop during the build:        a 10 ms timer late by p50 {statistics.median(lags):.1f} ms, "
              f"p99 {pct(lags, 99):.1f} ms, max {max(lags):.1f} ms")
        await index.close()

        # 2. restart
        index = CodeIndex([root], db, vectors=False, refresh_interval=1e9)
        t0 = time.perf_counter()
        first = await index.search_symbols("service", limit=20)
        answered = time.perf_counter() - t0
        await index.wait_for_refresh()
        print(f"restart (reopen + stat scan):      {time.perf_counter() - t0:8.1f} s   files re-read: "
              f"{index.stats.files_read}, re-parsed: {index.stats.files_parsed}")
        print(f"restart, first search answered:    {answered * 1000:8.1f} ms  ({len(first)} hits"
              f"{', flagged as possibly stale' if first.note else ''})")
        t0 = time.perf_counter()
        await index.refresh()
        print(f"scan of the unchanged tree:        {time.perf_counter() - t0:8.1f} s   changed: "
              f"{index.stats.last_changed}")

        # 3. incremental
        rng = random.Random(args.seed + 2)
        code_paths = [p for p in paths if p.endswith(CODE_SUFFIXES)]
        changed = rng.sample(code_paths, 100)
        for rel in changed:
            with open(root / rel, "a") as fh:
                fh.write("\n// edited\n" if not rel.endswith(".py") else "\n# edited\n")
        t0 = time.perf_counter()
        count = await index.apply_changes([FileChange("modified", rel) for rel in changed])
        print(f"incremental, 100 modified files:   {(time.perf_counter() - t0) * 1000:8.1f} ms  re-indexed: {count}")

        # 4. queries
        names = [row[0] for row in index.store().query(
            "SELECT name FROM symbols WHERE length(name) > 6 ORDER BY random() LIMIT ?", [args.queries])]
        words = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(args.queries // 2)] + \
            [rng.choice(WORDS) for _ in range(args.queries - args.queries // 2)]
        sym_ms: list[float] = []
        found = 0
        for name in names:
            t0 = time.perf_counter()
            hits = await index.search_symbols(name, limit=20)
            sym_ms.append((time.perf_counter() - t0) * 1000)
            found += bool(hits and hits[0].name == name)
        text_ms: list[float] = []
        for q in words:
            t0 = time.perf_counter()
            await index.search_text(q, limit=20)
            text_ms.append((time.perf_counter() - t0) * 1000)
        print(summary("search_symbols", sym_ms) + f"   exact name first: {found}/{len(names)}")
        print(summary("search_text", text_ms))
        await typing_at(root, index, names)
        await index.close()

        # 5. rg baseline
        if shutil.which("rg") is None:
            print("rg not installed: no baseline")
            return
        rg_sym = [rg_ms(["-n", "--no-heading", "-e", rf"(def|class|function|interface|const)\s+{n}\b"], root)
                  for n in names[: args.rg_queries]]
        rg_text = [rg_ms(["-n", "--no-heading", "-i", "-e", ".*".join(q.split())], root)
                   for q in words[: args.rg_queries]]
        print(summary("rg (definition regex)", rg_sym))
        print(summary("rg (words)", rg_text))
        print(f"ratio rg / search_symbols:  p50 {statistics.median(rg_sym) / statistics.median(sym_ms):7.1f}x   "
              f"p95 {pct(rg_sym, 95) / pct(sym_ms, 95):7.1f}x")
        print(f"ratio rg / search_text:     p50 {statistics.median(rg_text) / statistics.median(text_ms):7.1f}x   "
              f"p95 {pct(rg_text, 95) / pct(text_ms, 95):7.1f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        print(load())


async def typing_at(root: Path, index: CodeIndex, names: list[str]) -> None:
    """The ``@`` completion while a user types a symbol's name a key at a time (``ge``, ``get``, ``getU``…):
    ``chat/queryContext`` with files only (the baseline, measured here) and with the open code index's symbols."""
    from eca_notebook.engine.contexts import query_context
    from eca_notebook.engine.index._index import WorkspaceIndex

    files = WorkspaceIndex([root])
    await files.build()
    keys = [name[:n] for name in names[:25] for n in range(2, len(name) + 1)]
    plain: list[float] = []
    with_symbols: list[float] = []
    offered = 0
    for q in keys:
        t0 = time.perf_counter()
        [c.dump() for c in await query_context(q, index=files, already=[])]  # (the wire form, as a client waits for)
        plain.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        answer = [c.dump() for c in await query_context(q, index=files, already=[], code_index=index)]
        with_symbols.append((time.perf_counter() - t0) * 1000)
        offered += any(c.get("description") for c in answer)
    print(f"@ typing {len(keys)} keystrokes of {min(len(names), 25)} symbol names:")
    print(summary("  queryContext, files only", plain))
    print(summary("  queryContext, files + symbols", with_symbols) + f"   symbols offered: {offered}/{len(keys)}")
    print(f"ratio with / without symbols:  p50 {statistics.median(with_symbols) / statistics.median(plain):7.1f}x   "
          f"p95 {pct(with_symbols, 95) / pct(plain, 95):7.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rg-queries", type=int, default=20, help="rg takes ~a second a query on 100k files")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", default=_default_dir(), help="where the workspace goes (default /dev/shm)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()

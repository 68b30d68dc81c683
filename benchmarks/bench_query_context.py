"""Workspace index: build time and memory, ``@``-completion latency while typing, and refresh cost.

Generates a workspace of N files (default 100,000) with realistic nested names in a temp dir (plus an ignored
``node_modules`` and ``dist`` the walk must prune), then:

  1. builds the index (wall time; RSS growth; retained and peak Python memory of a second build via tracemalloc);
  2. replays 200 keystrokes: users typing real paths one character at a time (``s``, ``sr``, ``src``, ``src/``,
     ``src/c``…) and real basenames (``B``, ``Bu``, ``But``…), through ``WorkspaceIndex.query`` and through
     ``query_context`` (what ``chat/queryContext`` runs); prints p50 / p95 / max in ms;
  3. the same keystrokes with the typing cache cleared before each (every query a cold scan);
  4. two baselines measured in the same run: a naive lowercase substring filter over every path (then a sort by
     length) — simpler matching, no fuzzy ranking — and the index's own ranking applied to every entry (what the
     index's scans avoid), with the ratios baseline / index;
  5. ``refresh()`` with nothing changed, after touching 10 files (mtime only: no directory changes), and after
     creating 10 files in 10 directories (and checks they are found).

Usage: python benchmarks/bench_query_context.py [--files 100000] [--keystrokes 200] [--seed 7] [--keep DIR] [--dir D]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from eca_notebook.engine.contexts import query_context
from eca_notebook.engine.index._index import WorkspaceIndex, _Query

WORDS = """
account action adapter admin alert analytics api app arena asset audit auth avatar badge banner base batch billing
block board body bookmark branch breadcrumb bridge browser buffer builder bundle button cache calendar camera card cart
catalog category channel chart chat checkbox checkout client clock cluster code collection color column command
comment common compiler component config connection console constants container content context controller cookie core
counter coupon crypto csv customer dashboard data database date debug decoder default delivery dialog diff directory
dispatcher document domain download drawer driver dropdown editor email embed encoder engine entity env error event
export factory feature feed field file filter flag footer form format frame gateway generator graph grid group guard
handler hash header health helper history home hook icon image import index input inventory invoice item job kernel
label layout lazy ledger link list loader locale logger login logo map marker media member menu message metric
middleware migration mixin modal model module monitor mutation navbar network node notification observer order page
pager panel parser password payment permission picker pipeline player plugin policy popup post preview price printer
profile progress project provider proxy query queue quota radio rate reader receipt record redis reducer registry
render report repository request resolver resource response result review role route router runner sample scheduler
schema scope search section selector sensor serializer server service session setting shape shell sidebar signal
slider snapshot socket sort source spinner stack state status step storage store stream style subscription summary
switch sync table tag task template tenant test theme thread ticket timer toast token toolbar tooltip tracker
transaction transform tree trigger type upload user util validator value vendor version video view viewer wallet
webhook widget window worker workflow
""".split()
DIRS = """
components utils hooks services api models views controllers store reducers middleware lib core common shared ui
widgets forms pages layouts assets styles i18n locales fixtures migrations schemas handlers adapters plugins internal
cmd pkg features modules helpers types config scripts tests integration unit e2e mocks docs guides examples
""".split()
EXTS = [".py", ".ts", ".tsx", ".js", ".go", ".rs", ".md", ".json", ".yaml", ".css", ".test.ts", "_test.go", ".sql"]


def _name(rng: random.Random) -> str:
    parts = [rng.choice(WORDS) for _ in range(rng.choice((1, 2, 2, 3)))]
    style = rng.random()
    if style < 0.35:
        stem = "_".join(parts)
    elif style < 0.6:
        stem = "".join(p.capitalize() for p in parts)
    elif style < 0.8:
        stem = parts[0] + "".join(p.capitalize() for p in parts[1:])
    else:
        stem = "-".join(parts)
    return stem + rng.choice(EXTS)


def generate(root: Path, files: int, seed: int) -> list[str]:
    """A nested tree of `files` files under `root`; returns their relative paths."""
    rng = random.Random(seed)
    made: list[str] = []
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("node_modules/\ndist/\n*.log\n")
    for junk in ("node_modules/react/lib", "node_modules/lodash", "dist/assets"):
        (root / junk).mkdir(parents=True)
        for i in range(200):
            (root / junk / f"chunk{i}.js").touch()
    tops = ("src", "tests", "docs", "packages", "scripts", "tools")
    queue: list[tuple[Path, int]] = [(root / top, 1) for top in tops]
    while queue and len(made) < files:
        directory, depth = queue.pop(rng.randrange(len(queue)) if rng.random() < 0.3 else 0)
        directory.mkdir(parents=True, exist_ok=True)
        rel_dir = directory.relative_to(root).as_posix()
        names: set[str] = set()
        for _ in range(rng.randint(4, 25)):
            if len(made) >= files:
                break
            name = _name(rng)
            if name not in names:
                names.add(name)
                os.close(os.open(os.path.join(directory, name), os.O_CREAT | os.O_WRONLY, 0o644))
                made.append(f"{rel_dir}/{name}")
        if depth < 9:
            subdirs = rng.sample(DIRS, rng.randint(1, 5)) if depth > 1 else rng.sample(DIRS, 6)
            if rng.random() < 0.15:
                subdirs.append(rng.choice(WORDS))
            queue.extend((directory / d, depth + 1) for d in subdirs)
    (root / "debug.log").touch()
    return made


def keystrokes(paths: list[str], total: int, seed: int) -> list[str]:
    """Queries as typed: prefixes of real paths (``src/compo…``) and of real basenames (``Butt…``), one char each."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < total:
        path = rng.choice(paths)
        target = path if rng.random() < 0.5 else path.rpartition("/")[2]
        length = min(len(target), rng.randint(8, 16))
        out.extend(target[:n] for n in range(1, length + 1))
    return out[:total]


def rss_kb() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary(label: str, ms: list[float]) -> str:
    return (f"{label:<38} p50 {statistics.median(ms):7.2f} ms   p95 {pct(ms, 95):7.2f} ms   "
            f"max {max(ms):7.2f} ms")


def score_everything(index: WorkspaceIndex, q: str, limit: int = 50) -> list[int]:
    """The second baseline: the same ranking without the index's shortcuts — score every entry, keep the best."""
    snap = index._snap
    query = _Query(index._normalise(q), snap)
    scored = [(s, i) for i in range(snap.n) if (s := query.score(i)) is not None]
    return [i for _, i in heapq.nlargest(limit, scored, key=lambda si: (si[0], -si[1]))]  # ties: shallower first


def naive_query(lowered: list[tuple[str, str]], q: str, limit: int = 50) -> list[str]:
    """The baseline: substring filter over every path (what a simple implementation does), shortest first."""
    ql = q.lower()
    hits = [p for low, p in lowered if ql in low]
    hits.sort(key=len)
    return hits[:limit]


async def run(args: argparse.Namespace) -> None:
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="eca-bench-index-", dir=args.dir))
    root = tmp / "workspace"
    try:
        if not root.exists():
            t = time.perf_counter()
            paths = generate(root, args.files, args.seed)
            print(f"generated {len(paths)} files in {time.perf_counter() - t:.1f} s under {root}")
        else:
            paths = [p.relative_to(root).as_posix() for p in root.rglob("*")
                     if p.is_file() and "node_modules" not in p.parts and "dist" not in p.parts
                     and ".git" not in p.parts]
            print(f"reusing {len(paths)} files under {root}")

        # 1. build
        index = WorkspaceIndex([root])
        gc.collect()
        rss0 = rss_kb()
        t = time.perf_counter()
        await index.build()
        build_s = time.perf_counter() - t
        gc.collect()
        rss1 = rss_kb()
        st = index.status()
        print(f"\nbuild: {build_s:.2f} s wall ({st['files']} files, {st['dirs']} dirs; "
              f"index reports {st['durationMs']:.0f} ms); RSS +{(rss1 - rss0) / 1024:.1f} MB")
        del index
        gc.collect()
        tracemalloc.start()
        index = WorkspaceIndex([root])
        await index.build()
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"memory (tracemalloc, second build): retained {current / 2**20:.1f} MB, peak while building "
              f"{peak / 2**20:.1f} MB")

        # 2. typing
        queries = keystrokes(paths, args.keystrokes, args.seed)
        warm: list[float] = []
        for q in queries:
            t = time.perf_counter()
            index.query(q, 50)
            warm.append((time.perf_counter() - t) * 1000)
        via_context: list[float] = []
        for q in queries:
            t = time.perf_counter()
            [c.dump() for c in await query_context(q, index=index, already=[])]  # (the wire form a client gets)
            via_context.append((time.perf_counter() - t) * 1000)
        # 3. cold: no typing cache
        cold: list[float] = []
        for q in queries:
            index._cache = None
            t = time.perf_counter()
            index.query(q, 50)
            cold.append((time.perf_counter() - t) * 1000)
        # 4. baseline
        lowered = [(p.lower(), p) for p in paths]
        naive: list[float] = []
        for q in queries:
            t = time.perf_counter()
            naive_query(lowered, q)
            naive.append((time.perf_counter() - t) * 1000)
        sample = queries[:: max(1, len(queries) // 40)]
        everything: list[float] = []
        same_top = 0
        for q in sample:
            t = time.perf_counter()
            exact = score_everything(index, q, 10)
            everything.append((time.perf_counter() - t) * 1000)
            index._cache = None
            fast = index.query(q, 10)
            scorer = _Query(index._normalise(q), index._snap)
            same_top += [e.score for e in fast] == [scorer.score(i) for i in exact]
        print(f"\n{len(queries)} keystrokes (e.g. {', '.join(repr(q) for q in queries[:4])} …):")
        print(summary("WorkspaceIndex.query (typing)", warm))
        print(summary("query_context (chat/queryContext)", via_context))
        print(summary("WorkspaceIndex.query (cold, no cache)", cold))
        print(summary("baseline: naive substring filter", naive))
        print(summary(f"baseline: score all ({len(sample)} of them)", everything))
        print(f"ratio substring baseline / index: p50 {statistics.median(naive) / statistics.median(warm):.1f}x, "
              f"p95 {pct(naive, 95) / pct(warm, 95):.1f}x (cold: p95 {pct(naive, 95) / pct(cold, 95):.1f}x)")
        print(f"ratio score-all baseline / index (same ranking): p50 "
              f"{statistics.median(everything) / statistics.median(cold):.0f}x, "
              f"p95 {pct(everything, 95) / pct(cold, 95):.0f}x (vs cold)")
        print(f"top-10 scores identical to scoring every entry: {same_top}/{len(sample)} queries "
              "(the scans stop after a bounded number of candidates per tier)")
        hits = sum(1 for q in queries if index.query(q, 50))
        print(f"queries with results: {hits}/{len(queries)}")

        # 5. refresh
        index.refresh()  # settle directories written right before the build (racy mtimes are rescanned once)
        t = time.perf_counter()
        n0 = index.refresh()
        t0 = (time.perf_counter() - t) * 1000
        rng = random.Random(args.seed + 1)
        for rel in rng.sample(paths, 10):
            os.utime(root / rel)
        t = time.perf_counter()
        n1 = index.refresh()
        t1 = (time.perf_counter() - t) * 1000
        created = []
        for rel in rng.sample(paths, 10):
            new = (root / rel).parent / f"brand_new_{len(created)}.py"
            new.touch()
            created.append(new.relative_to(root).as_posix())
        t = time.perf_counter()
        n2 = index.refresh()
        t2 = (time.perf_counter() - t) * 1000
        found = sum(1 for rel in created if any(e.rel == rel for e in index.query(rel, 5)))
        print(f"\nrefresh, nothing changed:          {t0:8.1f} ms  ({n0} changes, {index.dir_count} dirs stat'ed)")
        print(f"refresh, 10 files touched:         {t1:8.1f} ms  ({n1} changes: content changes are not indexed)")
        print(f"refresh, 10 files created:         {t2:8.1f} ms  ({n2} changes; {found}/10 found by query)")
        t = time.perf_counter()
        index.refresh()
        print(f"refresh right after (racy dirs):   {(time.perf_counter() - t) * 1000:8.1f} ms")
        t = time.perf_counter()
        index.repo_map()
        print(f"repo_map (first call):             {(time.perf_counter() - t) * 1000:8.1f} ms")
        for rel in created:  # leave a kept workspace as it was
            (root / rel).unlink(missing_ok=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def _default_dir() -> str | None:
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--keystrokes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", help="generate into (or reuse) this directory and keep it")
    parser.add_argument("--dir", default=_default_dir(),
                        help="where the temporary workspace goes (default: /dev/shm when available — creating "
                             "100k files on a VM disk can take minutes; the index is measured after the walk "
                             "either way)")
    args = parser.parse_args()
    asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

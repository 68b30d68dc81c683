"""The JupyterLab panel under a 5,000-chunk reply: React renders and frame times in Chromium.

A real ``jupyter lab`` (the repository's server and lab extensions, isolated dirs) streams a scripted reply of N text
chunks from the scripted LLM server through the WebSocket into the panel, in Debian's headless Chromium. Measured in
the same run:

  (a) idle baseline — animation-frame intervals with the panel open and nothing happening;
  (b) burst — N chunks as fast as the server sends them;
  (c) paced — N chunks at about 1,000 chunks/s (a fast model), the case where jank would be visible.

For (b) and (c) it prints the chunks the panel applied, the store flushes (≤ one per frame: the coalescing), the
React renders of the panel / message list / message items, the Markdown renders (throttled while streaming), the
frame intervals (p50, p95, max), the long tasks (> 50 ms, PerformanceObserver), and the ratios: renders per chunk,
and streaming p95 frame interval over the idle p95.

Usage: python benchmarks/bench_panel.py [--chunks 5000] [--rate 1000]
Needs /usr/bin/chromium (apt-get install chromium) and the built extension (extension/scripts/build.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eca_notebook.testing.llm_server import Delay, Reply, ScriptedLLMServer, Text  # noqa: E402
from tests.panel._lab import Lab, chromium_available, lab_env, launch_browser, open_panel  # noqa: E402

END = "END-OF-REPLY."

RECORDER = """() => {
  const bench = { frames: [], longtasks: [], running: true };
  window.__bench = bench;
  const loop = t => { if (bench.running) { bench.frames.push(t); requestAnimationFrame(loop); } };
  requestAnimationFrame(loop);
  try {
    bench.observer = new PerformanceObserver(list => {
      for (const entry of list.getEntries()) bench.longtasks.push(entry.duration);
    });
    bench.observer.observe({ entryTypes: ['longtask'] });
  } catch (e) { bench.noLongtasks = true; }
  window.__ecaPanel.resetStats();
  bench.store0 = { ...window.__ecaPanel.store.stats };
  bench.t0 = performance.now();
}"""

COLLECT = """() => {
  const bench = window.__bench;
  bench.running = false;
  if (bench.observer) bench.observer.disconnect();
  const store = window.__ecaPanel.store.stats;
  return {
    ms: performance.now() - bench.t0,
    frames: bench.frames,
    longtasks: bench.longtasks,
    renders: { ...window.__ecaPanel.stats },
    contents: store.contents - bench.store0.contents,
    flushes: store.flushes - bench.store0.flushes,
  };
}"""


def words(chunks: int) -> list[str]:
    out = []
    for i in range(chunks - 1):
        piece = f"word{i} "
        if i % 60 == 59:
            piece += "\n\n"
        if i % 500 == 250:
            piece += f"\n\n```python\nprint('chunk {i}')\n```\n\n"
        out.append(piece)
    out.append(END)
    return out


def burst(chunks: int) -> Reply:
    return Reply([Text(piece) for piece in words(chunks)])


def paced(chunks: int, rate: float) -> Reply:
    steps: list = []
    batch = 20
    pause = batch / rate
    for index, piece in enumerate(words(chunks)):
        steps.append(Text(piece))
        if index % batch == batch - 1:
            steps.append(Delay(pause))
    return Reply(steps)


def frame_stats(frames: list[float]) -> dict[str, float]:
    intervals = [b - a for a, b in zip(frames, frames[1:], strict=False)]
    if len(intervals) < 2:
        return {"frames": len(frames), "p50": float("nan"), "p95": float("nan"), "max": float("nan")}
    ordered = sorted(intervals)
    return {
        "frames": len(frames),
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "max": ordered[-1],
    }


def run_stream(page, llm: ScriptedLLMServer, reply: Reply, label: str, timeout: float = 180.0) -> dict:
    page.locator(".eca-new-chat").click()
    llm.enqueue(reply)
    page.evaluate(RECORDER)
    box = page.locator(".eca-Composer-input")
    box.fill(f"stream {label}")
    box.press("Enter")
    page.wait_for_function(
        "end => { const items = document.querySelectorAll('.eca-Message.eca-mod-assistant');"
        " const last = items[items.length - 1]; return last && last.textContent.includes(end); }",
        arg=END, timeout=timeout * 1000, polling=100)
    page.locator(".eca-send").wait_for(timeout=timeout * 1000)
    page.wait_for_timeout(300)  # the final markdown render and a few idle frames
    result = page.evaluate(COLLECT)
    result["frame"] = frame_stats(result["frames"])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=1000.0, help="chunks per second in the paced run")
    args = parser.parse_args(argv)
    if not chromium_available():
        print("needs /usr/bin/chromium (apt-get install -y chromium)", file=sys.stderr)
        return 2

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "workspace"
        root.mkdir()
        llm = ScriptedLLMServer().start()
        lab = Lab(root=root, env=lab_env(Path(tmp) / "home", llm.url))
        try:
            lab.start()
            with sync_playwright() as playwright:
                browser = launch_browser(playwright, quick=False)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                open_panel(page, lab, workspace="bench")

                page.evaluate(RECORDER)
                page.wait_for_timeout(2000)
                idle = page.evaluate(COLLECT)
                idle_frames = frame_stats(idle["frames"])

                results = {
                    "burst": run_stream(page, llm, burst(args.chunks), "burst"),
                    "paced": run_stream(page, llm, paced(args.chunks, args.rate), "paced"),
                }
                browser.close()
        finally:
            lab.stop()
            llm.stop()

    print(f"panel streaming benchmark: {args.chunks} chunks per reply, Chromium headless, 127.0.0.1")
    print(f"  idle baseline: {idle_frames['frames']} frames in 2 s, interval p50 {idle_frames['p50']:.1f} ms, "
          f"p95 {idle_frames['p95']:.1f} ms, max {idle_frames['max']:.1f} ms")
    for name, r in results.items():
        f = r["frame"]
        renders = r["renders"]
        long = r["longtasks"]
        print(f"  {name}: {r['contents']} content notifications applied in {r['ms'] / 1000:.2f} s "
              f"({r['contents'] / (r['ms'] / 1000):.0f}/s)")
        print(f"    store flushes {r['flushes']}  |  React renders: panel {renders['panel']}, list {renders['list']}, "
              f"items {renders['items']}  |  markdown renders {renders['markdown']}")
        print(f"    frames {f['frames']}, interval p50 {f['p50']:.1f} ms, p95 {f['p95']:.1f} ms, max {f['max']:.1f} ms"
              f"  |  long tasks {len(long)} (total {sum(long):.0f} ms, max {max(long, default=0):.0f} ms)")
        chunks = max(1, args.chunks)
        print(f"    ratios: panel renders / chunk {renders['panel'] / chunks:.3f}, "
              f"item renders / chunk {renders['items'] / chunks:.3f}, "
              f"p95 frame interval vs idle {f['p95'] / idle_frames['p95']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Inline completion in a notebook cell, in the browser: time from the keystroke pause to the ghost text, and requests
made while typing.

The panel half of the inline-completion benchmark (issue #16). A real ``jupyter lab`` (the repository's server and
lab extensions, isolated dirs, tests/panel/_lab.py) with a notebook open next to the ECA panel, in Debian's headless
Chromium; the scripted LLM server plays the model, answering each suggestion after a fixed delay (``--model-ms``).
Times are taken in the page with ``performance.now()``:

  (1) latency, ``--rounds`` times: cell 2's text is set to ``x_<r> = su`` (cursor at its end, after 400 ms of
      settling), then Playwright presses ``m``. t0: the keydown (a capture listener on the document); t1: a
      MutationObserver sees the ghost text ``(prices)`` in the cell. Also read from the provider
      (``window.__ecaInline.timings``): when JupyterLab called its ``fetch`` (after its debouncer) and when the
      answer was ready. Reported:
        keystroke -> ghost text                 what the user waits
        keystroke -> fetch                      JupyterLab's debouncer (our default: 200 ms) and its handler
        fetch -> ghost text, minus model delay  the overhead — goal <= 30 ms p95 — in three parts:
          fetch -> request sent                   the context (preceding cells, cached kernel variables)
          request -> answer, minus model delay    the WebSocket, the engine, the scripted server's HTTP
          answer -> ghost text                    JupyterLab rendering the ghost text
  (2) requests vs keystrokes: a 200-character line typed into a fresh cell at each ``--typing-ms`` delay between keys
      (Playwright's real key events); reported: keystrokes, ``completion/inline`` requests sent, how many were
      cancelled (``$/cancelRequest``) by the next keystroke, answered, and the model calls the server made.

Nothing is asserted on time. Usage:
  python benchmarks/bench_inline_panel.py [--rounds 30] [--model-ms 100] [--typing-ms 40 120 250 400]
Needs /usr/bin/chromium (apt-get install chromium) and the built extension (extension/scripts/build.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._panel_lab import TIMEOUT_MS, notebook_lab, percentiles  # noqa: E402
from eca_notebook.testing.llm_server import Delay, Reply, ScriptedLLMServer, Text  # noqa: E402
from tests.panel._lab import chromium_available  # noqa: E402
from tests.panel.test_notebook_tools import run_cell, write_notebook  # noqa: E402
from tests.panel.test_panel import wait_until  # noqa: E402

NOTEBOOK = "inline.ipynb"
TAG = "<ECA_TAG>"
SUGGESTION = "(prices)"
SETTLE_MS = 400
LINE = ('report = sales.groupby(["region", "product"]).agg(total=("amounts", "sum"), mean=("price", "mean"), '
        'n=("id", "nunique")).sort_values("total", ascending=False).head(250).reset_index(drop=True).round(2)')

# Cell `index` of the visible notebook: its text set to `source`, the cursor at its end, its editor focused.
PREPARE = """({ index, source }) => {
  const notebook = window.__ecaInline.provider._options.notebooks.currentWidget.content;
  notebook.activeCellIndex = index;
  notebook.mode = 'edit';
  const cell = notebook.widgets[index];
  cell.model.sharedModel.setSource(source);
  const lines = source.split('\\n');
  cell.editor.setCursorPosition({ line: lines.length - 1, column: lines[lines.length - 1].length });
  cell.editor.focus();
}"""

# Arm the measurement: t0 at the next keydown, t1 when cell `index` shows the ghost text `expected`.
ARM = """({ index, expected, timeout }) => {
  const cell = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')[index];
  const state = window.__benchInline = { t0: null, t1: null, error: null };
  const onKey = () => { if (state.t0 === null) state.t0 = performance.now(); };
  document.addEventListener('keydown', onKey, true);
  const ghost = () => [...cell.querySelectorAll('.jp-GhostText')].some(node => node.textContent === expected);
  const observer = new MutationObserver(() => {
    if (state.t0 !== null && ghost()) {
      state.t1 = performance.now();
      observer.disconnect();
      document.removeEventListener('keydown', onKey, true);
    }
  });
  observer.observe(cell, { childList: true, subtree: true, characterData: true });
  setTimeout(() => { if (state.t1 === null) { state.error = 'timed out'; observer.disconnect(); } }, timeout);
}"""

RESULT = """() => {
  const state = window.__benchInline;
  const timings = window.__ecaInline.timings;
  const last = [...timings].reverse().find(t => t.outcome === 'suggestion' && t.fetched >= state.t0);
  return { t0: state.t0, t1: state.t1, fetched: last ? last.fetched : null, sent: last ? last.sent : null,
           answered: last ? last.answered : null };
}"""

STATS = "() => Object.assign({}, window.__ecaInline.stats)"


def measure_latency(page, llm: ScriptedLLMServer, rounds: int, model_ms: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"total": [], "debounce": [], "overhead": [], "context": [], "round_trip": [],
                                     "render": []}
    for r in range(rounds):
        prefix = f"x_{r} = su"
        llm.enqueue_when(f"{prefix}m{TAG}", Reply([Delay(model_ms / 1000), Text(SUGGESTION)]))
        page.evaluate(PREPARE, {"index": 1, "source": prefix})
        page.wait_for_timeout(SETTLE_MS)
        page.evaluate(ARM, {"index": 1, "expected": SUGGESTION, "timeout": TIMEOUT_MS})
        page.keyboard.press("m")
        page.wait_for_function("() => window.__benchInline.t1 !== null || window.__benchInline.error !== null",
                               timeout=TIMEOUT_MS)
        result = page.evaluate(RESULT)
        if result["t1"] is None or result["fetched"] is None:
            raise RuntimeError(f"round {r}: no ghost text ({result})")
        times["total"].append(result["t1"] - result["t0"])
        times["debounce"].append(result["fetched"] - result["t0"])
        times["overhead"].append(result["t1"] - result["fetched"] - model_ms)
        times["context"].append(result["sent"] - result["fetched"])
        times["round_trip"].append(result["answered"] - result["sent"] - model_ms)
        times["render"].append(result["t1"] - result["answered"])
        print(f"  round {r + 1}/{rounds}: keystroke -> ghost {times['total'][-1]:.1f} ms, "
              f"overhead {times['overhead'][-1]:.1f} ms", file=sys.stderr, flush=True)
        page.keyboard.press("Escape")  # dismiss the ghost text (the cell stays in edit mode)
    return times


def measure_typing(page, llm: ScriptedLLMServer, delay_ms: int, model_ms: int) -> dict[str, int]:
    llm.clear()
    llm.enqueue(*(Reply([Delay(model_ms / 1000), Text(" # done")]) for _ in range(len(LINE) + 10)))
    page.evaluate(PREPARE, {"index": 2, "source": ""})
    page.wait_for_timeout(SETTLE_MS)
    before = page.evaluate(STATS)
    page.keyboard.type(LINE, delay=delay_ms)
    page.wait_for_timeout(SETTLE_MS + model_ms + 1500)  # the last request is answered
    after = page.evaluate(STATS)
    typed = page.evaluate("""() => window.__ecaInline.provider._options.notebooks.currentWidget.content
        .widgets[2].model.sharedModel.getSource()""")
    if typed != LINE:
        print(f"warning: the line typed at {delay_ms} ms/key reads {typed!r}", file=sys.stderr)
    llm_calls = len([r for r in llm.requests if r.method == "POST"])
    llm.clear()
    return {"keystrokes": len(LINE), **{k: after[k] - before[k] for k in after}, "model_calls": llm_calls}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--model-ms", type=int, default=100, help="the scripted model's fixed delay per suggestion")
    parser.add_argument("--typing-ms", type=int, nargs="*", default=[40, 120, 250, 400],
                        help="delays between keystrokes when typing the 200-character line")
    args = parser.parse_args(argv)
    if not chromium_available():
        print("needs /usr/bin/chromium (apt-get install -y chromium)", file=sys.stderr)
        return 2

    def setup(root: Path) -> None:
        write_notebook(root / NOTEBOOK, "import math\nprices = [3.5, 4.25, 10.0]\nlabel = 'fruit'", "", "")

    with notebook_lab("bench-inline", NOTEBOOK, setup, inline_completion=True) as env:
        page = env.page
        run_cell(page, 0)  # live variables for the context, as in real use
        wait_until(lambda: "1" in page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-InputPrompt")
                   .first.inner_text(), timeout=60, message="the first cell to run")
        latency = measure_latency(page, env.llm, args.rounds, args.model_ms)
        typing = [(delay, measure_typing(page, env.llm, delay, args.model_ms)) for delay in args.typing_ms]

    stats = {key: percentiles(values) for key, values in latency.items()}
    print(f"inline completion benchmark: {args.rounds} rounds in a notebook cell open in JupyterLab, scripted model "
          f"delay {args.model_ms} ms, Chromium headless, 127.0.0.1; ms by performance.now() in the page")
    rows = [
        ("total", "keystroke -> ghost text"),
        ("debounce", "keystroke -> fetch (debouncer)"),
        ("overhead", "fetch -> ghost text - model delay (overhead)"),
        ("context", "    fetch -> request sent (context)"),
        ("round_trip", "    request -> answer - model delay (wire+engine)"),
        ("render", "    answer -> ghost text (JupyterLab render)"),
    ]
    print(f"  {'':50} {'p50':>9} {'p95':>9} {'max':>9}")
    for key, label in rows:
        s = stats[key]
        print(f"  {label:50} {s['p50']:9.1f} {s['p95']:9.1f} {s['max']:9.1f}")
    verdict = "met" if stats["overhead"]["p95"] <= 30 else "NOT met"
    print(f"  goal: overhead p95 <= 30 ms: {verdict}")
    print(f"requests while typing a {len(LINE)}-character line (debouncer 200 ms, model {args.model_ms} ms):")
    print(f"  {'ms/key':>7} {'keys':>6} {'requests':>9} {'cancelled':>10} {'answered':>9} {'shown':>6} "
          f"{'model calls':>12} {'requests/key':>13}")
    for delay, t in typing:
        print(f"  {delay:7d} {t['keystrokes']:6d} {t['requests']:9d} {t['cancelled']:10d} {t['answered']:9d} "
              f"{t['suggested']:6d} {t['model_calls']:12d} {t['requests'] / t['keystrokes']:13.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

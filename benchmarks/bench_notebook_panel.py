"""Applying an approved edit to an open notebook: time from approval to the cell showing the change in the browser.

The browser half of the notebook-tools benchmark (issue #14; ``bench_notebook_tools.py`` is the engine half). A real
``jupyter lab`` (the repository's server and lab extensions, isolated dirs, tests/panel/_lab.py) with a small notebook
open next to the ECA panel, in Debian's headless Chromium; the scripted LLM server plays the model. Every time is
taken in the page with ``performance.now()``, so Playwright's round trips to Python are not in it. Each round, in one
page and one run (so the ratios compare like with like on a loaded machine):

  (a) measured — a scripted ``eca__notebook_edit_cell`` of cell K. Once its tool card is waiting (and 300 ms of
      settling), the page takes t0 and clicks Approve itself (``element.click()`` in the same task); a
      MutationObserver on cell K takes t1 when the cell's CodeMirror lines read the new source. What lies between:
      the approval over the WebSocket, the engine running the tool, its ``notebook/applyEdit`` request back to the
      page, the panel applying it to the shared (Yjs) model, CodeMirror updating. Also reported: approval to the
      card showing ``done`` (the tool result back in the panel).
  (b) baseline, the same change without the assistant — in the same page, cell K's source set straight in
      JupyterLab's shared notebook model: ``cell.model.sharedModel.setSource(new)`` (one Yjs transaction, origin the
      cell, the route any front-end code takes; JupyterLab's Yjs↔CodeMirror binding then updates the editor). t0
      right before the call, t1 by the same MutationObserver. The cell model is reached through the panel's own
      notebook access object (``window.__ecaPanel.client._options.notebooks._tracker``, the INotebookTracker; the
      underscores are TypeScript-private only).
  (b2) for where the time goes — the panel's own ``notebook/applyEdit`` handler (``JupyterNotebookAccess.applyEdit``,
      a ``replace`` with ``expectedSource``, what (a) ends in) called directly in the page: (a) minus (b2) is the
      approval round trip through the server.
  (c) baseline, an approval without a notebook — a scripted ``eca__edit_file`` of a small file: t0 and the in-page
      click as in (a), t1 when its card shows ``done``.

Printed: p50 / p95 / max per measure, and the ratios (a)/(b), (a)/(b2) and (a)/(c) of the p50s (and p95s), plus
(a)'s card-done time over (c), the like-for-like approval round trip (the cell shows the edit before the tool's result
is back in the card). Nothing is asserted on time. Each round is a new chat: [notebook edit → file edit → a closing
text], then (b) and (b2), each after 300 ms of settling; the first round includes the page's first-use costs.

Usage: python benchmarks/bench_notebook_panel.py [--rounds 20] [--cells 6] [--cell 2]
Needs /usr/bin/chromium (apt-get install chromium) and the built extension (extension/scripts/build.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._panel_lab import TIMEOUT_MS, notebook_lab, percentiles  # noqa: E402
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text, ToolCall  # noqa: E402
from tests.panel._lab import chromium_available  # noqa: E402
from tests.panel.test_notebook_tools import write_notebook  # noqa: E402
from tests.panel.test_panel import send  # noqa: E402

NOTEBOOK = "bench.ipynb"
SMALL_FILE = "small.py"
SETTLE_MS = 300

# Shared page-side helpers: the visible notebook's cells, a cell's text as CodeMirror shows it (its lines; no
# innerText, so a check forces no layout), and a promise that resolves with t1 (performance.now()) once `done()`
# holds after a mutation under `root`.
HELPERS = """
  const cellsOf = () => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')];
  const shown = cell => [...cell.querySelectorAll('.cm-content .cm-line')]
      .map(line => line.textContent).join('\\n').replace(/\\u200b/g, '');
  const until = (root, done, options, timeout) => new Promise((resolve, reject) => {
    const observer = new MutationObserver(() => {
      if (done()) { const t1 = performance.now(); observer.disconnect(); clearTimeout(timer); resolve(t1); }
    });
    observer.observe(root, options);
    const timer = setTimeout(() => { observer.disconnect(); reject(new Error('timed out')); }, timeout);
  });
  const TEXT = { childList: true, subtree: true, characterData: true };
  const STATE = { childList: true, subtree: true, attributes: true, attributeFilter: ['data-tool-state'] };
"""

# (a) and (c): t0, then Approve clicked in the same task; t1 when the cell shows `source` (a) and t2 when the card is
# `done` (both, for (a); only the card for (c), where `index` is null).
APPROVE = """async ({ callId, index, source, timeout }) => {""" + HELPERS + """
  const card = `.eca-ToolCard[data-tool-call-id="${callId}"]`;
  const button = document.querySelector(`${card}[data-tool-state="waiting"] .eca-approve`);
  if (!button) throw new Error(`no waiting card ${callId}`);
  const panel = document.querySelector('#eca-chat-panel');
  const cardDone = until(panel, () => !!document.querySelector(`${card}[data-tool-state="done"]`), STATE, timeout);
  let cellShown = null;
  if (index !== null) {
    const cell = cellsOf()[index];
    cellShown = until(cell, () => shown(cell) === source, TEXT, timeout);
  }
  const t0 = performance.now();
  button.click();
  const t2 = await cardDone;
  const t1 = cellShown ? await cellShown : null;
  return { cell: t1 === null ? null : t1 - t0, card: t2 - t0 };
}"""

# (b) and (b2): the same change of cell `index`, made in the page without the assistant.
DIRECT = """async ({ index, source, how, timeout }) => {""" + HELPERS + """
  const access = window.__ecaPanel.client._options.notebooks;
  const notebook = access._tracker.currentWidget;
  const model = notebook.content.widgets[index].model;
  const cell = cellsOf()[index];
  const cellShown = until(cell, () => shown(cell) === source, TEXT, timeout);
  if (how === 'shared') {
    const t0 = performance.now();
    model.sharedModel.setSource(source);
    return (await cellShown) - t0;
  }
  const edit = { action: 'replace', cellId: model.id, expectedSource: model.sharedModel.getSource(), source };
  const t0 = performance.now();
  const result = await access.applyEdit({ path: notebook.context.path, edits: [edit] });
  if (!result.applied) throw new Error(`applyEdit refused: ${JSON.stringify(result)}`);
  return (await cellShown) - t0;
}"""


def cell_source(round_: int, tag: str) -> str:
    """A few lines, like a real cell, different for every round and measure."""
    return (f"# round {round_}: {tag}\n"
            f"totals_{round_} = {{region: sum(values) for region, values in sales.items()}}\n"
            f"share_{round_} = {{region: round(v / sum(totals_{round_}.values()), 2) "
            f"for region, v in totals_{round_}.items()}}\n"
            f"print(share_{round_})")


def card_in_state(page, call_id: str, state: str):
    page.locator(f'.eca-ToolCard[data-tool-call-id="{call_id}"][data-tool-state="{state}"]').wait_for(
        timeout=TIMEOUT_MS)


def run_rounds(page, llm: ScriptedLLMServer, ids: list[str], index: int, rounds: int, small: Path) -> dict:
    times: dict[str, list[float]] = {"a": [], "a_card": [], "b": [], "b2": [], "c": []}
    content = small.read_text().rstrip("\n")
    for r in range(rounds):
        new_content = f"value = {r + 1}"
        nb_source = cell_source(r, "assistant")
        llm.enqueue(
            Reply([Text(f"Editing cell {index}."),
                   ToolCall(f"nb-{r}", "eca__notebook_edit_cell",
                            json.dumps({"path": NOTEBOOK, "cell_id": ids[index], "source": nb_source}))]),
            Reply([ToolCall(f"file-{r}", "eca__edit_file",
                            json.dumps({"path": SMALL_FILE, "original_content": content,
                                        "new_content": new_content}))]),
            Reply([Text(f"Round {r} done.")]),
        )
        page.locator(".eca-new-chat").click()
        send(page, f"Round {r}: edit cell {index} of {NOTEBOOK}, then {SMALL_FILE}")

        card_in_state(page, f"nb-{r}", "waiting")
        page.wait_for_timeout(SETTLE_MS)
        a = page.evaluate(APPROVE, {"callId": f"nb-{r}", "index": index, "source": nb_source, "timeout": TIMEOUT_MS})
        times["a"].append(a["cell"])
        times["a_card"].append(a["card"])

        card_in_state(page, f"file-{r}", "waiting")
        page.wait_for_timeout(SETTLE_MS)
        c = page.evaluate(APPROVE, {"callId": f"file-{r}", "index": None, "source": None, "timeout": TIMEOUT_MS})
        times["c"].append(c["card"])
        content = new_content

        page.get_by_text(f"Round {r} done.").wait_for(timeout=TIMEOUT_MS)
        page.locator(".eca-send").wait_for(timeout=TIMEOUT_MS)  # Send, not Stop: the chat is idle
        for key, how in (("b", "shared"), ("b2", "applyEdit")):
            page.wait_for_timeout(SETTLE_MS)
            times[key].append(page.evaluate(DIRECT, {"index": index, "source": cell_source(r, how), "how": how,
                                                     "timeout": TIMEOUT_MS}))
        print(f"  round {r + 1}/{rounds}: a {a['cell']:.1f} ms, b {times['b'][-1]:.2f} ms, "
              f"b2 {times['b2'][-1]:.2f} ms, c {c['card']:.1f} ms", file=sys.stderr, flush=True)
    if llm.pending:
        print(f"warning: {llm.pending} scripted replies left unused", file=sys.stderr)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--cells", type=int, default=6, help="cells in the notebook (all visible)")
    parser.add_argument("--cell", type=int, default=2, help="the 0-based index of the cell edited")
    args = parser.parse_args(argv)
    if not chromium_available():
        print("needs /usr/bin/chromium (apt-get install -y chromium)", file=sys.stderr)
        return 2
    if not 0 <= args.cell < args.cells:
        parser.error("--cell must be an index into the notebook's --cells")

    ids: list[str] = []

    def setup(root: Path) -> None:
        ids.extend(write_notebook(root / NOTEBOOK, 'sales = {"north": [120, 3], "south": [80, 5], "east": [50, 7]}',
                                  *(f"step_{i} = {i} * 2\nprint(step_{i})" for i in range(1, args.cells))))
        (root / SMALL_FILE).write_text("value = 0\n")

    with notebook_lab("bench-notebook", NOTEBOOK, setup) as env:
        times = run_rounds(env.page, env.llm, ids, args.cell, args.rounds, env.root / SMALL_FILE)

    stats = {key: percentiles(values) for key, values in times.items()}
    print(f"notebook edit approval benchmark: {args.rounds} rounds, cell {args.cell} of a {args.cells}-cell notebook "
          f"open in JupyterLab, Chromium headless, 127.0.0.1; ms by performance.now() in the page")
    rows = [
        ("a", "(a) approve notebook_edit_cell -> cell shows it"),
        ("a_card", "    ... -> its card shows done"),
        ("b", "(b) sharedModel.setSource -> cell shows it"),
        ("b2", "(b2) panel's applyEdit, direct -> cell shows it"),
        ("c", "(c) approve edit_file -> its card shows done"),
    ]
    print(f"  {'':50} {'p50':>9} {'p95':>9} {'max':>9}")
    for key, label in rows:
        s = stats[key]
        print(f"  {label:50} {s['p50']:9.2f} {s['p95']:9.2f} {s['max']:9.2f}")

    def ratio(top: str, key: str, of: str) -> str:
        a, b = stats[top][of], stats[key][of]
        return f"{a / b:.1f}x" if b > 0 else "inf"

    for top, key, name in (("a", "b", "(a)/(b)"), ("a", "b2", "(a)/(b2)"), ("a", "c", "(a)/(c)"),
                           ("a_card", "c", "(a card done)/(c), like for like")):
        print(f"  ratio {name:34} p50 {ratio(top, key, 'p50'):>7}   p95 {ratio(top, key, 'p95'):>7}")
    print(f"  approval round trip through the server, p50 (a) - (b2): {stats['a']['p50'] - stats['b2']['p50']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every notebook in notebooks/ runs top to bottom in a real kernel (nbclient), and shows what it promises."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from traitlets.config import Config

from tests._kernels import ipc_dir, ipc_transport

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))


def outputs_text(nb) -> str:
    chunks = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            chunks.append(out.get("text", ""))
            for value in (out.get("data") or {}).values():
                chunks.append(value if isinstance(value, str) else "")
    return "\n".join(chunks)


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for module in MAGIC_NOTEBOOKS_REQUIRE.get(path.name, ()):  # notebook-door block, below
        pytest.importorskip(module)
    nb = nbformat.read(path, as_version=4)
    sockets = ipc_dir()
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                       config=Config(KernelManager=ipc_transport(sockets))).execute()
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    # a cell tagged "raises-exception" fails on purpose (nbclient runs on; e.g. the %eca fix demo)
    errors = [o for c in nb.cells if "raises-exception" not in c.get("metadata", {}).get("tags", [])
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    if path.name == "01-engine-tour.ipynb":
        text = outputs_text(nb)
        assert "def add(a, b):" in text
        assert "reasonStarted" in text and "progress" in text and "usage" in text
        assert "status='prompting'" in text  # Engine.prompt answers a typed ChatPromptResult
    # -- 04-batch-prompts.ipynb: the Python client (eca_notebook.client) -----------------------------------------
    if path.name == "04-batch-prompts.ipynb":
        check_batch_prompts(outputs_text(nb))
    # -- 08-batch-at-scale.ipynb: eca_notebook.batch, resumed on a LocalCluster, the estimate saying what it assumed
    if path.name == "08-batch-at-scale.ipynb":
        text = outputs_text(nb)
        assert "sent to the model this run: 2 — resumed from the store: 2" in text
        assert "4/4 · 2 resumed · " in text and "(this run $" in text  # the whole batch's cost, this run's beside
        assert "tool schemas ≈" in text and "(school/tutor, code; from the engine)" in text
    # -- 02, 03, 05, 06: the %eca notebooks (eca_notebook.notebook) ---------------------------------------------
    if path.name in MAGIC_NOTEBOOK_CHECKS:
        MAGIC_NOTEBOOK_CHECKS[path.name](nb)


def check_batch_prompts(text: str) -> None:
    """Notebook 04: a batch as a Markdown table with a tool call, a rejected write, a failed prompt; an allowed
    write with its diff; two prompts in flight at once; the async client streaming."""
    assert "| # | prompt | model | answer | tools | tokens | status |" in text
    assert "| 2 | What is the total amount? | alpha/demo | The total is **200**" in text
    assert "read_file (done)" in text and "write_file (rejected)" in text
    assert "HTTP 400: invalid request: unsupported parameter temperature |  |  | error |" in text
    assert "summary.md written: False" in text
    assert "write_file done" in text and "+Total: 200" in text
    assert "peak in flight: 2" in text
    assert "A pie chart of each region's share." in text
    assert "'Yes: same engine, same protocol.'" in text


# -- the %eca notebooks (eca_notebook.notebook) ---------------------------------------------------------------------
# Executed headless (nbclient sends allow_stdin=False), %eca waits and keeps each answer as Markdown in its cell.

MAGIC_NOTEBOOKS_REQUIRE = {"05-data-analysis.ipynb": ("pandas",), "09-plots-and-vision.ipynb": ("pandas", "matplotlib")}


def cell_text(nb, source_start: str, exact: bool = False) -> str:
    """The outputs of the first code cell whose source starts with (or, ``exact``, is) ``source_start``."""
    for cell in nb.cells:
        matches = cell.source == source_start if exact else cell.source.startswith(source_start)
        if cell.cell_type == "code" and matches:
            # stream chunks are joined as they were printed (one print may arrive as several chunks)
            streams = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
            others = [o for o in cell.outputs if o.get("output_type") != "stream"]
            return streams + "\n" + outputs_text(nbformat.v4.new_notebook(cells=[{**cell, "outputs": others}]))
    raise AssertionError(f"no cell starting with {source_start!r}")


def check_quickstart(nb) -> None:
    ask = cell_text(nb, "%eca What is a Python list comprehension?")
    assert "A **list comprehension** builds a list" in ask and "158 tokens this session" in ask
    assert "<summary>Reasoning</summary>" in ask
    assert "Sorted descending: `[9, 6, 5, 4, 3, 2, 1, 1]`" in cell_text(nb, "%%eca")
    received = cell_text(nb, "if DEMO:\n    print(llm.requests")
    assert received.startswith("What is the median of @numbers?") and "### `numbers`\ntype: list\nlen: 8" in received
    assert "def median(values):" in cell_text(nb, "%eca -o code")
    chats = cell_text(nb, "%eca chats")
    assert "| ▶ |" in chats and "What is a Python list comprehension?" in chats
    assert "Started a new chat" in cell_text(nb, "%eca new", exact=True)
    assert "**demo/model** (selected)" in cell_text(nb, "%eca model", exact=True)
    assert "Selected model: demo/model" in cell_text(nb, "%eca /doctor")
    assert "Subcommands:" in cell_text(nb, "%eca help")


def check_tools_and_approvals(nb) -> None:
    read = cell_text(nb, "%eca What does greet.py do?")
    assert "**Tool `read_file`** — Reading file \"greet.py\" · *done*" in read
    refused = cell_text(nb, "%eca Make greet()")
    assert "**Tool `edit_file`** — Editing file \"greet.py\" · *rejected*" in refused
    assert "-    return \"Hello, \" + name\n+    return f\"Hello, {name}!\"" in refused
    files = ["".join(o.get("text", "") for o in c.outputs) for c in nb.cells
             if c.source == 'print(open("greet.py").read())']
    assert files == ['def greet(name):\n    return "Hello, " + name\n\n',
                     'def greet(name):\n    return f"Hello, {name}!"\n\n']
    approved = cell_text(nb, "%eca -y -w Make greet()")
    assert "*done*" in approved and "Replaced 1 occurrence" in approved
    computed = cell_text(nb, "%eca -y -w What is the average")
    assert "scores: dict (len=3" in computed and "Out: 91.33" in computed
    assert "91.33333" in cell_text(nb, "average  #")


def check_data_analysis(nb) -> None:
    assert "**north** sells the most" in cell_text(nb, "%eca -w Which region")
    received = cell_text(nb, "if DEMO:\n    print(llm.requests[-1].body[\"messages\"][-1][\"content\"])")
    assert "shape: (8, 3) (rows, columns)" in received and "sales      int64" in received and "head(5):" in received
    computed = cell_text(nb, "%eca -y -w How did each region")
    assert "**Tool `inspect_variable`** — Inspecting df · *done*" in computed
    assert "north    120  140      20" in computed
    assert "change" in cell_text(nb, "growth")
    assert "The column is called **`sales`**" in cell_text(nb, "%eca -w fix")
    sent = cell_text(nb, "if DEMO:\n    print(llm.requests[-1].body[\"messages\"][-1][\"content\"][:600])")
    assert "raised the exception below" in sent and 'df.groupby("region")["sale"].sum()' in sent


def check_configuring_a_provider(nb) -> None:
    config = cell_text(nb, "%eca config")
    assert "/.eca/config.json`: applied" in config and "- model: `llamacpp/qwen3`" in config
    assert "`run_python`" in config
    assert "I am **qwen3**" in cell_text(nb, "%eca -w Hello!")
    assert "/v1/chat/completions model: qwen3" in cell_text(nb, "request = llamacpp")
    models = cell_text(nb, "%eca model", exact=True)
    assert "- **llamacpp/qwen3** (selected)" in models and "- hosted/big-model" in models
    assert "Model: hosted/big-model" in cell_text(nb, "%eca model hosted/big-model")
    assert "Answered by **big-model**" in cell_text(nb, "%eca -n -w Who answers now?")
    assert "the key was sent: True" in cell_text(nb, "auth = ")
    doctor = cell_text(nb, "%eca /doctor")
    assert "key sk-…cdef from config" in doctor and "sk-demo-0123456789abcdef" not in outputs_text(nb)


def check_fix_a_notebook(nb) -> None:
    """Notebook 07: %eca in one notebook reads, runs, fixes and re-runs another notebook on disk; it stays valid;
    %eca undo restores it."""
    fixed = cell_text(nb, "%eca -y -w Make analysis.ipynb")
    assert "**Tool `notebook_read`** — Reading notebook \"analysis.ipynb\" · *done*" in fixed
    assert "**Tool `notebook_run_cells`** — Running cells 1, 2, 3 of \"analysis.ipynb\" · *failed*" in fixed
    assert "[error] KeyError: 'west'" in fixed
    assert "-share = {region: sales[region] / sales[\"west\"] for region in sales}" in fixed
    assert "+share = {region: round(sales[region] / total, 2) for region in sales}" in fixed
    assert "written to the .ipynb file (validated with nbformat, replaced atomically)" in fixed
    assert "[stdout] {'north': 0.48, 'south': 0.32, 'east': 0.2}" in fixed
    assert "WARNING" not in fixed  # the kernel of its own does not talk into the user's cell
    saved = cell_text(nb, "saved = nbformat.read")
    assert "outputs: {'north': 0.48, 'south': 0.32, 'east': 0.2}" in saved
    assert "written by: notebook_edit_cell in tool call edit-1" in saved
    assert "Undone: analysis.ipynb is back as it was before this change" in cell_text(nb, "%eca undo", exact=True)
    assert 'sales["west"]' in cell_text(nb, 'print(nbformat.read("analysis.ipynb"')


def check_plots_and_vision(nb) -> None:
    """Notebook 09: `%eca @fig` sends the zig-zag chart to the (scripted, seeing) model as a PNG image part."""
    assert "zig-zags back and forth" in cell_text(nb, "%eca -w What is wrong")
    received = cell_text(nb, "if DEMO:\n    parts =")
    assert "image part: data:image/png;base64," in received
    assert "text part: What is wrong with this chart? @fig" in received


MAGIC_NOTEBOOK_CHECKS = {
    "09-plots-and-vision.ipynb": check_plots_and_vision,
    "07-fix-a-notebook.ipynb": check_fix_a_notebook,
    "02-quickstart.ipynb": check_quickstart,
    "03-tools-and-approvals.ipynb": check_tools_and_approvals,
    "05-data-analysis.ipynb": check_data_analysis,
    "06-configuring-a-provider.ipynb": check_configuring_a_provider,
}

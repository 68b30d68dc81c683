"""A notebook attached for a small model: which cells it is shown for which question, and how."""

from __future__ import annotations

from pathlib import Path

from eca_notebook.engine.contexts._notebook_focus import render_notebook_focus

from ..turn.test_small_model import ERROR_CELL, write_large_notebook


def focus(path: Path, question: str) -> str:
    block = render_notebook_focus(path.name, path, question)
    assert block is not None
    return block.body


def test_each_question_gets_the_cells_it_is_about(tmp_path: Path):
    path = tmp_path / "analysis.ipynb"
    write_large_notebook(path)
    # a name the notebook defines: the cell that defines it, its output as text
    plot = focus(path, "Plot the distribution of the first numeric column of df.")
    assert 'Cell 2 (In [1]):\n```python\nimport pandas as pd\ndf = pd.DataFrame(' in plot
    assert ERROR_CELL not in plot and "value_3" not in plot
    # an error: the cell that raised, its traceback fenced, without colours
    fix = focus(path, "Why doesn't this work?")
    assert "Cell 63 (In [62]) raised KeyError:" in fix and "\x1b[" not in fix and "Cell 2 " not in fix
    # an error and a name: both, in notebook order
    both = focus(path, "Fix the error with df")
    assert both.index("Cell 2 ") < both.index("Cell 63 ")
    # the notebook itself: its introduction, no cell
    about = focus(path, "What does this notebook do?")
    assert "Loads the quarterly sales table" in about and "Cell " not in about
    # anything else: one line, nothing of it
    other = focus(path, "Write a Python function is_prime(n).")
    assert other.startswith("Notebook analysis.ipynb (63 cells") and "None of its cells is shown" in other


def test_what_is_not_a_notebook_is_attached_the_usual_way(tmp_path: Path):
    path = tmp_path / "broken.ipynb"
    path.write_text("{not json")
    assert render_notebook_focus(path.name, path, "What does this do?") is None

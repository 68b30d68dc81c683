"""A notebook attached for a small model: the cells the question is about, not the whole notebook.

Why: the panel attaches the active notebook to every prompt. Rendered whole (up to 6 KB for a small model), it
drowned the embedded 135M model: with ``notebooks/05-data-analysis.ipynb`` open, "What does this notebook do?"
answered about "markdown prefixes" after 22 s, and "My last cell raises an error. Explain it and fix it." never saw
the traceback (issue #30). So a small model gets a focused view instead (:func:`render_notebook_focus`):

* a request about an error ("raises", "fix", "traceback", "doesn't work" …) gets the cell that raised last, with
  its source and its traceback (ANSI colours removed, the middle of a long one left out);
* a request naming something the notebook defines (``df``, ``is_prime``) gets the cell that defines it last;
* a request about the notebook itself ("this notebook", "what does this do") gets its introduction and headings;
* anything else gets one line saying which notebook is open, and nothing of it.

Cells are numbered from 1, as JupyterLab shows them. Whatever is chosen, the request's token budget still applies
(``_context_window.ContextKeeper``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ...protocol import JsonObject
from ._blocks import NOTEBOOK_MAX_BYTES, Block
from ._files import _joined, _output_summary, _short

__all__ = ["render_notebook_focus"]

_ERROR_WORDS = re.compile(
    r"\b(?:errors?|exceptions?|traceback|raises?|raising|raised|fails?|failing|failed|fix(?:es)?|bugs?|broken"
    r"|crash(?:es|ed)?|wrong|(?:does|did|is)n'?t\s+(?:\w+\s+)?work(?:ing)?|not\s+working)\b", re.IGNORECASE)
_ABOUT_NOTEBOOK = re.compile(r"\b(?:notebook|this|these|here|above|it)\b", re.IGNORECASE)
_NAME = re.compile(r"[A-Za-z_]\w*")
_DEFINED = re.compile(r"^\s*(?:def|class)\s+([A-Za-z_]\w*)|^\s*([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)"
                      r"|^\s*import\s+\S+\s+as\s+([A-Za-z_]\w*)", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_INTRO_CHARS = 500
_SOURCE_CHARS = 1_500
_TRACEBACK_HEAD = 10  # lines at most: the cell's own frame comes first
_TRACEBACK_TAIL = 3  # and the exception itself last
_MAX_FOCUS = 2


def render_notebook_focus(raw: str, path: Path, request: str) -> Block | None:
    """The notebook at ``path`` (attached as ``raw``) as the cells ``request`` is about; None when it is not a
    readable notebook (it is then attached the usual way)."""
    try:
        if path.stat().st_size > NOTEBOOK_MAX_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return None
    cells = [c for c in cells if isinstance(c, dict)]
    chosen = _focus(cells, request)
    parts = [f"Notebook {path.name} ({len(cells)} cells, numbered from 1 as in JupyterLab)."]
    if not chosen and _ABOUT_NOTEBOOK.search(request):
        parts += _overview(cells)
    elif not chosen:
        parts.append("(None of its cells is shown: the question is not about them.)")
    language = ((data.get("metadata") or {}).get("kernelspec") or {}).get("language") or "python"
    for index in chosen:
        parts.append(_cell(index, cells[index], str(language)))
    return Block("file", {"path": path, "format": "notebook"}, "\n".join(parts) + "\n",
                 more_hint="use the read_file tool for the whole notebook")


def _focus(cells: list[JsonObject], request: str) -> list[int]:
    """The cells to show, in notebook order: the error, then the definitions the request names."""
    chosen: list[int] = []
    if _ERROR_WORDS.search(request):
        failed = [i for i, c in enumerate(cells) if _error(c) is not None]
        if failed:  # the one run last (the highest execution count), else the last in the notebook
            chosen.append(max(failed, key=lambda i: (cells[i].get("execution_count") or 0, i)))
    words = set(_NAME.findall(request))
    for name in sorted(words, key=request.find):
        if len(chosen) >= _MAX_FOCUS:
            break
        defining = [i for i, c in enumerate(cells) if c.get("cell_type") == "code" and name in _defined(c)]
        if defining and defining[-1] not in chosen:
            chosen.append(defining[-1])
    return sorted(chosen)


def _defined(cell: JsonObject) -> set[str]:
    return {next(g for g in m.groups() if g) for m in _DEFINED.finditer(_joined(cell.get("source")))}


def _outputs(cell: JsonObject) -> list[JsonObject]:
    """The cell's outputs that are objects (a file anyone may have written: anything else is left out)."""
    outputs = cell.get("outputs")
    return [o for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else []


def _error(cell: JsonObject) -> JsonObject | None:
    return next((o for o in _outputs(cell) if o.get("output_type") == "error"), None)


def _overview(cells: list[JsonObject]) -> list[str]:
    """The first markdown cell (its introduction, shortened) and every heading after it."""
    markdown = [_joined(c.get("source")).strip() for c in cells if c.get("cell_type") == "markdown"]
    if not markdown:
        return []
    intro = markdown[0]
    if len(intro) > _INTRO_CHARS:
        intro = intro[:_INTRO_CHARS].rsplit(" ", 1)[0] + " …"
    headings = [line.lstrip("#").strip() for text in markdown[1:] for line in text.splitlines()
                if line.startswith("#")]
    return [f"Introduction:\n{intro}"] + ([f"Sections: {' · '.join(headings)}"] if headings else [])


def _cell(index: int, cell: JsonObject, language: str) -> str:
    """A cell as Markdown — its source and outputs fenced, the way the small model was trained to read code."""
    kind = cell.get("cell_type", "code")
    count = cell.get("execution_count")
    error = _error(cell)
    head = f"Cell {index + 1}" + (f" (In [{count}])" if count else "")
    head += f" raised {error.get('ename', 'an error')}:" if error is not None else ":"
    source = _joined(cell.get("source")).rstrip("\n")
    if len(source) > _SOURCE_CHARS:
        source = source[:_SOURCE_CHARS] + f"\n[… {len(source) - _SOURCE_CHARS} more characters]"
    lines = [head, _fenced(source, language if kind == "code" else "markdown")]
    for output in _outputs(cell):
        if output is error:
            lines += ["Traceback:", _fenced(_traceback(output), "")]
        else:
            lines += ["Output:", _fenced(_output_text(output), "")]
    return "\n".join(lines)


def _output_text(output: JsonObject) -> str:
    """An output as its text (shortened); one without text by its types, e.g. ``(image/png)``."""
    if output.get("output_type") == "stream":
        return _short(_joined(output.get("text")))
    data = output.get("data")
    if not isinstance(data, dict):
        data = {}
    if "text/plain" in data:
        return _short(_joined(data["text/plain"]))
    return "(" + ", ".join(data) + ")" if data else _output_summary(output)


def _fenced(text: str, language: str) -> str:
    fence = "~~~" if "```" in text else "```"
    return f"{fence}{language}\n{text}\n{fence}"


def _traceback(error: JsonObject) -> str:
    """An error output as the user saw it, without colours; a long traceback keeps its start (the cell's own
    frame) and its end (the exception)."""
    frames_out = error.get("traceback")
    lines = [line for frame in (frames_out if isinstance(frames_out, list) else ())
             for line in _ANSI.sub("", str(frame)).splitlines()]
    lines = [line for line in lines if line.strip() and not set(line.strip()) <= {"-"}]
    if not lines:
        return f"{error.get('ename', 'Error')}: {error.get('evalue', '')}"
    # the head ends where the second frame starts: the first is the cell's own (``Cell In[9], line 1``)
    frames = [i for i, line in enumerate(lines) if line.startswith(("Cell ", "File ", "  File "))]
    head = min(_TRACEBACK_HEAD, frames[1] if len(frames) > 1 else _TRACEBACK_HEAD)
    if len(lines) > head + _TRACEBACK_TAIL + 1:
        left = len(lines) - head - _TRACEBACK_TAIL
        lines = [*lines[:head], f"[… {left} lines of the traceback left out …]", *lines[-_TRACEBACK_TAIL:]]
    last = f"{error.get('ename', 'Error')}: {error.get('evalue', '')}"
    if last not in lines[-1]:
        lines.append(last)
    return "\n".join(lines)

"""``%eca`` / ``%%eca``: the IPython magics, and the small input transformer that lets them not block.

A magic is a plain function call inside the cell's code, so it can neither return before its work is done *and*
keep the cell executing when it must (``set_next_input`` only reaches the executing cell; nbclient keeps only the
outputs a cell produces while it runs). In a kernel, a cell statement that is just ``%eca …`` is therefore
rewritten (an IPython post-input transformer) into ``await arun_magic(…)``: IPython runs it as an async cell on
the kernel's loop, and the session decides per prompt whether to return at once (the widget streams on) or to
wait. Everywhere else — no running loop, autoawait off, ``%eca`` nested in other code — the ordinary magic runs.

Importing this module is cheap (no engine, pydantic, httpx or ipywidgets): ``%load_ext eca_notebook`` stays fast;
the session and everything behind it is imported on the first ``%eca``.
"""

from __future__ import annotations

import ast
import asyncio
import re
import sys
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from ._parse import USAGE, UsageError, parse_magic

__all__ = ["EcaMagics", "arun_magic", "await_transformer", "current_session", "load", "question_transformer", "unload"]

MAGIC_NAME = "eca"
_CALLS = ("run_line_magic", "run_cell_magic")
_state: dict[str, Any] = {"session": None, "shell": None}


def current_session(create: bool = True) -> Any:
    """The session behind ``%eca`` in this kernel (``None`` before the extension is loaded)."""
    shell = _state["shell"]
    if _state["session"] is None and create and shell is not None:
        from ._session import NotebookSession

        _state["session"] = NotebookSession(shell)
    return _state["session"]


def _parse(line: str, cell: str | None) -> Any:
    try:
        return parse_magic(line, cell)
    except UsageError as exc:
        print(f"%eca: {exc}\n\n{USAGE}", file=sys.stderr)
        return None


@magics_class
class EcaMagics(Magics):
    @no_var_expand  # {expr} and $ are interpolated by the session, which leaves what does not resolve untouched
    @line_cell_magic
    def eca(self, line: str, cell: str | None = None) -> Any:
        """Ask the ECA assistant. ``%eca help`` for the options."""
        request = _parse(line, cell)
        if request is None:
            return None
        return current_session().run(request)


async def arun_magic(line: str, cell: str | None = None) -> Any:
    """What a top-level ``%eca`` statement becomes in a kernel (see the module docstring)."""
    request = _parse(line, cell)
    if request is None:
        return None
    return await current_session().arun(request)


def _is_eca_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.func.attr not in _CALLS:
        return False
    owner = node.func.value
    if not (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "get_ipython"):
        return False
    args = node.args
    return (bool(args) and isinstance(args[0], ast.Constant) and args[0].value == MAGIC_NAME
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args) and not node.keywords)


def _can_await(shell: Any) -> bool:
    if not getattr(shell, "autoawait", False):
        return False
    try:
        from IPython.core.async_helpers import _asyncio_runner
    except ImportError:
        return False
    if getattr(shell, "loop_runner", None) is not _asyncio_runner:
        return False
    try:
        asyncio.get_running_loop()  # the kernel transforms cells inside its execute coroutine
    except RuntimeError:
        return False  # a terminal IPython transforms with no loop running: the blocking magic is right there
    return True


def await_transformer(lines: list[str]) -> list[str]:
    """Rewrite top-level ``%eca`` statements (already turned into ``get_ipython().run_*_magic('eca', …)``) into
    awaited :func:`arun_magic` calls; every other line is left exactly as it was."""
    if not any(f"_magic('{MAGIC_NAME}'" in line for line in lines) or not _can_await(_state["shell"]):
        return lines
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return lines
    replacements: dict[int, tuple[int, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and node.col_offset == 0 and _is_eca_call(node.value):
            call = node.value
            assert isinstance(call, ast.Call)
            args = [a.value for a in call.args[1:]]  # type: ignore[attr-defined]
            line, cell = (args + [None, None])[:2]
            text = (f"await __import__({__name__!r}, fromlist=['arun_magic']).arun_magic({line!r}, {cell!r})\n")
            replacements[node.lineno - 1] = (node.end_lineno or node.lineno, text)
    if not replacements:
        return lines
    out: list[str] = []
    index = 0
    while index < len(lines):
        if index in replacements:
            end, text = replacements[index]
            out.append(text)
            index = end
        else:
            out.append(lines[index])
            index += 1
    return out


_LINE_MAGIC = re.compile(r"^([ \t]*)%" + MAGIC_NAME + r"(?=[ \t]|$)[ \t]*(.*?)[ \t]*$")


def question_transformer(lines: list[str]) -> list[str]:
    """Turn ``%eca …`` lines into the magic call *before* IPython's help syntax sees them: a question ending in
    ``?`` (``%eca what is df?``) must reach the model, not become ``df?`` (object help) and drop the rest."""
    first = next((line for line in lines if line.strip()), "")
    if first.lstrip().startswith("%%") or not any(f"%{MAGIC_NAME}" in line for line in lines):
        return lines
    out = []
    for line in lines:
        body = line.rstrip("\r\n")
        match = _LINE_MAGIC.match(body)
        if match is None:
            out.append(line)
            continue
        indent, rest = match.group(1), match.group(2)
        out.append(f"{indent}get_ipython().run_line_magic({MAGIC_NAME!r}, {rest!r})" + line[len(body):])
    return out


def load(ipython: Any) -> None:
    _state["shell"] = ipython
    ipython.register_magics(EcaMagics)
    if question_transformer not in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.append(question_transformer)
    if await_transformer not in ipython.input_transformers_post:
        ipython.input_transformers_post.append(await_transformer)
    if _state.get("session") is None:
        from ._warm import warm_up_after_this_cell

        warm_up_after_this_cell(ipython)


def unload(ipython: Any) -> None:
    for transformers, transformer in ((getattr(ipython, "input_transformers_post", []), await_transformer),
                                      (getattr(ipython, "input_transformers_cleanup", []), question_transformer)):
        if transformer in transformers:
            transformers.remove(transformer)
    session, _state["session"] = _state["session"], None
    if session is not None:
        session.close()
    magics = ipython.magics_manager.magics
    for kind in ("line", "cell"):
        magics[kind].pop(MAGIC_NAME, None)
    _state["shell"] = None

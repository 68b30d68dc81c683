"""`make lab` installs what the shipped notebooks import: it opens JupyterLab on notebooks/, and a user who runs one
there must not meet a ModuleNotFoundError (05 needs pandas, 08 Dask — the lab venv once had neither).

Read from the Makefile's install line and the installed package's metadata: every third-party module a notebook's
code imports must come from a distribution that the extras `make lab` installs require, directly or through their
own requirements."""

from __future__ import annotations

import ast
import json
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
#: our subpackages that need an extra of their own (pyproject's optional-dependencies say what each brings)
EXTRA_OF = {"eca_notebook.batch": "batch", "eca_notebook.notebook": "notebook", "eca_notebook.jupyter_ai": "jupyter-ai"}


def lab_extras() -> list[str]:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("$(VENV)/.lab-stamp:"):].split("\n\n", 1)[0]
    match = re.search(r"install -e '\.\[([\w,-]+)\]'", recipe)
    assert match, recipe
    return match.group(1).split(",")


def notebook_imports() -> dict[str, set[str]]:
    """Top-level modules imported by the notebooks' code cells (magics and shell lines left out), per module."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            if source.lstrip().startswith("%%"):  # a cell magic: the rest is its input (e.g. a %%eca prompt)
                continue
            code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
            for node in ast.walk(ast.parse(code)):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                         else [])
                for name in names:  # eca_notebook's own subpackages whole: some need an extra (EXTRA_OF)
                    key = name if name.startswith("eca_notebook.") else name.split(".")[0]
                    found.setdefault(key, set()).add(path.name)
    return found


def installed_by(extras: list[str]) -> set[str]:
    """Distributions (normalised names) `pip install -e '.[extras]'` brings: the closure of their requirements."""
    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    todo = [(norm("eca-notebook"), frozenset(extras))]
    seen: set[str] = set()
    while todo:
        dist, wanted = todo.pop()
        key = f"{dist}[{','.join(sorted(wanted))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = metadata.requires(dist) or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted or {""}):
                todo.append((norm(req.name), frozenset(req.extras)))
    return {k.split("[")[0] for k in seen}


def installed_extras(extras: list[str]) -> set[str]:
    """Our extras that `extras` bring, including those they name (``lab`` names ``notebook`` and ``mcp``)."""
    out: set[str] = set()
    todo = list(extras)
    while todo:
        extra = todo.pop()
        if extra in out:
            continue
        out.add(extra)
        for line in metadata.requires("eca-notebook") or []:
            req = Requirement(line)
            if req.name == "eca-notebook" and req.marker is not None and req.marker.evaluate({"extra": extra}):
                todo.extend(req.extras)
    return out


def test_make_lab_installs_what_the_notebooks_import() -> None:
    extras = lab_extras()
    installed = installed_by(extras)
    providers = metadata.packages_distributions()
    missing = {}
    for module, notebooks in notebook_imports().items():
        if module.startswith("eca_notebook"):
            extra = next((e for sub, e in EXTRA_OF.items() if module == sub or module.startswith(sub + ".")), None)
            if extra is not None and extra not in installed_extras(extras):
                missing[module] = sorted(notebooks)
            continue
        if module in sys.stdlib_module_names:
            continue
        dists = {re.sub(r"[-_.]+", "-", d).lower() for d in providers.get(module, [])}
        assert dists, f"{module} (imported by {sorted(notebooks)}) is not installed here at all"
        if not dists & installed:
            missing[module] = sorted(notebooks)
    assert not missing, f"`make lab` (extras {extras}) does not install what these notebooks import: {missing}"

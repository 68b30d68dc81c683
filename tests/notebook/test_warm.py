"""The first ``%eca`` is warmed up while the user types it: the cell that loads the extension returns at once, and
the modules the first ``%eca`` needs are imported afterwards in the background (nothing is started)."""

from __future__ import annotations

import subprocess
import sys

from eca_notebook.notebook._warm import WARM_MODULES

_CODE = """
import sys, threading
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_cell('%load_ext eca_notebook')  # a whole cell: post_run_cell starts the warm-up
warm = [t for t in threading.enumerate() if t.name == 'eca-warm-up']
for t in warm:
    t.join(120)
from eca_notebook.notebook._magics import _state
print(len(warm), any(t.is_alive() for t in warm), _state['session'] is None)
print(sorted(m for m in MODULES if m not in sys.modules))
shell.run_cell('pass')
print(len([t for t in threading.enumerate() if t.name == 'eca-warm-up']))
"""


def test_load_ext_cell_warms_the_first_eca_up_in_the_background():
    code = f"MODULES = {list(WARM_MODULES)!r}\n" + _CODE
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    lines = out.stdout.strip().splitlines()
    assert lines[-3:] == ["1 False True", "[]", "0"], out.stdout + out.stderr


def test_warm_modules_exist():
    import importlib.util

    for name in WARM_MODULES:
        assert importlib.util.find_spec(name) is not None, name

"""Jupyter AI tests run in a venv of their own, ``.venv-jupyter-ai`` (``make test`` creates it): Jupyter AI 3.2 needs
mcp<2 and agent-client-protocol<0.12, which the main venv's extras exclude (see Makefile).

In the main venv only ``test_in_its_venv.py`` is collected: it runs this directory's other tests with that venv's
interpreter and fails with their output when one fails. In the Jupyter AI venv the tests run directly.
"""

from __future__ import annotations

import importlib.util

IN_JUPYTER_AI_VENV = importlib.util.find_spec("jupyter_ai_acp_client") is not None

collect_ignore_glob = (["test_in_its_venv.py"] if IN_JUPYTER_AI_VENV
                       else ["test_persona*.py", "test_server*.py", "test_browser*.py"])

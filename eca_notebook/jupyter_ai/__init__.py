"""eca-notebook inside Jupyter AI v3: the "ECA" persona of its chat (``pip install eca-notebook[jupyter-ai]``).

Jupyter AI finds personas through the ``jupyter_ai.personas`` entry point group; ours names
``eca_notebook.jupyter_ai._persona:EcaPersona``, a subclass of Jupyter AI's ``BaseAcpPersona`` that runs our ACP door
(``eca-notebook acp``) and lets Jupyter AI's own ACP client drive it: its chat shows our answers, tool calls and
diffs, asks the user for approvals, and hands every session its MCP servers (its notebook tools among them).

Layer 7 (a door). This module imports nothing from Jupyter AI — importing ``eca_notebook`` or this package never
does; only Jupyter AI loading the entry point imports ``_persona`` (which needs ``jupyter-ai-acp-client``).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["AVATAR", "DESCRIPTION", "NAME", "agent_command"]

#: The persona's name in Jupyter AI's chat: users mention it as ``@ECA``.
NAME = "ECA"
DESCRIPTION = ("eca-notebook: an AI code assistant that reads, edits and runs your workspace and notebooks, with "
               "every change shown as a diff for you to approve.")
#: The avatar Jupyter AI shows beside the persona's messages.
AVATAR = Path(__file__).parent / "static" / "eca.svg"


def agent_command() -> list[str]:
    """The ACP agent Jupyter AI starts: our door run by *this* interpreter, so the persona uses the environment
    Jupyter AI loaded it from — not whatever ``eca-notebook`` comes first on PATH (or none)."""
    return [sys.executable, "-m", "eca_notebook", "acp"]

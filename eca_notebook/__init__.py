"""eca-notebook: an AI code assistant for Jupyter that speaks the ECA protocol.

Importing this package is cheap on purpose: every door (stdio server, notebook magics, jupyter-server extension)
is imported lazily by the function that opens it, so ``import eca_notebook`` pulls in neither pydantic models nor
httpx nor anything from Jupyter.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

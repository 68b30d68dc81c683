"""Private implementation of :mod:`eca_notebook.client` (the public face): approval policies, results, the asyncio
client and its blocking twin."""

from __future__ import annotations

__all__: list[str] = []

"""The workspace file index: every file and directory of the workspace folders, for ``@``-completion
(``chat/queryContext``), the repo map and ``/repo-map-show``.

``_index`` holds :class:`WorkspaceIndex` (when it is built and refreshed, on a worker thread); ``_walk`` lists the
folders respecting ``.gitignore``; ``_snapshot`` is the immutable storage swapped whole; ``_rank`` scores a query's
matches; ``_map`` renders the repo map. It depends on nothing else in the engine.
"""

from __future__ import annotations

from ._index import WorkspaceIndex, _fold

__all__ = [
    "WorkspaceIndex",
    "_fold",
]

"""The results store: one JSON line per finished item, appended and fsync'd as each completes.

Why JSON Lines: appending one line is the smallest durable step — a crash (the kernel killed, the machine off) can
at worst leave a torn last line, which is ignored on the next open (and cut off before new lines are written), and
every complete line before it is a result that will never be paid for again. It is readable with ``pandas.read_json(
path, lines=True)`` or any text tool.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from ._models import ItemResult

__all__ = ["ResultStore"]

log = logging.getLogger(__name__)


class ResultStore:
    """An append-only JSON Lines file of :class:`ItemResult`, keyed by item id (the last line of an id wins).

    Only finished items are stored (``done`` and ``failed``); a rerun of the same batch skips the ids found here.
    ``retry_failed=True`` (in :func:`~eca_notebook.batch.batch`) sends failed ones again.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._results: dict[str, ItemResult] = {}
        self._torn = 0
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        good_end = 0
        with self.path.open("rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):  # a torn last line (the writer died mid-record)
                    self._torn += 1
                    break
                try:
                    result = ItemResult.model_validate_json(raw)
                except (ValidationError, ValueError):
                    log.warning("%s: skipping an unreadable line at byte %d", self.path, good_end)
                    good_end += len(raw)
                    continue
                self._results[result.id] = result
                good_end += len(raw)
        if self._torn:
            # cut the torn tail, so the next record starts on a line of its own
            with self.path.open("r+b") as fh:
                fh.truncate(good_end)
                fh.flush()
                os.fsync(fh.fileno())

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._results

    def __len__(self) -> int:
        return len(self._results)

    def __iter__(self) -> Iterator[ItemResult]:
        return iter(list(self._results.values()))

    def get(self, item_id: str) -> ItemResult | None:
        return self._results.get(item_id)

    def results(self) -> dict[str, ItemResult]:
        """Every stored result by id."""
        return dict(self._results)

    @property
    def torn_lines(self) -> int:
        """How many torn lines were dropped when the store was opened (0 or 1)."""
        return self._torn

    def append(self, result: ItemResult) -> None:
        """Write one result durably (flushed and fsync'd) before returning."""
        if result.status == "skipped":
            raise ValueError("skipped items are not stored: a rerun must send them")
        line = result.model_dump_json(exclude_none=True).encode() + b"\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("ab") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self._results[result.id] = result

    def __repr__(self) -> str:
        return f"ResultStore({str(self.path)!r}, {len(self)} results)"

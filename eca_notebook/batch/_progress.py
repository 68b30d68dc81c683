"""Progress of a batch as it runs: a widget in a notebook, a tqdm bar in a terminal, or your own callback.

Every reporter gets the same :class:`Totals` (items done and failed, tokens and cost so far — the whole batch's,
resumed items included, and this run's share — and the estimate made before the start), updated from the driver
as each result is written. Updates are throttled (a 10,000-item batch must not send 10,000 widget messages), and
the last one is always shown.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ._models import ItemResult

__all__ = ["CallbackProgress", "Progress", "Totals", "TqdmProgress", "WidgetProgress", "make_progress"]

_INTERVAL = 0.2  # seconds between two displayed updates


@dataclass
class Totals:
    """Where a batch stands. ``resumed``: items found in the results store (not sent again).

    ``tokens`` and ``cost`` are the whole batch's: what the resumed items used (read from their records in the
    store) plus what this run added (``run_tokens``, ``run_cost``) — rerun after a crash and the line still says
    what the batch has cost in all, with this run's share beside it. The budget is held against ``cost``.
    """

    total: int = 0
    resumed: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    run_tokens: int = 0
    run_cost: float = 0.0
    resumed_tokens: int = 0
    resumed_cost: float = 0.0
    estimated_cost: float | None = None
    stopped: str | None = None  # why the batch stopped early (the budget)

    @property
    def finished(self) -> int:
        return self.resumed + self.done + self.failed

    @property
    def tokens(self) -> int:
        """Tokens of the whole batch: the resumed items' and this run's."""
        return self.resumed_tokens + self.run_tokens

    @property
    def cost(self) -> float:
        """USD of the whole batch: the resumed items' and this run's."""
        return self.resumed_cost + self.run_cost

    def resume(self, result: ItemResult) -> None:
        """Count an item taken from the results store (not sent again): its usage and cost are the batch's."""
        self.resumed += 1
        self.resumed_tokens += result.tokens or 0
        self.resumed_cost += result.cost or 0.0

    def add(self, result: ItemResult) -> None:
        """Count a result of this run."""
        if result.status == "done":
            self.done += 1
        elif result.status == "failed":
            self.failed += 1
        else:
            self.skipped += 1
        self.run_tokens += result.tokens or 0
        self.run_cost += result.cost or 0.0

    def line(self) -> str:
        """One line: ``42/100 · 2 failed · 12,345 tokens · $0.0123 (est. $0.03)``; on a resumed batch the totals
        are the whole batch's and this run's share follows: ``100/100 · 58 resumed · 0 failed · 29,000 tokens ·
        $0.0290 (this run $0.0120, est. $0.0125)`` (the estimate is of this run's items)."""
        parts = [f"{self.finished}/{self.total}"]
        if self.resumed:
            parts.append(f"{self.resumed} resumed")
        parts.append(f"{self.failed} failed")
        parts.append(f"{self.tokens:,} tokens")
        cost = f"${self.cost:.4f}"
        notes = []
        if self.resumed:
            notes.append(f"this run ${self.run_cost:.4f}")
        if self.estimated_cost is not None:
            notes.append(f"est. ${self.estimated_cost:.4f}")
        if notes:
            cost += f" ({', '.join(notes)})"
        parts.append(cost)
        if self.stopped:
            parts.append(self.stopped)
        return " · ".join(parts)


class Progress:
    """A reporter: ``start`` once, ``update`` after each result, ``close`` at the end (also after an error)."""

    def start(self, totals: Totals) -> None:
        pass

    def update(self, totals: Totals, result: ItemResult | None) -> None:
        pass

    def close(self, totals: Totals) -> None:
        pass


class _Throttled(Progress):
    def __init__(self) -> None:
        self._last = 0.0

    def update(self, totals: Totals, result: ItemResult | None) -> None:
        now = time.monotonic()
        if now - self._last >= _INTERVAL:
            self._last = now
            self.show(totals)

    def show(self, totals: Totals) -> None:
        raise NotImplementedError


class TqdmProgress(_Throttled):
    """A tqdm bar (``tqdm.auto``: a terminal bar, or tqdm's own widget in a notebook) with the totals as postfix."""

    def __init__(self, file: Any = None) -> None:
        super().__init__()
        self.file = file
        self.bar: Any = None

    def start(self, totals: Totals) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=totals.total, initial=totals.resumed, unit="item", desc="eca batch",
                        file=self.file if self.file is not None else sys.stderr, dynamic_ncols=True)
        self.show(totals)

    def show(self, totals: Totals) -> None:
        if self.bar is None:
            return
        self.bar.n = totals.finished
        self.bar.set_postfix_str(totals.line().split(" · ", 1)[1], refresh=False)
        self.bar.refresh()

    def close(self, totals: Totals) -> None:
        if self.bar is not None:
            self.show(totals)
            self.bar.close()


class WidgetProgress(_Throttled):
    """An ipywidgets bar and a line of totals, displayed in the notebook cell that runs the batch."""

    def __init__(self) -> None:
        super().__init__()
        self.bar: Any = None
        self.label: Any = None

    def start(self, totals: Totals) -> None:
        import ipywidgets
        from IPython import display as ipython_display

        show: Any = ipython_display.display
        self.bar = ipywidgets.IntProgress(min=0, max=max(1, totals.total), value=totals.finished,
                                          description="eca batch", bar_style="info")
        self.label = ipywidgets.HTML(value=totals.line())
        show(ipywidgets.HBox([self.bar, self.label]))

    def show(self, totals: Totals) -> None:
        if self.bar is None:
            return
        self.bar.value = totals.finished
        self.label.value = totals.line()

    def close(self, totals: Totals) -> None:
        self.show(totals)
        if self.bar is not None:
            self.bar.bar_style = "danger" if totals.failed or totals.stopped else "success"


class CallbackProgress(_Throttled):
    """Calls ``callback(totals)`` (a copy) at most every 0.2 s and once at the end."""

    def __init__(self, callback: Callable[[Totals], Any]) -> None:
        super().__init__()
        self.callback = callback

    def start(self, totals: Totals) -> None:
        self.show(totals)

    def show(self, totals: Totals) -> None:
        self.callback(replace(totals))

    def close(self, totals: Totals) -> None:
        self.show(totals)


def _in_kernel() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except Exception:
        return False
    return ip is not None and getattr(ip, "kernel", None) is not None


def make_progress(progress: Any) -> Progress | None:
    """``None``/``False``: none. ``True``/``"auto"``: a widget in a Jupyter kernel, else tqdm on stderr (when
    installed). ``"widget"``/``"tqdm"``: that one. A :class:`Progress`: itself. A callable:
    :class:`CallbackProgress`."""
    if progress is None or progress is False:
        return None
    if isinstance(progress, Progress):
        return progress
    if progress is True or progress == "auto":
        if _in_kernel():
            try:
                import ipywidgets  # noqa: F401
            except ImportError:
                pass
            else:
                return WidgetProgress()
        try:
            import tqdm  # noqa: F401
        except ImportError:
            return None
        return TqdmProgress()
    if progress == "widget":
        return WidgetProgress()
    if progress == "tqdm":
        return TqdmProgress()
    if callable(progress):
        return CallbackProgress(progress)
    raise TypeError(f"progress must be True, 'auto', 'widget', 'tqdm', a callable or a Progress, not {progress!r}")

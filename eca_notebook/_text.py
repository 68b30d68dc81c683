"""Small text helpers shared by every layer (a leaf module: imports nothing from the package)."""

from __future__ import annotations

__all__ = ["human_size"]


def human_size(n: int) -> str:
    """812 B, 50 KB, 3.2 MB."""
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KB", "MB", "GB", "TB"):
        size /= 1024
        if size < 1024 or unit == "TB":
            break
    text = f"{size:.0f}" if size >= 10 else f"{size:.1f}".removesuffix(".0")
    return f"{text} {unit}"

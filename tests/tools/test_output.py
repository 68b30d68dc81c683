from __future__ import annotations

from eca_notebook._text import human_size
from eca_notebook.tools._output import truncate_for_llm


def test_short_text_is_untouched() -> None:
    assert truncate_for_llm("a\nb\n", 10, 100) == "a\nb\n"


def test_line_limit_keeps_head_with_note() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    out = truncate_for_llm(text, 3, 10_000, hint="use line_offset/limit")
    assert out == (
        "line 0\nline 1\nline 2\n\n"
        f"[output truncated: showing 3 of 100 lines / 21 B of {human_size(len(text))}; use line_offset/limit]"
    )


def test_byte_limit_cuts_at_line_boundary() -> None:
    out = truncate_for_llm("aaaa\nbbbb\ncccc\n", 100, 12)
    assert out.startswith("aaaa\nbbbb\n\n[output truncated: showing 2 of 3 lines / 10 B of 15 B;")


def test_single_long_line_is_cut_without_splitting_characters() -> None:
    out = truncate_for_llm("é" * 100, 10, 11)  # 2 bytes each: 5 fit
    head, note = out.split("\n\n")
    assert head == "é" * 5
    assert "showing 1 of 1 lines / 10 B of 200 B" in note


def test_totals_of_an_already_cut_capture_are_reported() -> None:
    out = truncate_for_llm("a\nb\n", 10, 100, total_lines=5000, total_bytes=3 * 1024 * 1024 + 200 * 1024)
    assert out == ("a\nb\n\n[output truncated: showing 2 of 5000 lines / 4 B of 3.2 MB; "
                   "use line_offset/limit or a narrower pattern]")


def test_human_size() -> None:
    assert [human_size(n) for n in (0, 812, 1024, 50 * 1024, 1536, 3 * 1024 * 1024)] == [
        "0 B", "812 B", "1 KB", "50 KB", "1.5 KB", "3 MB",
    ]  # fmt: skip

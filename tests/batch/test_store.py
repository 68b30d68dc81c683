"""ResultStore: durable append, keyed by id, a torn last line dropped and cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from eca_notebook.batch import ItemResult, ResultStore


def result(i: int, status: str = "done") -> ItemResult:
    return ItemResult(id=f"id-{i}", prompt=f"p{i}", status=status, text=f"t{i}")  # type: ignore[arg-type]


def test_append_reopen_and_last_line_of_an_id_wins(tmp_path: Path):
    store = ResultStore(tmp_path / "r.jsonl")
    store.append(result(1, "failed"))
    store.append(result(2))
    store.append(result(1))
    again = ResultStore(tmp_path / "r.jsonl")
    assert len(again) == 2 and again.get("id-1").status == "done"  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        store.append(result(3, "skipped"))


def test_a_torn_last_line_is_ignored_and_cut_before_new_records(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    store = ResultStore(path)
    store.append(result(1))
    store.append(result(2))
    with path.open("ab") as fh:
        fh.write(result(3).model_dump_json().encode()[:25])  # the writer died mid-record
    reopened = ResultStore(path)
    assert sorted(r.id for r in reopened) == ["id-1", "id-2"] and reopened.torn_lines == 1
    reopened.append(result(4))
    assert sorted(r.id for r in ResultStore(path)) == ["id-1", "id-2", "id-4"]
    assert all(line.startswith("{") for line in path.read_text().splitlines())

"""The notebook document rules both backends follow (``tools/_notebook_doc.py``): each edit action, all-or-nothing
application, stale edits refused, ids for old notebooks, and undo (``inverse_edits``) restoring a notebook exactly —
also over random edit sequences (hypothesis)."""

from __future__ import annotations

import copy
import json
from typing import Any

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eca_notebook.protocol import NotebookCellEdit
from eca_notebook.tools._notebook_doc import (
    EditRefused,
    apply_edits,
    cell_views,
    ensure_ids,
    inverse_edits,
    new_cell_id,
)

STREAM = {"output_type": "stream", "name": "stdout", "text": "10\n"}
RESULT = {"output_type": "execute_result", "execution_count": 2, "metadata": {}, "data": {"text/plain": "42"}}


def notebook(*cells: dict[str, Any]) -> dict[str, Any]:
    """A 4.5 notebook as plain JSON (what the file backend works on)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.from_dict(c) for c in cells]
    return json.loads(json.dumps(nb))


def code(cell_id: str, source: str, outputs: list[dict[str, Any]] | None = None, count: int | None = None,
         **metadata: Any) -> dict[str, Any]:
    return {"id": cell_id, "cell_type": "code", "metadata": metadata, "source": source, "execution_count": count,
            "outputs": outputs or []}


def markdown(cell_id: str, source: str, **metadata: Any) -> dict[str, Any]:
    return {"id": cell_id, "cell_type": "markdown", "metadata": metadata, "source": source}


def sample() -> dict[str, Any]:
    return notebook(markdown("m1", "# Title", tags=["intro"]),
                    code("c1", "x = 10\nprint(x)", [STREAM], 1, collapsed=False),
                    code("c2", "x * 4.2", [RESULT], 2),
                    {"id": "r1", "cell_type": "raw", "metadata": {}, "source": "raw text"})


def cells_of(nb: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cell whole, with list sources joined: what "the same notebook" means for an undo."""
    out = []
    for cell in nb["cells"]:
        cell = copy.deepcopy(cell)
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
        out.append(cell)
    return out


def ids(nb: dict[str, Any]) -> list[str]:
    return [c["id"] for c in nb["cells"]]


def edit(action: str, **fields: Any) -> NotebookCellEdit:
    return NotebookCellEdit(action=action, **fields)  # type: ignore[arg-type]


def assert_valid(nb: dict[str, Any]) -> None:
    nbformat.validate(nbformat.from_dict(nb))


# -- each action --------------------------------------------------------------------------------------------------


def test_replace_sets_the_source_and_leaves_the_rest_alone() -> None:
    nb = sample()
    before = copy.deepcopy(nb)
    new = apply_edits(nb, [edit("replace", cell_id="c1", expected_source="x = 10\nprint(x)", source="x = 11")])
    assert nb == before  # the input is never modified
    assert new["cells"][1]["source"] == "x = 11"
    assert new["cells"][1]["outputs"] == [STREAM] and new["cells"][1]["execution_count"] == 1
    assert new["cells"][1]["metadata"] == {"collapsed": False}
    assert cells_of(new)[:1] + cells_of(new)[2:] == cells_of(before)[:1] + cells_of(before)[2:]
    assert_valid(new)


def test_replace_without_expected_source_applies_whatever_the_cell_holds() -> None:
    new = apply_edits(sample(), [edit("replace", cell_id="c2", source="")])
    assert new["cells"][2]["source"] == ""


def test_replace_merges_metadata_and_a_none_value_deletes_a_key() -> None:
    nb = sample()
    new = apply_edits(nb, [edit("replace", cell_id="m1", source="# New title",
                                metadata={"eca": {"tool": "t"}, "tags": None, "absent": None})])
    assert new["cells"][0]["metadata"] == {"eca": {"tool": "t"}}
    again = apply_edits(new, [edit("replace", cell_id="m1", source="# New title", metadata={"eca": None})])
    assert again["cells"][0]["metadata"] == {}
    assert_valid(again)


def test_insert_at_an_index_with_the_given_id_type_and_metadata() -> None:
    new = apply_edits(sample(), [edit("insert", new_cell_id="n1", index=1, cell_type="markdown", source="Loads it.",
                                      metadata={"eca": {"action": "inserted"}})])
    assert ids(new) == ["m1", "n1", "c1", "c2", "r1"]
    assert new["cells"][1] == {"id": "n1", "cell_type": "markdown", "metadata": {"eca": {"action": "inserted"}},
                               "source": "Loads it."}
    assert_valid(new)


def test_an_inserted_code_cell_is_a_valid_unexecuted_cell() -> None:
    new = apply_edits(sample(), [edit("insert", new_cell_id="n1", index=0, source="y = 1")])
    assert new["cells"][0] == {"id": "n1", "cell_type": "code", "metadata": {}, "source": "y = 1",
                               "execution_count": None, "outputs": []}
    assert_valid(new)


@pytest.mark.parametrize(("index", "where"), [(None, 4), (4, 4), (99, 4), (0, 0)])
def test_insert_index_defaults_to_the_end_and_is_clamped(index: int | None, where: int) -> None:
    new = apply_edits(sample(), [edit("insert", new_cell_id="n1", index=index, source="")])
    assert ids(new).index("n1") == where and len(new["cells"]) == 5


def test_insert_without_an_id_gets_a_fresh_valid_one() -> None:
    new = apply_edits(sample(), [edit("insert", source="z")])
    fresh = new["cells"][-1]["id"]
    assert fresh not in ids(sample())
    assert_valid(new)
    assert new_cell_id() != new_cell_id()


def test_delete_removes_the_cell() -> None:
    new = apply_edits(sample(), [edit("delete", cell_id="c1", expected_source="x = 10\nprint(x)")])
    assert ids(new) == ["m1", "c2", "r1"]
    assert_valid(new)


@pytest.mark.parametrize(("index", "order"), [
    (0, ["c2", "m1", "c1", "r1"]),
    (3, ["m1", "c1", "r1", "c2"]),
    (None, ["m1", "c1", "r1", "c2"]),
    (50, ["m1", "c1", "r1", "c2"]),
    (2, ["m1", "c1", "c2", "r1"]),
])
def test_move_puts_the_cell_at_its_index_after_the_move(index: int | None, order: list[str]) -> None:
    new = apply_edits(sample(), [edit("move", cell_id="c2", index=index)])
    assert ids(new) == order
    assert cells_of(new)[order.index("c2")] == cells_of(sample())[2]  # moved whole: outputs and all


def test_edits_apply_in_order_each_seeing_the_previous() -> None:
    new = apply_edits(sample(), [
        edit("insert", new_cell_id="n1", index=0, source="a"),
        edit("replace", cell_id="n1", expected_source="a", source="b"),
        edit("move", cell_id="n1", index=4),
        edit("replace", cell_id="c1", expected_source="x = 10\nprint(x)", source="x = 1"),
        edit("replace", cell_id="c1", expected_source="x = 1", source="x = 2"),
        edit("delete", cell_id="m1", expected_source="# Title"),
    ])
    assert ids(new) == ["c1", "c2", "r1", "n1"]
    assert [c["source"] for c in new["cells"]] == ["x = 2", "x * 4.2", "raw text", "b"]


# -- all or nothing, stale edits ----------------------------------------------------------------------------------


@pytest.mark.parametrize("second", [
    edit("replace", cell_id="nope", source="x"),
    edit("delete", cell_id="nope"),
    edit("move", cell_id="nope", index=0),
])
def test_an_unknown_id_in_the_second_edit_changes_nothing(second: NotebookCellEdit) -> None:
    nb = sample()
    before = copy.deepcopy(nb)
    with pytest.raises(EditRefused, match="no cell with id 'nope'") as refused:
        apply_edits(nb, [edit("replace", cell_id="c1", source="changed"), second])
    assert nb == before
    assert refused.value.cells == []


def test_an_id_deleted_by_an_earlier_edit_is_unknown_to_a_later_one() -> None:
    with pytest.raises(EditRefused, match="no cell with id 'c1'"):
        apply_edits(sample(), [edit("delete", cell_id="c1"), edit("replace", cell_id="c1", source="x")])


@pytest.mark.parametrize("action", ["replace", "delete"])
def test_a_stale_expected_source_is_refused_with_the_current_cell(action: str) -> None:
    nb = sample()
    before = copy.deepcopy(nb)
    with pytest.raises(EditRefused, match="cell c1 changed since the diff was made; nothing was applied") as refused:
        apply_edits(nb, [edit("insert", new_cell_id="n1", index=0, source="first"),
                         edit(action, cell_id="c1", expected_source="x = 9\nprint(x)", source="x = 12")])
    assert nb == before
    [current] = refused.value.cells
    assert current.id == "c1" and current.source == "x = 10\nprint(x)"
    assert current.index == 2  # as the notebook stood when the stale edit was reached (after the insert)
    assert current.outputs == [STREAM] and current.execution_count == 1


def test_a_list_source_is_compared_joined() -> None:
    nb = sample()
    nb["cells"][1]["source"] = ["x = 10\n", "print(x)"]
    new = apply_edits(nb, [edit("replace", cell_id="c1", expected_source="x = 10\nprint(x)", source="x = 0")])
    assert new["cells"][1]["source"] == "x = 0"


# -- ids, views ---------------------------------------------------------------------------------------------------


def old_notebook() -> dict[str, Any]:
    """nbformat 4.4: cells without ids, sources as line lists (as older Jupyter wrote them)."""
    return {"nbformat": 4, "nbformat_minor": 4, "metadata": {},
            "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Old\n", "notebook"]},
                      {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["print(1)"],
                       "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]},
                      {"cell_type": "code", "metadata": {}, "execution_count": None, "source": [], "outputs": []}]}


def test_ensure_ids_gives_a_notebook_without_ids_idx_ids_and_makes_it_4_5() -> None:
    nb = old_notebook()
    nbformat.validate(nbformat.from_dict(nb))  # a valid 4.4 notebook to start with
    assert ensure_ids(nb) is True
    assert ids(nb) == ["idx0", "idx1", "idx2"]
    assert (nb["nbformat"], nb["nbformat_minor"]) == (4, 5)
    assert_valid(nb)
    assert [c.id for c in cell_views(nb)] == ["idx0", "idx1", "idx2"]
    assert ensure_ids(nb) is False


def test_ensure_ids_keeps_existing_ids_and_fills_only_the_missing() -> None:
    nb = sample()
    assert ensure_ids(nb) is False and nb == sample()
    del nb["cells"][2]["id"]
    assert ensure_ids(nb) is True
    assert ids(nb) == ["m1", "c1", "idx2", "r1"]


def test_a_newer_minor_version_is_not_downgraded() -> None:
    nb = old_notebook()
    nb["nbformat_minor"] = 7
    ensure_ids(nb)
    assert nb["nbformat_minor"] == 7


def test_cell_views_describe_the_cells() -> None:
    views = cell_views(old_notebook())
    assert [(v.id, v.index, v.cell_type) for v in views] == [("idx0", 0, "markdown"), ("idx1", 1, "code"),
                                                            ("idx2", 2, "code")]
    assert views[0].source == "# Old\nnotebook" and views[0].outputs is None and views[0].execution_count is None
    assert views[1].source == "print(1)" and views[1].execution_count == 1
    assert views[1].outputs == [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]
    assert views[2].source == "" and views[2].outputs == []
    meta = sample()
    assert cell_views(meta)[0].metadata == {"tags": ["intro"]}


def test_edits_address_the_idx_ids_of_an_old_notebook_once_ensured() -> None:
    nb = old_notebook()
    ensure_ids(nb)
    new = apply_edits(nb, [edit("replace", cell_id="idx1", expected_source="print(1)", source="print(2)"),
                           edit("move", cell_id="idx0", index=2)])
    assert ids(new) == ["idx1", "idx2", "idx0"] and new["cells"][0]["source"] == "print(2)"
    assert_valid(new)


# -- undo ---------------------------------------------------------------------------------------------------------


def undo_round_trip(nb: dict[str, Any], edits: list[NotebookCellEdit]) -> dict[str, Any]:
    new = apply_edits(nb, edits)
    inverse = inverse_edits(cell_views(nb), edits)
    return apply_edits(new, inverse)


def test_inverse_of_a_mixed_list_restores_the_notebook_exactly() -> None:
    nb = sample()
    edits = [
        edit("replace", cell_id="c1", expected_source="x = 10\nprint(x)", source="x = 11\nprint(x)",
             metadata={"eca": {"tool": "notebook_edit_cell"}, "collapsed": None}),
        edit("insert", new_cell_id="n1", index=1, cell_type="markdown", source="Note", metadata={"eca": {}}),
        edit("move", cell_id="m1", index=3),
        edit("delete", cell_id="c2", expected_source="x * 4.2"),
        edit("insert", new_cell_id="n2", source="tail"),
        edit("replace", cell_id="n1", source="Note 2", metadata={"tags": ["x"]}),
        edit("move", cell_id="r1", index=0),
        edit("delete", cell_id="n2"),
    ]
    changed = apply_edits(nb, edits)
    assert cells_of(changed) != cells_of(nb)
    assert cells_of(undo_round_trip(nb, edits)) == cells_of(nb)


def test_the_inverse_of_an_edit_expects_what_the_edit_wrote() -> None:
    nb = sample()
    edits = [edit("replace", cell_id="c1", source="x = 11")]
    inverse = inverse_edits(cell_views(nb), edits)
    assert [(e.action, e.cell_id, e.expected_source, e.source) for e in inverse] == [
        ("replace", "c1", "x = 11", "x = 10\nprint(x)")]
    new = apply_edits(nb, edits)
    later = apply_edits(new, [edit("replace", cell_id="c1", source="x = 12  # the user's")])
    with pytest.raises(EditRefused, match="changed since") as refused:
        apply_edits(later, inverse)  # the undo never overwrites a cell changed after the edit
    assert refused.value.cells[0].source == "x = 12  # the user's"


def test_the_inverse_of_a_delete_restores_outputs_count_and_metadata() -> None:
    nb = sample()
    back = undo_round_trip(nb, [edit("delete", cell_id="c1"), edit("delete", cell_id="m1")])
    assert cells_of(back) == cells_of(nb)
    assert back["cells"][1]["outputs"] == [STREAM] and back["cells"][1]["execution_count"] == 1


def test_the_inverse_of_a_delete_restores_a_markdown_cells_attachments() -> None:
    md = markdown("m1", "![plot](attachment:plot.png)")
    md["attachments"] = {"plot.png": {"image/png": "iVBORw0KGgo="}}
    nb = notebook(md, code("c1", "x = 1"))
    back = undo_round_trip(nb, [edit("delete", cell_id="m1")])
    assert cells_of(back) == cells_of(nb)


# -- property: apply, then apply the inverse: the notebook is back ------------------------------------------------

_texts = st.text(alphabet="ab \n#=x1", max_size=12)
_meta_values = st.one_of(st.none(), st.integers(0, 3), st.lists(st.sampled_from(["t1", "t2"]), max_size=2))
# keys nbformat's schema leaves free (``tags``, ``collapsed`` … have types of their own)
_metadata = st.dictionaries(st.sampled_from(["eca", "k1", "k2"]), _meta_values, max_size=3)
_outputs = st.lists(st.sampled_from([STREAM, RESULT, {"output_type": "error", "ename": "E", "evalue": "v",
                                                      "traceback": ["E: v"]}]), max_size=2)


@st.composite
def _cells(draw: st.DrawFn) -> list[dict[str, Any]]:
    cells = []
    for i in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["code", "markdown", "raw"]))
        # stored metadata holds no None values (the merge reads None as "delete this key")
        meta = {k: v for k, v in draw(_metadata).items() if v is not None}
        cell: dict[str, Any] = {"id": f"c{i}", "cell_type": kind, "metadata": meta, "source": draw(_texts)}
        if kind == "code":
            cell["execution_count"] = draw(st.one_of(st.none(), st.integers(1, 50)))
            cell["outputs"] = copy.deepcopy(draw(_outputs))
        cells.append(cell)
    return cells


@st.composite
def _case(draw: st.DrawFn) -> tuple[dict[str, Any], list[NotebookCellEdit]]:
    nb = notebook(*draw(_cells()))
    current = copy.deepcopy(nb)
    edits: list[NotebookCellEdit] = []
    fresh = 0
    for _ in range(draw(st.integers(1, 8))):
        present = ids(current)
        actions = ["insert"] + (["replace", "delete", "move"] if present else [])
        action = draw(st.sampled_from(actions))
        index = draw(st.one_of(st.none(), st.integers(0, len(present) + 2)))
        if action == "insert":
            fresh += 1
            step = edit("insert", new_cell_id=f"new{fresh}", index=index, source=draw(_texts),
                        cell_type=draw(st.sampled_from(["code", "markdown", "raw"])),
                        metadata=draw(st.one_of(st.none(), _metadata.map(
                            lambda m: {k: v for k, v in m.items() if v is not None}))))
        else:
            target = draw(st.sampled_from(present))
            seen = current["cells"][present.index(target)]["source"]
            expected = draw(st.one_of(st.none(), st.just(seen)))
            if action == "replace":
                step = edit("replace", cell_id=target, expected_source=expected, source=draw(_texts),
                            metadata=draw(st.one_of(st.none(), _metadata)))
            elif action == "delete":
                step = edit("delete", cell_id=target, expected_source=expected)
            else:
                step = edit("move", cell_id=target, index=index)
        current = apply_edits(current, [step])
        edits.append(step)
    return nb, edits


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_property_applying_the_inverse_restores_the_original(case: tuple[dict[str, Any], list[NotebookCellEdit]],
                                                             ) -> None:
    nb, edits = case
    before = copy.deepcopy(nb)
    back = undo_round_trip(nb, edits)
    assert nb == before
    assert cells_of(back) == cells_of(nb)
    assert_valid(back)


@pytest.mark.parametrize(("anchor", "expected"), [("after", ["new", "b", "x", "n", "c"]),
                                                  ("before", ["new", "b", "n", "x", "c"])])
def test_an_insert_next_to_a_cell_follows_it_when_cells_are_added_above(anchor: str, expected: list[str]) -> None:
    nb = notebook(code("b", "1"), code("x", "2"), code("c", "3"))
    # the user adds a cell at the top after the diff was made for "after x" (index 2) / "before x" (index 1)
    moved = apply_edits(nb, [edit("insert", new_cell_id="new", index=0, source="")])
    index = 2 if anchor == "after" else 1
    got = apply_edits(moved, [edit("insert", new_cell_id="n", index=index, anchor_cell_id="x", anchor=anchor,
                                   source="y")])
    assert ids(got) == expected
    undo = inverse_edits(cell_views(moved), [edit("insert", new_cell_id="n", index=index, anchor_cell_id="x",
                                                  anchor=anchor, source="y")])
    assert ids(apply_edits(got, undo)) == ids(moved)

"""The content index on real files and a real SQLite database: building, ranking, incremental updates, hashes,
restarts, corruption and ignore rules."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from pathlib import Path

from eca_notebook.retrieval import CodeIndex, FileChange, IndexProgress


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_nothing_happens_until_the_first_search(index, db):
    assert not db.exists() and index.status()["state"] == "empty"
    hits = await index.search_symbols("ConfigLoader")
    assert hits[0].path == "src/config.py" and hits[0].kind == "class"
    status = index.status()
    assert status["state"] == "ready" and status["files"] == 6 and status["symbols"] > 10 and db.exists()


async def test_searches_arriving_during_the_first_build_wait_for_it_and_share_it(index):
    seen: list[IndexProgress] = []
    symbols, text = await asyncio.gather(index.search_symbols("ConfigLoader"),
                                         index.search_text("ConfigLoader", progress=seen.append))
    assert symbols[0].path == "src/config.py" and text[0].path == "src/config.py"
    assert symbols.note is None and text.note is None  # nothing was stored: both waited for the build
    assert index.stats.files_parsed == 6  # one build, not one each


async def test_progress_is_reported_while_building(index):
    seen: list[IndexProgress] = []
    await index.ensure_built(seen.append)
    # 7 candidates: the binary logo.png is read, recognised and left out
    assert seen and seen[-1].stage == "indexing" and seen[-1].done == seen[-1].total == 7
    assert seen[-1].message == "Indexing 7 of 7 files…"


async def test_symbol_ranking_kind_path_and_container_filters(index):
    names = [(h.name, h.path) for h in await index.search_symbols("parseConfigFile")]
    assert names == [("parseConfigFile", "src/config.py")]  # build/ is ignored by .gitignore
    first = (await index.search_symbols("config"))[0]
    assert (first.name, first.kind, first.start_line, first.end_line) == ("ConfigLoader", "class", 5, 14)
    assert [h.name for h in await index.search_symbols("config", kind="function")] == ["load_settings"] or \
        all(h.kind == "function" for h in await index.search_symbols("config", kind="function"))
    assert [h.name for h in await index.search_symbols("area", path="*.ts")] == ["area"]
    assert await index.search_symbols("area", path="*.py") == []
    method = (await index.search_symbols("ConfigLoader.from"))[0]
    assert (method.name, method.container, method.signature) == (
        "from_env", "ConfigLoader", '@classmethod def from_env(cls) -> "ConfigLoader":')
    assert [h.name for h in await index.search_symbols("circle")][:2] == ["Circle", "makeCircle"]


async def test_notebook_symbols_name_their_cell(index):
    hit = (await index.search_symbols("plot_monthly"))[0]
    assert (hit.path, hit.cell_index, hit.cell_id, hit.start_line) == ("analysis.ipynb", 2, "plotting", 1)
    text = (await index.search_text("sales analysis"))[0]
    assert (text.path, text.cell_index, text.cell_id, text.snippet) == ("analysis.ipynb", 0, "intro",
                                                                        [(1, "# Sales analysis")])


async def test_text_search_ranks_the_defining_file_first_and_matches_identifier_parts(index):
    hits = await index.search_text("parseConfigFile")
    assert [h.path for h in hits] == ["src/config.py", "src/app.py"] or hits[0].path == "src/config.py"
    assert hits[0].path == "src/config.py" and (12, "def parseConfigFile(self, path: str) -> dict:") in hits[0].snippet
    # snake_case query, camelCase code (and the other way round)
    assert (await index.search_text("parse_config_file"))[0].path == "src/config.py"
    assert {h.path for h in await index.search_text("loadSettings")} == {"src/config.py", "src/app.py"}
    # an exact phrase, and a prefix while typing
    assert [h.path for h in await index.search_text('"blue green strategy"')] == ["notes.md"]
    assert await index.search_text('"green blue strategy"') == []
    assert (await index.search_text("deploy"))[0].path == "notes.md"
    assert [h.path for h in await index.search_text("ConfigLoader", path="src/app.py")] == ["src/app.py"]


async def test_ignored_binary_and_hidden_files_are_not_indexed(index, ws):
    (ws / ".hidden").mkdir()
    (ws / ".hidden" / "secret.py").write_text("def ConfigLoaderSecret(): pass\n")
    await index.ensure_built()
    paths = {h.path for h in await index.search_text("ConfigLoader", limit=50)}
    assert paths == {"src/config.py", "src/app.py"}  # not debug.log (*.log), logo.png (binary), build/, .hidden/
    assert await index.search_symbols("ConfigLoaderSecret") == []


async def test_apply_changes_reindexes_only_what_changed(index, ws):
    await index.ensure_built()
    parsed = index.stats.files_parsed
    (ws / "web" / "util.js").write_text("function throttle(fn) { return fn }\n")
    (ws / "src" / "new_module.py").write_text("class FreshThing:\n    pass\n")
    (ws / "notes.md").unlink()
    count = await index.apply_changes([
        FileChange("modified", "web/util.js"),
        FileChange("created", str(ws / "src" / "new_module.py")),
        FileChange("deleted", "notes.md"),
        FileChange("modified", "src/app.py"),  # not changed at all: read, hash equal, not re-parsed
        FileChange("created", "debug.log"),  # ignored
    ])
    assert count == 3 and index.stats.files_parsed == parsed + 2
    assert [h.name for h in await index.search_symbols("throttle")] == ["throttle"]
    assert await index.search_symbols("debounce") == []
    assert (await index.search_symbols("FreshThing"))[0].path == "src/new_module.py"
    assert await index.search_text('"blue green"') == []


async def test_an_unchanged_content_hash_skips_the_file_without_reading_it(index, ws):
    await index.ensure_built()
    path = ws / "src" / "app.py"
    stored = sha(path)
    read = index.stats.files_read
    path.write_text("def replaced_without_telling():\n    pass\n")  # bytes changed on disk...
    # ...but the client says the content is the one we have: the file is not even opened
    assert await index.apply_changes([FileChange("modified", "src/app.py", content_hash=stored)]) == 0
    assert index.stats.files_read == read
    assert await index.search_symbols("replaced_without_telling") == []
    assert (await index.search_symbols("main"))[0].path == "src/app.py"
    # the right hash (as the spec's clients send it) re-indexes it
    assert await index.apply_changes([FileChange("modified", "src/app.py", content_hash="sha256:" + sha(path))]) == 1
    assert index.stats.files_read == read + 1
    assert (await index.search_symbols("replaced_without_telling"))[0].path == "src/app.py"


async def test_a_refresh_picks_up_changes_made_without_events(index, ws):
    await index.ensure_built()
    (ws / "src" / "config.py").write_text("def brand_new_loader():\n    pass\n")
    (ws / "web" / "util.js").unlink()
    assert await index.refresh() == 2
    assert [h.name for h in await index.search_symbols("brand_new")] == ["brand_new_loader"]
    assert await index.search_symbols("EventBus") == []


async def test_the_index_survives_a_restart_without_reparsing(ws, db):
    first = CodeIndex([ws], db)
    await first.ensure_built()
    assert first.stats.files_parsed == 6
    await first.close()

    second = CodeIndex([ws], db)  # a new process: same database
    try:
        hits = await second.search_symbols("ConfigLoader")
        assert hits[0].path == "src/config.py"
        assert second.stats.files_parsed == 0  # nothing re-parsed (at most re-hashed, for racy mtimes)
        (ws / "src" / "app.py").write_text("def changed_while_down():\n    pass\n")
        third_changes = await second.refresh()
        assert third_changes == 1 and second.stats.files_parsed == 1
    finally:
        await second.close()


async def test_a_corrupt_database_is_rebuilt(ws, db):
    first = CodeIndex([ws], db)
    await first.ensure_built()
    await first.close()
    db.write_bytes(b"this is not a database at all" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    second = CodeIndex([ws], db)
    try:
        assert (await second.search_symbols("ConfigLoader"))[0].path == "src/config.py"
        assert second.store().rebuilt and second.stats.files_parsed == 6
        sqlite3.connect(db).execute("SELECT count(*) FROM files").fetchone()
    finally:
        await second.close()


async def test_another_schema_version_is_rebuilt(ws, db):
    first = CodeIndex([ws], db)
    await first.ensure_built()
    await first.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    second = CodeIndex([ws], db)
    try:
        await second.ensure_built()
        assert second.store().rebuilt and second.stats.files_parsed == 6
    finally:
        await second.close()


async def test_oversized_files_are_skipped_and_several_folders_are_labelled(tmp_path, db):
    one, two = tmp_path / "alpha", tmp_path / "beta"
    one.mkdir()
    two.mkdir()
    (one / "small.py").write_text("def tiny():\n    pass\n")
    (one / "huge.py").write_text("def enormous():\n    pass\n" + "# padding\n" * 2000)
    (two / "other.py").write_text("def tiny():\n    return 2\n")
    idx = CodeIndex([one, two], db, max_file_bytes=5_000)
    try:
        assert sorted(h.path for h in await idx.search_symbols("tiny")) == ["alpha/small.py", "beta/other.py"]
        assert await idx.search_symbols("enormous") == []
        assert await idx.apply_changes([FileChange("modified", str(two / "other.py"))]) == 0  # unchanged
        (two / "other.py").write_text("def renamed():\n    pass\n")
        assert await idx.apply_changes([FileChange("modified", "beta/other.py")]) == 1
        assert idx.absolute("beta/other.py") == two / "other.py"
    finally:
        await idx.close()


async def test_rebuild_starts_over(index):
    await index.ensure_built()
    assert await index.rebuild() == 6
    assert index.status()["files"] == 6


async def test_a_big_stored_index_answers_at_once_and_is_checked_in_the_background(ws, db):
    first = CodeIndex([ws], db)
    await first.ensure_built()
    await first.close()
    (ws / "src" / "app.py").write_text("def changed_while_down():\n    pass\n")

    second = CodeIndex([ws], db, background_files=0)  # every stored index counts as big: its check runs behind
    try:
        hits = await second.search_symbols("ConfigLoader")
        assert hits[0].path == "src/config.py"
        assert hits.note is not None and "checked against the disk in the background" in hits.note
        assert not second.ready  # answered before the check was done
        await second.wait_for_refresh()
        assert second.ready and second.stats.files_parsed == 1  # only the file changed meanwhile
        hits = await second.search_symbols("changed_while_down")
        assert [h.path for h in hits] == ["src/app.py"] and hits.note is None
        assert (await second.search_text("ConfigLoader")).note is None
    finally:
        await second.close()


async def test_a_refresh_asked_for_during_a_background_check_still_sees_later_changes(ws, db):
    first = CodeIndex([ws], db)
    await first.ensure_built()
    await first.close()
    second = CodeIndex([ws], db, background_files=0)
    try:
        await second.search_symbols("ConfigLoader")  # starts the background check
        (ws / "src" / "later.py").write_text("def written_after_the_check_began():\n    pass\n")
        await second.refresh()  # waits for the check, then scans again: the check may have listed src/ already
        assert [h.name for h in await second.search_symbols("written_after")] == ["written_after_the_check_began"]
    finally:
        await second.close()


async def test_several_events_for_one_file_in_one_batch(index, ws):
    await index.ensure_built()
    (ws / "src" / "twice.py").write_text("def first_version():\n    pass\n")
    (ws / "src" / "twice.py").write_text("def second_version():\n    pass\n")
    count = await index.apply_changes([FileChange("created", "src/twice.py"), FileChange("modified", "src/twice.py"),
                                       FileChange("modified", "src/config.py"), FileChange("deleted", "notes.md")])
    assert count == 1  # notes.md still exists (deleted, then created again) and config.py did not change
    assert [h.name for h in await index.search_symbols("second_version")] == ["second_version"]
    assert await index.search_symbols("first_version") == []

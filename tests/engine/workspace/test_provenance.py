"""The engine's signing key for cell provenance (workspace/_provenance.py): made once, owner-only, kept across engines;
a damaged or unreachable key file never breaks the tools."""

from __future__ import annotations

import os
from pathlib import Path

from eca_notebook.engine.workspace._provenance import KEY_BYTES, provenance_key, provenance_key_path


def test_the_key_is_made_once_owner_only_and_read_back(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    key = provenance_key(env)
    path = provenance_key_path(env)
    assert len(key) == KEY_BYTES and path.read_bytes() == key
    assert path.stat().st_mode & 0o777 == 0o600
    assert provenance_key(env) == key  # the next engine (a restart) recognises what this one signed


def test_a_damaged_or_unreachable_key_file_gives_a_key_of_this_process(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    path = provenance_key_path(env)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"short")
    key = provenance_key(env)
    assert len(key) == KEY_BYTES and path.read_bytes() == b"short"  # not overwritten
    blocked = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "file")}
    (tmp_path / "file").write_text("not a folder")
    assert provenance_key(blocked) == key and not os.path.isdir(tmp_path / "file")

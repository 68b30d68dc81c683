"""looks_binary (a NUL byte near the start) and atomic_write (all or nothing; an existing file keeps its mode, a new
one gets 0600 when private, the umask's mode otherwise)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from eca_notebook._fileio import SNIFF_BYTES, atomic_write, default_mode, looks_binary


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def test_looks_binary_means_a_nul_byte() -> None:
    assert looks_binary(b"PNG\x00\x01")
    assert not looks_binary(b"")
    assert not looks_binary("héllo\n".encode())
    # control characters without a NUL are still text (git's and ripgrep's rule): ANSI logs, form feeds, odd bytes
    assert not looks_binary(b"\x1b[31mred\x1b[0m\x0c\x01\x02\x03\x04\x05\x06")
    assert SNIFF_BYTES == 8192


def test_writes_text_or_a_writer(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    atomic_write(target, "one\r\ntwo\n")
    assert target.read_bytes() == b"one\r\ntwo\n"  # newlines written as given
    atomic_write(target, lambda fh: fh.write('{"k": 1}'), durable=False)
    assert target.read_text() == '{"k": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_replaces_by_rename(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("old")
    os.link(target, tmp_path / "hard")
    atomic_write(target, "new")
    assert target.read_text() == "new" and (tmp_path / "hard").read_text() == "old"


def test_new_file_modes(tmp_path: Path, umask_027: None) -> None:
    assert default_mode() == 0o640
    atomic_write(tmp_path / "user.txt", "x")
    assert mode(tmp_path / "user.txt") == 0o640
    atomic_write(tmp_path / "chat.json", "x", private=True)
    assert mode(tmp_path / "chat.json") == 0o600


@pytest.mark.parametrize("private", [False, True])
def test_existing_file_keeps_its_mode(tmp_path: Path, private: bool) -> None:
    target = tmp_path / "run.sh"
    target.write_text("echo 1\n")
    target.chmod(0o750)
    atomic_write(target, "echo 2\n", private=private)
    assert mode(target) == 0o750 and target.read_text() == "echo 2\n"


def test_a_failing_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "index.json"
    target.write_text("old")

    def boom(fh: object) -> None:
        fh.write("half")  # type: ignore[attr-defined]
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["index.json"]  # no temp file left


def test_temp_files_are_recognisable(tmp_path: Path) -> None:
    """A crash leaves ``.tmp-<name>.<random>.eca-tmp``: the chat store sweeps stale ``.tmp-`` files."""
    seen: list[str] = []
    atomic_write(tmp_path / "index.json", lambda fh: seen.extend(p.name for p in tmp_path.iterdir()))
    assert len(seen) == 1 and seen[0].startswith(".tmp-index.json.") and seen[0].endswith(".eca-tmp")


def test_the_parent_must_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "missing" / "a.txt", "x")

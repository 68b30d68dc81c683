"""Build the JupyterLab side panel into ``eca_notebook/server/labextension/`` (a prebuilt federated extension).

The build output is committed, so ``pip install`` / ``make lab`` need no Node.js. To keep it honest, the build
writes ``eca_notebook/server/labextension/build-source.json``: a SHA-256 over every input of the build (sources,
styles, package.json, package-lock.json, tsconfig). ``tests/panel/test_build.py`` recomputes it and fails when a
source changed without a rebuild.

Usage (from anywhere; needs ``npm ci`` done in ``extension/`` and the repo's ``.venv`` with JupyterLab)::

    .venv/bin/python extension/scripts/build.py            # tsc + labextension build + stamp
    .venv/bin/python extension/scripts/build.py --check    # exit 1 when the committed build is stale (no Node)

The shared-module versions come from the *installed* JupyterLab (``--core-package-file`` = its staging package.json), so the
build never downloads core metadata and matches the JupyterLab that runs it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "extension"
OUTPUT = ROOT / "eca_notebook" / "server" / "labextension"
STAMP = OUTPUT / "build-source.json"

#: Build inputs, relative to extension/ (directories are walked).
INPUTS = ("src", "style", "package.json", "package-lock.json", "tsconfig.json")


def source_files() -> list[Path]:
    files: list[Path] = []
    for name in INPUTS:
        path = EXTENSION / name
        if path.is_dir():
            files += [p for p in path.rglob("*") if p.is_file()]
        elif path.is_file():
            files.append(path)
    return sorted(files, key=lambda p: p.relative_to(EXTENSION).as_posix())


def source_hash() -> str:
    """SHA-256 over (relative path, content) of every build input; line endings normalised so a checkout with
    CRLF conversion hashes the same."""
    digest = hashlib.sha256()
    for path in source_files():
        rel = path.relative_to(EXTENSION).as_posix()
        data = path.read_bytes().replace(b"\r\n", b"\n")
        digest.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def read_stamp() -> dict:
    try:
        return json.loads(STAMP.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def is_current() -> bool:
    stamp = read_stamp()
    return stamp.get("sourceHash") == source_hash() and (OUTPUT / "package.json").is_file()


def _venv_bin(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found (run from the repo's .venv)")
    return found


def core_path() -> Path:
    import jupyterlab

    return Path(jupyterlab.__file__).parent / "staging"


def build(skip_tsc: bool = False, development: bool = False) -> None:
    if not (EXTENSION / "node_modules").is_dir():
        raise SystemExit("extension/node_modules is missing: run `npm ci` in extension/ first")
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if not skip_tsc:
        subprocess.run([str(EXTENSION / "node_modules" / ".bin" / "tsc"), "-b"], cwd=EXTENSION, check=True, env=env)
    command = [_venv_bin("jupyter-builder"), "build", "--core-package-file", str(core_path() / "package.json")]
    if development:
        command.append("--development=True")
    subprocess.run([*command, str(EXTENSION)], cwd=EXTENSION, check=True, env=env)
    import jupyterlab

    STAMP.write_text(
        json.dumps(
            {
                "sourceHash": source_hash(),
                "builtAgainstJupyterLab": jupyterlab.__version__,
                "note": "written by extension/scripts/build.py; tests/panel/test_build.py checks sourceHash",
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed build is stale")
    parser.add_argument("--if-stale", action="store_true", help="build only when the committed build is stale")
    parser.add_argument("--skip-tsc", action="store_true", help="lib/ is already compiled")
    parser.add_argument("--development", action="store_true", help="unminified build with source maps")
    args = parser.parse_args(argv)
    if args.check:
        if is_current():
            return 0
        print("eca_notebook/server/labextension is stale: run extension/scripts/build.py", file=sys.stderr)
        return 1
    if args.if_stale and is_current():
        print("labextension is up to date")
        return 0
    build(skip_tsc=args.skip_tsc, development=args.development)
    return 0


if __name__ == "__main__":
    sys.exit(main())

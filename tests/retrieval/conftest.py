"""A small real workspace (Python, TypeScript, JavaScript, a notebook, ignored and binary files) and a content index
on it, stored in the test's own cache directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.retrieval import CodeIndex

CONFIG_PY = '''"""Loading the settings."""
import json


class ConfigLoader:
    """Reads config files."""

    @classmethod
    def from_env(cls) -> "ConfigLoader":
        return cls()

    def parseConfigFile(self, path: str) -> dict:
        with open(path) as fh:
            return json.load(fh)


def load_settings(path):
    return ConfigLoader().parseConfigFile(path)
'''

APP_PY = '''from config import ConfigLoader, load_settings


def main():
    settings = load_settings("app.json")
    print(settings)
'''

SHAPES_TS = '''export interface Shape {
  area(): number;
}

export type ShapeId = string;

export enum Color { Red, Green }

export class Circle implements Shape {
  constructor(private radius: number) {}

  area(): number {
    return Math.PI * this.radius * this.radius;
  }
}

export const makeCircle = (radius: number): Circle => new Circle(radius);
'''

UTIL_JS = '''class EventBus {
  emit(name, payload) { this.handlers[name](payload); }
}

function debounce(fn, ms) { let t; return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); }; }

module.exports = { EventBus, debounce };
'''


def notebook() -> str:
    return json.dumps({
        "cells": [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Sales analysis\n"]},
            {"cell_type": "code", "id": "imports", "metadata": {}, "execution_count": None, "outputs": [],
             "source": ["%matplotlib inline\n", "import pandas as pd\n"]},
            {"cell_type": "code", "id": "plotting", "metadata": {}, "execution_count": None, "outputs": [],
             "source": ["def plot_monthly_revenue(df):\n", "    return df.groupby('month').revenue.sum().plot()\n"]},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    })


def make_workspace(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "config.py").write_text(CONFIG_PY)
    (root / "src" / "app.py").write_text(APP_PY)
    (root / "web").mkdir()
    (root / "web" / "shapes.ts").write_text(SHAPES_TS)
    (root / "web" / "util.js").write_text(UTIL_JS)
    (root / "analysis.ipynb").write_text(notebook())
    (root / "notes.md").write_text("# Notes\n\nThe deployment uses a blue green strategy.\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "generated.py").write_text("def parseConfigFile():\n    pass\n")
    (root / "debug.log").write_text("ConfigLoader failed\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00ConfigLoader")
    return root


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "index" / "content.sqlite"


@pytest.fixture
async def index(ws: Path, db: Path):
    idx = CodeIndex([ws], db)
    yield idx
    await idx.close()

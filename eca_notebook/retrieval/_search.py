"""The searches over a :class:`Store`: definitions by name, BM25-ranked chunks, and chunks by meaning.

Plain synchronous functions of an open store: :class:`~eca_notebook.retrieval.CodeIndex` runs them in a worker
thread once the index is as fresh as a search needs it (and recreates a store found corrupt), so none of that
concerns the ranking here — which is where the care goes:

* **Symbols** come from two queries — the exact name (case-insensitive) and an FTS5 prefix match over its
  identifier parts (``user`` finds ``getUserName``) — scored in Python by :func:`_symbol_score`.
* **Text** ranking runs inside FTS5 (``bm25()`` with definitions and paths weighing more than mere uses); only the
  top rows are joined with their files and read for snippets.
* **Vectors** are computed lazily, at most ``vector_budget`` chunks per call (beyond that, only the text search's
  candidates), then fused with the text ranking by reciprocal rank fusion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pathspec import GitIgnoreSpec

from . import _vectors
from ._store import BM25_WEIGHTS, Store
from ._text import fts_query, identifier_parts, snippet, terms
from ._types import IndexProgress, SymbolHit, TextHit, VectorResult

__all__ = ["search_symbols", "search_text", "vector_search"]

_VECTOR_CANDIDATES = 300
_RRF_K = 60


def search_symbols(store: Store, query: str, kind: str | None, glob: str | None, limit: int) -> list[SymbolHit]:
    """The best `limit` definitions named like `query` (``Class.method`` narrows by container), of `kind` and
    under `glob` when given."""
    text = query.strip()
    container_q: str | None = None
    if "." in text and not text.startswith(".") and not text.endswith("."):
        container_q, text = text.rsplit(".", 1)
    words = terms(text)
    if not words:
        return []
    want = _path_filter(glob)
    low = text.lower()
    base = ("SELECT s.id, s.name, s.kind, s.container, f.path, s.start_line, s.start_col, s.end_line, s.end_col,"
            " s.signature, s.cell_index, s.cell_id FROM symbols s JOIN files f ON f.id = s.file_id")
    kind_sql, kind_args = (" AND s.kind = ?", [kind]) if kind else ("", [])
    rows = store.query(base + " WHERE s.name_lower = ?" + kind_sql + " LIMIT 5000", [low, *kind_args])
    cap = 5000 if (want or container_q) else max(limit * 50, 500)
    parts = [p for w in words for p in (identifier_parts(w) or [w.lower()])]
    match = " AND ".join('"' + p.replace('"', '""') + '"*' for p in parts)
    rows += store.query(base + " JOIN symbols_fts ON symbols_fts.rowid = s.id WHERE symbols_fts MATCH ?"
                        + kind_sql + " LIMIT ?", [match, *kind_args, cap])
    seen: set[int] = set()
    scored: list[tuple[float, str, int, tuple[Any, ...]]] = []
    container_low = container_q.lower() if container_q is not None else None
    for row in rows:
        if row[0] in seen:
            continue
        seen.add(row[0])
        path = row[4]
        if want is not None and not want(path):
            continue
        if container_low is not None and not (row[3] or "").lower().endswith(container_low):
            continue
        scored.append((-_symbol_score(row[1], row[2], path, text), path, row[5], row))
    scored.sort(key=lambda t: (t[0], t[1], t[2]))  # only the best `limit` become SymbolHits
    return [SymbolHit(name=row[1], kind=row[2], container=row[3], path=row[4], start_line=row[5],
                      start_col=row[6], end_line=row[7], end_col=row[8], signature=row[9], cell_index=row[10],
                      cell_id=row[11], score=-score) for score, _path, _line, row in scored[:limit]]


def search_text(store: Store, query: str, glob: str | None, limit: int, any_term: bool) -> list[TextHit]:
    """The best `limit` chunks for `query` under `glob`: every word (or, with `any_term`, any word) must match."""
    return [hit for _cid, hit in _text_ranked(store, query, glob, limit, any_term)]


def _text_ranked(store: Store, query: str, glob: str | None, limit: int, any_term: bool) -> list[tuple[int, TextHit]]:
    """(chunk id, hit) of the best chunks. The ranking runs inside FTS5 on row ids and scores alone (a LIMIT
    over ``bm25()``); only those top rows are joined with their files and have their text read, for the
    snippets — joining every match first, then sorting, cost three times as much on a common word."""
    match, phrase = fts_query(query, any_term=any_term)
    if match is None:
        return []
    want = _path_filter(glob)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    fetch = limit * 8 if not (want or phrase) else max(limit * 40, 2000)
    rows = store.query(
        "SELECT c.id, f.path, c.start_line, c.end_line, c.cell_index, c.cell_id, top.score, chunks_fts.content"
        f" FROM (SELECT rowid AS id, bm25(chunks_fts, {weights}) AS score FROM chunks_fts"
        " WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?) AS top"
        " JOIN chunks c ON c.id = top.id JOIN files f ON f.id = c.file_id"
        " JOIN chunks_fts ON chunks_fts.rowid = top.id ORDER BY top.score", [match, fetch])
    hits: list[tuple[int, TextHit]] = []
    taken: dict[tuple[str, int | None], list[tuple[int, int]]] = {}
    needle = " ".join(phrase.lower().split()) if phrase else None
    for cid, path, start, end, cell_index, cell_id, rank, content in rows:
        if want is not None and not want(path):
            continue
        if needle is not None and needle not in " ".join(content.lower().split()):
            continue
        spans = taken.setdefault((path, cell_index), [])
        if any(start <= e and s <= end for s, e in spans):
            continue  # an overlapping window of a chunk already shown
        spans.append((start, end))
        hits.append((cid, TextHit(path=path, start_line=start, end_line=end,
                                  snippet=snippet(content, start, query), score=-float(rank),
                                  cell_index=cell_index, cell_id=cell_id)))
        if len(hits) >= limit:
            break
    return hits


def vector_search(store: Store, query: str, limit: int, budget: int,
                  report: Callable[[IndexProgress], None] | None) -> VectorResult:
    """Embed the chunks that have no vector yet (all of them up to `budget`, else only the text search's
    candidates), then rank every embedded chunk by cosine to `query`, fused with the text ranking."""
    import numpy as np

    ranked = _text_ranked(store, query, None, _VECTOR_CANDIDATES, True)
    text_hits = [hit for _cid, hit in ranked]
    missing = store.query("SELECT count(*) FROM chunks WHERE id NOT IN (SELECT chunk_id FROM vectors)")[0][0]
    if missing <= budget:
        todo_sql, todo_args = "SELECT c.id, f.path, chunks_fts.content FROM chunks c JOIN files f ON f.id = " \
            "c.file_id JOIN chunks_fts ON chunks_fts.rowid = c.id WHERE c.id NOT IN (SELECT chunk_id FROM " \
            "vectors)", []
        note = ""
    else:  # too many to embed now: embed the text search's candidates, search what is embedded
        ids = [cid for cid, _hit in ranked]
        todo_sql = ("SELECT c.id, f.path, chunks_fts.content FROM chunks c JOIN files f ON f.id = c.file_id "
                    "JOIN chunks_fts ON chunks_fts.rowid = c.id WHERE c.id NOT IN (SELECT chunk_id FROM vectors)"
                    f" AND c.id IN ({','.join('?' * len(ids))})") if ids else ""
        todo_args = ids
        note = (f"{missing:,} chunks have no vector yet; searched the embedded ones and the text search's "
                "candidates")
    embedded = 0
    if todo_sql:
        todo = store.query(todo_sql, todo_args)
        total = len(todo)
        for start in range(0, total, 256):
            batch = todo[start : start + 256]
            vectors = _vectors.Embedder.embed([f"{path}\n{content}" for _cid, path, content in batch])
            store.put_vectors([(row[0], vectors[i].tobytes()) for i, row in enumerate(batch)])
            embedded += len(batch)
            if report is not None:
                report(IndexProgress("embedding", embedded, total, f"Embedding {embedded:,} of {total:,} chunks…"))
    rows = store.query("SELECT v.chunk_id, v.vec FROM vectors v")
    if not rows:
        return VectorResult([], False, embedded, note)
    chunk_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    qvec = _vectors.Embedder.embed([query])[0]
    scores = matrix @ qvec
    order = np.argsort(-scores)[: max(limit * 4, 50)]
    vector_ranked = [(int(chunk_ids[i]), float(scores[i])) for i in order]
    details = {row[0]: row[1:] for row in store.query(
        "SELECT c.id, f.path, c.start_line, c.end_line, c.cell_index, c.cell_id, chunks_fts.content FROM chunks c"
        " JOIN files f ON f.id = c.file_id JOIN chunks_fts ON chunks_fts.rowid = c.id WHERE c.id IN ("
        + ",".join(str(cid) for cid, _ in vector_ranked) + ")")}
    by_key: dict[tuple[str, int, int | None], float] = {}
    fused: dict[tuple[str, int, int | None], float] = {}
    for rank, (cid, score) in enumerate(vector_ranked):
        info = details.get(cid)
        if info is None:
            continue
        key = (info[0], info[1], info[3])
        by_key[key] = score
        fused[key] = fused.get(key, 0.0) + 1.0 / (_RRF_K + rank + 1)
    reranked = bool(text_hits)
    for rank, hit in enumerate(text_hits):
        key = (hit.path, hit.start_line, hit.cell_index)
        if key in fused:  # fusion ranks what the vectors found; text-only hits are search_text's business
            fused[key] += 1.0 / (_RRF_K + rank + 1)
    ordered = sorted(fused, key=lambda k: -fused[k])
    hits: list[TextHit] = []
    spans: dict[tuple[str, int | None], list[tuple[int, int]]] = {}
    info_by_key = {(i[0], i[1], i[3]): i for i in details.values()}
    for key in ordered:
        info = info_by_key[key]
        path, start, end, cell_index, cell_id, content = info
        taken = spans.setdefault((path, cell_index), [])
        if any(start <= e and s <= end for s, e in taken):
            continue
        taken.append((start, end))
        lines = snippet(content, start, query) or [(start + i, line.strip()[:160]) for i, line in
                                                   enumerate(content.split("\n")[:3]) if line.strip()][:2]
        hits.append(TextHit(path=path, start_line=start, end_line=end, snippet=lines,
                            score=round(by_key[key], 4), cell_index=cell_index, cell_id=cell_id))
        if len(hits) >= limit:
            break
    return VectorResult(hits, reranked, embedded, note)


def _path_filter(glob: str | None) -> Callable[[str], bool] | None:
    """grep's ``include`` semantics: no ``/`` → the file name at any depth; with ``/`` → the whole path."""
    if not glob or not glob.strip():
        return None
    from ..tools.search import expand_braces

    spec = GitIgnoreSpec.from_lines(expand_braces(glob.strip()))
    return lambda path: bool(spec.match_file(path))


def _symbol_score(name: str, kind: str, path: str, query: str) -> float:
    """Exact name ≫ prefix ≫ word start ≫ elsewhere; then definitions over members, short names, shallow paths."""
    low, ql = name.lower(), query.lower()
    if name == query:
        tier = 1000
    elif low == ql:
        tier = 900
    elif low.startswith(ql):
        tier = 700
    elif ql in low:
        tier = 500 if _starts_word(name, low.find(ql)) else 400
    else:
        tier = 300
    bonus = {"class": 30, "interface": 28, "function": 25, "type": 20, "enum": 20, "namespace": 15,
             "method": 10}.get(kind, 0)
    tests = 15 if ("test" in path.lower() and "test" not in ql) else 0
    return tier + bonus - min(len(name), 60) * 0.5 - path.count("/") * 2 - tests


def _starts_word(name: str, j: int) -> bool:
    return j <= 0 or name[j - 1] in "_$-" or (name[j - 1].islower() and name[j].isupper())

"""The REST index endpoints drive the content index too, through a real Jupyter server: ``rebuild`` builds it,
``incremental`` applies ``modified`` events with their content hashes, ``status`` reports it."""

from __future__ import annotations

import hashlib

from eca_notebook.server import _schemas as s

from .test_rest import check


async def test_incremental_modified_events_update_the_content_index_honouring_hashes(api, workspace, state):
    (workspace / "src").mkdir()
    (workspace / "src" / "billing.py").write_text("def compute_invoice_total(items):\n    return sum(items)\n")
    wid = state.manager.default.id

    status, body = await api("GET", "workspaces", wid, "index", "status")
    assert status == 200 and check(s.IndexStatus, body)["content"]["state"] == "empty"  # lazy: nothing built yet

    status, body = await api("POST", "workspaces", wid, "index", "rebuild")
    assert status == 200, body
    check(s.IndexResult, body)
    content = body["content"]
    assert content["state"] == "ready" and content["files"] == 2 and content["symbols"] == 1
    assert body["reindexed"] == 2

    path = workspace / "src" / "billing.py"
    old_hash = hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_text("def compute_refund(items):\n    return -sum(items)\n")
    new_hash = hashlib.sha256(path.read_bytes()).hexdigest()

    # the client says the content is unchanged: the file is skipped without being read
    changes = [{"type": "modified", "file_path": "src/billing.py", "content_hash": f"sha256:{old_hash}"}]
    status, body = await api("POST", "workspaces", wid, "index", "incremental", body={"changes": changes})
    assert status == 200 and body["accepted"] == 1 and body["reindexed"] == 0, body

    changes = [{"type": "modified", "file_path": str(path), "content_hash": new_hash},
               {"type": "created", "file_path": "src/extra.ts"}]
    (workspace / "src" / "extra.ts").write_text("export interface Refund { amount: number }\n")
    status, body = await api("POST", "workspaces", wid, "index", "incremental", body={"changes": changes})
    assert status == 200 and body["reindexed"] == 2, body
    assert body["content"]["files"] == 3 and body["content"]["symbols"] == 2

    changes = [{"type": "deleted", "file_path": "src/extra.ts"}]
    (workspace / "src" / "extra.ts").unlink()
    status, body = await api("POST", "workspaces", wid, "index", "incremental", body={"changes": changes})
    assert status == 200 and body["reindexed"] == 1 and body["content"]["symbols"] == 1, body

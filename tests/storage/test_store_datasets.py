"""Schema step 23 and the store's datasets (storage/datasets.py, pipeline/datasets.py) on SQLite and PostgreSQL: a
database from before keeps its finished runs, which get their dataset id and intervals from their result documents;
a dataset's runs come back oldest first with what a leaderboard reads; its share links are made, listed and revoked."""
from __future__ import annotations

import hashlib
import json

from sqlalchemy import create_engine, text

from kinds import registry
from pipeline import datasets
from storage import migrations as store_migrations
from storage.database import database_url
from storage.store import Store

AT = "2026-01-02T03:04:05+00:00"


def result(sessions: list[str], avg: float, ci: list[float] | None) -> dict:
    """A dialogue result document with what datasets read: its sessions and one method's AVG and interval."""
    return {"kind": "dialogue", "methods": {"A": {"avg": avg, "ci95": {"avg": ci, "binary_rate": None}}},
            "sessions": [{"index": i, "session_id": s, "rounds": 1, "methods": {}} for i, s in enumerate(sessions)]}


def test_runs_kept_before_step_23_get_their_dataset_from_their_result(store_url):
    engine = create_engine(database_url(store_url))
    assert store_migrations.migrate(engine, up_to=21, tables=registry.tables())[-1] == 21
    rows = [("e1", "done", result(["s2", "s1"], 50.0, [45.0, 55.0])),
            ("e2", "incomplete", result(["s1", "s2", "s1"], 60.0, None)),
            ("e3", "done", result(["s1", "s3"], 70.0, [69.0, 71.0])),
            ("e4", "running", None)]
    with engine.begin() as con:
        con.execute(text("INSERT INTO uploads (id, sha256, kind, filename, size, summary, warnings, created_at)"
                         " VALUES ('u1', 'sha', 'dialogue', 'log.jsonl', 10, '{}', '[]', :at)"), {"at": AT})
        for evaluation_id, status, document in rows:
            con.execute(text("INSERT INTO evaluations (id, upload_id, kind, status, methods, settings, total,"
                             " created_at, result, headline) VALUES (:id, 'u1', 'dialogue', :status, '[\"A\"]', '{}',"
                             " 1, :at, :result, :headline)"),
                        {"id": evaluation_id, "status": status, "at": AT,
                         "result": json.dumps(document) if document else None,
                         "headline": json.dumps([["A", document["methods"]["A"]["avg"]]]) if document else None})
    engine.dispose()

    store = Store(store_url, registry.tables())
    try:
        assert 23 in store.migrated and store.dataset_of("e1") is None
        assert [row["id"] for row in store.without_dataset()] == ["e1", "e2", "e3"]
        assert datasets.fill_missing(store) == 3 and store.without_dataset() == []
        same = hashlib.sha256(b"dialogue\nsamples\ns1\ns2").hexdigest()[:16]
        assert store.dataset_of("e1") == store.dataset_of("e2") == same
        assert store.dataset_of("e3") == hashlib.sha256(b"dialogue\nsamples\ns1\ns3").hexdigest()[:16]
        assert store.dataset_of("e4") is None
        runs = store.dataset_runs(same)
        assert [(r["id"], r["headline"], r["intervals"], r["filename"], r["tags"]) for r in runs] == [
            ("e1", [["A", 50.0]], {"A": [45.0, 55.0]}, "log.jsonl", []),
            ("e2", [["A", 60.0]], {}, "log.jsonl", [])]
        # the runs were made in the same second: the order of the two datasets is not the point here
        assert sorted(store.datasets_of_upload("u1")) == sorted([same, store.dataset_of("e3")])
        share = store.add_dataset_share("sh1", same, "token-1")
        assert store.active_dataset_share("token-1")["dataset"] == same
        assert store.revoke_dataset_share(same, "sh1")["revoked_at"] is not None
        assert store.active_dataset_share("token-1") is None and store.list_dataset_shares(same) == []
        assert [s["id"] for s in store.list_dataset_shares(same, include_revoked=True)] == [share["id"]]
        assert store.revoke_dataset_share("another", "sh1") is None
    finally:
        store.close()

"""The SQLite store: upgrading an older database, and accounting across re-runs."""
from __future__ import annotations

import sqlite3

from store import Store


def test_older_database_gains_the_new_columns(tmp_path):
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE judgments (evaluation_id TEXT NOT NULL, session_idx INTEGER NOT NULL, session_id TEXT NOT NULL,
            round INTEGER NOT NULL, method TEXT NOT NULL, mode TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
            total REAL, style INTEGER, content INTEGER, naturalness INTEGER, personalization INTEGER,
            conversation INTEGER, verdict INTEGER, answer TEXT, error TEXT,
            prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
            cached INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (evaluation_id, session_idx, round, method, mode));
        INSERT INTO judgments (evaluation_id, session_idx, session_id, round, method, mode) VALUES ('e', 0, 's', 1, 'A', 'fine');
    """)
    con.commit()
    con.close()
    store = Store(path)
    assert store.progress("e") == {"done": 0, "total": 1, "failed": 0, "unparsed": 0, "cached": 0}
    store.save_judgments("e", [((0, 1, "A", "fine"), {"status": "ok", "total": 50, "attempts": 2})])
    assert store.judgments("e")[0]["attempts"] == 2


def test_tokens_and_attempts_add_up_over_reruns(tmp_path):
    store = Store(tmp_path / "db.sqlite")
    store.add_pending("e", [(0, "s", 1, "A", "fine")])
    key = (0, 1, "A", "fine")
    store.save_judgments("e", [(key, {"status": "unparsed", "error": "no box", "prompt_tokens": 100,
                                      "completion_tokens": 10, "attempts": 1})])
    assert store.reset_judgments("e") == 1
    assert store.judgments("e")[0]["status"] == "pending" and store.judgments("e")[0]["error"] is None
    store.save_judgments("e", [(key, {"status": "ok", "total": 70, "prompt_tokens": 100, "completion_tokens": 12,
                                      "attempts": 3})])
    row = store.judgments("e")[0]
    assert (row["status"], row["total"], row["prompt_tokens"], row["completion_tokens"], row["attempts"]) == \
        ("ok", 70, 200, 22, 4)
    usage = store.usage("e")
    assert usage == [{"method": "A", "mode": "fine", "calls": 1, "attempts": 4, "cache_hits": 0, "failed": 0,
                      "unparsed": 0, "prompt_tokens": 200, "completion_tokens": 22}]

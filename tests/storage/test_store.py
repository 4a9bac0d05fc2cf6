"""The store, on SQLite and on PostgreSQL alike: accounting across re-runs, records as the rest of the app reads
them, user names, ordering. (Upgrading older databases: test_store_migrations.py.)"""
from __future__ import annotations

import pytest

from kinds import registry
from kinds.dialogue import rating_store
from kinds.dialogue import tables as dialogue_tables
from kinds.mobility import reference_sets
from storage.access import Duplicate
from storage.database import database_url
from storage.store import Store


@pytest.fixture
def store(store_url):
    """A store on a fresh database (with the kinds' own tables), once per backend."""
    store = Store(store_url, registry.tables())
    yield store
    store.close()


def test_a_path_is_sqlite_and_a_postgresql_url_uses_psycopg(tmp_path):
    assert database_url(tmp_path / "db.sqlite").drivername == "sqlite"
    assert database_url("postgresql://u:p@db.lab:5432/psb").drivername == "postgresql+psycopg"
    assert database_url("postgres://u@db/psb").render_as_string(hide_password=False) == "postgresql+psycopg://u@db/psb"
    assert database_url("postgresql+psycopg://u@db/psb").drivername == "postgresql+psycopg"
    with pytest.raises(ValueError, match="unsupported database"):
        database_url("mysql://u@db/psb")


def test_tokens_and_attempts_add_up_over_reruns(store):
    assert store.add_pending("e", [(0, "s", 1, "A", "fine")]) == 1
    assert store.add_pending("e", [(0, "s", 1, "A", "fine"), (0, "s", 1, "A", "binary")]) == 1  # the first is kept
    key = (0, 1, "A", "fine")
    store.save_judgments("e", [(key, {"status": "unparsed", "error": "no box", "prompt_tokens": 100,
                                      "completion_tokens": 10, "attempts": 1})])
    assert store.reset_judgments("e") == 1
    assert store.judgments("e")[1]["status"] == "pending" and store.judgments("e")[1]["error"] is None
    store.save_judgments("e", [(key, {"status": "ok", "total": 70, "prompt_tokens": 100, "completion_tokens": 12,
                                      "attempts": 3})])
    row = store.judgments("e", [0])[1]
    assert (row["status"], row["total"], row["prompt_tokens"], row["completion_tokens"], row["attempts"]) == \
        ("ok", 70, 200, 22, 4)
    assert isinstance(row["total"], float)
    usage = store.usage("e")
    assert usage == [{"method": "A", "mode": "binary", "calls": 0, "attempts": 0, "cache_hits": 0, "failed": 0,
                      "unparsed": 0, "prompt_tokens": 0, "completion_tokens": 0},
                     {"method": "A", "mode": "fine", "calls": 1, "attempts": 4, "cache_hits": 0, "failed": 0,
                      "unparsed": 0, "prompt_tokens": 200, "completion_tokens": 22}]
    assert store.progress("e") == {"done": 1, "total": 2, "failed": 0, "unparsed": 0, "cached": 0}
    assert store.pending_keys("e") == {(0, 1, "A", "binary")}


def test_records_have_the_same_keys_and_decoded_json(store):
    store.add_upload({"id": "u1", "sha256": "abc", "kind": "dialogue", "filename": "log.jsonl", "size": 3 * 2 ** 31,
                      "summary": {"sessions": 2, "methods": ["A"]}, "warnings": ["w"]})
    upload = store.get_upload("u1")
    assert list(upload) == ["id", "sha256", "kind", "filename", "size", "summary", "warnings", "created_at", "title",
                            "tags"]
    assert (upload["title"], upload["tags"]) == (None, [])
    assert upload["summary"] == {"sessions": 2, "methods": ["A"]} and upload["size"] == 3 * 2 ** 31
    assert store.find_upload("abc", "dialogue")["id"] == "u1" and store.find_upload("abc", "mobility") is None
    store.set_session_offsets("u1", [(0, "Alpha", 0), (1, "beta", 2 ** 33), (2, "alphabet", 99)])
    assert store.session_offsets("u1", 0, 10, "ALPHA") == [{"idx": 0, "session_id": "Alpha", "offset": 0},
                                                            {"idx": 2, "session_id": "alphabet", "offset": 99}]
    assert store.session_offsets("u1", 1, 1) == [{"idx": 1, "session_id": "beta", "offset": 2 ** 33}]
    assert (store.count_sessions("u1"), store.count_sessions("u1", "alpha")) == (3, 2)

    store.add_evaluation({"id": "e1", "upload_id": "u1", "kind": "dialogue", "methods": ["A"],
                          "settings": {"model": "m"}, "total": 4})
    store.add_pending("e1", [(0, "Alpha", 1, "A", "fine"), (0, "Alpha", 1, "A", "binary")])
    store.set_status("e1", "running")
    evaluation = store.get_evaluation("e1")
    assert list(evaluation) == ["id", "upload_id", "kind", "status", "methods", "settings", "error", "total",
                                "created_at", "started_at", "finished_at", "run_started_at", "run_done_at_start",
                                "title", "tags", "headline", "result"]
    assert (evaluation["methods"], evaluation["settings"], evaluation["result"]) == (["A"], {"model": "m"}, None)
    assert "result" not in store.get_evaluation("e1", with_result=False)
    assert store.unfinished_evaluations() == ["e1"]
    store.set_result("e1", {"score": 1.5, "名前": "ok"})
    assert store.get_evaluation("e1")["result"] == {"score": 1.5, "名前": "ok"}
    assert store.get_evaluation("e1")["status"] == "done" and store.unfinished_evaluations() == []
    assert [list(e) for e in store.list_evaluations()] == [["id", "upload_id", "kind", "status", "methods", "settings",
                                                            "total", "error", "created_at", "finished_at", "title",
                                                            "tags", "headline", "filename"]]
    assert list(store.judgments("e1")[0]) == [
        "evaluation_id", "session_idx", "session_id", "round", "method", "mode", "status", "total", "verdict",
        "answer", "error", "prompt_tokens", "completion_tokens", "cached", "attempts", "scores", "latency_ms"]
    assert store.judgments("e1", []) == []

    store.set_setting("judge", {"model": "a"})
    store.set_setting("judge", {"model": "b"})
    assert store.get_setting("judge") == {"model": "b"} and store.get_setting("other", 7) == 7
    assert store.cache_get("k") is None
    store.cache_put("k", {"answer": "first"})
    store.cache_put("k", {"answer": "second", "prompt_tokens": 5, "completion_tokens": 2})
    assert store.cache_get("k") == {"answer": "second", "prompt_tokens": 5, "completion_tokens": 2}


def test_same_second_rows_keep_their_insertion_order(store):
    store.add_upload({"id": "u", "sha256": "s", "kind": "dialogue", "filename": "f", "size": 1, "summary": {},
                      "warnings": []})
    ids = ["e-z", "e-a", "e-m", "e-b"]  # not in alphabetical order
    for evaluation_id in ids:
        store.add_evaluation({"id": evaluation_id, "upload_id": "u", "kind": "dialogue", "methods": [], "settings": {},
                              "total": 0})
    with store.engine.begin() as con:  # all in the same second, whatever the clock did
        con.exec_driver_sql("UPDATE evaluations SET created_at = '2025-01-01T00:00:00+00:00'")
    assert [e["id"] for e in store.list_evaluations()] == ids[::-1]
    for share_id in ids:
        store.add_share(share_id, "e-z", f"token-{share_id}")
    assert [s["id"] for s in store.list_shares("e-z")] == ids
    store.revoke_share("e-z", "e-a")
    assert [s["id"] for s in store.list_shares("e-z")] == ["e-z", "e-m", "e-b"]
    assert [s["id"] for s in store.list_shares("e-z", include_revoked=True)] == ids
    assert store.active_share("token-e-a") is None and store.active_share("token-e-m")["id"] == "e-m"
    for name in ("zeta", "alpha", "mu"):  # the mobility kind's own table, through the store's generic API
        store.execute("INSERT INTO reference_sets (id, name, sha256, source, summary, created_at)"
                      " VALUES (:id, :name, 'x', 's', '{\"n\": 1}', '2025-01-01T00:00:00+00:00')",
                      {"id": f"r-{name}", "name": name})
    assert [r["name"] for r in reference_sets.records(store)] == ["mu", "alpha", "zeta"]
    assert reference_sets.get(store, "alpha")["summary"] == {"n": 1}
    assert reference_sets.get(store, "r-mu")["name"] == "mu"


def test_a_taken_user_name_raises_duplicate_whatever_its_case(store):
    max_ = store.add_user("Max", "hash-1", is_admin=True)
    assert list(max_) == ["id", "name", "password_hash", "is_admin", "created_at"] and max_["is_admin"] == 1
    for name in ("Max", "max", "MAX"):
        with pytest.raises(Duplicate):
            store.add_user(name, "hash-2", is_admin=False)
    ada = store.add_user("ada", "hash-3", is_admin=False)
    assert ada["id"] != max_["id"] and [u["name"] for u in store.list_users()] == ["ada", "Max"]


def test_user_names_are_looked_up_case_insensitively(store):
    user = store.add_user("Grace.Hopper", "hash", is_admin=False)
    for name in ("Grace.Hopper", "grace.hopper", "GRACE.HOPPER"):
        assert store.get_user(name=name) == user
    assert store.get_user(user_id=user["id"]) == user
    assert store.get_user(name="grace") is None and store.get_user() is None
    store.set_password_hash(user["id"], "new-hash")
    assert store.get_user(name="grace.HOPPER")["password_hash"] == "new-hash"


def test_tokens_and_deleting_a_user(store):
    user = store.add_user("max", "hash", is_admin=False)
    first = store.add_token(user["id"], "nightly", "digest-1")
    second = store.add_token(user["id"], "ci", "digest-2")
    assert list(first) == ["id", "user_id", "name", "token_hash", "created_at", "last_used_at", "revoked_at"]
    assert [t["id"] for t in store.list_tokens(user["id"])] == [second["id"], first["id"]]
    store.touch_token(first["id"])
    assert store.active_token("digest-1")["last_used_at"] is not None
    assert store.revoke_token(user["id"], first["id"])["revoked_at"] is not None
    assert store.active_token("digest-1") is None and store.revoke_token(user["id"] + 1, second["id"]) is None
    store.delete_user(user["id"])
    assert store.get_user(name="max") is None and store.list_tokens(user["id"]) == []
    assert store.add_user("max", "hash", is_admin=False)["id"] != user["id"]  # numbers are never reused


def test_the_failures_list_reads_a_partial_index(store):
    store.add_pending("e", [(i, f"s{i}", 1, "A", mode) for i in range(30) for mode in ("fine", "binary")])
    store.save_judgments("e", [((7, 1, "A", "binary"), {"status": "failed", "error": "timeout"}),
                               ((3, 1, "A", "fine"), {"status": "unparsed", "error": "no box"}),
                               ((5, 1, "A", "fine"), {"status": "ok", "total": 50})])
    assert [(f["session_id"], f["mode"], f["status"]) for f in store.failures("e")] == [
        ("s3", "fine", "unparsed"), ("s7", "binary", "failed")]
    with store.engine.connect() as con:
        if store.engine.dialect.name == "sqlite":
            plan = " ".join(str(row[-1]) for row in con.exec_driver_sql(
                "EXPLAIN QUERY PLAN SELECT session_id FROM judgments WHERE evaluation_id = 'e'"
                " AND status IN ('failed', 'unparsed') ORDER BY session_idx, round, method, mode LIMIT 50"))
            assert "USING INDEX judgments_failures" in plan and "TEMP B-TREE" not in plan, plan
        else:
            definition = con.exec_driver_sql("SELECT indexdef FROM pg_indexes WHERE indexname = 'judgments_failures'")
            assert "WHERE" in definition.scalar_one()


def test_judgments_are_read_in_batches_in_key_order(store):
    rows = [(i, f"s{i}", r, m, mode) for i in (3, 0, 12) for r in (2, 1) for m in ("B", "A") for mode in ("fine", "binary")]
    store.add_pending("e", rows)
    store.add_pending("other", rows[:5])
    store.save_judgments("e", [((0, 2, "A", "fine"), {"status": "ok", "total": 61.5, "scores": {"style": 14},
                                                      "prompt_tokens": 900, "answer": "Style: 14/20"})])
    expected = store.judgments("e")
    assert len(expected) == 24
    assert [r["scores"] for r in expected if r["status"] == "ok"] == [{"style": 14}]
    for batch in (1, 5, 24, 100):
        assert list(store.iter_judgments("e", batch=batch)) == expected


def test_the_judge_cache_reads_many_keys_at_once(store):
    from storage.store import CACHE_READ

    keys = [f"{i:064x}" for i in range(2 * CACHE_READ + 7)]  # three reads: two whole, one of 7
    store.cache_put_many({key: {"answer": f"answer {i}", "prompt_tokens": i, "completion_tokens": 1}
                          for i, key in enumerate(keys) if i % 3 == 0})
    found = store.cache_get_many(keys + ["missing"])
    assert found == {key: {"answer": f"answer {i}", "prompt_tokens": i, "completion_tokens": 1}
                     for i, key in enumerate(keys) if i % 3 == 0}
    assert store.cache_get_many([]) == {} and store.cache_get_many(keys[1:3]) == {}


def counted(store, evaluation_id: str) -> dict:
    """progress() as a count over the judgments themselves (what the counters must always equal)."""
    rows = store.judgments(evaluation_id)
    done = [r for r in rows if r["status"] != "pending"]
    return {"done": len(done), "total": len(rows), "failed": sum(r["status"] == "failed" for r in rows),
            "unparsed": sum(r["status"] == "unparsed" for r in rows), "cached": sum(r["cached"] for r in rows)}


def test_progress_counters_follow_every_change(store):
    import random

    rng = random.Random(4)
    keys = [(i, r, m, mode) for i in range(6) for r in (1, 2) for m in ("A", "B") for mode in ("fine", "binary")]
    store.add_pending("e", [(i, f"s{i}", r, m, mode) for i, r, m, mode in keys])
    assert store.add_pending("e", [(0, "s0", 1, "A", "fine")]) == 0  # already there: not counted twice
    assert store.progress("e") == counted(store, "e") and store.progress("e")["total"] == len(keys)
    outcomes = [{"status": "ok", "total": 60, "cached": 1}, {"status": "ok", "total": 70, "cached": 0},
                {"status": "failed", "error": "x"}, {"status": "unparsed", "error": "y"}]
    for _step in range(12):
        chosen = rng.sample(keys, 7)
        store.save_judgments("e", [(key, rng.choice(outcomes)) for key in chosen])
        assert store.progress("e") == counted(store, "e")
        if rng.random() < 0.4:
            store.reset_judgments("e")
            assert store.progress("e") == counted(store, "e")
    # A verdict for a judgment already kept changes nothing (it is not paid for, nor counted, twice).
    done = next(r for r in store.judgments("e") if r["status"] == "ok")
    before = counted(store, "e")
    store.save_judgments("e", [((done["session_idx"], done["round"], done["method"], done["mode"]),
                                {"status": "failed", "error": "late"})])
    assert counted(store, "e") == before == store.progress("e")
    assert store.progress("nothing") == {"done": 0, "total": 0, "failed": 0, "unparsed": 0, "cached": 0}


def test_deleting_evaluations_and_an_upload_leaves_nothing_of_them(store):
    store.add_upload({"id": "u", "sha256": "abc", "kind": "dialogue", "filename": "log.jsonl", "size": 1,
                      "summary": {}, "warnings": []})
    store.set_session_offsets("u", [(0, "s", 0)])
    for evaluation_id in ("e1", "e2"):
        store.add_evaluation({"id": evaluation_id, "upload_id": "u", "kind": "dialogue", "methods": ["A"],
                              "settings": {}, "total": 1})
        store.add_pending(evaluation_id, [(0, "s", 1, "A", "fine")])
        store.add_share(f"share-{evaluation_id}", evaluation_id, f"token-{evaluation_id}")
        store.set_setting(f"planned:{evaluation_id}", True)
    for evaluation_id in ("e1", "e2"):
        rating_store.add_ratings(store, evaluation_id, [{"line": 2, "rater": "r.csv", "session_id": "s", "round": 1,
                                                         "method": "A", "total": 50.0}], "file")
    dialogue_tables.set_review(store, "e1", (0, 1, "A", "fine"), {"decision": "overridden", "total": 20.0,
                                                                 "comment": "low"})
    assert [r["total"] for r in dialogue_tables.reviews(store, "e1")] == [20.0]
    assert store.set_labels("evaluations", "e1", "first", ["a", "b"]) and not store.set_labels("uploads", "x", None, [])
    assert (store.get_evaluation("e1")["title"], store.get_evaluation("e1")["tags"]) == ("first", ["a", "b"])

    store.delete_evaluations(["e1"])
    assert store.get_evaluation("e1") is None and store.judgments("e1") == []
    assert rating_store.people_ratings(store, "e1") == [] and dialogue_tables.reviews(store, "e1") == []
    assert store.progress("e1")["total"] == 0 and store.active_share("token-e1") is None
    assert store.get_setting("planned:e1") is None and rating_store.human_ratings_info(store, "e1") is None
    assert store.get_evaluation("e2") is not None and store.active_share("token-e2") is not None  # the other stays
    assert [r["total"] for r in rating_store.people_ratings(store, "e2")] == [50.0]
    assert store.uploads_of_file("abc") == 1

    store.delete_evaluations(["e2"], upload_id="u")
    assert store.get_upload("u") is None and store.count_sessions("u") == 0 and store.list_evaluations() == []
    assert rating_store.people_ratings(store, "e2") == []
    assert store.uploads_of_file("abc") == 0


def test_judgments_put_back_are_counted_in_the_same_transaction(store):
    # the progress adds this count to the judgments done: a reader must never find them pending and not yet counted
    store.add_pending("e", [(0, "s", 1, "A", "fine"), (0, "s", 1, "A", "binary"), (0, "s", 2, "A", "fine")])
    store.save_judgments("e", [((0, 1, "A", "fine"), {"status": "failed", "error": "503", "attempts": 1}),
                               ((0, 1, "A", "binary"), {"status": "failed", "error": "503", "attempts": 1})])
    assert store.reset_judgments("e", ("failed",), counted_in=("again:e", 3)) == 2
    assert store.get_setting("again:e") == 5 and store.progress("e")["done"] == 0
    assert store.reset_judgments("e", ("failed",), counted_in=("again:none", 0)) == 0
    assert store.get_setting("again:none") is None  # nothing to count: nothing written

"""Schema migrations: databases made before migrations existed (SQLite) and at an earlier step (PostgreSQL) are
upgraded in place keeping every row; opening again changes nothing; processes opening at once migrate once."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from kinds import registry
from kinds.host import Step, Table
from kinds.mobility import reference_sets
from storage import migrations as store_migrations
from storage.access import Duplicate
from storage.database import database_url
from storage.store import Store

ROOT = Path(__file__).resolve().parents[2]
# the store's own steps and those of the kinds' tables (the dialogue kind's 5 and 10, the mobility kind's 13)
ALL_STEPS = [step.version for step in store_migrations.steps(registry.tables())]
KIND_TABLES = ("human_ratings", "reviews", "reference_sets", "people_ratings")


def open_store(target) -> Store:
    """A store as the app opens it: with the tables the registered kinds keep."""
    return Store(target, registry.tables())


# The schema as the store wrote it before migrations existed (storage/store.py's SCHEMA of that time, SQLite only).
SCHEMA_BEFORE_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS uploads (id TEXT PRIMARY KEY, sha256 TEXT NOT NULL, kind TEXT NOT NULL,
    filename TEXT NOT NULL, size INTEGER NOT NULL, summary TEXT NOT NULL, warnings TEXT NOT NULL,
    created_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS uploads_sha ON uploads (sha256, kind);
CREATE TABLE IF NOT EXISTS sessions (upload_id TEXT NOT NULL, idx INTEGER NOT NULL, session_id TEXT NOT NULL,
    offset INTEGER NOT NULL, PRIMARY KEY (upload_id, idx));
CREATE TABLE IF NOT EXISTS evaluations (id TEXT PRIMARY KEY, upload_id TEXT NOT NULL REFERENCES uploads (id),
    kind TEXT NOT NULL, status TEXT NOT NULL, methods TEXT NOT NULL, settings TEXT NOT NULL, error TEXT,
    total INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, started_at TEXT, finished_at TEXT,
    run_started_at TEXT, run_done_at_start INTEGER NOT NULL DEFAULT 0, result TEXT);
CREATE TABLE IF NOT EXISTS judgments (evaluation_id TEXT NOT NULL, session_idx INTEGER NOT NULL,
    session_id TEXT NOT NULL, round INTEGER NOT NULL, method TEXT NOT NULL, mode TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending', total REAL, style INTEGER, content INTEGER, naturalness INTEGER,
    personalization INTEGER, conversation INTEGER, verdict INTEGER, answer TEXT, error TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, scores TEXT,
    PRIMARY KEY (evaluation_id, session_idx, round, method, mode));
CREATE INDEX IF NOT EXISTS judgments_progress ON judgments (evaluation_id, status, cached);
CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, answer TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS shares (id TEXT PRIMARY KEY, evaluation_id TEXT NOT NULL REFERENCES evaluations (id),
    token TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, revoked_at TEXT);
CREATE INDEX IF NOT EXISTS shares_evaluation ON shares (evaluation_id);
CREATE TABLE IF NOT EXISTS reference_sets (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, sha256 TEXT NOT NULL,
    source TEXT NOT NULL, summary TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT NOT NULL, is_admin INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS api_tokens (id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER NOT NULL REFERENCES
    users (id), name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, last_used_at TEXT,
    revoked_at TEXT);
CREATE INDEX IF NOT EXISTS api_tokens_user ON api_tokens (user_id);
"""

# The oldest schema: before attempts, scores, run_started_at, run_done_at_start, accounts and API tokens.
OLDEST_SCHEMA = """
CREATE TABLE uploads (id TEXT PRIMARY KEY, sha256 TEXT NOT NULL, kind TEXT NOT NULL, filename TEXT NOT NULL,
    size INTEGER NOT NULL, summary TEXT NOT NULL, warnings TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX uploads_sha ON uploads (sha256, kind);
CREATE TABLE sessions (upload_id TEXT NOT NULL, idx INTEGER NOT NULL, session_id TEXT NOT NULL,
    offset INTEGER NOT NULL, PRIMARY KEY (upload_id, idx));
CREATE TABLE evaluations (id TEXT PRIMARY KEY, upload_id TEXT NOT NULL REFERENCES uploads (id), kind TEXT NOT NULL,
    status TEXT NOT NULL, methods TEXT NOT NULL, settings TEXT NOT NULL, error TEXT, total INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL, started_at TEXT, finished_at TEXT, result TEXT);
CREATE TABLE judgments (evaluation_id TEXT NOT NULL, session_idx INTEGER NOT NULL, session_id TEXT NOT NULL,
    round INTEGER NOT NULL, method TEXT NOT NULL, mode TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
    total REAL, style INTEGER, content INTEGER, naturalness INTEGER, personalization INTEGER, conversation INTEGER,
    verdict INTEGER, answer TEXT, error TEXT, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, cached INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (evaluation_id, session_idx, round, method, mode));
CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE judge_cache (key TEXT PRIMARY KEY, answer TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE shares (id TEXT PRIMARY KEY, evaluation_id TEXT NOT NULL REFERENCES evaluations (id),
    token TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, revoked_at TEXT);
CREATE TABLE reference_sets (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, sha256 TEXT NOT NULL,
    source TEXT NOT NULL, summary TEXT NOT NULL, created_at TEXT NOT NULL);
"""

SAME_SECOND = "2025-03-01T10:00:00+00:00"

# reference_sets as the store's step 1 created it, before the mobility kind created it with a step of its own.
STEP_1_REFERENCE_SETS = """CREATE TABLE reference_sets (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE,
    sha256 TEXT NOT NULL, source TEXT NOT NULL, summary TEXT NOT NULL, created_at TEXT NOT NULL)"""


def fill_common_tables(execute) -> None:
    """Rows in every table that exists at every version, written with `execute(sql)`."""
    execute("INSERT INTO uploads VALUES ('u1', 'sha', 'dialogue', 'log.jsonl', 10, '{\"sessions\": 2}', '[]', "
            f"'{SAME_SECOND}')")
    execute("INSERT INTO sessions VALUES ('u1', 0, 'first', 0), ('u1', 1, 'second', 4096)")
    # Created in the same second, inserted in this order (not the order of their ids).
    for evaluation_id in ("e-z", "e-a"):
        execute("INSERT INTO evaluations (id, upload_id, kind, status, methods, settings, total, created_at, result)"
                f" VALUES ('{evaluation_id}', 'u1', 'dialogue', 'done', '[\"A\"]', '{{}}', 2, '{SAME_SECOND}',"
                " '{\"score\": 1}')")
    execute("INSERT INTO judgments (evaluation_id, session_idx, session_id, round, method, mode, status, total,"
            " prompt_tokens, completion_tokens) VALUES ('e-z', 0, 'first', 1, 'A', 'fine', 'ok', 80, 10, 2),"
            " ('e-z', 0, 'first', 1, 'A', 'binary', 'pending', NULL, 0, 0)")
    execute("INSERT INTO settings VALUES ('judge', '{\"model\": \"m\"}')")
    execute(f"INSERT INTO judge_cache VALUES ('key', 'answer', 5, 1, '{SAME_SECOND}')")
    for share_id in ("s-z", "s-a"):
        execute(f"INSERT INTO shares (id, evaluation_id, token, created_at) VALUES ('{share_id}', 'e-z',"
                f" 'token-{share_id}', '{SAME_SECOND}')")
    for name in ("zeta", "alpha"):
        execute(f"INSERT INTO reference_sets VALUES ('r-{name}', '{name}', 'sha', 'src', '{{}}', '{SAME_SECOND}')")


def check_common_rows(store: Store) -> None:
    """Every row of fill_common_tables, read through the store as the app reads it."""
    assert store.get_upload("u1")["summary"] == {"sessions": 2}
    assert store.session_offsets("u1", 0, 10) == [{"idx": 0, "session_id": "first", "offset": 0},
                                                  {"idx": 1, "session_id": "second", "offset": 4096}]
    assert [e["id"] for e in store.list_evaluations()] == ["e-a", "e-z"]  # newest first: insertion order kept
    assert store.get_evaluation("e-z")["result"] == {"score": 1}
    assert store.get_evaluation("e-z")["run_done_at_start"] == 0
    assert [(j["mode"], j["status"], j["total"], j["attempts"]) for j in store.judgments("e-z")] == \
        [("binary", "pending", None, 0), ("fine", "ok", 80, 0)]
    assert store.progress("e-z") == {"done": 1, "total": 2, "failed": 0, "unparsed": 0, "cached": 0}
    assert store.get_setting("judge") == {"model": "m"}
    assert store.cache_get("key") == {"answer": "answer", "prompt_tokens": 5, "completion_tokens": 1}
    assert [s["id"] for s in store.list_shares("e-z")] == ["s-z", "s-a"]
    assert [r["name"] for r in reference_sets.records(store)] == ["alpha", "zeta"]


def versions(store: Store) -> list[int]:
    with store.engine.connect() as con:
        return [row[0] for row in con.execute(text("SELECT version FROM schema_migrations ORDER BY version"))]


def columns(store: Store, table: str) -> set[str]:
    with store.engine.connect() as con:
        return {c["name"] for c in inspect(con).get_columns(table)}


def sqlite_file(path: Path, script: str, rows) -> None:
    con = sqlite3.connect(path)
    con.executescript(script)
    rows(con.execute)
    con.commit()
    con.close()


def test_a_sqlite_database_from_before_migrations_is_upgraded_keeping_every_row(tmp_path):
    path = tmp_path / "personasteer.sqlite"

    def rows(execute):
        fill_common_tables(execute)
        execute(f"INSERT INTO users (name, password_hash, is_admin, created_at) VALUES"
                f" ('Ada', 'h1', 1, '{SAME_SECOND}'), ('max', 'h2', 0, '{SAME_SECOND}')")
        execute(f"INSERT INTO api_tokens (user_id, name, token_hash, created_at) VALUES (2, 'ci', 'digest', "
                f"'{SAME_SECOND}')")

    sqlite_file(path, SCHEMA_BEFORE_MIGRATIONS, rows)
    store = open_store(path)
    assert store.migrated == ALL_STEPS and versions(store) == ALL_STEPS
    check_common_rows(store)
    assert "byte_offset" in columns(store, "sessions") and "seq" in columns(store, "evaluations")
    assert [u["name"] for u in store.list_users()] == ["Ada", "max"]
    assert store.get_user(name="ADA")["password_hash"] == "h1"
    assert store.active_token("digest")["user_id"] == 2
    with pytest.raises(Duplicate):
        store.add_user("MAX", "h3", is_admin=False)
    assert store.add_user("grace", "h4", is_admin=False)["id"] == 3
    store.close()

    again = open_store(path)  # opening again applies nothing and keeps everything
    assert again.migrated == [] and versions(again) == ALL_STEPS
    check_common_rows(again)
    assert [u["name"] for u in again.list_users()] == ["Ada", "grace", "max"]
    again.close()


def test_the_oldest_sqlite_database_gains_the_new_columns_and_tables(tmp_path):
    path = tmp_path / "oldest.sqlite"
    sqlite_file(path, OLDEST_SCHEMA, fill_common_tables)
    store = open_store(path)
    assert store.migrated == ALL_STEPS
    assert {"attempts", "scores"} <= columns(store, "judgments")
    assert {"run_started_at", "run_done_at_start", "seq"} <= columns(store, "evaluations")
    check_common_rows(store)
    store.save_judgments("e-z", [((0, 1, "A", "binary"), {"status": "ok", "verdict": 1, "attempts": 2,
                                                          "scores": {"extra": 3}})])
    assert store.judgments("e-z")[0]["attempts"] == 2 and store.judgments("e-z")[0]["scores"] == {"extra": 3}
    store.set_status("e-a", "running")
    assert store.get_evaluation("e-a")["run_started_at"] is not None
    user = store.add_user("Ada", "hash", is_admin=True)  # the accounts tables were created
    store.add_token(user["id"], "ci", "digest")
    assert store.get_user(name="ada") == user and store.active_token("digest")["user_id"] == user["id"]
    store.close()

    again = open_store(path)
    assert again.migrated == [] and versions(again) == ALL_STEPS
    assert again.judgments("e-z")[0]["attempts"] == 2 and again.list_users() == [user]
    again.close()


def test_a_postgresql_database_at_step_1_is_upgraded_keeping_every_row(postgres_server):
    url = postgres_server.url()
    engine = create_engine(database_url(url))
    assert store_migrations.migrate(engine, up_to=1, tables=registry.tables()) == [1]
    with engine.begin() as con:
        con.exec_driver_sql(STEP_1_REFERENCE_SETS)  # step 1 made it before the mobility kind kept it
        fill_common_tables(con.exec_driver_sql)
        con.exec_driver_sql(f"INSERT INTO users (name, password_hash, is_admin, created_at) VALUES"
                            f" ('Ada', 'h1', 1, '{SAME_SECOND}'), ('max', 'h2', 0, '{SAME_SECOND}')")
        assert 'offset' in {c["name"] for c in inspect(con).get_columns("sessions")}  # step 1's column name
    engine.dispose()

    store = open_store(url)
    assert store.migrated == ALL_STEPS[1:] and versions(store) == ALL_STEPS
    check_common_rows(store)
    assert "offset" not in columns(store, "sessions")
    assert store.get_user(name="MAX")["password_hash"] == "h2"
    with pytest.raises(Duplicate):
        store.add_user("ada", "h3", is_admin=False)
    assert store.add_user("grace", "h4", is_admin=False)["id"] > 2  # the identity carries on after the old rows
    store.close()
    again = open_store(url)
    assert again.migrated == [] and versions(again) == ALL_STEPS
    check_common_rows(again)
    again.close()


def shape(store: Store, table: str) -> dict:
    """A table as the database describes it: columns, keys, indexes and (SQLite) triggers."""
    with store.engine.connect() as con:
        inspector = inspect(con)
        found = {"columns": [(c["name"], str(c["type"]), c["nullable"], c.get("default"), bool(c.get("identity")))
                             for c in inspector.get_columns(table)],
                 "primary key": inspector.get_pk_constraint(table)["constrained_columns"],
                 "unique": sorted(tuple(u["column_names"]) for u in inspector.get_unique_constraints(table)),
                 "indexes": sorted((tuple(i["column_names"]), bool(i["unique"])) for i in inspector.get_indexes(table)),
                 "foreign keys": sorted((tuple(f["constrained_columns"]), f["referred_table"])
                                        for f in inspector.get_foreign_keys(table))}
        if store.dialect == "sqlite":
            found["triggers"] = sorted(row[0] for row in con.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", (table,)))
    return found


def test_the_kinds_tables_are_the_same_on_new_databases_and_on_those_the_store_made_them_in(store_url, tmp_path,
                                                                                           request):
    # A database the earlier code made, stopped at step 3: its step 1 had created reference_sets (numbered by step
    # 4 since), and the store's steps 5 and 10 had not yet made human_ratings and reviews.
    old = request.getfixturevalue("postgres_server").url() if "://" in store_url else str(tmp_path / "old.sqlite")
    engine = create_engine(database_url(old))
    assert store_migrations.migrate(engine, up_to=3, tables=registry.tables()) == [1, 2, 3]
    with engine.begin() as con:
        con.exec_driver_sql(STEP_1_REFERENCE_SETS)
        for name in ("zeta", "alpha"):
            con.exec_driver_sql(f"INSERT INTO reference_sets VALUES ('r-{name}', '{name}', 'sha', 'src',"
                                f" '{{\"n\": 1}}', '{SAME_SECOND}')")
    engine.dispose()

    upgraded, new = open_store(old), open_store(store_url)
    assert upgraded.migrated == ALL_STEPS[3:] and new.migrated == ALL_STEPS
    for table in KIND_TABLES:
        assert shape(upgraded, table) == shape(new, table), table
    assert "seq" in columns(new, "reference_sets")
    assert [r["name"] for r in reference_sets.records(upgraded)] == ["alpha", "zeta"]  # insertion order kept
    assert reference_sets.get(upgraded, "r-zeta")["summary"] == {"n": 1}
    upgraded.close()
    new.close()


def test_a_store_without_the_kinds_tables_leaves_them_to_the_next_opening(tmp_path):
    path = tmp_path / "db.sqlite"
    bare = Store(path)  # a tool that opens the store alone (no registry): the store's own steps only
    assert bare.migrated == [step.version for step in store_migrations.STEPS]
    bare.close()
    store = open_store(path)  # then the app: the kinds' steps, numbered among the store's, are applied
    assert store.migrated == sorted(set(ALL_STEPS) - {step.version for step in store_migrations.STEPS})
    assert {"human_ratings", "reviews", "reference_sets"} <= set(inspect(store.engine).get_table_names())
    store.close()


def test_two_steps_of_the_same_version_are_refused():
    taken = Table("another", (Step(4, "a kind's step numbered like the store's step 4", lambda con, ddl: None),))
    with pytest.raises(ValueError, match="share a version: \\[4\\]"):
        store_migrations.steps([*registry.tables(), taken])


CHILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from kinds import registry
from storage.store import Store
ready, go = Path(sys.argv[3]), Path(sys.argv[4])
ready.touch()
while not go.exists():
    time.sleep(0.002)
store = Store(sys.argv[2], registry.tables())
print(json.dumps(store.migrated))
"""


def test_processes_opening_a_new_database_at_once_migrate_it_once(store_url, tmp_path):
    processes = []
    for i in range(6):
        ready = tmp_path / f"ready-{i}"
        processes.append((ready, subprocess.Popen(
            [sys.executable, "-c", CHILD, str(ROOT), store_url, str(ready), str(tmp_path / "go")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    deadline = time.monotonic() + 120
    while not all(ready.exists() for ready, _ in processes):
        assert time.monotonic() < deadline and all(p.poll() is None for _, p in processes), "a child did not start"
        time.sleep(0.01)
    (tmp_path / "go").touch()  # all at once
    applied = []
    for _, process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        applied += json.loads(out)
    assert sorted(applied) == ALL_STEPS  # every step applied, each by exactly one process
    store = open_store(store_url)
    assert store.migrated == [] and versions(store) == ALL_STEPS
    store.close()


def test_a_database_with_a_newer_step_still_opens(store_url, caplog):
    open_store(store_url).close()
    engine = create_engine(database_url(store_url))
    with engine.begin() as con:
        con.execute(text("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'now')"))
    engine.dispose()
    store = open_store(store_url)
    assert store.migrated == [] and "999" in caplog.text
    store.close()


def test_step_12_moves_every_judge_score_into_scores_and_drops_the_dialogue_columns(store_url, monkeypatch):
    monkeypatch.setattr(store_migrations, "_BATCH", 3)  # several batches, the last one short
    engine = create_engine(database_url(store_url))
    assert store_migrations.migrate(engine, up_to=11, tables=registry.tables()) == ALL_STEPS[:11]
    dims = ("style", "content", "naturalness", "personalization", "conversation")
    # (session index, the five columns, scores before) -> scores after
    cases = [((0, (10, 11, 12, 13, 14), None),
              {"style": 10, "content": 11, "naturalness": 12, "personalization": 13, "conversation": 14}),
             ((1, (None, 5, None, None, None), '{"extra": 2.5}'), {"content": 5, "extra": 2.5}),
             ((2, (None,) * 5, '{"detail": 2, "hallucination": 0}'), {"detail": 2, "hallucination": 0}),
             ((3, (None,) * 5, None), None),
             ((4, (20, 20, 20, 20, 20), None), dict.fromkeys(dims, 20)),
             ((5, (None,) * 5, None), None),
             ((6, (1, 2, 3, 4, 5), '{"extra": 1}'), {**dict(zip(dims, (1, 2, 3, 4, 5))), "extra": 1}),
             ((7, (0, None, None, None, 0), None), {"style": 0, "conversation": 0}),
             ((8, (None,) * 5, '{"x": 1}'), {"x": 1})]
    with engine.begin() as con:
        for evaluation_id in ("e-1", "e-2"):  # the second evaluation's rows sort after the first's
            for (idx, values, scores), _after in cases:
                con.execute(text("INSERT INTO judgments (evaluation_id, session_idx, session_id, round, method, mode,"
                                 " status, total, style, content, naturalness, personalization, conversation,"
                                 " scores) VALUES (:e, :i, 's', 1, 'A', 'fine', 'ok', 50, :s1, :s2, :s3, :s4, :s5,"
                                 " :scores)"), {"e": evaluation_id, "i": idx, "scores": scores,
                                                **{f"s{n}": v for n, v in enumerate(values, start=1)}})
    engine.dispose()

    store = open_store(store_url)
    assert store.migrated == ALL_STEPS[11:]
    assert not set(dims) & columns(store, "judgments")
    for evaluation_id in ("e-1", "e-2"):
        rows = store.judgments(evaluation_id)
        assert [(r["session_idx"], r["total"], r["status"]) for r in rows] == [(i, 50, "ok") for i in range(9)]
        assert [r["scores"] for r in rows] == [after for _before, after in cases]
    store.close()


def test_step_19_moves_each_attached_ratings_file_in_as_one_raters_ratings(store_url):
    from kinds.dialogue import rating_store

    engine = create_engine(database_url(store_url))
    assert store_migrations.migrate(engine, up_to=18, tables=registry.tables())[-1] == 18
    attached = {"filename": "people.csv", "rows": 2, "attached_at": SAME_SECOND}
    with engine.begin() as con:
        con.execute(text("INSERT INTO uploads (id, sha256, kind, filename, size, summary, warnings, created_at)"
                         " VALUES ('u1', 'sha', 'dialogue', 'log.jsonl', 10, '{}', '[]', :at)"), {"at": SAME_SECOND})
        for evaluation_id in ("e-named", "e-unnamed", "e-none"):
            con.execute(text("INSERT INTO evaluations (id, upload_id, kind, status, methods, settings, total,"
                             " created_at) VALUES (:id, 'u1', 'dialogue', 'done', '[\"A\"]', '{}', 1, :at)"),
                        {"id": evaluation_id, "at": SAME_SECOND})
        con.execute(text("INSERT INTO settings (name, value) VALUES ('human_ratings:e-named', :value)"),
                    {"value": json.dumps(attached)})
        # the ratings as the code before kept them: the former dimension columns (before step 17) and `scores`
        for row in ({"e": "e-named", "line": 2, "sid": "s1", "total": 70, "verdict": 1, "style": 14,
                     "scores": '{"warmth": 3}'},
                    {"e": "e-named", "line": 3, "sid": "s2", "total": None, "verdict": 0, "style": None,
                     "scores": None},
                    {"e": "e-unnamed", "line": 5, "sid": "s1", "total": 25.5, "verdict": None, "style": None,
                     "scores": '{"consistency": 6}'}):
            con.execute(text("INSERT INTO human_ratings (evaluation_id, line, session_id, round, method, total,"
                             " verdict, style, scores) VALUES (:e, :line, :sid, 1, 'A', :total, :verdict, :style,"
                             " :scores)"), row)
    engine.dispose()

    store = open_store(store_url)
    assert store.migrated[0] == 19 and "people_ratings" in inspect(store.engine).get_table_names()
    named = rating_store.people_ratings(store, "e-named")
    assert named == [
        {"rater": "people.csv", "session_id": "s1", "round": 1, "method": "A", "total": 70.0, "verdict": 1,
         "style": 14, "warmth": 3, "source": "file", "line": 2, "updated_at": SAME_SECOND},
        {"rater": "people.csv", "session_id": "s2", "round": 1, "method": "A", "total": None, "verdict": 0,
         "source": "file", "line": 3, "updated_at": SAME_SECOND}]
    [unnamed] = rating_store.people_ratings(store, "e-unnamed")
    assert (unnamed["rater"], unnamed["total"], unnamed["consistency"], unnamed["line"]) == ("file", 25.5, 6, 5)
    assert rating_store.people_ratings(store, "e-none") == []
    # the setting that named the file is no longer needed: the rater and updated_at say it
    assert store.get_setting("human_ratings:e-named") is None
    assert rating_store.human_ratings(store, "e-named") == [
        {"line": 2, "session_id": "s1", "round": 1, "method": "A", "total": 70.0, "verdict": 1, "style": 14,
         "warmth": 3, "raters": 1},
        {"line": 3, "session_id": "s2", "round": 1, "method": "A", "total": None, "verdict": 0, "raters": 1}]
    store.close()

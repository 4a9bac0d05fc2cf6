"""SQLite persistence: uploads, evaluations, judgments, the judge cache and result documents."""
from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator

from benchmarks.dialogue.prompts import DIMENSIONS

SCHEMA = """
CREATE TABLE IF NOT EXISTS uploads (
    id TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    kind TEXT NOT NULL,
    filename TEXT NOT NULL,
    size INTEGER NOT NULL,
    summary TEXT NOT NULL,
    warnings TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS uploads_sha ON uploads (sha256, kind);
CREATE TABLE IF NOT EXISTS sessions (
    upload_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    offset INTEGER NOT NULL,
    PRIMARY KEY (upload_id, idx)
);
CREATE TABLE IF NOT EXISTS evaluations (
    id TEXT PRIMARY KEY,
    upload_id TEXT NOT NULL REFERENCES uploads (id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    methods TEXT NOT NULL,
    settings TEXT NOT NULL,
    error TEXT,
    total INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    run_started_at TEXT,
    run_done_at_start INTEGER NOT NULL DEFAULT 0,
    result TEXT
);
CREATE TABLE IF NOT EXISTS judgments (
    evaluation_id TEXT NOT NULL,
    session_idx INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    method TEXT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    total REAL,
    style INTEGER,
    content INTEGER,
    naturalness INTEGER,
    personalization INTEGER,
    conversation INTEGER,
    verdict INTEGER,
    answer TEXT,
    error TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    scores TEXT,
    PRIMARY KEY (evaluation_id, session_idx, round, method, mode)
);
-- Covers the progress counts, so polling a 400,000-judgment evaluation stays cheap.
CREATE INDEX IF NOT EXISTS judgments_progress ON judgments (evaluation_id, status, cached);
CREATE TABLE IF NOT EXISTS settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS judge_cache (
    key TEXT PRIMARY KEY,
    answer TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shares (
    id TEXT PRIMARY KEY,
    evaluation_id TEXT NOT NULL REFERENCES evaluations (id),
    token TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX IF NOT EXISTS shares_evaluation ON shares (evaluation_id);
CREATE TABLE IF NOT EXISTS reference_sets (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    sha256 TEXT NOT NULL,
    source TEXT NOT NULL,
    summary TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT NOT NULL,
    is_admin INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS api_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id),
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at TEXT
);
CREATE INDEX IF NOT EXISTS api_tokens_user ON api_tokens (user_id);
"""

UNFINISHED = ("queued", "running")
_JSON_COLUMNS = {"summary", "warnings", "methods", "settings", "result"}
_RESULT_COLUMNS = ("status", "total", *DIMENSIONS, "verdict", "scores", "answer", "error",
                   "prompt_tokens", "completion_tokens", "cached", "attempts")
_ACCUMULATED = ("prompt_tokens", "completion_tokens", "attempts")
_COUNTER_DEFAULTS = {"prompt_tokens": 0, "completion_tokens": 0, "attempts": 0, "cached": 0}
# Columns added after the first release: (table, column, declaration), added to older databases on open.
_ADDED_COLUMNS = (
    ("judgments", "attempts", "INTEGER NOT NULL DEFAULT 0"),
    ("evaluations", "run_started_at", "TEXT"),
    ("evaluations", "run_done_at_start", "INTEGER NOT NULL DEFAULT 0"),
    ("judgments", "scores", "TEXT"),  # JSON scores of judgments other than the dialogue dimensions
)


def new_id() -> str:
    """A fresh random identifier for an upload, an evaluation, a share or a reference set."""
    return secrets.token_hex(6)


def now() -> str:
    """Current UTC time as an ISO 8601 string."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _decode(row: sqlite3.Row | None) -> dict | None:
    if row is None:
        return None
    out = dict(row)
    for key in _JSON_COLUMNS & out.keys():
        if out[key] is not None:
            out[key] = json.loads(out[key])
    return out


class Store:
    """All database access, safe across threads (each thread has its own connection)."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.Lock()
        self._local = threading.local()
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(SCHEMA)
            for table, column, declaration in _ADDED_COLUMNS:
                existing = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
                if column not in existing:
                    con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # One connection per thread, kept open: opening one and reading the schema costs more than a query.
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._local.con = sqlite3.connect(self.path, timeout=30)
            con.row_factory = sqlite3.Row
        with con:
            yield con

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        # One writer at a time inside this process keeps SQLite from returning "database is locked".
        with self._write_lock, self._connect() as con:
            yield con

    # uploads -----------------------------------------------------------------
    def add_upload(self, upload: dict) -> None:
        """Insert an upload record (summary and warnings as JSON)."""
        with self._writing() as con:
            con.execute(
                "INSERT INTO uploads (id, sha256, kind, filename, size, summary, warnings, created_at)"
                " VALUES (:id, :sha256, :kind, :filename, :size, :summary, :warnings, :created_at)",
                {**upload, "summary": json.dumps(upload["summary"]),
                 "warnings": json.dumps(upload["warnings"]), "created_at": upload.get("created_at") or now()},
            )

    def get_upload(self, upload_id: str) -> dict | None:
        """One upload by id, or None."""
        with self._connect() as con:
            return _decode(con.execute("SELECT * FROM uploads WHERE id = ?", (upload_id,)).fetchone())

    def find_upload(self, sha256: str, kind: str) -> dict | None:
        """The first upload of the same content and kind, or None."""
        with self._connect() as con:
            return _decode(con.execute(
                "SELECT * FROM uploads WHERE sha256 = ? AND kind = ? ORDER BY created_at LIMIT 1",
                (sha256, kind)).fetchone())

    def set_session_offsets(self, upload_id: str, rows: Iterable[tuple[int, str, int]]) -> None:
        """Record (index, session id, byte offset) of every session of an upload."""
        with self._writing() as con:
            con.execute("DELETE FROM sessions WHERE upload_id = ?", (upload_id,))
            con.executemany("INSERT INTO sessions (upload_id, idx, session_id, offset) VALUES (?, ?, ?, ?)",
                            ((upload_id, *row) for row in rows))

    def session_offsets(self, upload_id: str, start: int, limit: int, query: str = "") -> list[dict]:
        """A page of sessions of an upload (index, id, byte offset), optionally filtered by id."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT idx, session_id, offset FROM sessions WHERE upload_id = ? AND session_id LIKE ?"
                " ORDER BY idx LIMIT ? OFFSET ?", (upload_id, f"%{query}%", limit, start)).fetchall()
            return [dict(r) for r in rows]

    def count_sessions(self, upload_id: str, query: str = "") -> int:
        """Number of sessions of an upload, optionally filtered by id."""
        with self._connect() as con:
            return con.execute("SELECT COUNT(*) FROM sessions WHERE upload_id = ? AND session_id LIKE ?",
                               (upload_id, f"%{query}%")).fetchone()[0]

    # evaluations -------------------------------------------------------------
    def add_evaluation(self, evaluation: dict) -> None:
        """Insert a queued evaluation."""
        with self._writing() as con:
            con.execute(
                "INSERT INTO evaluations (id, upload_id, kind, status, methods, settings, total, created_at)"
                " VALUES (:id, :upload_id, :kind, 'queued', :methods, :settings, :total, :created_at)",
                {**evaluation, "methods": json.dumps(evaluation["methods"]),
                 "settings": json.dumps(evaluation["settings"]), "created_at": now()},
            )

    def get_evaluation(self, evaluation_id: str, with_result: bool = True) -> dict | None:
        """One evaluation by id (with its result document unless asked not to), or None."""
        columns = "*" if with_result else "id, upload_id, kind, status, methods, settings, error, total, " \
                                          "created_at, started_at, finished_at, run_started_at, run_done_at_start"
        with self._connect() as con:
            return _decode(con.execute(f"SELECT {columns} FROM evaluations WHERE id = ?",
                                       (evaluation_id,)).fetchone())

    def list_evaluations(self, limit: int = 200) -> list[dict]:
        """Newest evaluations first, without their result documents."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT e.id, e.upload_id, e.kind, e.status, e.methods, e.total, e.error, e.created_at,"
                " e.finished_at, u.filename FROM evaluations e JOIN uploads u ON u.id = e.upload_id"
                " ORDER BY e.created_at DESC, e.rowid DESC LIMIT ?", (limit,)).fetchall()
            return [_decode(r) for r in rows]

    def unfinished_evaluations(self) -> list[str]:
        """Ids of evaluations that were queued or running (to resume after a restart)."""
        with self._connect() as con:
            rows = con.execute("SELECT id FROM evaluations WHERE status IN (?, ?) ORDER BY created_at",
                               UNFINISHED).fetchall()
            return [r[0] for r in rows]

    def set_status(self, evaluation_id: str, status: str, error: str | None = None) -> None:
        """Move an evaluation to a new status, stamping start and finish times."""
        stamp = {"running": "started_at = COALESCE(started_at, :now), run_started_at = :now, finished_at = NULL,"
                            " run_done_at_start = (SELECT COUNT(*) FROM judgments WHERE evaluation_id = :id"
                            " AND status != 'pending'),",
                 "queued": "finished_at = NULL,",
                 "done": "finished_at = :now,", "failed": "finished_at = :now,",
                 "cancelled": "finished_at = :now,"}.get(status, "")
        with self._writing() as con:
            con.execute(f"UPDATE evaluations SET {stamp} status = :status, error = :error WHERE id = :id",
                        {"now": now(), "status": status, "error": error, "id": evaluation_id})

    def set_total(self, evaluation_id: str, total: int) -> None:
        """Record how many judgments the evaluation needs."""
        with self._writing() as con:
            con.execute("UPDATE evaluations SET total = ? WHERE id = ?", (total, evaluation_id))

    def set_result(self, evaluation_id: str, document: dict, status: str = "done") -> None:
        """Store the result document and the final status in one transaction."""
        with self._writing() as con:
            con.execute("UPDATE evaluations SET result = ?, status = ?, error = NULL, finished_at = ?"
                        " WHERE id = ?", (json.dumps(document, ensure_ascii=False), status, now(), evaluation_id))

    # judgments ---------------------------------------------------------------
    def add_pending(self, evaluation_id: str, rows: Iterable[tuple[int, str, int, str, str]]) -> int:
        """Insert pending judgments (session index, session id, round, method, mode); returns how many."""
        with self._writing() as con:
            cur = con.executemany(
                "INSERT OR IGNORE INTO judgments (evaluation_id, session_idx, session_id, round, method, mode)"
                " VALUES (?, ?, ?, ?, ?, ?)", ((evaluation_id, *row) for row in rows))
            return cur.rowcount

    def pending_keys(self, evaluation_id: str) -> set[tuple[int, int, str, str]]:
        """(session index, round, method, mode) of judgments not made yet."""
        with self._connect() as con:
            rows = con.execute("SELECT session_idx, round, method, mode FROM judgments"
                               " WHERE evaluation_id = ? AND status = 'pending'", (evaluation_id,))
            return {tuple(r) for r in rows}

    def save_judgments(self, evaluation_id: str, results: list[tuple[tuple[int, int, str, str], dict]]) -> None:
        """Write a batch of finished judgments ((key, fields) pairs) in one transaction."""
        # Tokens and attempts add up over re-runs: an unparsed answer was paid for even if asked again.
        sets = ", ".join(f"{c} = {c} + :{c}" if c in _ACCUMULATED else f"{c} = :{c}" for c in _RESULT_COLUMNS)
        with self._writing() as con:
            con.executemany(
                f"UPDATE judgments SET {sets} WHERE evaluation_id = :eid AND session_idx = :s AND round = :r"
                " AND method = :m AND mode = :mode",
                ({**{c: fields.get(c, _COUNTER_DEFAULTS.get(c)) for c in _RESULT_COLUMNS}, "eid": evaluation_id,
                  "s": key[0], "r": key[1], "m": key[2], "mode": key[3]} for key, fields in results))

    def progress(self, evaluation_id: str) -> dict:
        """Counts of judgments by status: done (not pending), failed, unparsed, cached, total."""
        with self._connect() as con:
            rows = con.execute("SELECT status, COUNT(*), SUM(cached) FROM judgments WHERE evaluation_id = ?"
                               " GROUP BY status", (evaluation_id,)).fetchall()
        counts = {r[0]: r[1] for r in rows}
        total = sum(counts.values())
        return {"done": total - counts.get("pending", 0), "total": total,
                "failed": counts.get("failed", 0), "unparsed": counts.get("unparsed", 0),
                "cached": sum(r[2] or 0 for r in rows)}

    def judgments(self, evaluation_id: str, session_indexes: Iterable[int] | None = None) -> list[dict]:
        """All judgments of an evaluation, or of some of its sessions."""
        sql = "SELECT * FROM judgments WHERE evaluation_id = ?"
        args: list = [evaluation_id]
        if session_indexes is not None:
            idx = list(session_indexes)
            sql += f" AND session_idx IN ({','.join('?' * len(idx))})"
            args += idx
        with self._connect() as con:
            return [dict(r) for r in con.execute(sql + " ORDER BY session_idx, round, method, mode", args)]

    def usage(self, evaluation_id: str) -> list[dict]:
        """Per method and mode: judgments asked, HTTP attempts, cache hits, failures, unparsed answers, tokens."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT method, mode, SUM(status != 'pending' AND cached = 0) AS calls, SUM(attempts) AS attempts,"
                " SUM(cached) AS cache_hits,"
                " SUM(status = 'failed') AS failed, SUM(status = 'unparsed') AS unparsed,"
                " SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens"
                " FROM judgments WHERE evaluation_id = ? GROUP BY method, mode", (evaluation_id,))
            return [dict(r) for r in rows]

    def reset_judgments(self, evaluation_id: str, statuses: tuple[str, ...] = ("failed", "unparsed")) -> int:
        """Put judgments with these statuses back to pending (to be asked again, keeping the tokens and attempts
        already spent on them); returns how many."""
        cleared = ", ".join(f"{c} = NULL" for c in ("total", *DIMENSIONS, "verdict", "scores", "answer", "error"))
        with self._writing() as con:
            return con.execute(
                f"UPDATE judgments SET status = 'pending', {cleared}, cached = 0"
                f" WHERE evaluation_id = ? AND status IN ({','.join('?' * len(statuses))})",
                (evaluation_id, *statuses)).rowcount

    def failures(self, evaluation_id: str, limit: int = 50) -> list[dict]:
        """Failed and unparsed judgments with their reasons, first ones first."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT session_id, round, method, mode, status, error, attempts FROM judgments"
                " WHERE evaluation_id = ? AND status IN ('failed', 'unparsed')"
                " ORDER BY session_idx, round, method, mode LIMIT ?", (evaluation_id, limit))
            return [dict(r) for r in rows]

    # settings ----------------------------------------------------------------
    def get_setting(self, name: str, default=None):
        """A stored setting (JSON value), or default."""
        with self._connect() as con:
            row = con.execute("SELECT value FROM settings WHERE name = ?", (name,)).fetchone()
            return json.loads(row[0]) if row else default

    def set_setting(self, name: str, value) -> None:
        """Store a setting as JSON."""
        with self._writing() as con:
            con.execute("INSERT OR REPLACE INTO settings (name, value) VALUES (?, ?)", (name, json.dumps(value)))

    # judge cache -------------------------------------------------------------
    def cache_get(self, key: str) -> dict | None:
        """A cached judge answer, or None."""
        with self._connect() as con:
            row = con.execute("SELECT answer, prompt_tokens, completion_tokens FROM judge_cache WHERE key = ?",
                              (key,)).fetchone()
            return dict(row) if row else None

    def cache_put(self, key: str, value: dict) -> None:
        """Store a judge answer under its cache key."""
        with self._writing() as con:
            con.execute("INSERT OR REPLACE INTO judge_cache (key, answer, prompt_tokens, completion_tokens,"
                        " created_at) VALUES (?, ?, ?, ?, ?)",
                        (key, value["answer"], value.get("prompt_tokens", 0), value.get("completion_tokens", 0),
                         now()))

    # reference sets (mobility) -------------------------------------------------
    def add_reference(self, reference: dict) -> dict:
        """Record a named reference set (its arrays live in a file named by their hash)."""
        with self._writing() as con:
            con.execute("INSERT INTO reference_sets (id, name, sha256, source, summary, created_at)"
                        " VALUES (:id, :name, :sha256, :source, :summary, :created_at)",
                        {**reference, "summary": json.dumps(reference["summary"]), "created_at": now()})
        return self.get_reference(reference["id"])

    def get_reference(self, id_or_name: str) -> dict | None:
        """A reference set by id or by name, or None."""
        with self._connect() as con:
            return _decode(con.execute("SELECT * FROM reference_sets WHERE id = ? OR name = ?",
                                       (id_or_name, id_or_name)).fetchone())

    def list_references(self) -> list[dict]:
        """Every reference set, newest first."""
        with self._connect() as con:
            return [_decode(r) for r in con.execute("SELECT * FROM reference_sets ORDER BY created_at DESC, rowid DESC")]

    # shares ------------------------------------------------------------------
    # Read-only links to one result (web/share.py). The token is stored as it is, not hashed: the result
    # page shows it again for copying, and whoever can read this database can read every result anyway.
    def add_share(self, share_id: str, evaluation_id: str, token: str) -> dict:
        """Record a new share link of an evaluation; returns it."""
        with self._writing() as con:
            con.execute("INSERT INTO shares (id, evaluation_id, token, created_at) VALUES (?, ?, ?, ?)",
                        (share_id, evaluation_id, token, now()))
            return dict(con.execute("SELECT * FROM shares WHERE id = ?", (share_id,)).fetchone())

    def active_share(self, token: str) -> dict | None:
        """The share link with this token unless it was revoked, else None."""
        with self._connect() as con:
            row = con.execute("SELECT * FROM shares WHERE token = ? AND revoked_at IS NULL", (token,)).fetchone()
            return dict(row) if row else None

    def list_shares(self, evaluation_id: str, include_revoked: bool = False) -> list[dict]:
        """Share links of an evaluation, oldest first (active ones only unless asked)."""
        sql = "SELECT * FROM shares WHERE evaluation_id = ?" + ("" if include_revoked else " AND revoked_at IS NULL")
        with self._connect() as con:
            return [dict(r) for r in con.execute(sql + " ORDER BY created_at, rowid", (evaluation_id,))]

    def revoke_share(self, evaluation_id: str, share_id: str) -> dict | None:
        """Revoke a share link of an evaluation (revoking twice keeps the first time); None when unknown."""
        with self._writing() as con:
            con.execute("UPDATE shares SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? AND evaluation_id = ?",
                        (now(), share_id, evaluation_id))
            row = con.execute("SELECT * FROM shares WHERE id = ? AND evaluation_id = ?",
                              (share_id, evaluation_id)).fetchone()
            return dict(row) if row else None

    # users and API tokens (accounts.py) ----------------------------------------
    def add_user(self, name: str, password_hash: str, is_admin: bool) -> dict:
        """Insert a user; returns it (sqlite3.IntegrityError when the name is taken)."""
        with self._writing() as con:
            cursor = con.execute("INSERT INTO users (name, password_hash, is_admin, created_at) VALUES (?, ?, ?, ?)",
                                 (name, password_hash, int(is_admin), now()))
            return dict(con.execute("SELECT * FROM users WHERE id = ?", (cursor.lastrowid,)).fetchone())

    def get_user(self, user_id: int | None = None, name: str | None = None) -> dict | None:
        """A user by id or by name (names compare case-insensitively), or None."""
        with self._connect() as con:
            row = con.execute("SELECT * FROM users WHERE id = ? OR name = ?", (user_id, name)).fetchone()
            return dict(row) if row else None

    def list_users(self) -> list[dict]:
        """Every user, by name."""
        with self._connect() as con:
            return [dict(r) for r in con.execute("SELECT * FROM users ORDER BY name")]

    def set_password_hash(self, user_id: int, password_hash: str) -> None:
        """Replace a user's password hash."""
        with self._writing() as con:
            con.execute("UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id))

    def delete_user(self, user_id: int) -> None:
        """Delete a user and their API tokens."""
        with self._writing() as con:
            con.execute("DELETE FROM api_tokens WHERE user_id = ?", (user_id,))
            con.execute("DELETE FROM users WHERE id = ?", (user_id,))

    def add_token(self, user_id: int, name: str, token_hash: str) -> dict:
        """Record an API token by its hash; returns the record."""
        with self._writing() as con:
            cursor = con.execute("INSERT INTO api_tokens (user_id, name, token_hash, created_at) VALUES (?, ?, ?, ?)",
                                 (user_id, name, token_hash, now()))
            return dict(con.execute("SELECT * FROM api_tokens WHERE id = ?", (cursor.lastrowid,)).fetchone())

    def active_token(self, token_hash: str) -> dict | None:
        """The unrevoked API token with this hash, or None."""
        with self._connect() as con:
            row = con.execute("SELECT * FROM api_tokens WHERE token_hash = ? AND revoked_at IS NULL",
                              (token_hash,)).fetchone()
            return dict(row) if row else None

    def touch_token(self, token_id: int) -> None:
        """Note that an API token was just used."""
        with self._writing() as con:
            con.execute("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", (now(), token_id))

    def list_tokens(self, user_id: int) -> list[dict]:
        """A user's API tokens, newest first, revoked ones included."""
        with self._connect() as con:
            return [dict(r) for r in con.execute("SELECT * FROM api_tokens WHERE user_id = ?"
                                                 " ORDER BY created_at DESC, id DESC", (user_id,))]

    def revoke_token(self, user_id: int, token_id: int) -> dict | None:
        """Revoke one of a user's API tokens (the first time counts); None when the user has no such token."""
        with self._writing() as con:
            con.execute("UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? AND user_id = ?",
                        (now(), token_id, user_id))
            row = con.execute("SELECT * FROM api_tokens WHERE id = ? AND user_id = ?", (token_id, user_id)).fetchone()
            return dict(row) if row else None


class JudgeCache:
    """The judge's cache interface (get/put) backed by the store."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, key: str) -> dict | None:
        """Cached answer for key, or None."""
        return self.store.cache_get(key)

    def put(self, key: str, value: dict) -> None:
        """Remember a parsed answer."""
        self.store.cache_put(key, value)

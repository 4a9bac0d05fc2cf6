"""Persistence: uploads, evaluations, judgments, the judge cache and result documents, in SQLite or PostgreSQL.

One code path through SQLAlchemy Core: `text()` queries with `:name` parameters, in SQL both databases run. `Store`
takes a SQLite file (the default, `instance/personasteer.sqlite`) or a database URL (`postgresql://...`, driven
by psycopg 3). Opening a store brings its schema up to date (storage/migrations.py).
"""
from __future__ import annotations

import json
from typing import Iterable, overload

from storage.access import Access
from storage.database import SET_SETTING, now, text_query, text_query_in
from storage.datasets import Datasets
from storage.judgments import Judgments
from storage.run_lists import RunLists, write_figures
from storage.simulations import Simulations

UNFINISHED = ("queued", "running")
# An evaluation's own keys in the settings table: its plan marker, its block grid (Celery), the state of the
# automatic retries of its failed judgments, how many judgments are asked again (pipeline/evaluation_steps.py) and
# the state of scoring it again (pipeline/rescores.py: asked, and done); kinds declare their own with their tables.
EVALUATION_SETTINGS = ("planned", "grid", "retry", "again", "rescore", "rescored")
CACHE_READ = 500  # judge cache keys read in one query (the judge asks for 256 at a time)
_JSON_COLUMNS = {"summary", "warnings", "methods", "settings", "result", "tags", "headline"}

# The columns each record has, in this order (the JSON API shows them so); the ordering column `seq` is not one.
UPLOAD = "id, sha256, kind, filename, size, summary, warnings, created_at, title, tags"
ATTACHMENT = "id, upload_id, name, sha256, filename, size, summary, warnings, created_at"
EVALUATION_HEAD = ("id, upload_id, kind, status, methods, settings, error, total, created_at, started_at, finished_at,"
                   " run_started_at, run_done_at_start, title, tags, headline")
EVALUATION = EVALUATION_HEAD + ", result"


@overload
def _decode(row: dict) -> dict: ...


@overload
def _decode(row: None) -> None: ...


def _decode(row: dict | None) -> dict | None:
    if row is None:
        return None
    for key in _JSON_COLUMNS & row.keys():
        if row[key] is not None:
            row[key] = json.loads(row[key])
    return row


class Store(Judgments, Simulations, Access, RunLists, Datasets):
    """All database access, safe across threads and processes: uploads, evaluations, settings and the judge cache
    here; judgments (storage/judgments.py), simulations (storage/simulations.py), share links and accounts
    (storage/access.py), pages of the list of evaluations (storage/run_lists.py), datasets (storage/datasets.py);
    connections, the schema and a kind's own tables (storage/database.py).

    `target` is a SQLite file path or a database URL (`postgresql://user:pass@host/db`); `tables` the kinds' own
    tables (kinds/registry.py's `tables()`).
    """

    # uploads -----------------------------------------------------------------
    def add_upload(self, upload: dict) -> None:
        """Insert an upload record (summary and warnings as JSON)."""
        self._write(
            "INSERT INTO uploads (id, sha256, kind, filename, size, summary, warnings, created_at)"
            " VALUES (:id, :sha256, :kind, :filename, :size, :summary, :warnings, :created_at)",
            {**upload, "summary": json.dumps(upload["summary"]),
             "warnings": json.dumps(upload["warnings"]), "created_at": upload.get("created_at") or now()})

    def get_upload(self, upload_id: str) -> dict | None:
        """One upload by id, or None."""
        return _decode(self._one(f"SELECT {UPLOAD} FROM uploads WHERE id = :id", {"id": upload_id}))

    def find_upload(self, sha256: str, kind: str) -> dict | None:
        """The first upload of the same content and kind, or None."""
        return _decode(self._one(f"SELECT {UPLOAD} FROM uploads WHERE sha256 = :sha256 AND kind = :kind"
                                 " ORDER BY created_at, id LIMIT 1", {"sha256": sha256, "kind": kind}))

    def add_attachment(self, attachment: dict) -> None:
        """Insert a file attached to an upload (summary and warnings as JSON)."""
        self._write(f"INSERT INTO attachments ({ATTACHMENT}) VALUES (:id, :upload_id, :name, :sha256, :filename,"
                    " :size, :summary, :warnings, :created_at)",
                    {**attachment, "summary": json.dumps(attachment["summary"]),
                     "warnings": json.dumps(attachment["warnings"]), "created_at": attachment.get("created_at") or now()})

    def get_attachment(self, attachment_id: str) -> dict | None:
        """One file attached to an upload by id, or None."""
        return _decode(self._one(f"SELECT {ATTACHMENT} FROM attachments WHERE id = :id", {"id": attachment_id}))

    def attachments(self, upload_id: str, name: str | None = None) -> list[dict]:
        """The files attached to an upload (of one name, when given), oldest first."""
        rows = self._all(f"SELECT {ATTACHMENT} FROM attachments WHERE upload_id = :upload"
                         + (" AND name = :name" if name else "") + " ORDER BY created_at, id",
                         {"upload": upload_id, "name": name})
        return [_decode(row) for row in rows]

    def attachments_of_file(self, sha256: str, name: str) -> int:
        """How many attachments of this name are stored from the file with this hash."""
        return int(self._value("SELECT COUNT(*) FROM attachments WHERE sha256 = :sha AND name = :name",
                               {"sha": sha256, "name": name}))

    def set_session_offsets(self, upload_id: str, rows: Iterable[tuple[int, str, int]]) -> None:
        """Record (index, session id, byte offset) of every session of an upload."""
        with self._writing() as con:
            con.execute(text_query("DELETE FROM sessions WHERE upload_id = :upload_id"), {"upload_id": upload_id})
            self._many(con, "INSERT INTO sessions (upload_id, idx, session_id, byte_offset)"
                            " VALUES (:upload_id, :idx, :session_id, :offset)",
                       ({"upload_id": upload_id, "idx": idx, "session_id": sid, "offset": offset}
                        for idx, sid, offset in rows))

    def session_offsets(self, upload_id: str, start: int, limit: int, query: str = "") -> list[dict]:
        """A page of sessions of an upload (index, id, byte offset), optionally filtered by id."""
        return self._all(
            'SELECT idx, session_id, byte_offset AS "offset" FROM sessions'
            " WHERE upload_id = :upload_id AND lower(session_id) LIKE lower(:pattern)"
            " ORDER BY idx LIMIT :limit OFFSET :start",
            {"upload_id": upload_id, "pattern": f"%{query}%", "limit": limit, "start": start})

    def count_sessions(self, upload_id: str, query: str = "") -> int:
        """Number of sessions of an upload, optionally filtered by id (case-insensitively, as before)."""
        with self._connection() as con:
            return con.execute(text_query("SELECT COUNT(*) FROM sessions WHERE upload_id = :upload_id"
                                    " AND lower(session_id) LIKE lower(:pattern)"),
                               {"upload_id": upload_id, "pattern": f"%{query}%"}).scalar_one()

    # evaluations -------------------------------------------------------------
    def add_evaluation(self, evaluation: dict) -> None:
        """Insert a queued evaluation (`started_by`: the user who started it, with accounts on)."""
        self._write(
            "INSERT INTO evaluations (id, upload_id, kind, status, methods, settings, total, created_at, started_by)"
            " VALUES (:id, :upload_id, :kind, 'queued', :methods, :settings, :total, :created_at, :started_by)",
            {"started_by": None, **evaluation, "methods": json.dumps(evaluation["methods"]),
             "settings": json.dumps(evaluation["settings"]), "created_at": now()})

    def get_evaluation(self, evaluation_id: str, with_result: bool = True) -> dict | None:
        """One evaluation by id (with its result document unless asked not to), or None."""
        columns = EVALUATION if with_result else EVALUATION_HEAD
        return _decode(self._one(f"SELECT {columns} FROM evaluations WHERE id = :id", {"id": evaluation_id}))

    def in_creation_order(self, evaluation_ids: list[str]) -> list[str]:
        """The ids of those evaluations that exist, oldest first (created in the same second: in creation order)."""
        if not evaluation_ids:
            return []
        names = {f"id{i}": evaluation_id for i, evaluation_id in enumerate(evaluation_ids)}
        rows = self._all(f"SELECT id FROM evaluations WHERE id IN ({', '.join(':' + n for n in names)})"
                         " ORDER BY created_at, seq", names)
        return [row["id"] for row in rows]

    def list_evaluations(self, limit: int = 200, kind: str | None = None, upload_id: str | None = None) -> list[dict]:
        """Newest evaluations first (of one kind, or of one upload, when asked), without their result documents."""
        where = "".join((" AND e.kind = :kind" if kind else "", " AND e.upload_id = :upload" if upload_id else ""))
        rows = self._all(
            "SELECT e.id, e.upload_id, e.kind, e.status, e.methods, e.settings, e.total, e.error, e.created_at,"
            " e.finished_at, e.title, e.tags, e.headline, u.filename"
            f" FROM evaluations e JOIN uploads u ON u.id = e.upload_id WHERE 1 = 1{where}"
            " ORDER BY e.created_at DESC, e.seq DESC LIMIT :limit",
            {"limit": limit, "kind": kind, "upload": upload_id})
        return [_decode(r) for r in rows]

    def set_labels(self, table: str, row_id: str, title: str | None, tags: list[str]) -> bool:
        """Give an evaluation or an upload (`table`) a title (None: none) and tags; False when there is no such row."""
        if table not in ("evaluations", "uploads"):
            raise ValueError(f"no labels on {table}")
        search = ", search_text = NULL" if table == "evaluations" else ""  # made again (storage/run_lists.py)
        return self._write(f"UPDATE {table} SET title = :title, tags = :tags{search} WHERE id = :id",
                           {"title": title, "tags": json.dumps(tags, ensure_ascii=False), "id": row_id}) > 0

    def set_headline(self, evaluation_id: str, headline: list) -> None:
        """Keep an evaluation's headline scores (for lists of evaluations), and its figures to sort by."""
        with self._writing() as con:
            con.execute(text_query("UPDATE evaluations SET headline = :headline WHERE id = :id"),
                        {"headline": json.dumps(headline, ensure_ascii=False), "id": evaluation_id})
            write_figures(con, evaluation_id, headline)

    def delete_evaluations(self, evaluation_ids: list[str], upload_id: str | None = None) -> None:
        """Delete evaluations with everything stored with them (judgments, counters, share links, their plan marker,
        the rows and settings the kinds' tables keep of them), and the upload (with its attachments' records) when
        given, in one transaction:
        nothing is half deleted. The files are the caller's (web/manage.py)."""
        owned = [(t.name, t.evaluation_column) for t in self.tables if t.evaluation_column]
        settings = EVALUATION_SETTINGS + tuple(name for t in self.tables for name in t.evaluation_settings)
        with self._writing() as con:
            for table, column in [*owned, ("judgments", "evaluation_id"), ("judgment_counts", "evaluation_id"),
                                  ("shares", "evaluation_id"), ("evaluation_figures", "evaluation_id")]:
                self._many(con, f"DELETE FROM {table} WHERE {column} = :id", ({"id": e} for e in evaluation_ids))
            self._many(con, "DELETE FROM settings WHERE name = :name",
                       ({"name": f"{what}:{e}"} for e in evaluation_ids for what in settings))
            self._many(con, "DELETE FROM evaluations WHERE id = :id", ({"id": e} for e in evaluation_ids))
            if upload_id is not None:
                con.execute(text_query("DELETE FROM sessions WHERE upload_id = :id"), {"id": upload_id})
                con.execute(text_query("DELETE FROM attachments WHERE upload_id = :id"), {"id": upload_id})
                con.execute(text_query("DELETE FROM uploads WHERE id = :id"), {"id": upload_id})

    def uploads_of_file(self, sha256: str) -> int:
        """How many uploads (of any kind) are stored from the file with this hash."""
        return int(self._value("SELECT COUNT(*) FROM uploads WHERE sha256 = :sha", {"sha": sha256}))

    def unfinished_evaluations(self) -> list[str]:
        """Ids of evaluations that were queued or running (to resume after a restart)."""
        with self._connection() as con:
            return list(con.execute(text_query_in("SELECT id FROM evaluations WHERE status IN :statuses"
                                            " ORDER BY created_at, seq", "statuses"),
                                    {"statuses": list(UNFINISHED)}).scalars())

    def set_status(self, evaluation_id: str, status: str, error: str | None = None) -> None:
        """Move an evaluation to a new status, stamping start and finish times."""
        stamp = {"running": "started_at = COALESCE(started_at, :now), run_started_at = :now, finished_at = NULL,"
                            " run_done_at_start = (SELECT COALESCE(SUM(n), 0) FROM judgment_counts"
                            " WHERE evaluation_id = :id AND status <> 'pending'),",
                 "queued": "finished_at = NULL,",
                 "done": "finished_at = :now,", "failed": "finished_at = :now,", "incomplete": "finished_at = :now,",
                 "cancelled": "finished_at = :now,"}.get(status, "")
        self._write(f"UPDATE evaluations SET {stamp} status = :status, error = :error WHERE id = :id",
                    {"now": now(), "status": status, "error": error, "id": evaluation_id})

    def set_total(self, evaluation_id: str, total: int) -> None:
        """Record how many judgments the evaluation needs."""
        self._write("UPDATE evaluations SET total = :total WHERE id = :id", {"total": total, "id": evaluation_id})

    def set_result(self, evaluation_id: str, document: dict, status: str = "done",
                   headline: list | None = None, error: str | None = None, finished_at: str | None = None) -> None:
        """Store the result document, its headline scores and the final status (with why, when incomplete) in one
        transaction, with the headline's figures to sort by; `finished_at` is the end time (default now)."""
        with self._writing() as con:
            con.execute(text_query("UPDATE evaluations SET result = :result, headline = :headline, status = :status,"
                                   " error = :error, finished_at = :now WHERE id = :id"),
                        {"result": json.dumps(document, ensure_ascii=False), "status": status,
                         "now": finished_at or now(), "error": error,
                         "headline": None if headline is None else json.dumps(headline, ensure_ascii=False),
                         "id": evaluation_id})
            write_figures(con, evaluation_id, headline)

    # settings ----------------------------------------------------------------
    def get_setting(self, name: str, default=None):
        """A stored setting (JSON value), or default."""
        row = self._one("SELECT value FROM settings WHERE name = :name", {"name": name})
        return json.loads(row["value"]) if row else default

    def add_setting(self, name: str, value):
        """Store a setting only if it has none yet; returns the value kept (another process's, when it came first)."""
        self._write("INSERT INTO settings (name, value) VALUES (:name, :value) ON CONFLICT (name) DO NOTHING",
                    {"name": name, "value": json.dumps(value)})
        return self.get_setting(name)

    def delete_setting(self, name: str) -> None:
        """Forget a setting."""
        self._write("DELETE FROM settings WHERE name = :name", {"name": name})

    def settings_starting(self, prefix: str) -> dict:
        """Every setting whose name starts with `prefix`: name -> its JSON value."""
        rows = self._all("SELECT name, value FROM settings WHERE substr(name, 1, :n) = :prefix",
                         {"n": len(prefix), "prefix": prefix})
        return {row["name"]: json.loads(row["value"]) for row in rows}

    def set_setting(self, name: str, value) -> None:
        """Store a setting as JSON."""
        self._write(SET_SETTING, {"name": name, "value": json.dumps(value)})

    # judge cache -------------------------------------------------------------
    def cache_get(self, key: str) -> dict | None:
        """A cached judge answer, or None."""
        return self._lookup("SELECT answer, prompt_tokens, completion_tokens FROM judge_cache WHERE key = :key",
                            {"key": key})

    def cache_get_many(self, keys: list[str]) -> dict[str, dict]:
        """The cached judge answers of several keys, CACHE_READ keys a query: {key: answer} for the keys found."""
        found: dict[str, dict] = {}
        for first in range(0, len(keys), CACHE_READ):
            chunk = keys[first:first + CACHE_READ]
            # one statement per number of keys, compiled once (`_compiled`), rather than an expanding IN each time
            places = ", ".join(f":k{i}" for i in range(len(chunk)))
            rows = self._all("SELECT key, answer, prompt_tokens, completion_tokens FROM judge_cache"
                                f" WHERE key IN ({places})", {f"k{i}": key for i, key in enumerate(chunk)})
            found.update((row.pop("key"), row) for row in rows)
        return found

    def cache_put(self, key: str, value: dict) -> None:
        """Store a judge answer under its cache key."""
        self.cache_put_many({key: value})

    def cache_put_many(self, entries: dict[str, dict]) -> None:
        """Store judge answers ({cache key: answer}) in one transaction."""
        created = now()
        with self._writing() as con:
            self._many(con, "INSERT INTO judge_cache (key, answer, prompt_tokens, completion_tokens, created_at)"
                            " VALUES (:key, :answer, :prompt_tokens, :completion_tokens, :created_at)"
                            " ON CONFLICT (key) DO UPDATE SET answer = excluded.answer,"
                            " prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,"
                            " created_at = excluded.created_at",
                       ({"key": key, "answer": value["answer"], "prompt_tokens": value.get("prompt_tokens", 0),
                         "completion_tokens": value.get("completion_tokens", 0), "created_at": created}
                        for key, value in entries.items()))


class JudgeCache:
    """The judge's cache interface (get/put) backed by the store."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, key: str) -> dict | None:
        """Cached answer for key, or None."""
        return self.store.cache_get(key)

    def get_many(self, keys: list[str]) -> dict[str, dict]:
        """Cached answers of several keys at once (the judge looks ahead in chunks)."""
        return self.store.cache_get_many(keys)

    def put(self, key: str, value: dict) -> None:
        """Remember a parsed answer."""
        self.store.cache_put(key, value)

    def put_many(self, entries: dict[str, dict]) -> None:
        """Remember several parsed answers in one write (the judge stores each wave of answers at once)."""
        self.store.cache_put_many(entries)

"""The store's judgments: the pending keys of an evaluation, the judge's outcomes, progress counters and usage.

A judgment's judge scores, whatever its kind, are one mapping in `scores` (score name -> number), None when its
verdict had none. `save_judgments` takes it as that dict; `judgments` and `iter_judgments` give every row with
`scores` decoded to a dict or None (the only JSON they decode). The core names no kind's scores: a kind reads its
own out of `scores`.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from sqlalchemy.engine import Connection

from storage.database import SET_SETTING, Database, dict_rows, text_query, text_query_in

RESULT_COLUMNS = ("status", "total", "verdict", "scores", "answer", "error",
                  "prompt_tokens", "completion_tokens", "cached", "attempts", "latency_ms", "retryable")
ACCUMULATED = ("prompt_tokens", "completion_tokens", "attempts")
# what a result column a verdict leaves out is stored as
RESULT_DEFAULTS = {**dict.fromkeys(RESULT_COLUMNS), "prompt_tokens": 0, "completion_tokens": 0, "attempts": 0,
                   "cached": 0, "retryable": 0}
JUDGMENT = ("evaluation_id, session_idx, session_id, round, method, mode, status, total, verdict, answer, error,"
            " prompt_tokens, completion_tokens, cached, attempts, scores, latency_ms")


def count_judgments(con: Connection, evaluation_id: str, status: str, n: int, cached: int = 0) -> None:
    """Add to an evaluation's count of judgments with this status (and of those answered from the cache)."""
    if n or cached:
        con.execute(text_query("INSERT INTO judgment_counts (evaluation_id, status, n, cached) VALUES (:eid, :status, :n, :c)"
                         " ON CONFLICT (evaluation_id, status) DO UPDATE SET n = judgment_counts.n + excluded.n,"
                         " cached = judgment_counts.cached + excluded.cached"),
                    {"eid": evaluation_id, "status": status, "n": n, "c": cached})


def judgment_dicts(result) -> list[dict]:
    return decoded(dict_rows(result))


def decoded(rows: list[dict]) -> list[dict]:
    """Judgment rows with their `scores` JSON read."""
    for row in rows:
        if row.get("scores") is not None:
            row["scores"] = json.loads(row["scores"])
    return rows


class Judgments(Database):
    """The judgments section of the Store, on the connections of storage.database.Database."""

    def add_pending(self, evaluation_id: str, rows: Iterable[tuple[int, str, int, str, str]]) -> int:
        """Insert pending judgments (session index, session id, round, method, mode); returns how many."""
        with self._writing() as con:
            added = self._many(
                con, "INSERT INTO judgments (evaluation_id, session_idx, session_id, round, method, mode)"
                     " VALUES (:eid, :s, :sid, :r, :m, :mode) ON CONFLICT DO NOTHING",
                ({"eid": evaluation_id, "s": s, "sid": sid, "r": r, "m": m, "mode": mode}
                 for s, sid, r, m, mode in rows))
            count_judgments(con, evaluation_id, "pending", added)
            return added

    def pending_keys(self, evaluation_id: str, first: int = 0, last: int | None = None) -> set[tuple[int, int, str, str]]:
        """(session index, round, method, mode) of judgments not made yet, of sessions first..last (default all)."""
        return set(self._tuples("SELECT session_idx, round, method, mode FROM judgments"
                                " WHERE evaluation_id = :eid AND status = 'pending' AND session_idx BETWEEN :first AND :last",
                                {"eid": evaluation_id, "first": first, "last": 2 ** 62 if last is None else last}))

    def pending_by_session(self, evaluation_id: str) -> dict[int, int]:
        """Session index -> how many of its judgments are not made yet (sessions with none left out)."""
        with self._connection() as con:
            rows = con.execute(text_query("SELECT session_idx, COUNT(*) FROM judgments WHERE evaluation_id = :eid"
                                    " AND status = 'pending' GROUP BY session_idx"), {"eid": evaluation_id})
            return {int(idx): int(n) for idx, n in rows}

    def pending_sessions(self, evaluation_id: str) -> tuple[int, int] | None:
        """The first and last session index with a judgment not made yet, or None."""
        with self._connection() as con:
            low, high = con.execute(text_query("SELECT MIN(session_idx), MAX(session_idx) FROM judgments"
                                         " WHERE evaluation_id = :eid AND status = 'pending'"),
                                    {"eid": evaluation_id}).one()
        return None if low is None else (int(low), int(high))

    def save_judgments(self, evaluation_id: str, results: list[tuple[tuple[int, int, str, str], dict]]) -> None:
        """Write a batch of finished judgments ((key, fields) pairs) in one transaction."""
        # Tokens and attempts add up over re-runs: an unparsed answer was paid for even if asked again.
        sets = ", ".join(f"{c} = {c} + :{c}" if c in ACCUMULATED else f"{c} = :{c}" for c in RESULT_COLUMNS)
        rows: list[dict[str, Any]] = [{**RESULT_DEFAULTS, **fields, "eid": evaluation_id,
                 "s": key[0], "r": key[1], "m": key[2], "mode": key[3],
                 "scores": json.dumps(fields["scores"]) if fields.get("scores") else None} for key, fields in results]
        with self._writing() as con:
            # Only pending judgments are written (a verdict never replaces one already kept), one statement per
            # outcome, so that the rows each changed move the counters from pending to that outcome.
            for status, cached in sorted({(row["status"], row["cached"]) for row in rows}):
                saved = self._many(
                    con, f"UPDATE judgments SET {sets} WHERE evaluation_id = :eid AND session_idx = :s AND round = :r"
                         " AND method = :m AND mode = :mode AND status = 'pending'",
                    (row for row in rows if (row["status"], row["cached"]) == (status, cached)))
                count_judgments(con, evaluation_id, "pending", -saved)
                count_judgments(con, evaluation_id, status, saved, saved if cached else 0)

    def progress(self, evaluation_id: str) -> dict:
        """Counts of judgments by status: done (not pending), failed, unparsed, cached, total (from the counters
        kept as they are saved, not a count over the judgments)."""
        with self._connection() as con:
            rows = con.execute(text_query("SELECT status, n, cached FROM judgment_counts WHERE evaluation_id = :eid"),
                               {"eid": evaluation_id}).all()
        counts = {r[0]: r[1] for r in rows}
        total = sum(counts.values())
        return {"done": total - counts.get("pending", 0), "total": total,
                "failed": counts.get("failed", 0), "unparsed": counts.get("unparsed", 0),
                "cached": sum(r[2] or 0 for r in rows)}

    def judgments(self, evaluation_id: str, session_indexes: Iterable[int] | None = None) -> list[dict]:
        """All judgments of an evaluation, or of some of its sessions."""
        sql = f"SELECT {JUDGMENT} FROM judgments WHERE evaluation_id = :eid"
        order = " ORDER BY session_idx, round, method, mode"
        with self._connection() as con:
            if session_indexes is None:
                return judgment_dicts(con.execute(text_query(sql + order), {"eid": evaluation_id}))
            return judgment_dicts(con.execute(text_query_in(sql + " AND session_idx IN :idx" + order, "idx"),
                                               {"eid": evaluation_id, "idx": list(session_indexes)}))

    def judged_rounds(self, evaluation_id: str) -> set[tuple[str, int]]:
        """(session id, round) of every round the evaluation has a judgment of."""
        with self._connection() as con:
            rows = con.execute(text_query("SELECT DISTINCT session_id, round FROM judgments WHERE evaluation_id = :eid"),
                               {"eid": evaluation_id})
            return {(session_id, int(rnd)) for session_id, rnd in rows}

    def iter_judgments(self, evaluation_id: str, batch: int = 5000,
                       columns: Iterable[str] | None = None) -> Iterator[dict]:
        """Every judgment of an evaluation in key order (its `columns`, default all), read `batch` rows at a time
        (memory flat in its size)."""
        wanted = JUDGMENT if columns is None else ", ".join(dict.fromkeys(
            ["session_idx", "round", "method", "mode", *(c for c in columns if c in JUDGMENT.split(", "))]))
        sql = (f"SELECT {wanted} FROM judgments WHERE evaluation_id = :eid"
               " AND (session_idx, round, method, mode) > (:s, :r, :m, :mode)"
               " ORDER BY session_idx, round, method, mode LIMIT :n")
        after = {"s": -1, "r": -1, "m": "", "mode": ""}
        while True:
            rows = decoded(self._all(sql, {"eid": evaluation_id, "n": batch, **after}))
            yield from rows
            if len(rows) < batch:
                return
            last = rows[-1]
            after = {"s": last["session_idx"], "r": last["round"], "m": last["method"], "mode": last["mode"]}

    def usage(self, evaluation_id: str) -> list[dict]:
        """Per method and mode: judgments asked, HTTP attempts, cache hits, failures, unparsed answers, tokens."""
        return self._all(
            "SELECT method, mode, SUM(CASE WHEN status <> 'pending' AND cached = 0 THEN 1 ELSE 0 END) AS calls,"
            " SUM(attempts) AS attempts, SUM(cached) AS cache_hits,"
            " SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,"
            " SUM(CASE WHEN status = 'unparsed' THEN 1 ELSE 0 END) AS unparsed,"
            " SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens"
            " FROM judgments WHERE evaluation_id = :eid GROUP BY method, mode ORDER BY method, mode",
            {"eid": evaluation_id})

    def reset_judgments(self, evaluation_id: str, statuses: tuple[str, ...] = ("failed", "unparsed"),
                        retryable_only: bool = False, counted_in: tuple[str, int] | None = None) -> int:
        """Put judgments with these statuses (only failures worth retrying, when asked) back to pending, to be asked
        again, keeping the tokens and attempts already spent on them; returns how many. With `counted_in` (a
        setting's name, a number), the setting becomes that number plus how many, in the same transaction: a reader
        never sees them pending before they are counted."""
        cleared = ", ".join(f"{c} = NULL" for c in ("total", "verdict", "scores", "answer", "error"))
        which = "evaluation_id = :eid AND status = :status" + (" AND retryable = 1" if retryable_only else "")
        reset = 0
        with self._writing() as con:
            for status in statuses:
                found = con.execute(text_query(f"SELECT COUNT(*), COALESCE(SUM(cached), 0) FROM judgments WHERE {which}"),
                                    {"eid": evaluation_id, "status": status}).one()
                con.execute(text_query(f"UPDATE judgments SET status = 'pending', {cleared}, cached = 0, retryable = 0"
                                 f" WHERE {which}"), {"eid": evaluation_id, "status": status})
                count_judgments(con, evaluation_id, "pending", found[0])  # pending first, as every writer does (lock order)
                count_judgments(con, evaluation_id, status, -found[0], -found[1])
                reset += found[0]
            if counted_in and (reset or counted_in[1]):
                con.execute(text_query(SET_SETTING), {"name": counted_in[0], "value": json.dumps(counted_in[1] + reset)})
        return reset

    def commonest_failure(self, evaluation_id: str) -> str | None:
        """The error most failed judgments of an evaluation share (the first in key order among equals), or None."""
        row = self._one("SELECT error, COUNT(*) AS n, MIN(session_idx) AS first FROM judgments"
                        " WHERE evaluation_id = :eid AND status = 'failed' GROUP BY error"
                        " ORDER BY n DESC, first LIMIT 1", {"eid": evaluation_id})
        return None if row is None else row["error"] or ""

    def failures(self, evaluation_id: str, limit: int = 50) -> list[dict]:
        """Failed and unparsed judgments with their reasons, first ones first."""
        return self._all(
            "SELECT session_id, round, method, mode, status, error, attempts FROM judgments"
            " WHERE evaluation_id = :eid AND status IN ('failed', 'unparsed')"
            " ORDER BY session_idx, round, method, mode LIMIT :limit", {"eid": evaluation_id, "limit": limit})

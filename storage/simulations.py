"""The store's simulations: a run's settings and state, and its turns (each user message and each method's reply),
written as they complete so that a resumed run asks only what it lacks."""
from __future__ import annotations

import json
from typing import Iterable, overload

from storage.database import Database, now, text_query, text_query_in

SIMULATION = ("id, created_at, started_at, finished_at, run_started_at, run_done_at_start, status, error, settings,"
              " total, upload_ids, evaluation_ids")
TURN = ("conversation, round, speaker, text, status, problem, attempts, prompt_tokens, completion_tokens, cached,"
        " model, endpoint")
TURN_FIELDS = tuple(TURN.split(", "))
UNFINISHED = ("queued", "running")
_JSON = ("settings", "upload_ids", "evaluation_ids")


@overload
def _decoded(row: dict) -> dict: ...


@overload
def _decoded(row: None) -> None: ...


def _decoded(row: dict | None) -> dict | None:
    if row is not None:
        for key in _JSON:
            row[key] = json.loads(row[key])
    return row


class Simulations(Database):
    """The simulations section of the Store, on the connections of storage.database.Database."""

    def add_simulation(self, simulation_id: str, settings: dict, total: int) -> None:
        """Record a queued simulation with its settings (which never hold an API key) and its number of turns."""
        self._write("INSERT INTO simulations (id, created_at, status, settings, total)"
                    " VALUES (:id, :now, 'queued', :settings, :total)",
                    {"id": simulation_id, "now": now(), "settings": json.dumps(settings, ensure_ascii=False),
                     "total": total})

    def get_simulation(self, simulation_id: str) -> dict | None:
        """One simulation by id, or None."""
        return _decoded(self._one(f"SELECT {SIMULATION} FROM simulations WHERE id = :id", {"id": simulation_id}))

    def list_simulations(self, limit: int = 100) -> list[dict]:
        """The newest simulations first."""
        rows = self._all(f"SELECT {SIMULATION} FROM simulations ORDER BY created_at DESC, id LIMIT :n", {"n": limit})
        return [_decoded(row) for row in rows]

    def unfinished_simulations(self) -> list[str]:
        """Ids of simulations that were queued or running (to resume after a restart), oldest first."""
        with self._connection() as con:
            return list(con.execute(text_query_in("SELECT id FROM simulations WHERE status IN :statuses"
                                                  " ORDER BY created_at, id", "statuses"),
                                    {"statuses": list(UNFINISHED)}).scalars())

    def set_simulation_status(self, simulation_id: str, status: str, error: str | None = None) -> None:
        """Move a simulation to a new status, stamping when its runs started and when it finished."""
        stamp = {"running": "started_at = COALESCE(started_at, :now), run_started_at = :now, finished_at = NULL,"
                            " run_done_at_start = (SELECT COUNT(*) FROM simulation_turns"
                            " WHERE simulation_id = :id AND model <> ''),",
                 "queued": "finished_at = NULL,"}.get(status, "finished_at = :now,")
        self._write(f"UPDATE simulations SET {stamp} status = :status, error = :error WHERE id = :id",
                    {"now": now(), "status": status, "error": error, "id": simulation_id})

    def set_simulation_outputs(self, simulation_id: str, upload_ids: list[str] | None = None,
                               evaluation_ids: list[str] | None = None) -> None:
        """Record the uploads a simulation wrote and the evaluations that score them."""
        for column, ids in (("upload_ids", upload_ids), ("evaluation_ids", evaluation_ids)):
            if ids is not None:
                self._write(f"UPDATE simulations SET {column} = :ids WHERE id = :id",
                            {"ids": json.dumps(ids), "id": simulation_id})

    def save_turns(self, simulation_id: str, turns: Iterable[dict]) -> None:
        """Keep finished turns (each a dict of TURN_FIELDS); a turn already kept is replaced (a failed one asked
        again)."""
        sets = ", ".join(f"{c} = excluded.{c}" for c in TURN_FIELDS[3:])
        with self._writing() as con:
            self._many(con, f"INSERT INTO simulation_turns (simulation_id, {TURN})"
                            f" VALUES (:sid, {', '.join(':' + c for c in TURN_FIELDS)})"
                            f" ON CONFLICT (simulation_id, conversation, round, speaker) DO UPDATE SET {sets}",
                       ({"sid": simulation_id, "problem": None, "attempts": 0, "prompt_tokens": 0,
                         "completion_tokens": 0, "cached": 0, "model": "", "endpoint": "", **turn} for turn in turns))

    def simulation_turns(self, simulation_id: str) -> list[dict]:
        """Every kept turn of a simulation, by conversation, round and speaker."""
        return self._all(f"SELECT {TURN} FROM simulation_turns WHERE simulation_id = :sid"
                         " ORDER BY conversation, round, speaker", {"sid": simulation_id})

    def forget_failed_turns(self, simulation_id: str) -> int:
        """Drop a simulation's failed turns, so that a resumed run asks them again; how many."""
        return self._write("DELETE FROM simulation_turns WHERE simulation_id = :sid AND status = 'failed'",
                           {"sid": simulation_id})

    def simulation_progress(self, simulation_id: str) -> dict:
        """Turns asked so far (a persona's opening, kept without a model, is not one), those that failed, and those
        the cache answered."""
        row = self._one("SELECT COUNT(*) AS done, COALESCE(SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), 0)"
                        " AS failed, COALESCE(SUM(cached), 0) AS cached FROM simulation_turns"
                        " WHERE simulation_id = :sid AND model <> ''", {"sid": simulation_id}) or {}
        return {"done": int(row.get("done") or 0), "failed": int(row.get("failed") or 0),
                "cached": int(row.get("cached") or 0)}

    def simulation_usage(self, simulation_id: str) -> list[dict]:
        """Per speaker and model: turns, HTTP attempts, cache hits, failures and tokens."""
        return self._all("SELECT speaker, model, endpoint, COUNT(*) AS turns, SUM(attempts) AS attempts,"
                         " SUM(cached) AS cache_hits, SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,"
                         " SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens"
                         " FROM simulation_turns WHERE simulation_id = :sid AND model <> ''"
                         " GROUP BY speaker, model, endpoint ORDER BY speaker, model, endpoint",
                         {"sid": simulation_id})

    def uploads_of_kinds(self, kinds: list[str], limit: int = 200) -> list[dict]:
        """The newest uploads of these kinds (id, kind, filename, title, created_at): the Run page's personas."""
        with self._connection() as con:
            rows = con.execute(text_query_in("SELECT id, kind, filename, title, created_at FROM uploads"
                                             " WHERE kind IN :kinds ORDER BY created_at DESC, id LIMIT :n", "kinds"),
                               {"kinds": list(kinds), "n": limit})
            return [dict(row._mapping) for row in rows]

    def delete_simulation(self, simulation_id: str) -> None:
        """Forget a simulation and its turns (the uploads and evaluations it made stay)."""
        with self._writing() as con:
            for table, column in (("simulation_turns", "simulation_id"), ("simulations", "id")):
                con.execute(text_query(f"DELETE FROM {table} WHERE {column} = :id"), {"id": simulation_id})

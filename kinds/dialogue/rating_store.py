"""People's ratings of a dialogue evaluation's replies, one row per rater and reply: the kind's own table
`people_ratings` (schema step 19).

Only what rating in the browser needs is here: the table, `save_rating`, `delete_rating` and `people_ratings`, with
the names and signatures of issue 40's shared contract. The rest of the contract (copying `human_ratings` into the
table, `add_ratings`, `human_ratings` as the mean over raters, `clear_human_ratings` per rater) belongs to the ratings
intake and is not made here.

A rating is {total?, verdict?, <dimension key>?...}: `total` the 0-100 headline, `verdict` the answer to the rubric's
yes/no question (0 or 1), each dimension under its key (kept together as one JSON object `scores`)."""
from __future__ import annotations

import json
from datetime import datetime, timezone

from kinds.host import Step, Store, Table

SOURCES = ("file", "api", "browser", "reviews")
COLUMNS = "rater, session_id, round, method, total, verdict, scores, source, line, updated_at"


def _create(con, ddl: dict) -> None:
    # One rater's rating of one reply of an evaluation; `line` is the ratings file's line, NULL for other sources.
    con.exec_driver_sql("""CREATE TABLE IF NOT EXISTS people_ratings (
    evaluation_id TEXT NOT NULL REFERENCES evaluations (id),
    rater TEXT NOT NULL,
    session_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    method TEXT NOT NULL,
    total REAL,
    verdict INTEGER,
    scores TEXT,
    source TEXT NOT NULL,
    line INTEGER,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (evaluation_id, rater, session_id, round, method)
)""")


TABLE = Table("people_ratings", (Step(19, "people_ratings: people's ratings of replies, per rater", _create),),
              evaluation_column="evaluation_id")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def save_rating(store: Store, evaluation_id: str, rater: str, session_id: str, round: int, method: str,
                ratings: dict, source: str = "browser") -> None:
    """Keep one rater's rating of one reply (total, verdict and dimensions by key), replacing theirs."""
    scores = {key: value for key, value in ratings.items() if key not in ("total", "verdict") and value is not None}
    store.execute("INSERT INTO people_ratings (evaluation_id, rater, session_id, round, method, total, verdict, scores,"
                  " source, line, updated_at) VALUES (:eid, :rater, :sid, :round, :method, :total, :verdict, :scores,"
                  " :source, NULL, :now) ON CONFLICT (evaluation_id, rater, session_id, round, method) DO UPDATE SET"
                  " total = excluded.total, verdict = excluded.verdict, scores = excluded.scores,"
                  " source = excluded.source, line = excluded.line, updated_at = excluded.updated_at",
                  {"eid": evaluation_id, "rater": rater, "sid": session_id, "round": round, "method": method,
                   "total": ratings.get("total"), "verdict": ratings.get("verdict"),
                   "scores": json.dumps(scores) if scores else None, "source": source, "now": _now()})


def delete_rating(store: Store, evaluation_id: str, rater: str, session_id: str, round: int, method: str) -> bool:
    """Forget one rater's rating of one reply; False when there was none."""
    return store.execute("DELETE FROM people_ratings WHERE evaluation_id = :eid AND rater = :rater"
                         " AND session_id = :sid AND round = :round AND method = :method",
                         {"eid": evaluation_id, "rater": rater, "sid": session_id, "round": round,
                          "method": method}) > 0


def people_ratings(store: Store, evaluation_id: str, rater: str | None = None) -> list[dict]:
    """Every rater's ratings of the evaluation (one rater's with `rater`): rater, session_id, round, method, total,
    verdict, each dimension under its key, source, line and updated_at; by rater, then file line, then reply."""
    found = store.rows(f"SELECT {COLUMNS} FROM people_ratings WHERE evaluation_id = :eid"
                       + (" AND rater = :rater" if rater is not None else "")
                       + " ORDER BY rater, CASE WHEN line IS NULL THEN 1 ELSE 0 END, line, session_id, round, method",
                       {"eid": evaluation_id, "rater": rater})
    rows = []
    for row in found:
        scores = row.pop("scores")
        rows.append({**row, **(json.loads(scores) if scores else {})})
    return rows

"""People's ratings of a dialogue evaluation's replies, one row per rater and reply: the kind's own table
`people_ratings` (schema step 19), and people's mean per reply, which the agreement figures compare the judges with.

A rating gives the headline `total` (0-100), the `verdict` (the answer to the rubric's yes/no question, 0 or 1) and/or
the rubric's dimensions (key -> rating, one JSON object `scores`). `source` says how it came: 'file' (a ratings file,
`line` its line), 'api', 'browser' or 'reviews' (people's reviews of single judgments, used as ratings).

Step 19 moved in the ratings attached before (the table human_ratings, one file per evaluation, which nothing
writes since): each under the attached file's name as its rater ("file" when the name was not kept)."""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from sqlalchemy import text

from kinds.dialogue.tables import INFO  # the setting that named the attached file, before step 19
from kinds.host import Step, Store, Table

SOURCES = ("file", "api", "browser", "reviews")
MAX_RATER = 80  # characters of a rater's name
UNNAMED = "file"  # the rater of ratings attached before step 19 whose file's name was not kept
KEY = ("session_id", "round", "method")
COLUMNS = ("rater", "session_id", "round", "method", "total", "verdict", "scores", "source", "line", "updated_at")
# the fields of a rating row that are not a dimension's rating
NOT_DIMENSIONS = frozenset((*COLUMNS, "evaluation_id", "raters", "binary"))
# human_ratings, as step 19 found it: the default rubric's five dimensions in columns of their own (before step 17)
FORMER_DIMENSIONS = ("style", "content", "naturalness", "personalization", "conversation")


def _create(con, ddl: dict) -> None:
    con.exec_driver_sql(f"""CREATE TABLE IF NOT EXISTS people_ratings (
    evaluation_id TEXT NOT NULL REFERENCES evaluations (id),
    rater TEXT NOT NULL,
    session_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    method TEXT NOT NULL,
    total {ddl["real"]},
    verdict INTEGER,
    scores TEXT,
    source TEXT NOT NULL,
    line INTEGER,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (evaluation_id, rater, session_id, round, method)
)""")
    _move_attached_files(con)


def _move_attached_files(con) -> None:
    # Each evaluation's attached file becomes the ratings of one rater, named after the file; its time of attaching
    # becomes the ratings' updated_at, so the setting that kept both is no longer needed.
    now = _now()
    evaluations = [row[0] for row in con.exec_driver_sql("SELECT DISTINCT evaluation_id FROM human_ratings")]
    read = text(f"SELECT line, session_id, round, method, total, verdict, {', '.join(FORMER_DIMENSIONS)}, scores"
                " FROM human_ratings WHERE evaluation_id = :eid")
    setting = text("SELECT value FROM settings WHERE name = :name")
    insert = text(f"INSERT INTO people_ratings (evaluation_id, {', '.join(COLUMNS)}) VALUES (:evaluation_id, "
                  f"{', '.join(':' + c for c in COLUMNS)})")
    for evaluation_id in evaluations:
        value = con.execute(setting, {"name": f"{INFO}:{evaluation_id}"}).scalar()
        info = json.loads(value) if value else {}
        rater = str(info.get("filename") or UNNAMED)[:MAX_RATER]
        rows = []
        for line, session_id, rnd, method, total, verdict, *rest in con.execute(read, {"eid": evaluation_id}):
            former, scores = rest[:len(FORMER_DIMENSIONS)], rest[-1]
            merged = {d: v for d, v in zip(FORMER_DIMENSIONS, former) if v is not None}
            merged.update(json.loads(scores) if scores else {})
            rows.append({"evaluation_id": evaluation_id, "rater": rater, "session_id": session_id, "round": rnd,
                         "method": method, "total": total, "verdict": verdict,
                         "scores": json.dumps(merged) if merged else None, "source": "file", "line": line,
                         "updated_at": info.get("attached_at") or now})
        con.execute(insert, rows)
        con.execute(text("DELETE FROM settings WHERE name = :name"), {"name": f"{INFO}:{evaluation_id}"})


TABLE = Table("people_ratings", (Step(19, "people_ratings: people's ratings per rater, the attached files moved in",
                                      _create),), evaluation_column="evaluation_id")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _dimensions(row: Mapping[str, Any]) -> dict[str, Any]:
    """A rating row's dimension ratings: every key that is not one of the row's own fields, with a value."""
    return {k: v for k, v in row.items() if k not in NOT_DIMENSIONS and v is not None}


def _stored(evaluation_id: str, rater: str, key: tuple, ratings: Mapping[str, Any], source: str, line: int | None,
            now: str) -> dict:
    """The parameters of one row of the table."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    if not isinstance(rater, str) or not rater.strip() or len(rater) > MAX_RATER:
        raise ValueError(f"a rater is named by 1 to {MAX_RATER} characters, not {rater!r}")
    scores = _dimensions(ratings)
    return {"evaluation_id": evaluation_id, "rater": rater, "session_id": key[0], "round": key[1], "method": key[2],
            "total": ratings.get("total"), "verdict": ratings.get("verdict"),
            "scores": json.dumps(scores) if scores else None, "source": source, "line": line, "updated_at": now}


_INSERT = (f"INSERT INTO people_ratings (evaluation_id, {', '.join(COLUMNS)})"
           f" VALUES (:evaluation_id, {', '.join(':' + c for c in COLUMNS)})")


def add_ratings(store: Store, evaluation_id: str, rows: Iterable[Mapping[str, Any]], source: str) -> int:
    """Keep people's ratings (each row: rater, session_id, round, method, and total, verdict and/or dimension keys;
    `line` when read from a file), in place of every earlier rating of the raters they name (the others' stay), in
    one transaction; how many were kept."""
    now = _now()
    stored = [_stored(evaluation_id, row["rater"], tuple(row[k] for k in KEY), row, source, row.get("line"), now)
              for row in rows]
    with store.transaction() as tx:
        for rater in sorted({row["rater"] for row in stored}):
            tx.execute("DELETE FROM people_ratings WHERE evaluation_id = :eid AND rater = :rater",
                       {"eid": evaluation_id, "rater": rater})
        tx.execute_many(_INSERT, stored)
    return len(stored)


def save_rating(store: Store, evaluation_id: str, rater: str, session_id: str, round: int, method: str,
                ratings: Mapping[str, Any], source: str = "browser") -> None:
    """Keep one rater's rating of one reply (`ratings`: total, verdict and/or dimension keys), replacing theirs;
    ValueError when it rates nothing."""
    if ratings.get("total") is None and ratings.get("verdict") is None and not _dimensions(ratings):
        raise ValueError("a rating gives a total, a verdict or a dimension's rating")
    row = _stored(evaluation_id, rater, (session_id, round, method), ratings, source, None, _now())
    store.execute(_INSERT + " ON CONFLICT (evaluation_id, rater, session_id, round, method) DO UPDATE SET"
                  " total = excluded.total, verdict = excluded.verdict, scores = excluded.scores,"
                  " source = excluded.source, line = excluded.line, updated_at = excluded.updated_at", row)


def delete_rating(store: Store, evaluation_id: str, rater: str, session_id: str, round: int, method: str) -> bool:
    """Forget one rater's rating of one reply; False when there was none."""
    return store.execute("DELETE FROM people_ratings WHERE evaluation_id = :eid AND rater = :rater"
                         " AND session_id = :sid AND round = :rnd AND method = :method",
                         {"eid": evaluation_id, "rater": rater, "sid": session_id, "rnd": round,
                          "method": method}) > 0


def clear_human_ratings(store: Store, evaluation_id: str, rater: str | None = None) -> int:
    """Forget every rating of an evaluation, or one rater's; how many were forgotten."""
    if rater is None:
        return store.execute("DELETE FROM people_ratings WHERE evaluation_id = :eid", {"eid": evaluation_id})
    return store.execute("DELETE FROM people_ratings WHERE evaluation_id = :eid AND rater = :rater",
                         {"eid": evaluation_id, "rater": rater})


def _order(row: Mapping[str, Any]) -> tuple:
    """Rows with a file line first, in its order, then the others by reply."""
    return row["line"] is None, row["line"] or 0, row["session_id"], row["round"], row["method"]


def people_ratings(store: Store, evaluation_id: str, rater: str | None = None) -> list[dict]:
    """Every rater's ratings of an evaluation (or one rater's): rater, session_id, round, method, total, verdict, each
    dimension's rating under its key, source, line, updated_at; by rater, then file line, then reply."""
    params = {"eid": evaluation_id, **({} if rater is None else {"rater": rater})}
    where = "evaluation_id = :eid" + ("" if rater is None else " AND rater = :rater")
    found = store.rows(f"SELECT {', '.join(COLUMNS)} FROM people_ratings WHERE {where}", params)
    rows = []
    for row in found:
        scores = row.pop("scores")
        tail = {c: row.pop(c) for c in ("source", "line", "updated_at")}
        rows.append({**row, **(json.loads(scores) if scores else {}), **tail})
    return sorted(rows, key=lambda r: (r["rater"], *_order(r)))


def mean(values: list[float]) -> float | None:
    """The mean of people's ratings of one reply, None without any."""
    return math.fsum(values) / len(values) if values else None


def majority(verdicts: list[int]) -> int | None:
    """The verdict most of people gave one reply: 1 or 0, None on a tie or without any."""
    yes = sum(1 for v in verdicts if v)
    no = len(verdicts) - yes
    return None if yes == no else int(yes > no)


def by_reply(rows: Iterable[Mapping[str, Any]]) -> list[dict]:
    """People's ratings (people_ratings rows) as one row per rated reply: session_id, round, method, total and each
    dimension (the mean over the raters who gave it), verdict (their majority, None on a tie), `raters` (how many
    rated the reply) and `line` (the lowest file line among them, None when none came from a file); in the order of
    that line, then by reply."""
    replies: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        replies.setdefault(tuple(row[k] for k in KEY), []).append(row)
    out = []
    for key, given in replies.items():
        lines = [r["line"] for r in given if r.get("line") is not None]
        keys = list(dict.fromkeys(k for r in given for k in _dimensions(r)))
        out.append({"line": min(lines) if lines else None, **dict(zip(KEY, key)),
                    "total": mean([r["total"] for r in given if r.get("total") is not None]),
                    "verdict": majority([r["verdict"] for r in given if r.get("verdict") is not None]),
                    **{k: mean([r[k] for r in given if r.get(k) is not None]) for k in keys},
                    "raters": len(given)})
    return sorted(out, key=_order)


def human_ratings(store: Store, evaluation_id: str) -> list[dict]:
    """People's ratings of an evaluation, one row per rated reply: their mean over raters (by_reply), which the
    agreement figures compare the judges with."""
    return by_reply(people_ratings(store, evaluation_id))


def raters(rows: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Who rated (people_ratings rows), by name: rater, ratings (how many), sources, updated_at (the latest)."""
    found: dict[str, dict] = {}
    for row in rows:
        mine = found.setdefault(row["rater"], {"rater": row["rater"], "ratings": 0, "sources": [], "updated_at": ""})
        mine["ratings"] += 1
        if row["source"] not in mine["sources"]:
            mine["sources"].append(row["source"])
        mine["updated_at"] = max(mine["updated_at"], row["updated_at"])
    return [{**r, "sources": sorted(r["sources"])} for _name, r in sorted(found.items())]


def human_ratings_info(store: Store, evaluation_id: str) -> dict | None:
    """What people's ratings an evaluation has, None without any: rows (how many ratings), the raters' names, and
    each rater's summary (raters())."""
    summary = raters(people_ratings(store, evaluation_id))
    if not summary:
        return None
    return {"rows": sum(r["ratings"] for r in summary), "raters": [r["rater"] for r in summary],
            "by_rater": summary}

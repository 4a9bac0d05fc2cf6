"""The dialogue kind's own tables: people's reviews of single judgments, and human_ratings (the ratings file
attached to an evaluation, before step 19 moved its rows into people_ratings, rating_store.py; nothing writes it
since), kept through the store's generic API (kinds/host.py) and created by their own schema steps, numbered among
the store's (5 and 10, as when the store created them; 17 gave the ratings a `scores` column)."""
from __future__ import annotations

from datetime import datetime, timezone

from kinds.host import Step, Store, Table

REVIEW = ("decision", "total", "verdict", "comment", "reviewer")
INFO = "human_ratings"  # the setting `human_ratings:<evaluation id>`: the attached file's name, rows and time (to step 19)


def _human_ratings(con, ddl: dict) -> None:
    # People's ratings of some judgments, attached to a finished evaluation (the file's name is a setting).
    con.exec_driver_sql("""CREATE TABLE IF NOT EXISTS human_ratings (
    evaluation_id TEXT NOT NULL REFERENCES evaluations (id),
    line INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    method TEXT NOT NULL,
    total REAL,
    verdict INTEGER,
    style REAL,
    content REAL,
    naturalness REAL,
    personalization REAL,
    conversation REAL,
    PRIMARY KEY (evaluation_id, session_id, round, method)
)""")


def _reviews(con, ddl: dict) -> None:
    # A person's review of one judgment, made on its page: agreed, or overridden with their own score or verdict.
    con.exec_driver_sql("""CREATE TABLE IF NOT EXISTS reviews (
    evaluation_id TEXT NOT NULL REFERENCES evaluations (id),
    session_idx INTEGER NOT NULL,
    round INTEGER NOT NULL,
    method TEXT NOT NULL,
    mode TEXT NOT NULL,
    decision TEXT NOT NULL,
    total REAL,
    verdict INTEGER,
    comment TEXT,
    reviewer TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (evaluation_id, session_idx, round, method, mode)
)""")


def _rating_scores(con, ddl: dict) -> None:
    # A rating's dimensions are its evaluation's rubric's, any keys: one JSON object `scores` beside the former
    # columns of the default rubric's five, which keep the ratings attached before (read as they were).
    con.exec_driver_sql("ALTER TABLE human_ratings ADD COLUMN scores TEXT")


TABLES = (
    Table("human_ratings", (Step(5, "human_ratings: people's ratings attached to an evaluation", _human_ratings),
                            Step(17, "human_ratings.scores: ratings on any rubric's dimensions", _rating_scores)),
          evaluation_column="evaluation_id", evaluation_settings=(INFO,)),
    Table("reviews", (Step(10, "reviews: people's reviews of single judgments", _reviews),),
          evaluation_column="evaluation_id"),
)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def set_review(store: Store, evaluation_id: str, key: tuple[int, int, str, str], review: dict) -> None:
    """Keep a person's review of one judgment (key: session index, round, method, mode), replacing theirs."""
    row = {"eid": evaluation_id, "s": key[0], "r": key[1], "m": key[2], "mode": key[3], "now": _now(),
           **{c: review.get(c) for c in REVIEW}}
    with store.transaction() as tx:
        tx.execute("DELETE FROM reviews WHERE evaluation_id = :eid AND session_idx = :s AND round = :r"
                   " AND method = :m AND mode = :mode", row)
        tx.execute("INSERT INTO reviews (evaluation_id, session_idx, round, method, mode, decision, total,"
                   " verdict, comment, reviewer, updated_at) VALUES (:eid, :s, :r, :m, :mode, :decision,"
                   " :total, :verdict, :comment, :reviewer, :now)", row)


def delete_review(store: Store, evaluation_id: str, key: tuple[int, int, str, str]) -> bool:
    """Forget a review; False when there was none."""
    return store.execute("DELETE FROM reviews WHERE evaluation_id = :eid AND session_idx = :s AND round = :r"
                         " AND method = :m AND mode = :mode",
                         {"eid": evaluation_id, "s": key[0], "r": key[1], "m": key[2], "mode": key[3]}) > 0


def reviews(store: Store, evaluation_id: str) -> list[dict]:
    """An evaluation's reviews with the session id of each, in key order."""
    return store.rows(
        "SELECT r.session_idx, j.session_id, r.round, r.method, r.mode, r.decision, r.total, r.verdict, r.comment,"
        " r.reviewer, r.updated_at FROM reviews r JOIN judgments j ON j.evaluation_id = r.evaluation_id"
        " AND j.session_idx = r.session_idx AND j.round = r.round AND j.method = r.method AND j.mode = r.mode"
        " WHERE r.evaluation_id = :eid ORDER BY r.session_idx, r.round, r.method, r.mode", {"eid": evaluation_id})

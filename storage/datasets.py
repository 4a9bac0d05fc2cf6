"""The store's datasets: each finished evaluation's dataset id and headline intervals (pipeline/datasets.py says
what they mean), the runs of one dataset, and the datasets' share links (web/leaderboard.py holds the rules)."""
from __future__ import annotations

import json

from storage.database import Database, first_dict, now, one_dict, text_query

DATASET_SHARE = "id, dataset, token, created_at, revoked_at"
RUN = ("e.id, e.upload_id, e.kind, e.status, e.methods, e.settings, e.created_at, e.finished_at, e.title, e.tags,"
       " e.headline, e.intervals, u.filename")


def _decoded(row: dict) -> dict:
    for key in ("methods", "settings", "tags", "headline", "intervals"):
        if isinstance(row.get(key), str):
            row[key] = json.loads(row[key])
    return row


class Datasets(Database):
    """The datasets section of the Store, on the connections of storage.database.Database."""

    def set_dataset(self, evaluation_id: str, dataset: str, intervals: dict) -> None:
        """Keep a finished evaluation's dataset id and the intervals of its headline numbers ({name: [low, high]})."""
        self._write("UPDATE evaluations SET dataset = :dataset, intervals = :intervals WHERE id = :id",
                    {"dataset": dataset, "intervals": json.dumps(intervals, ensure_ascii=False), "id": evaluation_id})

    def without_dataset(self) -> list[dict]:
        """Finished evaluations that have a result but no dataset yet (kept before schema step 23): id, kind and the
        SHA-256 of their upload's file."""
        return self._all("SELECT e.id, e.kind, u.sha256 FROM evaluations e JOIN uploads u ON u.id = e.upload_id"
                         " WHERE e.dataset IS NULL AND e.status IN ('done', 'incomplete') AND e.result IS NOT NULL"
                         " ORDER BY e.created_at, e.seq")

    def dataset_of(self, evaluation_id: str) -> str | None:
        """The dataset id of an evaluation (None: not finished, or not known yet)."""
        return self._value("SELECT dataset FROM evaluations WHERE id = :id", {"id": evaluation_id})

    def datasets_of_upload(self, upload_id: str) -> list[str]:
        """The datasets of an upload's finished evaluations (one, unless its runs scored different samples)."""
        rows = self._all("SELECT dataset, MIN(created_at) AS first FROM evaluations WHERE upload_id = :upload"
                         " AND dataset IS NOT NULL GROUP BY dataset ORDER BY first", {"upload": upload_id})
        return [row["dataset"] for row in rows]

    def dataset_runs(self, dataset: str) -> list[dict]:
        """The finished evaluations of a dataset, oldest first, with their methods, settings, headline numbers,
        intervals, titles, tags and file names (never their result documents)."""
        rows = self._all(f"SELECT {RUN} FROM evaluations e JOIN uploads u ON u.id = e.upload_id"
                         " WHERE e.dataset = :dataset AND e.status IN ('done', 'incomplete')"
                         " ORDER BY e.created_at, e.seq", {"dataset": dataset})
        return [_decoded(row) for row in rows]

    # share links of a dataset's leaderboard ------------------------------------------------------------------
    def add_dataset_share(self, share_id: str, dataset: str, token: str) -> dict:
        """Record a new share link of a dataset's leaderboard; returns it."""
        with self._writing() as con:
            return one_dict(con.execute(text_query(f"INSERT INTO dataset_shares (id, dataset, token, created_at)"
                                                   f" VALUES (:id, :dataset, :token, :now) RETURNING {DATASET_SHARE}"),
                                        {"id": share_id, "dataset": dataset, "token": token, "now": now()}))

    def active_dataset_share(self, token: str) -> dict | None:
        """The dataset share link with this token unless it was revoked, else None."""
        return self._one(f"SELECT {DATASET_SHARE} FROM dataset_shares WHERE token = :token AND revoked_at IS NULL",
                         {"token": token})

    def list_dataset_shares(self, dataset: str, include_revoked: bool = False) -> list[dict]:
        """Share links of a dataset's leaderboard, oldest first (active ones only unless asked)."""
        sql = f"SELECT {DATASET_SHARE} FROM dataset_shares WHERE dataset = :dataset" + (
            "" if include_revoked else " AND revoked_at IS NULL")
        return self._all(sql + " ORDER BY created_at, id", {"dataset": dataset})

    def revoke_dataset_share(self, dataset: str, share_id: str) -> dict | None:
        """Revoke a dataset share link (revoking twice keeps the first time); None when unknown."""
        params = {"now": now(), "id": share_id, "dataset": dataset}
        with self._writing() as con:
            con.execute(text_query("UPDATE dataset_shares SET revoked_at = COALESCE(revoked_at, :now)"
                                   " WHERE id = :id AND dataset = :dataset"), params)
            return first_dict(con.execute(text_query(f"SELECT {DATASET_SHARE} FROM dataset_shares"
                                                     " WHERE id = :id AND dataset = :dataset"), params))

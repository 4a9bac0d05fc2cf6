"""Datasets: the finished runs that scored the same samples, which a leaderboard ranks together (docs/leaderboard.md).

A run's dataset id is the first 16 hex digits of the SHA-256 of its kind's name and what it scored: the sorted,
distinct ids of its samples when its kind names them (`Scored.sample_ids`: a dialogue run's session ids, so that
runs of different files over the same sessions are one dataset, whatever their methods, rounds or order), else the
SHA-256 of its uploaded file (the same upload). It is kept with the evaluation when it finishes (schema step 23),
with the 95% intervals of its headline numbers (`Scored.headline_intervals`), so a leaderboard reads no result
document. Runs finished before step 23 get both from their result documents the first time a leaderboard is read.
"""
from __future__ import annotations

import hashlib

from kinds import registry
from kinds.kind import Scored
from storage.store import Store

ID_DIGITS = 16
FINISHED = ("done", "incomplete")  # the runs a leaderboard ranks: finished with every judgment asked


def dataset_id(kind: Scored, result: dict, upload_sha256: str) -> str:
    """The dataset id of a finished run of `kind` with this result document, of a file with this SHA-256."""
    ids = kind.sample_ids(result)
    basis = "upload\n" + upload_sha256 if ids is None else "samples\n" + "\n".join(sorted(set(ids)))
    return hashlib.sha256(f"{kind.name}\n{basis}".encode("utf-8")).hexdigest()[:ID_DIGITS]


def keep(store: Store, evaluation_id: str, result: dict, upload_sha256: str) -> str:
    """Compute and keep a finished run's dataset id and headline intervals; the id."""
    kind = registry.scored(result["kind"])
    dataset = dataset_id(kind, result, upload_sha256)
    store.set_dataset(evaluation_id, dataset, kind.headline_intervals(result))
    return dataset


def fill_missing(store: Store) -> int:
    """Give every finished run kept before datasets existed its dataset id and intervals (those of a kind no longer
    installed are left); how many were filled."""
    filled = 0
    for row in store.without_dataset():
        record = store.get_evaluation(row["id"]) if row["kind"] in registry.names() else None
        if record and record.get("result"):
            keep(store, row["id"], record["result"], row["sha256"])
            filled += 1
    return filled


def dataset_of(store: Store, record: dict) -> str | None:
    """The dataset of an evaluation (None until it is finished), computed and kept now when it finished before
    datasets existed."""
    if record.get("status") not in FINISHED:
        return None
    found = store.dataset_of(record["id"])
    if found is None:
        fill_missing(store)
        found = store.dataset_of(record["id"])
    return found

"""People's behaviour labels of a conversation evaluation, made on its labelling pages or posted to its API: the kind's
own table `people_labels` (one row per conversation and person, the eleven dimensions of behaviour.py as one JSON
object), and the "people" label set: each conversation's consensus of the people who labelled it.

Consensus per dimension, over the people who gave it a value: for categories the most frequent value (none on a tie);
for the 1-5 scales the median, rounded half up when the number of values is even (2 and 3 give 3)."""
from __future__ import annotations

import json
import math
from collections import Counter
from datetime import datetime, timezone
from statistics import median
from typing import Any, Iterable, Sequence

from kinds.conversation.behaviour import DIMENSIONS, Dimension
from kinds.host import Step, Store, Table
from kinds.kind import Job

COLUMNS = "conversation_idx, path, person, labels, updated_at"
MAX_PERSON = 80  # characters of a person's name


def _create(con, ddl: dict) -> None:
    # One person's labels of one conversation of an evaluation; `path` says which conversation for people reading
    # the table (the index, in upload order, is the key: an upload's file never changes).
    con.exec_driver_sql("""CREATE TABLE IF NOT EXISTS people_labels (
    evaluation_id TEXT NOT NULL REFERENCES evaluations (id),
    conversation_idx INTEGER NOT NULL,
    path TEXT NOT NULL,
    person TEXT NOT NULL,
    labels TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (evaluation_id, conversation_idx, person)
)""")


TABLE = Table("people_labels", (Step(18, "people_labels: people's behaviour labels of conversations", _create),),
              evaluation_column="evaluation_id")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def save(store: Store, evaluation_id: str, rows: Iterable[dict]) -> int:
    """Keep people's labels ({index, path, person, labels}), each replacing that person's earlier labels of the
    conversation, in one transaction; how many were kept."""
    now = _now()
    stored = [{"eid": evaluation_id, "idx": r["index"], "path": r["path"], "person": r["person"],
               "labels": json.dumps({d.key: r["labels"].get(d.key) for d in DIMENSIONS}), "now": now} for r in rows]
    with store.transaction() as tx:
        tx.execute_many("INSERT INTO people_labels (evaluation_id, conversation_idx, path, person, labels, updated_at)"
                        " VALUES (:eid, :idx, :path, :person, :labels, :now)"
                        " ON CONFLICT (evaluation_id, conversation_idx, person) DO UPDATE SET path = excluded.path,"
                        " labels = excluded.labels, updated_at = excluded.updated_at", stored)
    return len(stored)


def rows(store: Store, evaluation_id: str) -> list[dict]:
    """Every person's labels of the evaluation's conversations, by conversation then person: {index, path, person,
    labels: {dimension key: value or None}, updated_at}."""
    found = store.rows(f"SELECT {COLUMNS} FROM people_labels WHERE evaluation_id = :eid"
                       " ORDER BY conversation_idx, person", {"eid": evaluation_id})
    return [{"index": r["conversation_idx"], "path": r["path"], "person": r["person"],
             "labels": json.loads(r["labels"]), "updated_at": r["updated_at"]} for r in found]


def by_conversation(found: Iterable[dict]) -> dict[int, dict[str, dict]]:
    """Labels rows (rows()) as {conversation index: {person: labels}}."""
    out: dict[int, dict[str, dict]] = {}
    for row in found:
        out.setdefault(row["index"], {})[row["person"]] = row["labels"]
    return out


def consensus_value(dimension: Dimension, values: Sequence[Any]) -> Any:
    """The people's consensus on one dimension from their values (None left out): the most frequent category, None
    on a tie; the median of a 1-5 scale rounded half up; None without values."""
    given = [v for v in values if v is not None]
    if not given:
        return None
    if dimension.is_scale:
        return math.floor(median(given) + 0.5)
    ranked = Counter(given).most_common(2)
    return None if len(ranked) == 2 and ranked[0][1] == ranked[1][1] else ranked[0][0]


def consensus(labels: Iterable[dict]) -> dict[str, Any]:
    """The consensus of several people's labels of one conversation, dimension by dimension."""
    given = list(labels)
    return {d.key: consensus_value(d, [person.get(d.key) for person in given]) for d in DIMENSIONS}


def people_label_sets(job: Job, conversations: Sequence) -> list[dict | None]:
    """The "people" label set of an evaluation: per conversation in upload order, the consensus of the people who
    labelled it in the browser or through the API (None where nobody did)."""
    labelled = by_conversation(rows(job.store, job.evaluation["id"]))
    return [consensus(labelled[i].values()) if i in labelled else None for i in range(len(conversations))]

"""The slice of a dialogue evaluation's replies that people rate in the browser: drawn, kept, and how big it should be.

The replies are those with a valid fine judgment (status ok, total 0-100), each with the judge's total (the mean of
its valid fine judgments: samples and a panel's judges alike). Strata are method x round, in the evaluation's order of
methods, then by round. A slice of `size` replies takes size // strata from each stratum, one more from each of the
first size % strata, never more than a stratum has; within a stratum the replies are drawn uniformly at random
without replacement by Python's `random.Random(seed)` (from the stratum's replies in file order), and the whole slice
is then shuffled by the same generator, so that a rater does not see one method's replies in a row. The same seed and
size draw the same slice of the same evaluation.

The slice is kept in the kind's own table `rating_slices` (schema step 20), one per evaluation: drawing again
replaces it (the ratings made stay, kept by reply)."""
from __future__ import annotations

import json
import math
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone

from judge import split_mode
from kinds.host import Step, Store, Table

Reply = tuple[str, int, str]  # session id, round, method
Z95 = 1.96  # the normal quantile of a two-sided 95% interval
MAX_SIZE = 100_000


def _create(con, ddl: dict) -> None:
    # The slice of an evaluation's replies people rate, as drawn: items in rating order.
    con.exec_driver_sql("""CREATE TABLE IF NOT EXISTS rating_slices (
    evaluation_id TEXT PRIMARY KEY REFERENCES evaluations (id),
    seed INTEGER NOT NULL,
    size INTEGER NOT NULL,
    items TEXT NOT NULL,
    created_by TEXT,
    created_at TEXT NOT NULL
)""")


TABLE = Table("rating_slices", (Step(20, "rating_slices: the replies people rate in the browser", _create),),
              evaluation_column="evaluation_id")


def judged_replies(store: Store, evaluation: dict) -> dict[Reply, float]:
    """The judge's total of every reply with a valid fine judgment (the mean of its valid ones), in file order."""
    methods = set(evaluation["methods"])
    sums: dict[Reply, list[float]] = {}
    for j in store.iter_judgments(evaluation["id"], columns=("session_id", "status", "total")):
        total = j["total"]
        if (j["status"] != "ok" or total is None or not 0 <= total <= 100 or j["method"] not in methods
                or split_mode(j["mode"])[0] != "fine"):
            continue
        cell = sums.setdefault((j["session_id"], j["round"], j["method"]), [0.0, 0])
        cell[0] += total
        cell[1] += 1
    return {reply: total / count for reply, (total, count) in sums.items()}


def strata(replies: Iterable[Reply], methods: Sequence[str]) -> dict[tuple[str, int], list[Reply]]:
    """The replies by stratum (method, round): methods in the evaluation's order, then rounds ascending; each
    stratum's replies in the order given."""
    found: dict[tuple[str, int], list[Reply]] = {}
    for reply in replies:
        found.setdefault((reply[2], reply[1]), []).append(reply)
    order = {method: position for position, method in enumerate(methods)}
    return {key: found[key] for key in sorted(found, key=lambda key: (order.get(key[0], len(order)), key[1]))}


def stratum_sizes(available: Sequence[int], size: int) -> list[int]:
    """How many replies a slice of `size` takes from each stratum (of `available` replies each, in order): size //
    strata each, one more for each of the first size % strata, never more than a stratum has."""
    if not available:
        return []
    each, extra = divmod(size, len(available))
    return [min(count, each + (1 if position < extra else 0)) for position, count in enumerate(available)]


def draw(by_stratum: Mapping[tuple[str, int], Sequence[Reply]], size: int, seed: int) -> list[Reply]:
    """A slice of about `size` replies (see the module), in rating order."""
    rng = random.Random(seed)
    chosen: list[Reply] = []
    for members, n in zip(by_stratum.values(), stratum_sizes([len(m) for m in by_stratum.values()], size)):
        chosen += rng.sample(list(members), n)
    rng.shuffle(chosen)
    return chosen


def ratings_needed(judge_values: Mapping[str, Sequence[float]], width: float) -> int:
    """Ratings per method for a 95% interval of width `width` (0-100 points) on its mean: ceil((2 x 1.96 x s /
    width)^2), s the sample standard deviation of the judge's reply totals of the method (those with two or more),
    for the method that needs the most; 0 when no method has two."""
    if not width > 0:
        raise ValueError("the interval's width must be a positive number")
    spreads = [statistics.stdev(values) for values in judge_values.values() if len(values) >= 2]
    # a product that lands on a whole number keeps it (1e-9 absorbs the float error of 1.96 and the division)
    return max((math.ceil((2 * Z95 * s / width) ** 2 - 1e-9) for s in spreads), default=0)


def save_slice(store: Store, evaluation_id: str, seed: int, size: int, items: Sequence[Reply],
               created_by: str | None) -> None:
    """Keep the slice of an evaluation, replacing the one before."""
    row = {"eid": evaluation_id, "seed": seed, "size": size, "items": json.dumps([list(item) for item in items]),
           "by": created_by, "now": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    store.execute("INSERT INTO rating_slices (evaluation_id, seed, size, items, created_by, created_at)"
                  " VALUES (:eid, :seed, :size, :items, :by, :now) ON CONFLICT (evaluation_id) DO UPDATE SET"
                  " seed = excluded.seed, size = excluded.size, items = excluded.items,"
                  " created_by = excluded.created_by, created_at = excluded.created_at", row)


def slice_of(store: Store, evaluation_id: str) -> dict | None:
    """The evaluation's slice ({seed, size, items: [(session id, round, method)...] in rating order, created_by,
    created_at}), or None before one is drawn."""
    row = store.row("SELECT seed, size, items, created_by, created_at FROM rating_slices WHERE evaluation_id = :eid",
                    {"eid": evaluation_id})
    if row is None:
        return None
    return {**row, "items": [(str(s), int(k), str(m)) for s, k, m in json.loads(row["items"])]}

"""Live results: a running evaluation's result document made from the judgments stored so far, by the kind's own
`score` (the code that makes the final one), read from the store so that any web process can show it while the
judging runs elsewhere (threads of another process, Celery workers).

One partial document is kept per evaluation and counts of judgments stored, so the pages that poll it share one
computation; and, since scoring a large evaluation takes a while, it is made again no more often than COST_FACTOR
times what the last one took (the figures state the number of judgments they were computed from).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from kinds import registry
from kinds.kind import calls_judge
from pipeline.evaluation_steps import Pipeline

RUNNING = ("queued", "running")
MIN_INTERVAL_S = 1.0  # a partial document is made again at most once a second
COST_FACTOR = 20.0  # ... and at most once per 20 times what the last one took: at most 5% of a core on it
KEPT = 32  # partial documents kept (one per evaluation, the latest asked for)


@dataclass(frozen=True)
class Partial:
    """A result document made from some of an evaluation's judgments."""

    result: dict  # the kind's result document of the judgments stored when it was made (no provenance yet)
    judgments: int  # judgments with an outcome (answered, failed or unparsed) it was made from
    total: int  # judgments the evaluation has in all
    counts: tuple[int, ...]  # the store's counts it was made at: the key it is kept under
    made_at: float  # time.monotonic() when it was made
    cost_s: float  # how long making it took


class LiveResults:
    """The partial result documents of running evaluations, made on demand and kept per (evaluation, judgments
    stored)."""

    def __init__(self, pipeline: Pipeline, clock: Callable[[], float] = time.monotonic):
        self.pipeline = pipeline
        self.clock = clock
        self._kept: OrderedDict[str, Partial] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._warm = False  # whether a partial document was made in this process already

    def partial(self, evaluation: dict) -> Partial | None:
        """The evaluation's result document from the judgments stored so far, or None when it is not running, calls
        no judge (a kind scored in one step has nothing to show before its end) or has no judgment stored yet.
        JobFailed when its file is missing."""
        if evaluation["status"] not in RUNNING:
            self._forget(evaluation["id"])
            return None
        if not calls_judge(registry.scored(evaluation["kind"]), evaluation):
            return None
        progress = self.pipeline.store.progress(evaluation["id"])
        if not progress["done"]:
            return None
        counts = (progress["done"], progress["failed"], progress["unparsed"], progress["total"])
        with self._lock(evaluation["id"]):  # the pages asking at once wait for one computation
            kept = self._kept.get(evaluation["id"])
            if kept is not None and (kept.counts == counts or not self._due(kept)):
                return kept
            started = self.clock()
            result, judged = self.pipeline.score_so_far(evaluation)
            # the process's first one also loads the libraries scoring needs (seconds): that is not its cost
            cost, self._warm = (self.clock() - started if self._warm else 0.0), True
            made = Partial(result, judged, progress["total"], counts, self.clock(), cost)
            with self._guard:
                self._kept[evaluation["id"]] = made
                self._kept.move_to_end(evaluation["id"])
                while len(self._kept) > KEPT:
                    self._locks.pop(self._kept.popitem(last=False)[0], None)
            return made

    def _due(self, kept: Partial) -> bool:
        """Whether a kept partial document is old enough to be made again (newer judgments are stored)."""
        return self.clock() - kept.made_at >= max(MIN_INTERVAL_S, COST_FACTOR * kept.cost_s)

    def _lock(self, evaluation_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(evaluation_id, threading.Lock())

    def _forget(self, evaluation_id: str) -> None:
        with self._guard:
            self._kept.pop(evaluation_id, None)
            self._locks.pop(evaluation_id, None)

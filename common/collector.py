"""The garbage collector of a process that judges (`flask score`, a Celery worker).

Measured on a 40,000-judgment `flask score` against a judge that answers at once: full collections went through the
app, its kinds and libraries (some 160,000 objects that live as long as the process) 22 times, 1.5 s of CPU; and
with 64 calls in flight holding thousands of objects at once, a young collection ran every 14 judgments with
Python's default threshold of 700 allocations, finding next to nothing: 0.9 s more. Frozen, and with young
collections every 10,000 allocations, the collector took 0.2 s of that run. Cyclic garbage then waits a little
longer to be collected (a few MB at most); nothing else changes.
"""
from __future__ import annotations

import gc

from common import allocator

YOUNG_THRESHOLD = 10_000  # allocations (less deallocations) of tracked objects between two young collections


def settle_for_judging() -> None:
    """Freeze what the process holds now out of the collector's rounds (gc.freeze), space its young collections, and
    have the C allocator give back the memory freed (common/allocator.py); call it once the process is set up, before
    it judges."""
    allocator.return_freed_memory()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])

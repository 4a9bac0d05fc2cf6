"""The sweep's judgment of lost work (pipeline/leases.py lost_work) on a real Redis: a job with nothing in the broker
and no lease is sent again when two sweeps in a row find it so, and once sent again, only after two more."""
from __future__ import annotations

import time

import redis

from pipeline.leases import lost_work

SWEEP_S = 0.05


def test_a_job_is_sent_again_after_two_sweeps_and_then_not_at_the_next(redis_server):
    client = redis.Redis.from_url(redis_server.url)
    leased: set[str] = set()

    def sweep(*unfinished: str) -> list[str]:
        time.sleep(SWEEP_S)  # one sweep per interval: the sweep's own lock lasts 0.9 of it
        return lost_work(client, "q-lost", "jobs", SWEEP_S, unfinished, lambda job: job in leased)

    assert sweep("a", "b") == []  # suspects
    leased.add("b")  # b's step took its lease meanwhile: not lost
    assert sweep("a", "b") == ["a"]
    # a's new tasks are between the queue and their leases at this sweep (a finish just delivered, say): not sent
    # again at once (the sweep of one worker sent a job twice, a second apart, in the whole suite)
    assert sweep("a", "b") == []
    assert sweep("a", "b") == ["a"]  # still nothing of it two sweeps on: lost again
    assert sweep() == []

"""The thread backend waits out a database that cannot be reached at the very end of a run (a restart just as the
job's result is recorded), instead of ending its thread on the error."""
from __future__ import annotations

import sqlite3

import pytest

from pipeline import thread_backend
from pipeline.thread_backend import ThreadBackend


class OneBlockJob:
    """A job type of one block whose status cannot be read the first `unreachable` times it is asked."""

    name = "probe"

    def __init__(self, unreachable: int) -> None:
        self.unreachable = unreachable
        self.events: list[str] = []

    def status(self, job_id: str) -> str:
        if self.unreachable:
            self.unreachable -= 1
            raise sqlite3.OperationalError("database is locked")  # what a restart looks like to the store
        return "done"

    def open(self, job_id: str) -> str:
        self.events.append("open")
        return job_id

    def set_status(self, job_id: str, status: str, error: str | None = None) -> None:
        self.events.append(status)

    def plan(self, work: str, shared: bool) -> list[str]:
        return ["block"]

    def run_block(self, work, block, should_stop, on_progress) -> None:
        self.events.append(block)

    def again(self, job_id: str) -> None:
        return None

    def result(self, work: str) -> dict:
        return {}

    def record(self, work: str, result: dict, cancelled: bool) -> None:
        self.events.append("recorded")

    def failed(self, job_id: str, exc: BaseException) -> None:
        self.events.append(f"failed: {exc}")


@pytest.mark.parametrize("unreachable", [0, 2])
def test_a_run_ends_cleanly_when_the_database_is_away_as_it_ends(monkeypatch, unreachable):
    monkeypatch.setattr(thread_backend, "DATABASE_WAIT_S", 0.01)
    job = OneBlockJob(unreachable)
    backend = ThreadBackend(job)
    backend.start("j1")
    backend.wait("j1", timeout=10)
    assert not backend.running("j1")
    assert job.events == ["open", "running", "block", "recorded"] and job.unreachable == 0
    backend.start("j1")  # the thread left the backend's list: a new start runs the job again
    backend.wait("j1", timeout=10)
    assert job.events.count("open") == 2

"""A thread that keeps its judge connections (judge.keep_connections, as a Celery worker's process does): its runs
reuse one event loop and one HTTP client, within KEEP_CONNECTIONS_S and for the same endpoint and key only, never a
connection the judge has closed, and release_connections closes them."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from judge import engine, keep_connections, release_connections
from tests.judge.test_evaluator import items, make_judge, wait_until


def on_a_thread(body: Callable[[], None]) -> None:
    """Run body on a new thread that keeps its connections (the setting is the thread's), releasing them after."""
    failure: list[BaseException] = []

    def target() -> None:
        keep_connections()
        try:
            body()
        except BaseException as exc:  # noqa: BLE001 - raised again on the test's thread
            failure.append(exc)
        finally:
            release_connections()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the runs did not end within 30 s"
    if failure:
        raise failure[0]


def run_ok(judge_server, n: int, salt: str, **settings: object) -> None:
    with make_judge(judge_server, concurrency=4, **settings) as judge:
        verdicts = [verdict for _tag, verdict in judge.run(items(n, "fine", salt))]
    assert [(v.status, v.attempts) for v in verdicts] == [("ok", 1)] * n


def test_runs_of_a_thread_that_keeps_connections_share_them_and_release_closes_them(judge_server):
    judge_server.latency_s = 0.01

    def three_runs() -> None:
        for run in range(3):
            run_ok(judge_server, 12, f"run {run} ")
        assert judge_server.stats()["open_connections"] > 0  # kept after the last run

    on_a_thread(three_runs)
    assert judge_server.requests == 36
    assert judge_server.accepted <= 4  # the first run's, at most one per call in flight
    wait_until(lambda: judge_server.stats()["open_connections"] == 0)  # closed by release_connections


def test_without_keeping_each_run_connects_again(judge_server):
    judge_server.latency_s = 0.01
    for run in range(3):
        run_ok(judge_server, 12, f"run {run} ")
    assert judge_server.accepted >= 6  # (the figure the test above bounds, had the connections not been kept)
    wait_until(lambda: judge_server.stats()["open_connections"] == 0)


def test_kept_connections_serve_only_the_same_key_and_only_shortly_after(judge_server, monkeypatch):
    judge_server.latency_s = 0.01

    def runs() -> None:
        run_ok(judge_server, 8, "first ", api_key="sk-first")
        first = judge_server.accepted
        run_ok(judge_server, 8, "second ", api_key="sk-second")  # another key: its own client
        assert judge_server.accepted > first
        assert judge_server.last_authorization == "Bearer sk-second"
        monkeypatch.setattr(engine, "KEEP_CONNECTIONS_S", 0.0)
        second = judge_server.accepted
        run_ok(judge_server, 8, "third ", api_key="sk-second")  # too late: connects again
        assert judge_server.accepted > second

    on_a_thread(runs)
    wait_until(lambda: judge_server.stats()["open_connections"] == 0)  # the replaced clients were closed too


@pytest.mark.parametrize("repeat", range(3))
def test_connections_the_judge_closed_between_runs_are_not_used(judge_server, repeat):
    def runs() -> None:
        run_ok(judge_server, 12, f"before {repeat} ")
        judge_server.close_connections()  # the judge's keep-alive timeout, or a restart
        wait_until(lambda: judge_server.stats()["open_connections"] == 0)
        run_ok(judge_server, 12, f"after {repeat} ")  # one attempt each: no call went to a closed connection

    on_a_thread(runs)
    assert judge_server.stats()["faults"] == {}


def test_releasing_waits_a_bounded_time_for_connections_that_do_not_close(monkeypatch):
    # A process on its way out (a Celery pool's process) never hangs on a peer: a client whose close never ends is
    # given up after RELEASE_S, and the loop is closed all the same.
    monkeypatch.setattr(engine, "RELEASE_S", 0.2)

    class Stuck:
        async def close(self) -> None:
            await asyncio.Event().wait()

    loop, released = asyncio.new_event_loop(), []

    def target() -> None:  # a daemon thread: were the release to hang, the test fails instead of hanging
        engine._kept.loop, engine._kept.client = loop, Stuck()
        release_connections()
        released.append((engine._kept.loop, engine._kept.client))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(5)
    assert released == [(None, None)] and loop.is_closed()

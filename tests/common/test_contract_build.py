"""The API's models are built at their first use (defer_build), by one thread while the others wait: pydantic 2.13
builds a deferred model without a lock, and a request checked against a half-built model could be refused."""
from __future__ import annotations

import threading
import time

from pydantic import Field

from common.contract import Request, _check


def test_threads_first_using_a_model_at_once_build_it_once_and_check_with_it():
    class Speaker(Request):
        name: str = Field(min_length=1)
        rounds: int = 3

    assert not Speaker.__pydantic_complete__  # not built when defined
    rebuild, inside, most, lock = Speaker.model_rebuild, [0], [0], threading.Lock()

    def slow_rebuild(*args, **kwargs):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.05)  # long enough for the other threads to arrive while it builds
        try:
            return rebuild(*args, **kwargs)
        finally:
            with lock:
                inside[0] -= 1

    Speaker.model_rebuild = slow_rebuild  # type: ignore[method-assign]
    start, checked = threading.Barrier(4), []

    def use() -> None:
        start.wait()
        checked.append(_check(Speaker, {"name": "Ann", "rounds": 2}))

    threads = [threading.Thread(target=use) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert checked == [{"name": "Ann", "rounds": 2}] * 4
    assert most[0] == 1  # never two builds at once
    assert Speaker.__pydantic_complete__

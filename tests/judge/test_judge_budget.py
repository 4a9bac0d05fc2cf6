"""The judge budget shared through Redis by every process of a deployment (judge/budget.py): JUDGE_CONCURRENCY
bounds the calls in flight over several OS processes, a process killed with kill -9 gives its slots back
when its leases expire, a 429 seen by one process pauses the others, a waiting acquire can be cancelled;
and where the Redis URL comes from. Real Redis (tests/services.py), real processes, the local judge server."""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

import pytest
import redis

from judge import EndpointLimiter, Judge, JudgeConfig, endpoint_limiter
from judge import budget as judge_budget
from judge import http as judge_http
from judge.budget import BudgetKeys, RedisLimiter
from judge.http import ChatClient
from judge.limiter import HANDOVERS
from judge.retry import MAX_WAIT_S

ROOT = Path(__file__).resolve().parents[2]
LATENCY_S = 0.05
CONCURRENCY = 4
LEASE_S = 1.5  # short leases, so that a killed process's slots come back within the test (else the default)


# -- a judge in another OS process --------------------------------------------------------------

# A chat completion as the SDK reads it.



def worker_main(spec_json: str) -> None:
    """Body of a worker process: build a Judge from JUDGE_* settings, say "ready", wait for "go" on stdin, judge
    its items, print one JSON line with the verdict statuses, its attempts and whether the openai SDK was loaded."""
    spec = json.loads(spec_json)
    if spec["lease_s"] is not None:
        judge_budget.LEASE_S = spec["lease_s"]
    from kinds.dialogue.prompts import DialogueContext, prompt

    env = {"JUDGE_BASE_URL": spec["url"], "JUDGE_MODEL": "judge-test", "JUDGE_CONCURRENCY": str(CONCURRENCY),
           "JUDGE_MAX_RETRIES": str(spec["max_retries"]), "JUDGE_TIMEOUT_S": str(spec["timeout_s"]),
           "JUDGE_RETRY_BASE_S": "0.01", "JUDGE_RETRY_MAX_S": "0.05"}
    if spec["redis"]:
        env["JUDGE_REDIS_URL"] = spec["redis"]
    items = [(i, prompt("fine", DialogueContext(
        profile="A nurse who runs marathons.", personality="direct", history=[], user_message="Any tips?",
        reply=f"{spec['salt']} reply {i} [[score=70]]"), "en")) for i in range(spec["items"])]
    with Judge(JudgeConfig.from_env(env)) as judge:
        print(json.dumps({"ready": type(judge._limiter).__name__}), flush=True)
        sys.stdin.readline()
        while spec["wait_requests"]:  # start only once the server has seen that many requests
            with urllib.request.urlopen(f"{spec['url']}/_stats", timeout=5) as response:
                if json.load(response)["requests"] >= spec["wait_requests"]:
                    break
            time.sleep(0.01)
        statuses: Counter = Counter()
        attempts = 0
        errors = []
        for _tag, verdict in judge.run(items):
            statuses[verdict.status] += 1
            attempts += verdict.attempts
            if verdict.error:
                errors.append(verdict.error)
        print(json.dumps({"statuses": dict(statuses), "attempts": attempts, "errors": errors,
                          "sdk_loaded": "openai" in sys.modules}), flush=True)


class Worker:
    """A judge in a child process (python -c ... worker_main), driven over its stdin and stdout."""

    def __init__(self, url: str, redis_url: str | None, salt: str, items: int, *, lease_s: float | None = None,
                 timeout_s: float = 10.0, max_retries: int = 2, wait_requests: int = 0) -> None:
        spec = {"url": url, "redis": redis_url, "salt": salt, "items": items, "lease_s": lease_s,
                "timeout_s": timeout_s, "max_retries": max_retries, "wait_requests": wait_requests}
        code = "import sys; from tests.judge.test_judge_budget import worker_main; worker_main(sys.argv[1])"
        self.process = subprocess.Popen([sys.executable, "-c", code, json.dumps(spec)], cwd=ROOT, text=True,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put("")

    def line(self, timeout: float) -> dict:
        try:
            text = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"worker said nothing for {timeout} s") from None
        assert text, f"worker exited with code {self.process.wait(5)}"
        return json.loads(text)

    def ready(self, timeout: float = 30.0) -> str:
        return self.line(timeout)["ready"]

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def result(self, timeout: float = 60.0) -> dict:
        return self.line(timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


@pytest.fixture
def workers():
    """Start Workers with workers(...); every one still running is killed after the test."""
    started: list[Worker] = []

    def start(*args, **kwargs) -> Worker:
        worker = Worker(*args, **kwargs)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def run_together(*group: Worker, limiter: str) -> list[dict]:
    """Wait until every worker is ready (with that kind of limiter), start them at once, collect their results."""
    assert [w.ready() for w in group] == [limiter] * len(group)
    for worker in group:
        worker.go()
    return [worker.result() for worker in group]


def leases(redis_url: str, endpoint: str) -> int:
    """Slots held in Redis for endpoint."""
    return redis.Redis.from_url(redis_url).zcard(BudgetKeys.of(endpoint).leases)


def leases_once_kept_ones_are_back(redis_url: str, endpoint: str) -> int:
    """Slots held in Redis for endpoint once the slots a process keeps for its next call (LINGER_S) are back."""
    deadline = time.monotonic() + 2
    while (held := leases(redis_url, endpoint)) and time.monotonic() < deadline:
        time.sleep(0.005)
    return held


# -- (a) one budget over several processes ----------------------------------------------------


def test_processes_together_never_exceed_the_concurrency(judge_server, redis_server, workers):
    judge_server.latency_s = LATENCY_S
    items = 150
    # All six start now (Python and the SDK take a while to import); each group waits for its "go".
    solo = [workers(judge_server.url, None, f"solo{i}", items) for i in range(3)]
    shared = [workers(judge_server.url, redis_server.url, f"shared{i}", items) for i in range(3)]
    # Without Redis each process has its own budget of 4: together they exceed it (what the test guards against).
    results = run_together(*solo, limiter="EndpointLimiter")
    assert [r["statuses"] for r in results] == [{"ok": items}] * 3, [r["errors"] for r in results]
    assert judge_server.max_in_flight > CONCURRENCY, judge_server.max_in_flight

    judge_server.reset()
    judge_server.latency_s = LATENCY_S
    start = time.monotonic()
    results = run_together(*shared, limiter="RedisLimiter")
    elapsed = time.monotonic() - start
    assert [r["statuses"] for r in results] == [{"ok": items}] * 3, [r["errors"] for r in results]  # all judged
    assert not any(r["sdk_loaded"] for r in results)  # nothing failed: the SDK's 0.4 s import was never paid
    assert judge_server.max_in_flight <= CONCURRENCY, judge_server.max_in_flight  # over all three processes
    assert judge_server.max_in_flight >= CONCURRENCY - 1  # and the budget was used
    assert judge_server.requests == sum(r["attempts"] for r in results) >= 3 * items
    assert elapsed >= 3 * items * LATENCY_S / CONCURRENCY
    assert leases_once_kept_ones_are_back(redis_server.url, judge_server.url) == 0  # every slot given back


# -- (b) a process killed while it holds slots --------------------------------------------------


def test_slots_of_a_killed_process_come_back_when_its_leases_expire(judge_server, redis_server, workers):
    judge_server.hook = lambda request: "timeout" if "HANG" in request["reply"] else None  # held 30 s
    holder = workers(judge_server.url, redis_server.url, "HANG", CONCURRENCY, lease_s=LEASE_S, timeout_s=60,
                     max_retries=0)
    assert holder.ready() == "RedisLimiter"
    holder.go()
    deadline = time.monotonic() + 30  # a busy machine starts the calls late
    while judge_server.requests < CONCURRENCY:  # the holder now has every slot, in calls that hang
        assert time.monotonic() < deadline, judge_server.stats()
        time.sleep(0.01)
    assert leases(redis_server.url, judge_server.url) == CONCURRENCY

    other = workers(judge_server.url, redis_server.url, "after", 40, lease_s=LEASE_S)
    assert other.ready() == "RedisLimiter"
    other.go()
    time.sleep(2 * LEASE_S)  # longer than a lease: the holder's are renewed while it lives
    assert judge_server.requests == CONCURRENCY  # so the other process is still waiting for a slot

    os.kill(holder.process.pid, signal.SIGKILL)
    killed = time.monotonic()
    result = other.result(timeout=15)
    assert result["statuses"] == {"ok": 40}, result["errors"]
    first = min(t for t, reply, _fault in judge_server.log if "after" in reply)
    # Renewed every LEASE_S / 3 until the kill, found by a waiter within POLL_S of expiring.
    assert 0 < first - killed <= LEASE_S + judge_budget.POLL_S + 1.0, first - killed
    assert leases_once_kept_ones_are_back(redis_server.url, judge_server.url) == 0


# -- (c) a 429 in one process pauses the others ------------------------------------------------


B_ITEMS = 400  # B's calls last ~5 s: A (a process of its own, late to start on a busy machine) gets its 429 mid-run


def _pair(judge_server, redis_url: str | None, workers) -> tuple[Worker, Worker]:
    """Process B, with B_ITEMS items, and process A, with one that will get a 429, once B is under way."""
    return (workers(judge_server.url, redis_url, "B", B_ITEMS),
            workers(judge_server.url, redis_url, "RATE", 1, wait_requests=8))


def _rate_limited_run(judge_server, pair: tuple[Worker, Worker], limiter: str) -> tuple[float, list[float], dict]:
    """B judges its items; once the server has seen 8 requests, A judges one that gets a 429 with Retry-After: 1.
    Returns the time of the 429, the start times of B's requests and A's result."""
    judge_server.reset()
    judge_server.latency_s = LATENCY_S
    judge_server.retry_after_s = 1.0
    judge_server.fail_next(1, "429", match="RATE")
    b_result, a_result = run_together(*pair, limiter=limiter)
    assert b_result["statuses"] == {"ok": B_ITEMS}, b_result["errors"]
    assert a_result == {"statuses": {"ok": 1}, "attempts": 2, "errors": [], "sdk_loaded": True}  # for the 429's error
    log = list(judge_server.log)
    (rate_limited,) = [t for t, reply, fault in log if fault == "429"]
    return rate_limited, [t for t, reply, _fault in log if "B reply" in reply], a_result


def test_a_429_in_one_process_pauses_every_process(judge_server, redis_server, workers):
    # The 429 is answered LATENCY_S after its request started; calls that took a slot before A heard it (and
    # told Redis) may still start a little later. From then until the Retry-After has passed, nobody calls.
    quiet = (LATENCY_S + 0.35, 0.95)
    shared, solo = _pair(judge_server, redis_server.url, workers), _pair(judge_server, None, workers)

    t429, b_starts, _a = _rate_limited_run(judge_server, shared, "RedisLimiter")
    assert any(t < t429 for t in b_starts)  # B was running when A got the 429
    assert not [round(t - t429, 3) for t in b_starts if quiet[0] < t - t429 < quiet[1]]
    assert any(t - t429 >= 1.0 for t in b_starts)  # and went on after it
    retry = [t for t, reply, fault in judge_server.log if "RATE" in reply and fault is None]
    assert retry and retry[0] - t429 >= 1.0

    # Without Redis the pause is A's alone: B keeps calling through it.
    t429, b_starts, _a = _rate_limited_run(judge_server, solo, "EndpointLimiter")
    assert len([t for t in b_starts if quiet[0] < t - t429 < quiet[1]]) >= 10


def test_a_refusal_is_told_before_the_sdks_exceptions_are_first_loaded(judge_server, monkeypatch):
    told: list[tuple[int, str | None]] = []
    judge_server.retry_after_s = 2.0

    async def refused_call() -> BaseException:
        client = await ChatClient.open(judge_server.url, "key", 5.0, 1,
                                       lambda status, headers: told.append((status, headers.get("Retry-After"))))
        try:
            await client.complete(b'{"model": "m", "messages": [{"role": "user", "content": "hello"}]}')
        except Exception as exc:  # noqa: BLE001 - the SDK's exception, whichever it is
            return exc
        finally:
            await client.close()
        raise AssertionError("the 429 was not raised")

    for loaded in (False, True):
        monkeypatch.setattr(judge_http, "_sdk_loaded", loaded)
        judge_server.fail_next(1, "429")
        error = asyncio.run(refused_call())
        assert type(error).__name__ == "RateLimitError"
        assert told == ([] if loaded else [(429, "2")])  # once the SDK is loaded the exception says it at once
        told.clear()


def test_the_pause_told_as_a_refusal_arrives_is_the_asked_one_else_the_first_retrys(monkeypatch):
    judge = Judge(JudgeConfig(base_url="http://127.0.0.1:9/v1", retry_base_s=0.25))
    paused: list[float] = []
    monkeypatch.setattr(judge._limiter, "backoff", paused.append)
    judge._refused(429, {"Retry-After": "2"})
    judge._refused(503, {"retry-after": "1"})
    judge._refused(429, {})
    judge._refused(503, {})  # no pause asked for: a 5xx is this call's own business
    judge._refused(429, {"Retry-After": "100000"})
    assert paused == [2.0, 1.0, 0.25, MAX_WAIT_S]


# -- (d) cancelling a waiting acquire -----------------------------------------------------------


def _waiting_acquire(limiter: RedisLimiter, cancel: threading.Event) -> tuple[threading.Thread, list]:
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(limiter.acquire(cancel)))
    thread.start()
    return thread, outcome


def test_cancelling_a_waiting_acquire_returns_false_promptly(redis_server):
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    limiter = RedisLimiter(endpoint, redis_server.url, 1)
    assert limiter.acquire()  # the only slot
    for pause in (False, True):  # waiting for a slot, then waiting out a backoff
        if pause:
            limiter.backoff(30)
        cancel = threading.Event()
        thread, outcome = _waiting_acquire(limiter, cancel)
        thread.join(0.7)
        assert thread.is_alive() and outcome == []  # still waiting
        cancel.set()
        limiter.wake()
        start = time.monotonic()
        thread.join(2)
        assert outcome == [False] and time.monotonic() - start < 0.2
        assert limiter.in_use == 1 and leases(redis_server.url, endpoint) == 1  # nothing taken
    # Even without wake(), a waiter looks at its cancel event at least every POLL_S.
    cancel = threading.Event()
    thread, outcome = _waiting_acquire(limiter, cancel)
    time.sleep(0.1)
    cancel.set()
    thread.join(judge_budget.POLL_S + 0.5)
    assert outcome == [False]
    limiter.release()
    assert limiter.in_use == 0 and leases_once_kept_ones_are_back(redis_server.url, endpoint) == 0


# -- one process: slots, capacity, keys ---------------------------------------------------------


def test_a_release_in_one_process_hands_the_slot_to_a_waiter_in_another(redis_server):
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    first, second = RedisLimiter(endpoint, redis_server.url, 2), RedisLimiter(endpoint, redis_server.url, 2)
    assert first.acquire() and second.acquire()
    cancel = threading.Event()
    thread, outcome = _waiting_acquire(second, cancel)
    thread.join(0.3)
    assert outcome == []
    start = time.monotonic()
    first.release()
    thread.join(2)
    assert outcome == [True] and time.monotonic() - start < 0.1  # announced, not found by polling
    assert leases(redis_server.url, endpoint) == 2
    second.release()
    second.release()
    second.release()  # one more than it holds: ignored
    assert leases_once_kept_ones_are_back(redis_server.url, endpoint) == 0


def test_slots_given_back_together_are_one_announcement_that_wakes_as_many_waiters_elsewhere(redis_server, monkeypatch):
    monkeypatch.setattr(judge_budget, "LINGER_S", 0.3)  # the three releases below are kept, then go back together
    monkeypatch.setattr(judge_budget, "TOGETHER_S", 0.1)  # (however slowly a busy machine runs the three)
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    first, second = RedisLimiter(endpoint, redis_server.url, 3), RedisLimiter(endpoint, redis_server.url, 3)
    announcements_delivered(second, redis_server.url)
    channel = redis.Redis.from_url(redis_server.url).pubsub(ignore_subscribe_messages=True)
    channel.subscribe(BudgetKeys.of(endpoint).wake)
    assert all(first.acquire() for _n in range(3))
    waiters = [_waiting_acquire(second, threading.Event()) for _n in range(3)]
    time.sleep(0.2)
    assert [outcome for _thread, outcome in waiters] == [[], [], []]
    for _n in range(3):
        first.release()  # no call of `first` waits: kept for its next call, LINGER_S
    for thread, _outcome in waiters:
        thread.join(judge_budget.LINGER_S + 2)
    assert [outcome for _thread, outcome in waiters] == [[True], [True], [True]]
    assert leases(redis_server.url, endpoint) == 3
    announced, deadline = [], time.monotonic() + 0.5
    while time.monotonic() < deadline:  # (None also for the confirmation of the subscription, which is skipped)
        if (message := channel.get_message(timeout=0.1)) is not None:
            announced.append(message["data"])
    assert announced == [b"release:3"]  # one round trip gave the three back
    for _n in range(3):
        second.release()
    assert leases_once_kept_ones_are_back(redis_server.url, endpoint) == 0


def test_a_slot_given_back_while_no_call_waits_is_kept_for_the_next_call_then_returned(redis_server, monkeypatch):
    monkeypatch.setattr(judge_budget, "LINGER_S", 0.5)
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    limiter = RedisLimiter(endpoint, redis_server.url, 2)
    announcements_delivered(limiter, redis_server.url)
    assert limiter.acquire()
    held = lease_ids(redis_server.url, endpoint)
    limiter.release()
    assert limiter.in_use == 0 and lease_ids(redis_server.url, endpoint) == held  # kept, still counted in Redis
    assert limiter.acquire() and lease_ids(redis_server.url, endpoint) == held  # the next call took it: no Redis
    limiter.release()
    start = time.monotonic()
    assert leases_once_kept_ones_are_back(redis_server.url, endpoint) == 0
    assert 0.3 <= time.monotonic() - start < 1.5  # back in Redis once its time was up (a busy machine is late)
    # A backoff sends a kept slot back at once: in a backoff every call asks Redis, which knows it.
    assert limiter.acquire()
    limiter.release()
    assert leases(redis_server.url, endpoint) == 1
    start = time.monotonic()
    limiter.backoff(0.2)
    assert leases_once_kept_ones_are_back(redis_server.url, endpoint) == 0 and time.monotonic() - start < 0.2


def lease_ids(redis_url: str, endpoint: str) -> set[bytes]:
    return set(redis.Redis.from_url(redis_url).zrange(BudgetKeys.of(endpoint).leases, 0, -1))


def inside_acquire(limiter: RedisLimiter, waiters: int = 1) -> None:
    """Wait until `waiters` threads are inside the limiter's acquire()."""
    deadline = time.monotonic() + 5
    while limiter._waiting < waiters:
        assert time.monotonic() < deadline, "the waiting thread did not start"
        time.sleep(0.005)


def announcements_delivered(limiter: RedisLimiter, redis_url: str) -> None:
    """Wait until the limiter has seen every announcement made so far on its wake channel (the limiters' own
    "capacity" ones reach it through a listener thread, and one seen late would send a slot back to Redis): a marker
    published now arrives after them (published again until seen: the thread may not be listening yet)."""
    seen: list[str] = []
    announced = limiter._announced

    def recorded(kind: str) -> None:
        seen.append(kind)
        announced(kind)

    limiter._announced = recorded  # type: ignore[method-assign]
    try:
        deadline = time.monotonic() + 5
        while "pause:0" not in seen:
            assert time.monotonic() < deadline, "the marker did not arrive"
            redis.Redis.from_url(redis_url).publish(limiter.keys.wake, "pause:0")  # changes nothing
            time.sleep(0.02)
    finally:
        del limiter._announced


def test_a_slot_goes_to_a_waiting_call_of_the_same_process_without_redis_for_a_bounded_time(redis_server,
                                                                                            monkeypatch):
    monkeypatch.setattr(judge_budget, "HOLD_S", 2.0)
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    mine, other = RedisLimiter(endpoint, redis_server.url, 1), RedisLimiter(endpoint, redis_server.url, 1)
    announcements_delivered(mine, redis_server.url)
    assert mine.acquire()
    taken = time.monotonic()
    held = lease_ids(redis_server.url, endpoint)
    theirs, their_outcome = _waiting_acquire(other, threading.Event())  # another process waits too
    inside_acquire(other)
    for _n in range(10):
        thread, outcome = _waiting_acquire(mine, threading.Event())
        inside_acquire(mine)
        mine.release()
        thread.join(2)
        assert outcome == [True] and mine.in_use == 1
        assert lease_ids(redis_server.url, endpoint) == held  # the same lease: Redis was not asked
    assert time.monotonic() - taken < judge_budget.HOLD_S, "the machine was too slow for this test's hand-overs"
    assert their_outcome == []
    # HOLD_S after it was taken: the next release goes back to Redis, where either waiter may take it with a new lease
    thread, outcome = _waiting_acquire(mine, threading.Event())
    inside_acquire(mine)
    time.sleep(max(0.0, taken + judge_budget.HOLD_S - time.monotonic()))
    mine.release()
    deadline = time.monotonic() + 2
    while not (outcome or their_outcome):
        assert time.monotonic() < deadline, "nobody got the slot back from Redis"
        time.sleep(0.005)
    assert len(lease_ids(redis_server.url, endpoint)) == 1 and lease_ids(redis_server.url, endpoint) != held
    (mine if outcome else other).release()  # the winner's: the other waiter gets it
    thread.join(2)
    theirs.join(2)
    assert outcome == [True] and their_outcome == [True]
    mine.release()
    other.release()
    assert leases_once_kept_ones_are_back(redis_server.url, endpoint) == 0


def test_a_backoff_of_another_process_stops_hand_overs(redis_server):
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    mine, other = RedisLimiter(endpoint, redis_server.url, 1), RedisLimiter(endpoint, redis_server.url, 1)
    assert mine.acquire()
    other.backoff(0.6)  # a 429 seen by the other process, announced to this one
    deadline = time.monotonic() + 2
    while mine._paused_until <= time.monotonic():
        assert time.monotonic() < deadline, "the backoff was not announced"
        time.sleep(0.01)
    thread, outcome = _waiting_acquire(mine, threading.Event())
    inside_acquire(mine)
    start = time.monotonic()
    mine.release()
    assert leases(redis_server.url, endpoint) == 0  # back in Redis, not handed over
    thread.join(3)
    assert outcome == [True] and time.monotonic() - start >= 0.3  # the waiter waited the backoff out
    mine.release()


def test_within_one_process_a_slot_is_passed_on_a_bounded_number_of_times_and_not_above_a_lowered_capacity():
    limiter = EndpointLimiter(2)
    assert limiter.acquire() and limiter.acquire()
    assert [limiter.pass_on() for _n in range(HANDOVERS + 1)] == [True] * HANDOVERS + [False]
    assert limiter.pass_on()  # the count starts again once a slot went back
    limiter.set_capacity(1)
    assert not limiter.pass_on()
    limiter.release()
    assert limiter.pass_on()


def test_a_lease_is_passed_on_within_a_process_for_hold_s_and_then_goes_back_to_redis(redis_server, monkeypatch):
    monkeypatch.setattr(judge_budget, "HOLD_S", 0.3)
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    limiter = RedisLimiter(endpoint, redis_server.url, 2)
    announcements_delivered(limiter, redis_server.url)
    assert limiter.acquire()
    held = lease_ids(redis_server.url, endpoint)
    assert all(limiter.pass_on() for _n in range(100))  # however many calls, within HOLD_S
    time.sleep(0.35)
    assert not limiter.pass_on()
    limiter.release()  # held HOLD_S: back to Redis, not kept for the next call
    assert leases(redis_server.url, endpoint) == 0
    assert limiter.acquire() and lease_ids(redis_server.url, endpoint) != held
    monkeypatch.setattr(judge_budget, "HOLD_S", 60.0)  # what follows is about the capacity and a backoff
    assert limiter.acquire() and limiter.pass_on()
    limiter.set_capacity(1)  # two held, one allowed
    assert not limiter.pass_on()
    limiter.release()
    limiter.release()
    announcements_delivered(limiter, redis_server.url)
    assert limiter.acquire()  # (the capacity change stopped hand-overs of the leases then held: a new one)
    limiter.backoff(0.3)
    assert not limiter.pass_on()
    time.sleep(0.35)
    assert limiter.pass_on()
    limiter.release()
    assert leases_once_kept_ones_are_back(redis_server.url, endpoint) == 0


def test_a_slot_handed_to_a_waiter_that_gives_up_goes_back_to_redis(redis_server):
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    limiter = RedisLimiter(endpoint, redis_server.url, 1)
    announcements_delivered(limiter, redis_server.url)
    assert limiter.acquire()
    cancel = threading.Event()
    thread, outcome = _waiting_acquire(limiter, cancel)
    inside_acquire(limiter)
    cancel.set()  # it gives up (no wake()) just as the slot is handed to it
    limiter.release()
    assert limiter._handed or outcome == [False]  # handed to it (unless it had already left)
    thread.join(2)
    assert outcome == [False] and limiter.in_use == 0 and not limiter._handed
    assert leases(redis_server.url, endpoint) == 0


def test_the_latest_capacity_wins_for_every_process(redis_server):
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    first = RedisLimiter(endpoint, redis_server.url, 1)
    second = RedisLimiter(endpoint, redis_server.url, 3)  # a later evaluation, as in another process
    assert [first.acquire() for _ in range(3)] == [True] * 3  # the first process follows the new setting
    cancel = threading.Event()
    cancel.set()
    assert not second.acquire(cancel)
    first.set_capacity(4)
    assert second.acquire()
    for _ in range(3):
        first.release()
    second.release()


def test_keys_are_namespaced_by_the_endpoint(redis_server):
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    limiter = RedisLimiter(endpoint + "/", redis_server.url, 2)
    assert limiter.acquire()
    limiter.backoff(30)  # long enough to be read back on a busy machine (the key is this test's alone)
    prefix = f"psb:judge:{hashlib.sha256(endpoint.encode()).hexdigest()}:"
    client = redis.Redis.from_url(redis_server.url)
    assert {k.decode() for k in client.keys(prefix + "*")} == {prefix + "leases", prefix + "capacity",
                                                               prefix + "until"}
    assert client.get(prefix + "capacity") == b"2"
    # Leases expire in Redis time: the sorted set itself goes away if nobody renews it.
    assert 0 < client.pttl(prefix + "leases") <= 2 * judge_budget.LEASE_S * 1000
    limiter.release()


def test_a_backoff_only_moves_later(redis_server):
    endpoint = f"http://budget-test-{uuid.uuid4().hex}/v1"
    limiter = RedisLimiter(endpoint, redis_server.url, 1)
    limiter.backoff(0.4)
    limiter.backoff(0.1)  # shorter: the 0.4 s stays
    start = time.monotonic()
    assert limiter.acquire()
    assert 0.35 <= time.monotonic() - start < 1.0
    limiter.release()


# -- configuration ------------------------------------------------------------------------------


def test_the_budget_url_comes_from_the_environment_only():
    env = {"JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}
    assert JudgeConfig.from_env(env).budget_url is None
    assert JudgeConfig.from_env({**env, "CELERY_BROKER_URL": "redis://broker:6379/0"}).budget_url == \
        "redis://broker:6379/0"
    assert JudgeConfig.from_env({**env, "CELERY_BROKER_URL": "amqp://guest@rabbit//"}).budget_url is None
    assert JudgeConfig.from_env({**env, "CELERY_BROKER_URL": "redis://broker/0",
                                 "JUDGE_REDIS_URL": "rediss://:pw@budget:6380/2"}).budget_url == \
        "rediss://:pw@budget:6380/2"
    with pytest.raises(ValueError, match="JUDGE_REDIS_URL") as info:
        JudgeConfig.from_env({**env, "JUDGE_REDIS_URL": "http://user:s3cret@budget"})
    assert "s3cret" not in str(info.value)
    config = JudgeConfig.from_env({**env, "JUDGE_REDIS_URL": "redis://:s3cret@budget/0"})
    assert "s3cret" not in repr(config) and "s3cret" not in json.dumps(config.public())
    # A request cannot choose where the budget lives.
    from pipeline import judge_requests  # here, not at the top: the worker processes import this module

    assert "budget_url" not in judge_requests.REQUEST_FIELDS
    with pytest.raises(judge_requests.RequestError, match="Unknown judge settings"):
        judge_requests.check_judges({"budget_url": "redis://elsewhere/0"}, None, env)


def test_endpoint_limiter_is_shared_through_redis_only_when_configured(redis_server, judge_server):
    local = endpoint_limiter(judge_server.url, 2)
    assert type(local) is EndpointLimiter
    with Judge(JudgeConfig(base_url=judge_server.url, concurrency=3, budget_url=redis_server.url)) as judge:
        assert isinstance(judge._limiter, RedisLimiter)
        assert endpoint_limiter(judge_server.url + "/", None, redis_server.url) is judge._limiter
        assert judge._limiter.capacity == 3 and endpoint_limiter(judge_server.url) is local and local.capacity == 2


def test_an_unreachable_redis_fails_the_acquire_after_a_while(monkeypatch):
    from tests.services import free_port

    monkeypatch.setattr(judge_budget, "UNREACHABLE_RETRY_S", 0.1)
    monkeypatch.setattr(judge_budget, "UNREACHABLE_GIVE_UP_S", 0.5)
    url = f"redis://:s3cret@127.0.0.1:{free_port()}/0"  # nobody listens there
    limiter = RedisLimiter(f"http://budget-test-{uuid.uuid4().hex}/v1", url, 2)  # storing the capacity just logs
    limiter.backoff(1.0)  # so does sharing a backoff
    limiter.release()  # and giving back a slot it does not hold is nothing
    start = time.monotonic()
    with pytest.raises(judge_budget.BudgetUnavailable, match="unreachable") as info:
        limiter.acquire(threading.Event())
    assert 0.5 <= time.monotonic() - start < 3 and "s3cret" not in str(info.value)

"""The LLM judge engine: Judge runs the calls (bounded concurrency, retries, cache use); test_connection.

Knows nothing about Flask, nor about any benchmark kind's prompts: a kind asks for a judgment with a
`Prompt` (the chat messages, the parser of the answer and a prompt version) built by its own prompts
module (kinds/dialogue/prompts.py, kinds/conversation/prompts.py), and gets a `Verdict`.

One judgment is one chat completion, POSTed by judge.http.ChatClient on an event loop that `Judge.run` drives
(one thread, hundreds of calls in flight; judge/http.py says why not through the SDK's request pipeline), which
raises the openai SDK's exception types. `Judge` retries
timeouts, connection errors, 408/409/429 and 5xx itself with exponential backoff and full jitter,
honouring Retry-After, so that it can count attempts and so that a call waiting to be retried does not
hold one of the endpoint's concurrency slots. All `Judge`s of one process that call the same endpoint
share one budget of calls in flight (`endpoint_limiter`); with a Redis URL configured (`budget_url`) the
budget, and the backoff after a 429, are shared by every process of the deployment (judge/budget.py).
Answers that parse are cached under a key over the endpoint, the model, the messages, the sampling
settings and the prompt's version.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import math
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from common.lazy_modules import lazy
from judge.breaker import Breaker, EndpointDown
from judge.cache import CachedAnswers
from judge.config import DEFAULT_BASE_URL, PLACEHOLDER_API_KEY, JudgeConfig
from judge.limiter import EndpointLimiter, endpoint_limiter
from judge.prompt import Prompt, Verdict, answer_text, duplicate_verdict, request_body, verdict_from_response
from judge.retry import MAX_WAIT_S, backoff_s, describe_error, is_retryable, retry_after_s
from translations import ngettext

httpx2 = lazy("httpx2")  # the openai SDK's HTTP client
if TYPE_CHECKING:
    import openai

    from judge.http import ChatClient
else:
    openai = lazy("openai")


LOOKAHEAD = 256  # requests whose cache entries run() reads in one query
_STOP_POLL_S = 0.1  # how often run() checks should_stop() while it waits for calls
KEEP_EVERY_S = 0.005  # at most one cache write per this long in a run (sooner when every judgment left waits on it)
# run() takes finished judgments in waves this long (shorter when the last of them ends): each hand-over between the
# loop and run() costs CPU, and no call waits for one (places are given back on the loop, where the tasks waiting for
# them are).
WAVE_S = 0.005
# A thread that keeps its connections (keep_connections) reuses them in a run that starts within this long of its
# last run's end; after that they may have been closed by the server's keep-alive timeout (5 s in uvicorn and Node).
KEEP_CONNECTIONS_S = 1.0
RELEASE_S = 5.0  # the longest a kept client's connections are waited for when it is closed
CONNECTION_PROMPT = "Reply with the word OK."
CONNECTION_MAX_TOKENS = 16


def make_client(endpoint: str, config: JudgeConfig, connections: int) -> openai.OpenAI:
    """An SDK client without the SDK's own retries (the connection test and the Batch API use it)."""
    return openai.OpenAI(
        base_url=endpoint,
        api_key=config.api_key or PLACEHOLDER_API_KEY,
        timeout=config.timeout_s,
        max_retries=0,
        http_client=openai.DefaultHttpxClient(
            limits=httpx2.Limits(max_connections=max(100, connections),
                                 max_keepalive_connections=max(20, connections)),
        ),
    )


class Judge(CachedAnswers):
    """Calls the judge model; `cache` is any object with get(key) -> dict | None and put(key, value) (and, to read
    and write many keys in one query, get_many(keys) and put_many({key: value})).

    `sleep(seconds)` and `rng` (anything with uniform(a, b)) replace the backoff's waiting and jitter
    in tests; by default a wait ends early when the run it belongs to is stopped. With a `breaker` (judge/breaker.py,
    one per run and endpoint, so that the Judges of one run's blocks share it) calls go one at a time until the
    endpoint has answered once, and once the breaker opens run() asks nothing more and raises EndpointDown.
    """

    def __init__(self, config: JudgeConfig, cache: Any = None, *, sleep: Callable[[float], None] | None = None,
                 rng: Any = None, breaker: Breaker | None = None) -> None:
        problem = config.problem()
        if problem:
            raise ValueError(problem)
        super().__init__(config, cache)
        # Items beyond the endpoint's budget wait for a slot or sleep in backoff without holding one.
        self.workers = 2 * config.concurrency + 4
        self._limiter = endpoint_limiter(self.endpoint, config.concurrency, config.budget_url)
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        self.breaker = breaker

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _reads_ahead(self) -> bool:
        """Whether run() reads the cache LOOKAHEAD requests at a time (a cache with get_many, in use)."""
        return self.cache is not None and self.config.use_cache and hasattr(self.cache, "get_many")

    def _keyed(self, items: Iterable[tuple[object, Prompt]],
               answered: dict[str, Verdict]) -> Iterator[tuple[object, Prompt, str, dict | None | Literal[False]]]:
        """(tag, prompt, cache key, cache entry) per item. With a cache that has get_many, its entries are read
        LOOKAHEAD items at a time in one query (one query per item costs more than the rest of a cached judgment),
        and `answered`, the answers this run got since the previous read, is emptied at each read, which sees them.
        Otherwise the entry is False: read it when the item comes."""
        source = iter(items)
        ahead = self._reads_ahead()
        while chunk := list(itertools.islice(source, LOOKAHEAD if ahead else 1)):
            keyed = [(tag, prompt, self.cache_key(prompt)) for tag, prompt in chunk]
            hits = self.cache.get_many([key for _tag, _prompt, key in keyed]) if ahead else {}
            answered.clear()
            for tag, prompt, key in keyed:
                yield tag, prompt, key, hits.get(key) if ahead else False

    def _retry_wait(self, exc: BaseException, retry: int) -> float:
        """Seconds to wait before retry number `retry` (0-based): what the server asked for, else backoff."""
        headers = exc.response.headers if isinstance(exc, openai.APIStatusError) else None
        asked = retry_after_s(headers)
        if asked is None:
            asked = backoff_s(retry, self.config.retry_base_s, self.config.retry_max_s, self._rng)
        return min(asked, MAX_WAIT_S)

    def _report_pause(self, exc: BaseException, wait: float | None) -> None:
        """Tell the limiter that the endpoint asked every caller to slow down (a 429, or any Retry-After).

        `wait` is this call's own wait before its retry (None when it is not retried): the shared pause
        lasts what the server asked for, else (a 429 without Retry-After) that wait.
        """
        if isinstance(exc, openai.APIStatusError):
            self._pause(exc.status_code, exc.response.headers, wait)

    def _refused(self, status: int, headers: Mapping[str, str]) -> None:
        """Pause the shared budget for a 429 (or any Retry-After) the moment it arrives, before the SDK's exception
        for it exists: for what the server asked, else retry_base_s (_report_pause then sets the call's own wait)."""
        self._pause(status, headers, self.config.retry_base_s)

    def _pause(self, status: int, headers: Mapping[str, str], wait: float | None) -> None:
        """The limiter's pause for an answer of `status` with `headers`: what it asked for, else (a 429) `wait`."""
        asked = retry_after_s(headers)
        if asked is None and status != 429:
            return
        seconds = min(asked, MAX_WAIT_S) if asked is not None else wait
        if seconds:
            self._limiter.backoff(seconds)

    def _failure(self, exc: BaseException, attempts: int) -> Verdict:
        """A failed verdict whose error says why and after how many attempts."""
        c = self.config
        reason = describe_error(exc, self.endpoint, c.api_key, c.timeout_s)
        if is_retryable(exc):
            error = ngettext("%(reason)s (gave up after %(num)d attempt)",
                             "%(reason)s (gave up after %(num)d attempts)", attempts, reason=reason)
        else:
            error = ngettext("%(reason)s (%(num)d attempt; this error is not retried)",
                             "%(reason)s (%(num)d attempts; this error is not retried)", attempts, reason=reason)
        return Verdict("failed", error=error, attempts=attempts, retryable=is_retryable(exc))

    def judge(self, prompt: Prompt) -> Verdict:
        """One judgment: the cache first (unless use_cache is off), else calls with retries."""
        return next(verdict for _tag, verdict in self.run([(None, prompt)]))

    def run(
        self,
        items: Iterable[tuple[object, Prompt]],
        should_stop: Callable[[], bool] = lambda: False,
    ) -> Iterator[tuple[object, Verdict]]:
        """Judge (tag, Prompt) items concurrently; yield (tag, verdict) as they complete.

        The calls run on an event loop of this thread, which runs while run() waits for answers: calls in
        flight are bounded by the endpoint's limiter (config.concurrency, shared with every Judge of the
        process on that endpoint, or of the deployment with a Redis budget), whose slot is held for the HTTP
        call only. Answers are cached before they are yielded, together (at most one write every KEEP_EVERY_S);
        at most config.concurrency of this run's calls are ever in flight or answered and not yet cached, so a
        process killed mid-run pays again for no more than that. Up to `self.workers` items are pending at
        once (in a call, waiting for a slot or waiting to retry) and `items` is pulled only when fewer are (up
        to LOOKAHEAD items ahead with a cache that reads many keys at once, see _keyed). Identical requests
        pending at the same time share one call. The cache is read and written on the calling thread only, so
        it need not be thread-safe. Once should_stop() is true no item is pulled and no call starts: calls in
        flight finish and are yielded, while items waiting for a slot or a retry are dropped without a
        verdict, so they stay pending for the next run. The same when the breaker opens, whose failures are the
        endpoint's and not the judgments': those are dropped too, and run() then raises EndpointDown.
        """
        answered: dict[str, Verdict] = {}  # parsed answers since the last look-ahead read of the cache
        source = self._keyed(items, answered)
        calls = _Calls(self)
        pending: dict[asyncio.Task, tuple[str, list[object]]] = {}
        by_key: dict[str, asyncio.Task] = {}
        exhausted = False

        def stopping() -> bool:
            if not calls.stop.is_set() and should_stop():
                calls.halt()
            return calls.stop.is_set()

        try:
            ready: list[tuple[object, Verdict]] = []
            while True:
                while not exhausted and len(pending) < self.workers and not stopping():
                    try:
                        tag, prompt, key, hit = next(source)
                    except StopIteration:
                        exhausted = True
                        break
                    if key in by_key:
                        pending[by_key[key]][1].append(tag)
                    elif key in answered:  # answered by this run after its chunk's cache read
                        yield tag, duplicate_verdict(answered[key])
                    elif (cached := self.lookup(prompt, key, hit)) is not None:
                        yield tag, cached
                    else:
                        task = calls.start(prompt, key)
                        pending[task] = (key, [tag])
                        by_key[key] = task
                yield from ready
                ready = []
                if not pending:
                    break
                for task in calls.wait(stopping):
                    key, tags = pending.pop(task)
                    del by_key[key]
                    verdict = None if task.cancelled() else task.result()
                    if verdict is None:
                        continue  # dropped after should_stop()
                    if verdict.status == "ok" and self._reads_ahead():
                        answered[key] = verdict
                    ready.append((tags[0], verdict))
                    ready.extend((tag, duplicate_verdict(verdict)) for tag in tags[1:])
        finally:
            calls.close()
        if self.breaker is not None and self.breaker.reason is not None:
            raise EndpointDown(self.breaker.reason)

    def close(self) -> None:
        """Nothing to release: each run() opens and closes its own connections (or keeps them for the thread's next
        run, see keep_connections)."""


class _Kept(threading.local):
    """The event loop and HTTP client of this thread's last run, for its next one (keep_connections)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Keep nothing."""
        self.on = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.client: ChatClient | None = None
        self.opening: tuple = ()  # what the client was opened with (_Calls.start)
        self.ended = -math.inf  # when the last run let go of the client (time.monotonic())


_kept = _Kept()


def keep_connections() -> None:
    """From now on, each run of this thread leaves its event loop and connections open for the next run of the thread,
    which reuses them when it calls the same endpoint with the same key within KEEP_CONNECTIONS_S. For a thread that
    runs block after block for its whole life (a Celery worker's process): a block of 200 judgments would otherwise
    connect again to the judge, 64 connections: about a fifth of a worker's judgments per second with a judge
    answering at once."""
    _kept.on = True


def load_client() -> None:
    """Load the judge's HTTP client (aiohttp) now rather than at a run's first call: in a process that is there to
    judge, before it forks the processes that will (they inherit it instead of each loading it for its first call)."""
    import judge.http  # noqa: F401


def release_connections() -> None:
    """Close the connections and the event loop this thread's runs kept, and keep none any more (waiting at most
    RELEASE_S for the connections to close: a process on its way out never waits on a peer)."""
    loop, client = _kept.loop, _kept.client
    _kept.reset()
    if loop is not None:
        if client is not None:
            _close_kept(loop, client)
        loop.close()


def _close_kept(loop: asyncio.AbstractEventLoop, client: ChatClient) -> None:
    """Close a kept client on its loop, waiting RELEASE_S at most for its connections to close."""
    with contextlib.suppress(TimeoutError):
        loop.run_until_complete(asyncio.wait_for(client.close(), RELEASE_S))


def _settle(future: asyncio.Future) -> None:
    """Resolve a future with None unless it already is (a judgment's end may have come first)."""
    if not future.done():
        future.set_result(None)


class _Calls:
    """The calls of one Judge.run(): its event loop, HTTP client and stop event.

    `room` bounds this run's calls in flight plus its answers not cached yet (config.concurrency): a call takes a
    place before it takes a slot of the endpoint's limiter, gives the slot back when its HTTP call ends, and its
    place once its answer is cached. Answers are cached together, at most every KEEP_EVERY_S, on the loop (so on
    the thread that runs run()), and a judgment is finished only once its answer is kept.

    A slot a call gives back goes to the next call of the run that waits for one, on the loop, as far as the
    limiter lets it be passed on (pass_on); while calls wait, one acquire() of the limiter at a time runs on a
    thread. With a judge answering at once, a thread per slot (and, with a Redis budget, Redis for most) cost a
    Celery worker about a fifth of its judgments per second.
    """

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.stop = threading.Event()
        self.loop = (_kept.loop if _kept.on else None) or asyncio.new_event_loop()
        if _kept.on:
            _kept.loop = self.loop
        self.client: ChatClient | None = None  # opened for the first call: a run answered from the cache makes none
        self._opening: tuple = ()  # what the client was opened with: endpoint, key, timeout, connections
        self.room = asyncio.Semaphore(judge.config.concurrency)
        self.probe = asyncio.Lock()  # one call at a time until the endpoint has answered (judge.breaker)
        self.paid: set[asyncio.Task] = set()  # tasks whose call has started: a halt lets them finish
        self.tasks: set[asyncio.Task] = set()
        self.finished: list[asyncio.Task] = []
        self._arrived: asyncio.Future | None = None  # settled when a judgment ends
        self._wave: asyncio.Future | None = None  # settled when the last one in flight ends
        self._unkept: list[tuple[str, Verdict]] = []  # answers waiting for the next cache write
        self._kept: asyncio.Future | None = None  # done when they are written
        self._next_write: asyncio.TimerHandle | None = None  # the write they wait for
        self._last_write = -math.inf
        self._waiter: ThreadPoolExecutor | None = None  # waits for the limiter when no slot is free at once
        self._asking = False  # the waiter thread is in the limiter's acquire()
        self._queued: collections.deque[asyncio.Future] = collections.deque()  # calls waiting for a slot, in order

    def start(self, prompt: Prompt, key: str) -> asyncio.Task:
        """Schedule the judgment of one prompt (it starts when the loop runs)."""
        if self.client is None:
            from judge.http import ChatClient  # aiohttp, when a judge first calls; the SDK when a call fails

            c = self.judge.config
            self._opening = (self.judge.endpoint, c.api_key or PLACEHOLDER_API_KEY, c.timeout_s, self.judge.workers)
            self.client = self._kept_client() or self.loop.run_until_complete(ChatClient.open(*self._opening))
            # A 429 pauses every process of a shared budget: told as it arrives, not after the SDK's import
            self.client.refused = self.judge._refused if c.budget_url else None
        task = self.loop.create_task(self._judge(prompt, key))
        self.tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _kept_client(self) -> ChatClient | None:
        """The client this thread's last run kept, when it opened to the same endpoint, with the same key, settings
        and connections, and ended less than KEEP_CONNECTIONS_S ago; else None (and that client is closed, within
        RELEASE_S)."""
        if _kept.client is None:  # (always, where the thread keeps nothing)
            return None
        client, _kept.client = _kept.client, None
        if _kept.opening == self._opening and time.monotonic() - _kept.ended < KEEP_CONNECTIONS_S:
            self.loop.run_until_complete(asyncio.sleep(0))  # connections the server closed meanwhile are seen closed
            return client
        _close_kept(self.loop, client)
        return None

    def _done(self, task: asyncio.Task) -> None:
        self.tasks.discard(task)
        self.paid.discard(task)
        self.finished.append(task)
        if not task.cancelled():
            # Seen: run() raises the first failure (a cache write with the database down fails every judgment
            # waiting on it), and asyncio would log each other one when its task is collected, on any thread, later.
            task.exception()
        if self._arrived is not None:
            _settle(self._arrived)
        if self._wave is not None and not self.tasks:
            _settle(self._wave)

    def wait(self, stopping: Callable[[], bool]) -> list[asyncio.Task]:
        """Run the loop until some judgments have finished (checking should_stop() first and every _STOP_POLL_S);
        those."""
        stopping()
        while not self.finished:
            self._arrived = self.loop.create_future()
            self._run_until(self._arrived, _STOP_POLL_S)
            self._arrived = None
            if not self.finished:
                stopping()
        if self.tasks:  # others may end within the wave: one hand-over to run() for all of them
            self._wave = self.loop.create_future()
            self._run_until(self._wave, WAVE_S)
            self._wave = None
        finished, self.finished = self.finished, []
        return finished

    def _run_until(self, future: asyncio.Future, seconds: float) -> None:
        """Run the loop until the future is settled, for `seconds` at most."""
        timer = self.loop.call_later(seconds, _settle, future)
        try:
            self.loop.run_until_complete(future)
        finally:
            timer.cancel()

    async def _judge(self, prompt: Prompt, key: str) -> Verdict | None:
        """Attempts until an answer, a final failure or max_retries retries; None when the run stops first."""
        judge, task, client = self.judge, asyncio.current_task(), self.client
        assert task is not None and client is not None  # every judgment runs as a task of the loop (_Calls.start)
        body = request_body(judge.config, prompt)
        attempts = 0
        while True:
            probing = await self._probing()
            try:
                async with self.room:
                    if self.stop.is_set() or not await self._slot():
                        return None
                    attempts += 1
                    self.paid.add(task)
                    error, started = None, time.monotonic()
                    try:
                        verdict = verdict_from_response(prompt.parse, await client.complete(body), attempts)
                    except Exception as exc:  # noqa: BLE001 - every failure becomes a retry or a "failed" verdict
                        error = exc
                    finally:
                        self._free_slot()
                    self._tell_breaker(error)
                    latency_ms = round(1000 * (time.monotonic() - started))
                    if error is None:
                        verdict.latency_ms = latency_ms
                        if verdict.status == "ok" and judge.cache is not None:
                            await self._keep(key, verdict)
                        return verdict
            finally:
                if probing:
                    self.probe.release()
            self.paid.discard(task)
            if judge.breaker is not None and judge.breaker.open:
                return None  # the endpoint's failure, not this judgment's: it stays pending
            if not is_retryable(error) or attempts > judge.config.max_retries:
                judge._report_pause(error, None)
                return replace(judge._failure(error, attempts), latency_ms=latency_ms)
            if self.stop.is_set():
                return None
            wait = judge._retry_wait(error, attempts - 1)
            judge._report_pause(error, wait)
            if judge._sleep is not None:
                judge._sleep(wait)
            else:
                await asyncio.sleep(wait)  # cancelled by halt()

    async def _probing(self) -> bool:
        """Wait for the probe's turn while the run's breaker has not seen the endpoint answer; whether this call is
        the probe (it holds the turn until its answer, then gives it back)."""
        breaker = self.judge.breaker
        if breaker is None or breaker.reached:
            return False
        await self.probe.acquire()
        if breaker.reached:  # the call before this one was answered: no more probing
            self.probe.release()
            return False
        return True

    def _tell_breaker(self, error: BaseException | None) -> None:
        """Count a call's outcome in the run's breaker; once it opens, nothing more is asked (halt)."""
        breaker = self.judge.breaker
        if breaker is None:
            return
        breaker.record(error)
        if breaker.open and not self.stop.is_set():
            self.halt()

    async def _slot(self) -> bool:
        """A slot of the endpoint's limiter: at once when one is free, else from a call of this run that ends, or
        from the limiter, waited for on a thread (it blocks); False once the run stops."""
        if isinstance(self.judge._limiter, EndpointLimiter) and self.judge._limiter.try_acquire():
            return True
        handed = self.loop.create_future()
        self._queued.append(handed)
        self._ask()
        try:
            return await handed
        except asyncio.CancelledError:
            if handed.done() and not handed.cancelled() and handed.result():
                self._free_slot()  # handed over as this call was cancelled
            raise

    def _next_waiting(self) -> asyncio.Future | None:
        while self._queued and self._queued[0].done():  # cancelled while waiting
            self._queued.popleft()
        return self._queued[0] if self._queued else None

    def _free_slot(self) -> None:
        """A call's slot: to the next call of this run that waits for one, when the limiter lets it be passed on
        (HANDOVERS times in a row, or for HOLD_S with the Redis budget; no backoff, capacity not lowered), else
        back to it."""
        if self._next_waiting() is not None and not self.stop.is_set() and self.judge._limiter.pass_on():
            self._queued.popleft().set_result(True)
        else:
            self.judge._limiter.release()

    def _ask(self) -> None:
        """While calls of this run wait for a slot, keep one acquire() of the limiter going on the waiter thread."""
        if self._asking or self._next_waiting() is None:
            return
        if self._waiter is None:
            self._waiter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-slot")
        self._asking = True
        limiter, loop = self.judge._limiter, self.loop

        def acquired(future: Future) -> None:  # on the waiter thread
            got = not future.cancelled() and future.exception() is None and future.result()
            try:
                loop.call_soon_threadsafe(self._acquired, future)
            except RuntimeError:  # the loop is closed: no call waits any more
                if got:
                    limiter.release()

        self._waiter.submit(limiter.acquire, self.stop).add_done_callback(acquired)

    def _acquired(self, future: Future) -> None:
        """The waiter thread's acquire() ended: its slot to the first call still waiting (back to the limiter when
        none waits or the run stops), its error to every call waiting; then ask again while calls wait."""
        self._asking = False
        error = None if future.cancelled() else future.exception()
        if error is None and not future.cancelled() and future.result():
            if self.stop.is_set() or self._next_waiting() is None:
                self.judge._limiter.release()
            else:
                self._queued.popleft().set_result(True)
        if error is None and not self.stop.is_set():
            self._ask()
            return
        while self._next_waiting() is not None:
            if error is None:
                self._queued.popleft().set_result(False)
            else:
                self._queued.popleft().set_exception(error)

    async def _keep(self, key: str, verdict: Verdict) -> None:
        """Cache an answer with the others that arrive before the next write (at most one write per KEEP_EVERY_S,
        since each is a database transaction; at once when every judgment left in the run waits on it, as the last
        ones of a run do, since none would join it)."""
        if self._kept is None:
            self._kept = self.loop.create_future()
            self._next_write = self.loop.call_at(max(self.loop.time(), self._last_write + KEEP_EVERY_S), self._write)
        kept = self._kept
        self._unkept.append((key, verdict))
        if len(self._unkept) >= len(self.tasks):
            self._write()
        await asyncio.shield(kept)

    def _write(self) -> None:
        """Write the answers waiting to be kept; their judgments then finish (or raise the write's error)."""
        batch, kept = self._unkept, self._kept
        self._unkept, self._kept = [], None
        if self._next_write is not None:
            self._next_write.cancel()
        self._last_write = self.loop.time()
        try:
            self.judge.store(batch)
        except Exception as exc:  # noqa: BLE001 - the run raises it from the judgments that waited
            if kept is not None:
                kept.set_exception(exc)
            return
        if kept is not None:
            kept.set_result(None)

    def halt(self) -> None:
        """Stop: no call starts any more; judgments whose call has not started (waiting for a place, a slot or a
        retry) are dropped, calls in flight finish."""
        self.stop.set()
        self.judge._limiter.wake()
        for task in list(self.tasks):
            if task not in self.paid:
                task.cancel()

    def close(self) -> None:
        """Halt, keep the answers that arrived, then close the connections and the loop."""
        self.halt()
        try:
            if self.tasks:
                for task in self.tasks:
                    task.cancel()  # the consumer left: nobody will read these answers
                self.loop.run_until_complete(asyncio.wait(list(self.tasks)))
            if self._unkept:
                self._write()
            if self.client is not None and _kept.on and _kept.client is None:  # (a run within a run closes its own)
                _kept.client, _kept.opening, _kept.ended = self.client, self._opening, time.monotonic()
            elif self.client is not None:
                self.loop.run_until_complete(self.client.close())
        finally:
            if self._waiter is not None:
                self._waiter.shutdown(wait=True, cancel_futures=True)
                self.loop.run_until_complete(asyncio.sleep(0))  # the last acquire's slot, if any: to the limiter
            if not _kept.on:
                self.loop.close()


def test_connection(config: JudgeConfig) -> dict:
    """One tiny real chat completion (no retries, no cache): {ok, model, answer, latency_s, error}."""
    result: dict[str, Any] = {"ok": False, "model": config.model, "answer": "", "latency_s": 0.0,
                              "error": config.problem()}
    if result["error"]:
        return result
    endpoint = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
    client = make_client(endpoint, config, 1)
    start = time.perf_counter()
    try:
        response = client.chat.completions.create(
            model=config.model, messages=[{"role": "user", "content": CONNECTION_PROMPT}],
            temperature=config.temperature, max_tokens=CONNECTION_MAX_TOKENS,
        )
    except Exception as exc:  # noqa: BLE001 - the reason is the result
        result["error"] = describe_error(exc, endpoint, config.api_key, config.timeout_s)
    else:
        result.update(ok=True, model=getattr(response, "model", None) or config.model,
                      answer=answer_text(response.model_dump())[:200])
    finally:
        result["latency_s"] = round(time.perf_counter() - start, 3)
        client.close()
    return result


test_connection.__test__ = False  # type: ignore[attr-defined]  # a helper, not a pytest test

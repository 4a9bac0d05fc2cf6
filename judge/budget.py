"""A deployment-wide budget of judge calls in flight per endpoint, kept in Redis.

`judge.endpoint_limiter` hands out a `RedisLimiter` instead of the in-process `EndpointLimiter` when a
Redis URL is configured (`JudgeConfig.budget_url`: JUDGE_REDIS_URL, else a redis:// CELERY_BROKER_URL). Then
`JUDGE_CONCURRENCY` bounds the calls in flight to one endpoint over every process and machine that uses
that Redis, and a 429 (or a Retry-After) seen by one process pauses them all.

Per endpoint, under `psb:judge:<sha256 of the endpoint URL>:`:

- `leases`: a sorted set of lease ids scored by their expiry (Redis server time, ms). A slot is taken by
  a Lua script that first drops expired leases, then adds one if fewer than the capacity remain; so a
  process killed with kill -9 gives its slots back once their leases expire (`LEASE_S`). While a
  process holds a slot, a thread of that process renews its lease every `LEASE_S / 3`, however long the
  call (or the storing of its answer) takes.
- `capacity`: the number of slots, written by every new Judge (the most recently started evaluation's
  setting wins, as within one process).
- `until`: "no call before this time" (server time, ms), set by `backoff(seconds)`; every acquire waits
  until it has passed. It only ever moves later.
- `wake`: a pub/sub channel on which a release, a capacity change or a backoff is announced, so that
  waiters try again at once instead of polling; they still ask again every `POLL_S` (with jitter) at most,
  which is how slots of expired leases (nobody announces those) are found.

A slot given back while another call of the same process waits is handed to that call without Redis (its
lease goes on being renewed); given back while none waits, it stays with the process for `LINGER_S`, for the
process's next call, and then goes back to Redis. A run may also pass a slot from one of its calls to the next
itself (`pass_on`, judge/engine.py). A lease goes from one call to the next in any of these ways for `HOLD_S`
after it was taken from Redis: then it goes back, where another process's waiter may take it (a judge that takes a
second or more to answer: after each call). A backoff (announced to every process) or a capacity change stops
hand-overs: the slot goes back, and the next acquire asks Redis, which knows both. With a judge answering in
milliseconds, the two round trips per call otherwise cost one Celery worker half its judgments per second.

All times come from Redis (`TIME` in the scripts), so the machines' clocks need not agree.
"""
from __future__ import annotations

import atexit
import hashlib
import logging
import math
import os
import random
import socket
import threading
import time
import uuid
import weakref
from dataclasses import dataclass

import redis

from judge.retry import safe_url

log = logging.getLogger(__name__)

KEY_PREFIX = "psb:judge:"
# Schemes accepted for a budget URL (redis-py's): plain, TLS, a Unix socket.
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
# A lease not renewed for this long is given back: the bound on how long a killed process keeps its slots.
LEASE_S = 15.0
# Longest a waiter goes without asking Redis again when no release is announced.
POLL_S = 0.5
# Wait between attempts while Redis cannot be reached, and how long an acquire keeps trying before it fails.
UNREACHABLE_RETRY_S = 1.0
UNREACHABLE_GIVE_UP_S = 30.0
# How long a lease may go from call to call within the process after it was taken from Redis, before it goes back
# there for any process to take (a time, not a number of calls: as fair to other processes with a slow judge as with
# a fast one, and a fast judge's calls do not pay Redis every few calls).
HOLD_S = 1.0
# How long a slot given back while no call of the process waits is kept for the process's next call (long enough
# for a Celery worker's next block of the same run to start: its calls then take the slots without Redis).
LINGER_S = 0.05
# Kept slots whose time is up within this long of each other go back to Redis together, in one round trip (a run's
# last calls end within a few milliseconds: one announcement for all of their slots, not one each).
TOGETHER_S = 0.002

_ACQUIRE = """
-- KEYS: leases, capacity, until. ARGV: lease id, lease ms, capacity when none is stored.
-- Returns {1, 0, capacity} with a slot, {0, ms until the earliest lease expires, capacity} when full, {2, ms left}
-- in a backoff.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local not_before = tonumber(redis.call('GET', KEYS[3]) or '0')
if not_before > now then
  return {2, not_before - now}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local capacity = tonumber(redis.call('GET', KEYS[2]) or ARGV[3])
local lease_ms = tonumber(ARGV[2])
if redis.call('ZCARD', KEYS[1]) < capacity then
  redis.call('ZADD', KEYS[1], string.format('%d', now + lease_ms), ARGV[1])
  if redis.call('PTTL', KEYS[1]) < 2 * lease_ms then
    redis.call('PEXPIRE', KEYS[1], string.format('%d', 2 * lease_ms))
  end
  return {1, 0, capacity}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then
  return {0, math.max(0, tonumber(first[2]) - now), capacity}
end
return {0, -1, capacity}
"""

_RENEW = """
-- KEYS: leases. ARGV: lease ms, then lease ids. Pushes back the expiry of those still present; returns how many.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_ms = tonumber(ARGV[1])
local renewed = 0
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], string.format('%d', now + lease_ms), ARGV[i])
    renewed = renewed + 1
  end
end
if renewed > 0 and redis.call('PTTL', KEYS[1]) < 2 * lease_ms then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', 2 * lease_ms))
end
return renewed
"""

_BACKOFF = """
-- KEYS: until. ARGV: ms. No call before now + ms (a later time already set stays); returns the ms left.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ms = tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if now + ms > current then
  redis.call('SET', KEYS[1], string.format('%d', now + ms), 'PX', string.format('%d', ms))
  return ms
end
return current - now
"""


class BudgetUnavailable(RuntimeError):
    """Redis could not be reached for longer than UNREACHABLE_GIVE_UP_S while waiting for a slot."""


def is_redis_url(url: str | None) -> bool:
    """Whether url is one redis-py connects to (redis://, rediss://, unix://)."""
    return bool(url and url.strip().lower().startswith(REDIS_SCHEMES))


@dataclass(frozen=True)
class BudgetKeys:
    """The Redis keys of one endpoint's budget."""

    leases: str
    capacity: str
    until: str
    wake: str

    @classmethod
    def of(cls, endpoint: str) -> BudgetKeys:
        digest = hashlib.sha256(endpoint.rstrip("/").encode("utf-8")).hexdigest()
        prefix = f"{KEY_PREFIX}{digest}:"
        return cls(prefix + "leases", prefix + "capacity", prefix + "until", prefix + "wake")


class _Hub:
    """What the limiters of one process share per Redis URL: the client, its scripts, one pub/sub listener
    that wakes waiters when a slot is announced, and one thread renewing the leases the process holds."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5,
                                           health_check_interval=30)
        self.acquire = self.client.register_script(_ACQUIRE)
        self.renew = self.client.register_script(_RENEW)
        self.backoff = self.client.register_script(_BACKOFF)
        self._lock = threading.Lock()
        self._limiters: weakref.WeakSet[RedisLimiter] = weakref.WeakSet()
        self._started = False
        self._added = threading.Event()  # a limiter came: its lease may be shorter than the others'
        self.lingered = threading.Event()  # a limiter keeps a slot given back: to Redis once its time is up

    def add(self, limiter: RedisLimiter) -> None:
        with self._lock:
            self._limiters.add(limiter)
            self._added.set()
            if not self._started:
                self._started = True
                for target, name in ((self._listen, "judge-budget-wake"), (self._renew_all, "judge-budget-renew"),
                                     (self._give_back_due, "judge-budget-linger")):
                    threading.Thread(target=target, name=name, daemon=True).start()
                atexit.register(self._return_all)

    def _live(self) -> list[RedisLimiter]:
        with self._lock:
            return list(self._limiters)

    def _listen(self) -> None:
        """Forward announcements on every endpoint's wake channel to this process's limiters of that endpoint."""
        pattern = f"{KEY_PREFIX}*:wake"
        reported = False  # a loss was logged
        while True:
            pubsub = None
            try:
                pubsub = self.client.pubsub(ignore_subscribe_messages=True)
                pubsub.psubscribe(pattern)
                if reported:
                    log.warning("judge budget: the wake-up channel of %s is back", safe_url(self.url))
                    reported = False
                while True:
                    message = pubsub.get_message(timeout=1.0)
                    if not message or message.get("type") != "pmessage":
                        continue
                    channel = message["channel"]
                    channel = channel.decode("utf-8", "replace") if isinstance(channel, bytes) else str(channel)
                    data = message["data"]
                    kind = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
                    for limiter in self._live():
                        if limiter.keys.wake == channel:
                            limiter._announced(kind)
            except Exception as exc:  # noqa: BLE001 - waiters fall back to polling until Redis is back
                if not reported and self._live():
                    log.warning("judge budget: lost the wake-up channel of %s (%s); waiters poll until it is back",
                                safe_url(self.url), exc)
                    reported = True
                time.sleep(UNREACHABLE_RETRY_S)
            finally:
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except Exception:  # noqa: BLE001
                        pass

    def _give_back_due(self) -> None:
        """Give the slots the limiters keep for their process's next call back to Redis once their time is up."""
        timeout = None
        while True:
            self.lingered.wait(timeout)
            self.lingered.clear()
            due = [d for limiter in self._live() if (d := limiter._give_back_kept()) is not None]
            timeout = max(0.0, min(due) - time.monotonic()) if due else None

    def _return_all(self) -> None:
        """At the process's end: every kept slot back to Redis now, not when its lease expires."""
        for limiter in self._live():
            limiter._give_back_kept(everything=True)

    def _renew_all(self) -> None:
        """Renew the leases held by this process's limiters, each every lease_s / 3."""
        while True:
            limiters = self._live()
            period = min((limiter.lease_s for limiter in limiters), default=LEASE_S) / 3
            for limiter in limiters:
                try:
                    limiter._renew()
                except Exception:  # noqa: BLE001 - this thread must go on renewing the others
                    log.exception("judge budget: renewing leases at %s failed", safe_url(self.url))
            del limiters
            self._added.wait(max(0.05, period))
            self._added.clear()


_HUBS: dict[tuple[int, str], _Hub] = {}
_HUBS_LOCK = threading.Lock()


def _hub(url: str) -> _Hub:
    """This process's hub for url (a forked child gets its own: threads do not survive a fork)."""
    key = (os.getpid(), url)
    with _HUBS_LOCK:
        hub = _HUBS.get(key)
        if hub is None:
            hub = _HUBS[key] = _Hub(url)
        return hub


class RedisLimiter:
    """The slots of calls in flight to one endpoint, shared through Redis by every process that uses it.

    Same contract as judge.EndpointLimiter: acquire(cancel) -> bool, release(), wake(), set_capacity(n),
    plus backoff(seconds). `capacity` is the one this process last set; `in_use` counts the slots this
    process holds.
    """

    def __init__(self, endpoint: str, url: str, capacity: int, lease_s: float | None = None) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.url = url
        self.keys = BudgetKeys.of(self.endpoint)
        self.lease_s = LEASE_S if lease_s is None else float(lease_s)
        self.capacity = capacity
        self._hub = _hub(url)
        self._lock = threading.Lock()
        self._slot_announced = threading.Condition(self._lock)  # a slot may be free: try again
        self._woken = threading.Condition(self._lock)  # wake(): check the cancel events
        self._held: list[str] = []  # lease ids this process's calls hold
        self._handed: list[str] = []  # leases given back while a call of this process waited: for that call
        self._lingering: list[tuple[float, str]] = []  # (monotonic deadline, lease) kept for the next call
        self._taken: dict[str, float] = {}  # when (monotonic) each lease held was taken from Redis
        self._paused_until = 0.0  # (monotonic) a backoff is known: no hand-over before this
        self._stored_capacity: int | None = None  # the capacity Redis last answered with (None: not known)
        self._waiting = 0  # threads inside acquire()
        self._permits = 0  # announced slots not yet tried for, at most one per waiter
        self._outage_logged = False  # "Redis is unreachable" was logged (once for all waiters)
        self._rng = random.Random()
        self._pid = os.getpid()
        self._lease_prefix = f"{socket.gethostname()}:{self._pid}:"
        self._hub.add(self)
        self.set_capacity(capacity)

    def _after_fork(self) -> None:
        """In a child forked from the process that made this limiter: use the child's own hub (the parent's
        threads do not run here) and hold nothing (the parent's leases are the parent's)."""
        if os.getpid() == self._pid:
            return
        with self._lock:
            if os.getpid() != self._pid:
                self._pid = os.getpid()
                self._lease_prefix = f"{socket.gethostname()}:{self._pid}:"
                self._held, self._handed, self._lingering, self._taken = [], [], [], {}
                self._hub = _hub(self.url)
                self._hub.add(self)

    @property
    def in_use(self) -> int:
        """Slots held by this process."""
        with self._lock:
            return len(self._held)

    def set_capacity(self, capacity: int) -> None:
        """The endpoint's number of slots for every process; waiters try again at once."""
        self.capacity = capacity
        try:
            pipe = self._hub.client.pipeline(transaction=False)
            pipe.set(self.keys.capacity, int(capacity))
            pipe.publish(self.keys.wake, "capacity")
            pipe.execute()
        except redis.RedisError as exc:  # acquire() falls back on self.capacity while none is stored
            log.warning("judge budget: could not store the capacity at %s (%s)", safe_url(self.url), exc)

    def acquire(self, cancel: threading.Event | None = None) -> bool:
        """Take a slot, waiting for one (and out any backoff); False, without a slot, once `cancel` is set.

        Raises BudgetUnavailable when Redis stays unreachable for UNREACHABLE_GIVE_UP_S.
        """
        self._after_fork()
        with self._lock:
            self._waiting += 1
        unreachable_since: float | None = None
        try:
            while cancel is None or not cancel.is_set():
                with self._lock:
                    now = time.monotonic()
                    paused = now < self._paused_until
                    if not paused and self._handed:
                        self._held.append(self._handed.pop())
                        return True
                    if not paused and self._lingering and self._lingering[-1][0] > now:  # not sent back yet
                        self._held.append(self._lingering.pop()[1])
                        return True
                    if paused:
                        spare = self._handed + [lease for _due, lease in self._lingering]
                        self._handed, self._lingering = [], []
                    else:
                        spare = []
                    # This process alone holds every slot: Redis would answer "full". Wait for one of its calls to
                    # hand its slot over (or for any announcement, or POLL_S), then look again.
                    full_here = (not paused and self._stored_capacity is not None
                                 and len(self._held) >= self._stored_capacity)
                self._give_back(*spare)  # a backoff came after they were handed over: Redis has the say again
                if full_here:
                    self._wait_for_slot(POLL_S, cancel)
                    with self._lock:
                        if not self._handed:
                            self._stored_capacity = None  # nothing was handed over: ask Redis next time
                    continue
                lease = self._lease_prefix + uuid.uuid4().hex
                try:
                    status, wait_ms, *stored = self._hub.acquire(
                        keys=[self.keys.leases, self.keys.capacity, self.keys.until],
                        args=[lease, max(1, round(self.lease_s * 1000)), int(self.capacity)])
                except redis.RedisError as exc:
                    unreachable_since = self._unreachable(exc, unreachable_since)
                    self._pause(UNREACHABLE_RETRY_S, cancel)
                    continue
                if self._outage_logged:
                    with self._lock:
                        logged, self._outage_logged = self._outage_logged, False
                    if logged:
                        log.warning("judge budget: Redis at %s is reachable again", safe_url(self.url))
                unreachable_since = None
                with self._lock:
                    self._stored_capacity = int(stored[0]) if stored else None
                    if status == 1:
                        self._held.append(lease)
                        self._taken[lease] = time.monotonic()
                        return True
                if status == 2:  # a backoff: everyone waits it out, each with a little jitter
                    seconds = wait_ms / 1000
                    self._pause(seconds + self._rng.uniform(0.0, min(0.05, 0.1 * seconds)), cancel)
                else:  # full: wait for an announced release, else ask again soon
                    timeout = POLL_S if wait_ms < 0 else min(POLL_S, wait_ms / 1000 + 0.005)
                    self._wait_for_slot(timeout * self._rng.uniform(0.5, 1.0), cancel)
            return False
        finally:
            with self._lock:
                self._waiting -= 1
                self._permits = min(self._permits, self._waiting)
                spare = self._handed[self._waiting:]  # handed to a waiter that gave up (cancelled)
                del self._handed[self._waiting:]
            self._give_back(*spare)

    def _unreachable(self, exc: Exception, since: float | None) -> float:
        now = time.monotonic()
        if since is None:
            with self._lock:
                logged, self._outage_logged = self._outage_logged, True
            if not logged:
                log.warning("judge budget: Redis at %s is unreachable (%s); waiting", safe_url(self.url), exc)
            return now
        if now - since > UNREACHABLE_GIVE_UP_S:
            raise BudgetUnavailable(f"the judge budget in Redis at {safe_url(self.url)} has been unreachable for "
                                    f"{UNREACHABLE_GIVE_UP_S:g} s: {exc}") from exc
        return since

    def _wait_for_slot(self, timeout: float, cancel: threading.Event | None) -> None:
        """Until a release is announced (one waiter per announcement), wake() or timeout."""
        with self._lock:
            if self._permits == 0 and not (cancel is not None and cancel.is_set()):
                self._slot_announced.wait(timeout)
            if self._permits > 0:
                self._permits -= 1

    def _pause(self, seconds: float, cancel: threading.Event | None) -> None:
        """Sleep `seconds`, ending early once `cancel` is set (and wake() called)."""
        deadline = time.monotonic() + seconds
        with self._lock:
            while cancel is None or not cancel.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._woken.wait(min(left, POLL_S))

    def _announced(self, kind: str) -> None:
        """A message on the endpoint's wake channel: a release ("release", or "release:<n>" for n slots: as many more
        waiters may try), a backoff ("pause:<ms>": no hand-over meanwhile) or a capacity change (every waiter tries;
        each slot goes back to Redis once)."""
        with self._lock:
            name, _colon, count = kind.partition(":")
            if name == "release":
                freed = int(count) if count.isdigit() else 1
                self._permits = min(self._permits + freed, self._waiting)
                self._slot_announced.notify(freed)
            elif kind.startswith("pause:"):
                try:
                    seconds = float(kind[6:]) / 1000
                except ValueError:
                    return
                self._paused_until = max(self._paused_until, time.monotonic() + seconds)
                self._send_back_kept()
            else:
                self._taken = dict.fromkeys(self._taken, -math.inf)
                self._send_back_kept()
                self._stored_capacity = None
                self._permits = self._waiting
                self._slot_announced.notify_all()

    def _kept_on(self, lease: str, now: float) -> bool:
        """(Holding the lock) whether a lease may go on to another call of this process: taken from Redis less than
        HOLD_S ago, no backoff known, the capacity not lowered since."""
        return now - self._taken.get(lease, -math.inf) < HOLD_S and now >= self._paused_until

    def pass_on(self) -> bool:
        """Whether a caller may pass a slot it holds straight to another of its calls (False, as release() would send
        it back to Redis: held HOLD_S, a backoff, a lowered capacity)."""
        with self._lock:
            return bool(self._held) and len(self._held) <= self.capacity and \
                self._kept_on(self._held[-1], time.monotonic())  # the one release() would give back next

    def release(self) -> None:
        """Give a slot back: to a call of this process that waits for one, else kept for the process's next call
        for LINGER_S, else (held HOLD_S, or in a backoff) to Redis, announced."""
        with self._lock:
            if not self._held:
                return
            lease = self._held.pop()
            if self._kept_on(lease, time.monotonic()):
                if self._waiting > len(self._handed):
                    self._handed.append(lease)
                    self._slot_announced.notify()
                else:
                    self._lingering.append((time.monotonic() + LINGER_S, lease))
                    self._hub.lingered.set()
                return
        self._give_back(lease)

    def _send_back_kept(self) -> None:
        """(Holding the lock) every slot kept for the next call due now: the hub's thread gives them back."""
        if self._lingering:
            self._lingering = [(0.0, lease) for _due, lease in self._lingering]
            self._hub.lingered.set()

    def _give_back_kept(self, everything: bool = False) -> float | None:
        """Give back to Redis the kept slots whose time is up (all of them with `everything`); the time (monotonic)
        the next one is up, or None when none is kept."""
        with self._lock:
            now = time.monotonic()
            due = [lease for deadline, lease in self._lingering if everything or deadline <= now + TOGETHER_S]
            self._lingering = [(deadline, lease) for deadline, lease in self._lingering
                               if not everything and deadline > now + TOGETHER_S]
            upcoming = min((deadline for deadline, _lease in self._lingering), default=None)
        self._give_back(*due)
        return upcoming

    def _give_back(self, *leases: str) -> None:
        """Remove leases from Redis and announce the free slots, in one round trip (a run's slots, kept for its next
        call, go back together when it ends)."""
        if not leases:
            return
        with self._lock:
            for lease in leases:
                self._taken.pop(lease, None)
        try:
            pipe = self._hub.client.pipeline(transaction=False)
            pipe.zrem(self.keys.leases, *leases)
            pipe.publish(self.keys.wake, "release" if len(leases) == 1 else f"release:{len(leases)}")
            pipe.execute()
        except redis.RedisError as exc:  # the lease expires by itself
            log.warning("judge budget: could not give %d slot(s) back at %s (%s); they free themselves within %g s",
                        len(leases), safe_url(self.url), exc, self.lease_s)

    def wake(self) -> None:
        """Make every waiter check its `cancel` event."""
        with self._lock:
            self._slot_announced.notify_all()
            self._woken.notify_all()

    def backoff(self, seconds: float) -> None:
        """No process starts a call to this endpoint for `seconds` (a later time already set stays)."""
        ms = round(seconds * 1000)
        if ms <= 0:
            return
        with self._lock:
            self._paused_until = max(self._paused_until, time.monotonic() + seconds)
            self._send_back_kept()
        try:
            left = self._hub.backoff(keys=[self.keys.until], args=[ms])
            self._hub.client.publish(self.keys.wake, f"pause:{int(left)}")
        except redis.RedisError as exc:
            log.warning("judge budget: could not share a backoff at %s (%s)", safe_url(self.url), exc)

    def _renew(self) -> None:
        """Push back the expiry of the leases this process holds (the hub's renewal thread)."""
        with self._lock:
            held = self._held + self._handed + [lease for _due, lease in self._lingering]
        if not held:
            return
        try:
            renewed = self._hub.renew(keys=[self.keys.leases], args=[max(1, round(self.lease_s * 1000)), *held])
        except redis.RedisError as exc:
            log.warning("judge budget: could not renew leases at %s (%s)", safe_url(self.url), exc)
            return
        if renewed < len(held):
            with self._lock:
                mine = {*self._held, *self._handed, *(lease for _due, lease in self._lingering)}
                still = sum(1 for lease in held if lease in mine)
            if renewed < still:
                log.warning("judge budget: %d lease(s) at %s expired before they were renewed; the budget may be "
                            "exceeded until they are released", still - renewed, safe_url(self.url))

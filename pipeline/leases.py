"""How Celery workers share work through Redis without doing it twice: a lease on a step while it runs, the stop check
of a running block, and the sweep's test for work whose tasks the broker lost (pipeline/celery_backend.py)."""
from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from datetime import datetime
from typing import Callable, Iterable

import redis

from pipeline.job import RUNNING

log = logging.getLogger(__name__)

STATUS_CHECK_S = 0.5  # how often a running block reads whether its job was cancelled


class Lease:
    """A Redis lease on a name: SET NX with an expiry, renewed on a thread while held. `lost` turns true when it
    could not be renewed (someone else may hold it now), so that the holder stops."""

    def __init__(self, client: redis.Redis, name: str, ttl: float):
        self.ttl = ttl
        self.lost = False
        self._lock = client.lock(f"psb:lease:{name}", timeout=ttl, thread_local=False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> bool:
        """Take the lease if nobody holds it; False when someone does."""
        if not self._lock.acquire(blocking=False):
            return False
        self._thread = threading.Thread(target=self._renew, name="lease", daemon=True)
        self._thread.start()
        return True

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self._lock.reacquire()
            except (redis.exceptions.LockError, redis.exceptions.RedisError):
                log.warning("lease %s lost", self._lock.name)
                self.lost = True
                return

    def release(self) -> None:
        """Stop renewing and give the lease back (when it is still ours)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self._lock.release()
        except (redis.exceptions.LockError, redis.exceptions.RedisError):
            pass

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        if self._thread is not None:
            self.release()


class StopCheck:
    """should_stop() of a block: its lease was lost, or `status()` (its job's, None when it is gone, read at most
    every STATUS_CHECK_S) left queued/running; `cancelled` says it was the latter."""

    def __init__(self, lease: Lease, status: Callable[[], str | None]):
        self.lease, self.status = lease, status
        self.cancelled = False
        self._next = 0.0

    def __call__(self) -> bool:
        if self.lease.lost:
            return True
        now = time.monotonic()
        if not self.cancelled and now >= self._next:
            self._next = now + STATUS_CHECK_S
            self.cancelled = self.status() not in RUNNING
        return self.cancelled


def lost_work(client: redis.Redis, queue: str, what: str, sweep_s: float, unfinished: Iterable[str],
              leased: Callable[[str], bool]) -> list[str]:
    """The ids among `unfinished` (jobs of one type, `what`) whose tasks the broker lost: no step holding a lease and
    no task of theirs in the broker, at this sweep and the one before (a task between the queue and its lease is not
    taken for lost), and not sent again by the sweep before. One worker of the deployment sweeps each `what` per
    `sweep_s`; [] for the others."""
    if not client.set(f"psb:{queue}:sweep:{what}", os.getpid(), nx=True, px=int(sweep_s * 900)):
        return []  # another worker swept a moment ago
    suspects = f"psb:{queue}:orphans:{what}"
    before = {_raw(oid).decode() for oid in client.smembers(suspects)}
    held = in_broker(client, queue)
    orphans = [oid for oid in unfinished if oid.encode() not in held and not leased(oid)]
    lost = [oid for oid in orphans if oid in before]
    # What is sent again now starts over: its new tasks pass between the queue and a lease too, and a sweep that
    # caught one of them there would send it once more.
    suspected = [oid for oid in orphans if oid not in lost]
    pipe = client.pipeline()
    pipe.delete(suspects)
    if suspected:
        pipe.sadd(suspects, *suspected)
        pipe.expire(suspects, math.ceil(3 * sweep_s))
    pipe.execute()
    return lost


def in_broker(client: redis.Redis, queue: str) -> bytes:
    """The messages of a queue that stand for work to come, as one text to search: waiting in the queue, or
    delivered and held for a later time (an eta ahead: a pause before a retry). A delivered message without one
    is running, and its step then holds a lease, or its worker died (kill -9, a lost connection) and it would come
    back only after CELERY_VISIBILITY_TIMEOUT, which the sweep does not wait for."""
    waiting = [_raw(raw) for raw in client.lrange(queue, 0, -1)]
    now = time.time()
    held = [_raw(raw) for raw in client.hvals("unacked")]
    return b"\n".join(waiting + [raw for raw in held if _eta(raw) > now])


def _eta(raw: bytes) -> float:
    """The time (seconds since the epoch) a message in kombu's `unacked` hash is held for; 0 when none."""
    try:
        eta = json.loads(raw)[0]["headers"].get("eta")
        return datetime.fromisoformat(eta).timestamp() if eta else 0.0
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return 0.0


def _raw(value: bytes | str) -> bytes:
    """A Redis reply as bytes (the clients here do not decode replies; typed as either)."""
    return value if isinstance(value, bytes) else value.encode()

"""The budget of calls in flight per endpoint within one process (EndpointLimiter), and `endpoint_limiter`, which
hands every Judge of the process that calls an endpoint the same limiter (judge/budget.py's RedisLimiter when the
budget is shared by the whole deployment)."""
from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.budget import RedisLimiter

# Times in a row a slot may go from a call that ends straight to another call of the process (pass_on): then it goes
# back to the limiter, where calls of other runs wait too. (The Redis budget's limit is a time: judge.budget.HOLD_S.)
HANDOVERS = 16


class EndpointLimiter:
    """A semaphore whose capacity can change: at most `capacity` holders at once."""

    def __init__(self, capacity: int) -> None:
        self._cond = threading.Condition()
        self.capacity = capacity
        self.in_use = 0
        self._passed = 0  # slots passed on in a row

    def set_capacity(self, capacity: int) -> None:
        """Change the capacity; holders beyond a lowered one finish, newcomers wait below it."""
        with self._cond:
            self.capacity = capacity
            self._cond.notify_all()

    def acquire(self, cancel: threading.Event | None = None) -> bool:
        """Take a slot, waiting for one; False, without a slot, once `cancel` is set."""
        with self._cond:
            while cancel is None or not cancel.is_set():
                if self.in_use < self.capacity:
                    self.in_use += 1
                    return True
                self._cond.wait()
            self._cond.notify()  # pass on a release we may have been woken by
            return False

    def try_acquire(self) -> bool:
        """Take a slot if one is free now; False (without one) otherwise."""
        with self._cond:
            if self.in_use < self.capacity:
                self.in_use += 1
                return True
            return False

    def pass_on(self) -> bool:
        """Whether a caller may pass a slot it holds straight to another of its calls, counted: not more than
        HANDOVERS times in a row, nor above a lowered capacity (False: it releases the slot instead)."""
        with self._cond:
            if self.in_use > self.capacity or self._passed >= HANDOVERS:
                self._passed = 0
                return False
            self._passed += 1
            return True

    def release(self) -> None:
        """Give a slot back."""
        with self._cond:
            self.in_use -= 1
            self._cond.notify()

    def wake(self) -> None:
        """Make every waiter check its `cancel` event."""
        with self._cond:
            self._cond.notify_all()

    def backoff(self, seconds: float) -> None:
        """The endpoint asked for a pause (429, Retry-After). Within one process each call waits out its
        own retry, as it always has, so nothing changes here; judge.budget.RedisLimiter shares the pause
        with every process."""


# (budget URL or "", endpoint) -> limiter, shared by every Judge of the process that calls that endpoint.
# A limiter lives as long as some Judge uses it; each new Judge sets its capacity to its own
# config.concurrency, so when evaluations with different settings run at once the most recently started
# one decides (with a Redis budget, over every process that shares it).
_LIMITERS: weakref.WeakValueDictionary[tuple[str, str], Any] = weakref.WeakValueDictionary()
_LIMITERS_LOCK = threading.Lock()


def endpoint_limiter(endpoint: str, capacity: int | None = None,
                     budget_url: str | None = None) -> EndpointLimiter | RedisLimiter:
    """The limiter of calls in flight to `endpoint`; a given capacity replaces the current one.

    Without `budget_url` it is this process's own (EndpointLimiter); with one, a judge.budget.RedisLimiter
    whose slots, capacity and backoff are shared through that Redis by every process of the deployment.
    """
    key = (budget_url or "", endpoint.rstrip("/"))
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(key)
        if limiter is None:
            if budget_url:
                from judge.budget import RedisLimiter  # only deployments with Redis need the client

                limiter = RedisLimiter(key[1], budget_url, capacity or 1)
            else:
                limiter = EndpointLimiter(capacity or 1)
            _LIMITERS[key] = limiter
            return limiter
    if capacity is not None:
        limiter.set_capacity(capacity)
    return limiter

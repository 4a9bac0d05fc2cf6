"""Sign-in attempts counted where every web process sees them: a fixed window per client address and per user name.

The counting is the `limits` library's (memory:// in one process, redis:// shared by all). It is loaded only where
people sign in (AUTH=on, at the app's start, to check the settings), so the CLI and the workers do not import it.
"""
from __future__ import annotations

import logging
import math
import time
from functools import cached_property

from judge.retry import safe_url

log = logging.getLogger(__name__)

NAMESPACE = "sign-in"  # the first part of every key in the storage


class Attempts:
    """At most `rate` (a `limits` string such as "5 per minute") attempts per key, counted at `storage_uri`."""

    def __init__(self, rate: str, storage_uri: str) -> None:
        self.rate, self.storage_uri = rate, storage_uri

    @cached_property
    def _window(self):
        from limits import parse, storage, strategies

        return strategies.FixedWindowRateLimiter(storage.storage_from_string(self.storage_uri)), parse(self.rate)

    def check(self) -> None:
        """Read the rate and the storage's address now; ValueError naming both if either is wrong."""
        try:
            self._window  # noqa: B018 (built and kept)
        except Exception as exc:  # limits' ConfigurationError or ValueError, or a client library missing; not
            # chained: its message may hold the address's password
            raise ValueError(safe_url(f"Sign-in attempts cannot be counted with LOGIN_RATE_LIMIT={self.rate!r} at "
                                      f"RATELIMIT_STORAGE_URI={self.storage_uri!r}: {exc}")) from None

    def refused(self, *keys: str) -> int | None:
        """Count one attempt under each key in turn; the seconds until the first full key's window ends, else None.

        With the storage unreachable (Redis restarting) the attempt is let through and logged: passwords stay
        hashed at full cost, and sign-in keeps working until the counts are back.
        """
        limiter, item = self._window
        try:
            for key in keys:
                if not limiter.hit(item, NAMESPACE, key):
                    reset = limiter.get_window_stats(item, NAMESPACE, key).reset_time
                    return max(1, math.ceil(reset - time.time()))
        except Exception as exc:  # whatever the storage's client raises when it cannot be reached
            log.warning(safe_url(f"sign-in attempts not counted, {self.storage_uri} unreachable: {exc}"))
        return None

"""The circuit breaker of one run's calls to one endpoint: it lets one call at a time through until the endpoint has
answered once (the probe), and opens, so that the run asks nothing more of that endpoint, on an answer that no retry
and no other judgment can change (401, 403, 404 on the chat path) or on CONNECTION_FAILURES connection failures in a
row. Timeouts, 429 and 5xx are not its business: the judge's retries and backoff heal those as they always have."""
from __future__ import annotations

import math
import time

from common.lazy_modules import lazy
from judge.cache import endpoint_url
from judge.config import JudgeConfig
from judge.retry import describe_error
from translations import _

openai = lazy("openai")

# Connection failures (refused, reset, no such host; not timeouts) in a row, with no answer between them, that stop a
# run. A closed port refuses every call within milliseconds, while a proxy that drops an idle keep-alive connection
# fails one or two calls and the next ones get through: five in a row is an endpoint that is gone, not a blip.
CONNECTION_FAILURES = 5
# Answers of the chat path that the next call would get too: a refused key (401), a key without access to the model
# (403), a wrong URL or model name (404).
DEAD_STATUSES = frozenset({401, 403, 404})
# A run's breakers go on to its next block in the same process (a Celery worker's next task) without a new probe when
# every endpoint answered less than this long ago and none opened.
PROBED_S = 10.0


class EndpointDown(Exception):
    """A run stopped asking an endpoint; the message says why and what to do."""


def is_connection_failure(exc: BaseException) -> bool:
    """Whether a call failed before the endpoint answered: refused, reset or unresolved, but not timed out."""
    return isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError)


def is_dead_answer(exc: BaseException) -> bool:
    """Whether a call's answer says that every call to this endpoint would fail the same way (401, 403, 404)."""
    return isinstance(exc, openai.APIStatusError) and exc.status_code in DEAD_STATUSES


class Breaker:
    """One run's breaker for one endpoint (`endpoint`, `secret`: its URL and key, for readable reasons without the
    key). `reached` once a call got an answer or timed out (a 429 or 5xx included: only a connection that failed is no
    answer);
    `reason` once it opened: why the run stopped asking."""

    def __init__(self, endpoint: str, secret: str | None, timeout_s: float) -> None:
        self.endpoint, self._secret, self._timeout_s = endpoint, secret, timeout_s
        self.reached = False
        self.answered_at = -math.inf  # time.monotonic() of its last answer
        self.failures = 0  # connection failures since the last answer
        self.reason: str | None = None

    @property
    def open(self) -> bool:
        """Whether the run is to ask this endpoint nothing more."""
        return self.reason is not None

    def record(self, error: BaseException | None) -> None:
        """Count the outcome of one call (None: it was answered)."""
        if error is not None and is_dead_answer(error):
            self._trip(_("Stopped asking the judge: %(reason)s — check the endpoint's URL, model and key, then resume "
                         "the evaluation.", reason=self._describe(error)))
            return
        if error is None or not is_connection_failure(error):  # an answer, or a timeout: retried as ever
            self.reached, self.failures, self.answered_at = True, 0, time.monotonic()
            return
        self.failures += 1
        if self.failures >= CONNECTION_FAILURES:
            self._trip(_("Stopped asking the judge: %(num)s calls in a row could not reach it (%(reason)s) — resume the "
                         "evaluation once it is up.", num=self.failures, reason=self._describe(error)))

    def _describe(self, error: BaseException) -> str:
        return describe_error(error, self.endpoint, self._secret, self._timeout_s)

    def _trip(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason


class Breakers:
    """The breakers of one run: one per endpoint, model and key, made at its first use, so that the run probes each
    once whatever number of blocks and rounds it judges in."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, str, str | None], Breaker] = {}

    def of(self, config: JudgeConfig) -> Breaker:
        """The breaker of a judge configuration's endpoint, model and key in this run."""
        endpoint = endpoint_url(config)
        key = (endpoint, config.model, config.api_key)
        if key not in self._made:
            self._made[key] = Breaker(endpoint, config.api_key, config.timeout_s)
        return self._made[key]

    def recent(self) -> bool:
        """Whether every endpoint of the run answered less than PROBED_S ago and none opened (its next block need not
        probe again)."""
        now = time.monotonic()
        return bool(self._made) and all(b.reason is None and now - b.answered_at < PROBED_S
                                        for b in self._made.values())

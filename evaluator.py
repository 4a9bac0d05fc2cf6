"""The LLM judge engine: the OpenAI-compatible client, bounded concurrency, retries, cache use.

Knows nothing about Flask, nor about any benchmark kind's prompts: a kind asks for a judgment with a
`Prompt` (the chat messages, the parser of the answer and a prompt version) built by its own prompts
module (benchmarks/dialogue/prompts.py, benchmarks/conversation/prompts.py), and gets a `Verdict`.

One judgment is one chat completion, POSTed by judge_http.ChatClient on an event loop that `Judge.run` drives
(one thread, hundreds of calls in flight; judge_http.py says why not through the SDK's request pipeline), which
raises the openai SDK's exception types. `Judge` retries
timeouts, connection errors, 408/409/429 and 5xx itself with exponential backoff and full jitter,
honouring Retry-After, so that it can count attempts and so that a call waiting to be retried does not
hold one of the endpoint's concurrency slots. All `Judge`s of one process that call the same endpoint
share one budget of calls in flight (`endpoint_limiter`); with a Redis URL configured (`budget_url`) the
budget, and the backoff after a 429, are shared by every process of the deployment (judge_budget.py).
Answers that parse are cached under a key over the endpoint, the model, the messages, the sampling
settings and the prompt's version.
"""
from __future__ import annotations

import asyncio
import datetime
import hashlib
import itertools
import json
import math
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from lazy_modules import lazy
from translations import _, ngettext

httpx2 = lazy("httpx2")  # the openai SDK's HTTP client
openai = lazy("openai")

if TYPE_CHECKING:
    from judge_budget import RedisLimiter

LANGUAGES = ("en", "zh")  # the languages prompts are written in (JudgeConfig.language)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local OpenAI-compatible servers (vLLM, Ollama, ...) accept any key; the SDK insists on one.
PLACEHOLDER_API_KEY = "EMPTY"
_MAX_ERROR_CHARS = 300
# No wait between two attempts is longer than this, whatever Retry-After asks for.
MAX_WAIT_S = 60.0
# HTTP statuses worth another attempt besides 5xx: request timeout, conflict (lock), rate limit.
RETRYABLE_STATUSES = frozenset({408, 409, 429})


# ---------------------------------------------------------------------------------------------
# Configuration


def _as_text(name: str, value: object) -> str:
    """A non-empty string setting."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(_("%(name)s must be a non-empty string, got %(value)s", name=name, value=repr(value)))
    return value.strip()


def _as_int(name: str, value: object, minimum: int) -> int:
    """An integer setting >= minimum, from an int or its decimal string."""
    number = None
    if not isinstance(value, bool):
        try:
            number = int(value.strip()) if isinstance(value, str) else int(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    if number is None or (isinstance(value, float) and value != number) or number < minimum:
        raise ValueError(_("%(name)s must be an integer >= %(minimum)s, got %(value)s", name=name, minimum=minimum,
                           value=repr(value)))
    return number


def _as_float(name: str, value: object, low: float, high: float, low_inclusive: bool) -> float:
    """A finite float setting in [low, high], or in (low, high] when low itself is not allowed."""
    number = math.nan
    if not isinstance(value, bool):
        try:
            number = float(value.strip()) if isinstance(value, str) else float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    too_low = number < low if low_inclusive else number <= low
    if not math.isfinite(number) or too_low or number > high:
        bounds = f"{'[' if low_inclusive else '('}{low:g}, {high:g}]"
        raise ValueError(_("%(name)s must be a number in %(bounds)s, got %(value)s", name=name, bounds=bounds,
                           value=repr(value)))
    return number


def _as_language(name: str, value: object) -> str:
    """A judging language code; 'zh-CN' style regional variants map to their base language."""
    if isinstance(value, str):
        base = re.split(r"[-_]", value.strip().lower(), maxsplit=1)[0]
        if base in LANGUAGES:
            return base
    raise ValueError(_("%(name)s must be one of %(choices)s, got %(value)s", name=name, choices=", ".join(LANGUAGES),
                         value=repr(value)))


def _as_bool(name: str, value: object) -> bool:
    """A yes/no setting from a bool or 1/0, true/false, yes/no, on/off."""
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else None
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(_("%(name)s must be true or false (1/0, on/off), got %(value)s", name=name, value=repr(value)))


def _as_base_url(name: str, value: object) -> str:
    """An http(s) base URL."""
    text = _as_text(name, value)
    if not re.match(r"^https?://[^\s/]+", text):
        raise ValueError(_("%(name)s must be an http:// or https:// URL, got %(value)s", name=name, value=repr(value)))
    return text


REDIS_URL_FORMS = "redis://..., rediss://..., unix://..."


def _as_redis_url(name: str, value: object) -> str:
    """A Redis URL (redis://, rediss:// or unix://); the error never shows its password."""
    text = _as_text(name, value)
    if not text.lower().startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(_("%(name)s must be one of %(choices)s, got %(value)s", name=name, choices=REDIS_URL_FORMS,
                           value=repr(_safe_url(text))))
    return text


def _budget_url(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """Where the deployment-wide budget of judge calls lives: JUDGE_REDIS_URL, else CELERY_BROKER_URL when it
    is a Redis URL (a broker of another kind is not used), as (variable, value); None: in-process budget."""
    found = _env(environ, "JUDGE_REDIS_URL")
    if found:
        return found
    found = _env(environ, "CELERY_BROKER_URL")
    if found and found[1].lower().startswith(("redis://", "rediss://")):
        return found
    return None


# field name -> (environment variable, converter(name, value))
_CONVERTERS: dict[str, tuple[str, Callable[[str, object], Any]]] = {
    "model": ("JUDGE_MODEL", _as_text),
    "concurrency": ("JUDGE_CONCURRENCY", lambda n, v: _as_int(n, v, 1)),
    "timeout_s": ("JUDGE_TIMEOUT_S", lambda n, v: _as_float(n, v, 0.0, 3600.0, False)),
    "max_retries": ("JUDGE_MAX_RETRIES", lambda n, v: _as_int(n, v, 0)),
    "temperature": ("JUDGE_TEMPERATURE", lambda n, v: _as_float(n, v, 0.0, 2.0, True)),
    "max_tokens": ("JUDGE_MAX_TOKENS", lambda n, v: _as_int(n, v, 1)),
    "language": ("JUDGE_LANGUAGE", _as_language),
    "retry_base_s": ("JUDGE_RETRY_BASE_S", lambda n, v: _as_float(n, v, 0.0, MAX_WAIT_S, True)),
    "retry_max_s": ("JUDGE_RETRY_MAX_S", lambda n, v: _as_float(n, v, 0.0, MAX_WAIT_S, True)),
    "use_cache": ("JUDGE_CACHE", _as_bool),
}


def _env(environ: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    """The first of names set to a non-blank value, as (name, value)."""
    for name in names:
        value = environ.get(name)
        if value is not None and value.strip():
            return name, value.strip()
    return None


@dataclass
class JudgeConfig:
    """Where and how to call the judge; the API key never appears in repr() or public()."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    model: str = "gpt-4o-mini"
    concurrency: int = 8
    timeout_s: float = 60.0
    max_retries: int = 3
    temperature: float = 0.0
    max_tokens: int = 1024
    language: str = "en"  # of the prompts; callers pass it to their kind's prompt builder
    retry_base_s: float = 0.5  # the first retry waits up to this long, the k-th up to base * 2**(k-1)
    retry_max_s: float = 30.0  # cap of that exponential backoff
    use_cache: bool = True  # False: never read the cache (answers are still written to it)
    # Redis URL of the budget shared by every process of the deployment (None: this process's own);
    # from the environment only (JUDGE_REDIS_URL, else a redis:// CELERY_BROKER_URL), never from a request.
    budget_url: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.base_url is not None:
            self.base_url = _as_base_url("base_url", self.base_url)
        if self.budget_url is not None:
            self.budget_url = _as_redis_url("budget_url", self.budget_url)
        if self.api_key is not None:
            self.api_key = self.api_key.strip() or None
        for name, (_env_name, convert) in _CONVERTERS.items():
            setattr(self, name, convert(name, getattr(self, name)))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, **overrides: Any) -> JudgeConfig:
        """Settings from JUDGE_* (else OPENAI_*) variables; overrides that are not None win."""
        values: dict[str, Any] = {}
        found = _env(environ, "JUDGE_BASE_URL", "OPENAI_BASE_URL")
        if found:
            values["base_url"] = _as_base_url(*found)
        found = _env(environ, "JUDGE_API_KEY", "OPENAI_API_KEY")
        if found:
            values["api_key"] = found[1]
        found = _budget_url(environ)
        if found:
            values["budget_url"] = _as_redis_url(*found)
        for name, (env_name, convert) in _CONVERTERS.items():
            found = _env(environ, env_name)
            if found:
                values[name] = convert(*found)
        unknown = set(overrides) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise TypeError(f"unknown judge settings: {', '.join(sorted(unknown))}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def problem(self) -> str | None:
        """None when a judge can be called, else what to configure."""
        if self.base_url or self.api_key:
            return None
        return _(
            "No judge is configured. Set JUDGE_API_KEY (or OPENAI_API_KEY) for OpenAI, or "
            "JUDGE_BASE_URL for a local OpenAI-compatible server such as vLLM or Ollama; "
            "optionally JUDGE_MODEL."
        )

    def public(self) -> dict:
        """Every setting except the API key (only whether one is set)."""
        return {
            "base_url": self.base_url,
            "api_key_set": bool(self.api_key),
            "model": self.model,
            "concurrency": self.concurrency,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "language": self.language,
            "retry_base_s": self.retry_base_s,
            "retry_max_s": self.retry_max_s,
            "use_cache": self.use_cache,
        }


# ---------------------------------------------------------------------------------------------
# Requests and outcomes

# The Verdict fields a prompt's parser may set.
PROMPT_FIELDS = frozenset({"total", "dims", "verdict"})
# An answer's parser: answer -> (Verdict fields, None), or (None, why the answer does not parse).
Parser = Callable[[str], tuple[dict | None, str | None]]


@dataclass(frozen=True)
class Prompt:
    """One judgment to ask: the chat messages, how to read the answer, and the prompt version (in the cache key).

    `parse(answer)` returns (fields, None) when the answer parses, where `fields` sets some of the
    Verdict fields in PROMPT_FIELDS, else (None, why it does not parse). Each benchmark kind builds its
    own (benchmarks/dialogue/prompts.py, benchmarks/conversation/prompts.py); the engine only sends the
    messages and reads the answer with `parse`. Change `version` when the same messages should no longer
    be answered from the cache.
    """

    messages: list[dict]
    parse: Parser
    version: str


@dataclass
class Verdict:
    """The outcome of one judgment."""

    status: str  # "ok" | "unparsed" | "failed"
    total: float | None = None
    dims: dict[str, int] | None = None
    verdict: int | None = None
    answer: str = ""
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    attempts: int = 1  # HTTP calls made for this judgment (0 when it came from the cache)
    latency_ms: int | None = None  # how long the judge took to answer (the last call); None without a call
    retryable: bool = False  # a failure worth asking again later (an outage: timeouts, 429, 5xx), not a refusal


def _verdict_from_answer(parse: Parser, answer: str, prompt_tokens: int, completion_tokens: int) -> Verdict:
    """A parsed ("ok") or "unparsed" verdict for an answer text, read by its prompt's parser."""
    tokens = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    if not answer or not answer.strip():
        return Verdict("unparsed", answer=answer or "", error=_("the judge returned an empty answer"), **tokens)
    fields, problem = parse(answer)
    if fields is None:
        return Verdict("unparsed", answer=answer, error=problem, **tokens)
    unknown = set(fields) - PROMPT_FIELDS
    if unknown:
        raise ValueError(f"a prompt's parser may only set {', '.join(sorted(PROMPT_FIELDS))}, "
                         f"not {', '.join(sorted(unknown))}")
    return Verdict("ok", answer=answer, **fields, **tokens)


# ---------------------------------------------------------------------------------------------
# Errors and retries


def _safe_url(url: str) -> str:
    """The URL without any user:password@ part."""
    return re.sub(r"(?<=://)[^/@\s]*@", "", url)


def _scrub(text: str, secret: str | None) -> str:
    """text on one line and of readable length, with the API key replaced by ***."""
    if secret:
        text = text.replace(secret, "***")
    text = " ".join(text.split())
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 3] + "..."


def _server_message(exc: BaseException) -> str:
    """The error message of an HTTP error's JSON body, else the exception's own text."""
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, Mapping) else None
    return message if isinstance(message, str) and message else str(exc)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions that exc was raised from or during, innermost last."""
    seen: set[int] = set()
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


def _describe_error(exc: BaseException, url: str, secret: str | None, timeout_s: float) -> str:
    """Why a call failed, readably: what happened, the HTTP status and the server's message; no API key."""
    url = _safe_url(url)
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APITimeoutError):
        text = _("APITimeoutError: no answer from %(url)s within %(seconds)s s", url=url, seconds=f"{timeout_s:g}")
    elif isinstance(exc, openai.APIConnectionError):
        causes = list(_causes(exc))
        if any(isinstance(c, ConnectionRefusedError) for c in causes):
            text = _("connection refused at %(url)s", url=url)
        else:
            detail = next((f"{type(c).__name__}: {c}" for c in causes if str(c)), type(exc).__name__)
            text = _("APIConnectionError: connection to %(url)s failed (%(detail)s)", url=url, detail=detail)
    elif isinstance(exc, openai.AuthenticationError):
        text = _("the API key was rejected (HTTP 401: %(message)s); check JUDGE_API_KEY (or OPENAI_API_KEY)",
                 message=_server_message(exc))
    elif status is not None:
        text = f"{type(exc).__name__}: HTTP {status}: {_server_message(exc)}"
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return _scrub(text, secret)


def _is_retryable(exc: BaseException) -> bool:
    """Timeouts, connection errors, 408/409/429 and 5xx are worth another attempt; other errors are not."""
    if isinstance(exc, openai.APIConnectionError):  # timeouts included
        return True
    if not isinstance(exc, openai.APIStatusError):
        return False
    if exc.response.headers.get("x-should-retry") == "false":
        return False
    return exc.status_code in RETRYABLE_STATUSES or exc.status_code >= 500


def retry_after_s(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """The wait a response asks for: retry-after-ms, else Retry-After in seconds or as an HTTP date; else None."""
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(lowered[name]) * scale
        except (KeyError, TypeError, ValueError):
            continue
        if not math.isnan(seconds):
            return max(0.0, seconds)
    try:
        when = parsedate_to_datetime(lowered["retry-after"])
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_s(retry: int, base_s: float, max_s: float, rng: Any = random) -> float:
    """Full-jitter wait before retry number `retry` (0-based): uniform in [0, min(max_s, base_s * 2**retry)]."""
    return rng.uniform(0.0, min(max_s, base_s * 2.0 ** min(retry, 64)))


# ---------------------------------------------------------------------------------------------
# The shared budget of calls in flight per endpoint


class EndpointLimiter:
    """A semaphore whose capacity can change: at most `capacity` holders at once."""

    def __init__(self, capacity: int) -> None:
        self._cond = threading.Condition()
        self.capacity = capacity
        self.in_use = 0

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
        own retry, as it always has, so nothing changes here; judge_budget.RedisLimiter shares the pause
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

    Without `budget_url` it is this process's own (EndpointLimiter); with one, a judge_budget.RedisLimiter
    whose slots, capacity and backoff are shared through that Redis by every process of the deployment.
    """
    key = (budget_url or "", endpoint.rstrip("/"))
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(key)
        if limiter is None:
            if budget_url:
                from judge_budget import RedisLimiter  # only deployments with Redis need the client

                limiter = RedisLimiter(key[1], budget_url, capacity or 1)
            else:
                limiter = EndpointLimiter(capacity or 1)
            _LIMITERS[key] = limiter
            return limiter
    if capacity is not None:
        limiter.set_capacity(capacity)
    return limiter


# ---------------------------------------------------------------------------------------------
# The judge

LOOKAHEAD = 256  # requests whose cache entries run() reads in one query
_STOP_POLL_S = 0.1  # how often run() checks should_stop() while it waits for calls
KEEP_EVERY_S = 0.005  # at most one cache write per this long in a run
# run() takes finished judgments in waves this long: each hand-over between the loop and run() costs CPU, and no
# call waits for one (places are given back on the loop, where the tasks waiting for them are).
WAVE_S = 0.005
CONNECTION_PROMPT = "Reply with the word OK."
CONNECTION_MAX_TOKENS = 16


def _make_client(endpoint: str, config: JudgeConfig, connections: int) -> openai.OpenAI:
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


def _answer_text(response: Any) -> str:
    """The message text of a chat completion's JSON ("" when there is none)."""
    choices = response.get("choices") if isinstance(response, Mapping) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else {}
    message = first.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return content if isinstance(content, str) else ""


def _tokens(usage: object, name: str) -> int:
    """A token count of a chat completion's `usage` (0 when missing or not a number)."""
    value = usage.get(name) if isinstance(usage, Mapping) else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _verdict_from_response(parse: Parser, response: Mapping, attempts: int) -> Verdict:
    """The verdict for a chat completion's JSON, with its token usage and the attempts it took."""
    usage = response.get("usage")
    verdict = _verdict_from_answer(parse, _answer_text(response), _tokens(usage, "prompt_tokens"),
                                   _tokens(usage, "completion_tokens"))
    verdict.attempts = attempts
    return verdict


def _duplicate(verdict: Verdict) -> Verdict:
    """The verdict for an identical request answered by the same call: no tokens or attempts of its own."""
    return replace(verdict, dims=dict(verdict.dims) if verdict.dims else verdict.dims, prompt_tokens=0,
                   completion_tokens=0, attempts=0, latency_ms=None, cached=verdict.status == "ok")


class Judge:
    """Calls the judge model; `cache` is any object with get(key) -> dict | None and put(key, value) (and, to read
    and write many keys in one query, get_many(keys) and put_many({key: value})).

    `sleep(seconds)` and `rng` (anything with uniform(a, b)) replace the backoff's waiting and jitter
    in tests; by default a wait ends early when the run it belongs to is stopped.
    """

    def __init__(self, config: JudgeConfig, cache: Any = None, *, sleep: Callable[[float], None] | None = None,
                 rng: Any = None) -> None:
        problem = config.problem()
        if problem:
            raise ValueError(problem)
        self.config = config
        self.cache = cache
        self._endpoint = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        # Items beyond the endpoint's budget wait for a slot or sleep in backoff without holding one.
        self.workers = 2 * config.concurrency + 4
        self._limiter = endpoint_limiter(self._endpoint, config.concurrency, config.budget_url)
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def cache_key(self, prompt: Prompt) -> str:
        """sha256 over (endpoint, model, messages, temperature, max_tokens, prompt version)."""
        c = self.config
        payload = [self._endpoint, c.model, prompt.messages, c.temperature, c.max_tokens, prompt.version]
        canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def _lookup(self, prompt: Prompt, key: str, hit: dict | None | bool = False) -> Verdict | None:
        """A cached verdict, or None; token counts and attempts are 0 because no call was made. `hit` is the cache
        entry when it was already read (None: read and not found), else it is read now."""
        if self.cache is None or not self.config.use_cache:
            return None
        if hit is False:
            hit = self.cache.get(key)
        if not hit:
            return None
        verdict = _verdict_from_answer(prompt.parse, hit.get("answer") or "", 0, 0)
        if verdict.status != "ok":
            return None  # stored under an older parser: judge again
        verdict.cached = True
        verdict.attempts = 0
        return verdict

    def _reads_ahead(self) -> bool:
        """Whether run() reads the cache LOOKAHEAD requests at a time (a cache with get_many, in use)."""
        return self.cache is not None and self.config.use_cache and hasattr(self.cache, "get_many")

    def _keyed(self, items: Iterable[tuple[object, Prompt]],
               answered: dict[str, Verdict]) -> Iterator[tuple[object, Prompt, str, dict | None | bool]]:
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

    def _store(self, answers: list[tuple[str, Verdict]]) -> None:
        """Cache the parsed answers (also when reading is off), in one write with a cache that has put_many;
        unparsed answers and failures never."""
        entries = {key: {"answer": v.answer, "prompt_tokens": v.prompt_tokens, "completion_tokens": v.completion_tokens}
                   for key, v in answers if v.status == "ok" and not v.cached}
        if self.cache is None or not entries:
            return
        if hasattr(self.cache, "put_many"):
            self.cache.put_many(entries)
            return
        for key, entry in entries.items():
            self.cache.put(key, entry)

    def _body(self, prompt: Prompt) -> dict:
        """The chat completion request of a prompt."""
        c = self.config
        return {"model": c.model, "messages": prompt.messages, "temperature": c.temperature,
                "max_tokens": c.max_tokens}

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
        if not isinstance(exc, openai.APIStatusError):
            return
        asked = retry_after_s(exc.response.headers)
        if asked is None and exc.status_code != 429:
            return
        seconds = min(asked, MAX_WAIT_S) if asked is not None else wait
        if seconds:
            self._limiter.backoff(seconds)

    def _failure(self, exc: BaseException, attempts: int) -> Verdict:
        """A failed verdict whose error says why and after how many attempts."""
        c = self.config
        reason = _describe_error(exc, self._endpoint, c.api_key, c.timeout_s)
        if _is_retryable(exc):
            error = ngettext("%(reason)s (gave up after %(num)d attempt)",
                             "%(reason)s (gave up after %(num)d attempts)", attempts, reason=reason)
        else:
            error = ngettext("%(reason)s (%(num)d attempt; this error is not retried)",
                             "%(reason)s (%(num)d attempts; this error is not retried)", attempts, reason=reason)
        return Verdict("failed", error=error, attempts=attempts, retryable=_is_retryable(exc))

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
        verdict, so they stay pending for the next run.
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
                        yield tag, _duplicate(answered[key])
                    elif (cached := self._lookup(prompt, key, hit)) is not None:
                        yield tag, cached
                    else:
                        task = calls.start(prompt, key)
                        pending[task] = (key, [tag])
                        by_key[key] = task
                yield from ready
                ready = []
                if not pending:
                    return
                for task in calls.wait(stopping):
                    key, tags = pending.pop(task)
                    del by_key[key]
                    verdict = None if task.cancelled() else task.result()
                    if verdict is None:
                        continue  # dropped after should_stop()
                    if verdict.status == "ok" and self._reads_ahead():
                        answered[key] = verdict
                    ready.append((tags[0], verdict))
                    ready.extend((tag, _duplicate(verdict)) for tag in tags[1:])
        finally:
            calls.close()

    def close(self) -> None:
        """Nothing to release: each run() opens and closes its own connections."""


class _Calls:
    """The calls of one Judge.run(): its event loop, HTTP client and stop event.

    `room` bounds this run's calls in flight plus its answers not cached yet (config.concurrency): a call takes a
    place before it takes a slot of the endpoint's limiter, gives the slot back when its HTTP call ends, and its
    place once its answer is cached. Answers are cached together, at most every KEEP_EVERY_S, on the loop (so on
    the thread that runs run()), and a judgment is finished only once its answer is kept.
    """

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.stop = threading.Event()
        from judge_http import ChatClient  # aiohttp and the SDK's exceptions, loaded when a judge first runs

        self.loop = asyncio.new_event_loop()
        c = judge.config
        self.client = self.loop.run_until_complete(ChatClient.open(judge._endpoint, c.api_key or PLACEHOLDER_API_KEY,
                                                                   c.timeout_s, judge.workers))
        self.room = asyncio.Semaphore(c.concurrency)
        self.paid: set[asyncio.Task] = set()  # tasks whose call has started: a halt lets them finish
        self.tasks: set[asyncio.Task] = set()
        self.finished: list[asyncio.Task] = []
        self._arrived: asyncio.Future | None = None
        self._unkept: list[tuple[str, Verdict]] = []  # answers waiting for the next cache write
        self._kept: asyncio.Future | None = None  # done when they are written
        self._last_write = -math.inf
        self._waiter: ThreadPoolExecutor | None = None  # waits for the limiter when no slot is free at once

    def start(self, prompt: Prompt, key: str) -> asyncio.Task:
        """Schedule the judgment of one prompt (it starts when the loop runs)."""
        task = self.loop.create_task(self._judge(prompt, key))
        self.tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self.tasks.discard(task)
        self.paid.discard(task)
        self.finished.append(task)
        if self._arrived is not None and not self._arrived.done():
            self._arrived.set_result(None)

    def wait(self, stopping: Callable[[], bool]) -> list[asyncio.Task]:
        """Run the loop until some judgments have finished (checking should_stop() first and every _STOP_POLL_S);
        those."""
        stopping()
        while not self.finished:
            arrived = self._arrived = self.loop.create_future()
            timer = self.loop.call_later(_STOP_POLL_S, lambda: arrived.done() or arrived.set_result(None))
            try:
                self.loop.run_until_complete(arrived)
            finally:
                timer.cancel()
                self._arrived = None
            if not self.finished:
                stopping()
        if self.tasks:  # others may end within the wave: one hand-over to run() for all of them
            self.loop.run_until_complete(asyncio.sleep(WAVE_S))
        finished, self.finished = self.finished, []
        return finished

    async def _judge(self, prompt: Prompt, key: str) -> Verdict | None:
        """Attempts until an answer, a final failure or max_retries retries; None when the run stops first."""
        judge, task = self.judge, asyncio.current_task()
        body = judge._body(prompt)
        attempts = 0
        while True:
            async with self.room:
                if self.stop.is_set() or not await self._slot():
                    return None
                attempts += 1
                self.paid.add(task)
                error, started = None, time.monotonic()
                try:
                    verdict = _verdict_from_response(prompt.parse, await self.client.complete(body), attempts)
                except Exception as exc:  # noqa: BLE001 - every failure becomes a retry or a "failed" verdict
                    error = exc
                finally:
                    judge._limiter.release()
                latency_ms = round(1000 * (time.monotonic() - started))
                if error is None:
                    verdict.latency_ms = latency_ms
                    if verdict.status == "ok" and judge.cache is not None:
                        await self._keep(key, verdict)
                    return verdict
            self.paid.discard(task)
            if not _is_retryable(error) or attempts > judge.config.max_retries:
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

    async def _slot(self) -> bool:
        """A slot of the endpoint's limiter: at once when one is free, else waited for on a thread (the limiter
        blocks); False once the run stops."""
        limiter = self.judge._limiter
        if getattr(limiter, "try_acquire", None) and limiter.try_acquire():
            return True
        if self._waiter is None:
            self._waiter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-slot")
        future = self._waiter.submit(limiter.acquire, self.stop)
        try:
            return await asyncio.wrap_future(future, loop=self.loop)
        except asyncio.CancelledError:  # the thread may still take a slot for this cancelled call: give it back
            future.add_done_callback(
                lambda f: not f.cancelled() and f.exception() is None and f.result() and limiter.release())
            raise

    async def _keep(self, key: str, verdict: Verdict) -> None:
        """Cache an answer with the others that arrive before the next write (at most one write per KEEP_EVERY_S,
        since each is a database transaction)."""
        if self._kept is None:
            self._kept = self.loop.create_future()
            self.loop.call_at(max(self.loop.time(), self._last_write + KEEP_EVERY_S), self._write)
        self._unkept.append((key, verdict))
        await asyncio.shield(self._kept)

    def _write(self) -> None:
        """Write the answers waiting to be kept; their judgments then finish (or raise the write's error)."""
        batch, kept = self._unkept, self._kept
        self._unkept, self._kept = [], None
        self._last_write = self.loop.time()
        try:
            self.judge._store(batch)
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
            self.loop.run_until_complete(self.client.close())
        finally:
            if self._waiter is not None:
                self._waiter.shutdown(wait=True, cancel_futures=True)
            self.loop.close()


def test_connection(config: JudgeConfig) -> dict:
    """One tiny real chat completion (no retries, no cache): {ok, model, answer, latency_s, error}."""
    result: dict[str, Any] = {"ok": False, "model": config.model, "answer": "", "latency_s": 0.0,
                              "error": config.problem()}
    if result["error"]:
        return result
    endpoint = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
    client = _make_client(endpoint, config, 1)
    start = time.perf_counter()
    try:
        response = client.chat.completions.create(
            model=config.model, messages=[{"role": "user", "content": CONNECTION_PROMPT}],
            temperature=config.temperature, max_tokens=CONNECTION_MAX_TOKENS,
        )
    except Exception as exc:  # noqa: BLE001 - the reason is the result
        result["error"] = _describe_error(exc, endpoint, config.api_key, config.timeout_s)
    else:
        result.update(ok=True, model=getattr(response, "model", None) or config.model,
                      answer=_answer_text(response.model_dump())[:200])
    finally:
        result["latency_s"] = round(time.perf_counter() - start, 3)
        client.close()
    return result


test_connection.__test__ = False  # type: ignore[attr-defined]  # a helper, not a pytest test

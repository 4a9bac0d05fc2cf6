"""The LLM judge: what the rest of the dashboard uses of it, in one place.

A kind asks for a judgment with a `Prompt` and gets a `Verdict`; `Judge` makes the calls that `JudgeConfig`
describes. Each module has one job:

    config.py     JudgeConfig and the variables it is read from
    prompt.py     Prompt, Verdict, and how a chat completion becomes a Verdict
    retry.py      error text without the API key, what is retried, Retry-After, backoff
    limiter.py    the budget of calls in flight per endpoint within one process
    budget.py     the same budget shared by every process of a deployment, on Redis (loaded only when configured)
    cache.py      the cache key of a judgment, a cached verdict, keeping answers (Judge and batch mode)
    engine.py     Judge: the calls' event loop, retries, cache use; test_connection
    breaker.py    a run's circuit breaker per endpoint: one call at a time until it answers, none once it is dead
    http.py       one judge call POSTed with aiohttp (loaded when a judge first runs)
    batch.py      batch mode: an evaluation's judgments through the OpenAI Batch API
    endpoints.py  the named endpoints of JUDGE_ENDPOINTS and the choice of one
    prices.py     what an endpoint's tokens cost (and the Batch API's)
    keys.py       how a judgment's mode names its question, judge and sample
    usage.py      the `judge` block of a result document: settings, calls, tokens, cost (and the cost of tokens)

`batch` and `endpoints` are exported as modules (`batch.submit`, `endpoints.parse`); `budget` and `http` are not
imported here, so that redis and aiohttp are loaded only by the processes that need them.
"""
from __future__ import annotations

from judge import batch, endpoints
from judge.breaker import CONNECTION_FAILURES, DEAD_STATUSES, Breaker, Breakers, EndpointDown
from judge.config import DEFAULT_BASE_URL, LANGUAGES, PLACEHOLDER_API_KEY, JudgeConfig
from judge.engine import Judge, keep_connections, load_client, release_connections, test_connection
from judge.keys import judge_labels, judge_of, mode_key, panel_settings, sample_version, split_mode
from judge.limiter import EndpointLimiter, endpoint_limiter
from judge.prices import prices
from judge.prompt import Parser, Prompt, Verdict
from judge.retry import MAX_WAIT_S, backoff_s, retry_after_s
from judge.usage import cost, judge_summary, usage_totals

__all__ = [
    "CONNECTION_FAILURES", "DEAD_STATUSES", "DEFAULT_BASE_URL", "LANGUAGES", "MAX_WAIT_S", "PLACEHOLDER_API_KEY",
    "Breaker", "Breakers", "EndpointDown", "EndpointLimiter", "Judge", "JudgeConfig", "Parser", "Prompt", "Verdict",
    "backoff_s", "batch", "cost", "endpoint_limiter", "endpoints", "judge_labels", "judge_of", "judge_summary",
    "keep_connections", "load_client", "mode_key", "panel_settings", "prices", "release_connections", "retry_after_s",
    "sample_version", "split_mode", "test_connection", "usage_totals",
]

"""The judge's public face, by the name the design card gives it: `Judge`, `JudgeConfig`, `Prompt`, `Verdict` and
`test_connection`, with the settings and retry helpers callers have always imported from here.

The code is in the judge/ package (judge/__init__.py lists its modules): this module only re-exports it, so
`from evaluator import Judge, JudgeConfig, Prompt, Verdict` keeps working.
"""
from __future__ import annotations

from judge import (
    DEFAULT_BASE_URL,
    LANGUAGES,
    MAX_WAIT_S,
    PLACEHOLDER_API_KEY,
    EndpointLimiter,
    Judge,
    JudgeConfig,
    Parser,
    Prompt,
    Verdict,
    backoff_s,
    endpoint_limiter,
    retry_after_s,
    test_connection,
)

__all__ = [
    "DEFAULT_BASE_URL", "LANGUAGES", "MAX_WAIT_S", "PLACEHOLDER_API_KEY",
    "EndpointLimiter", "Judge", "JudgeConfig", "Parser", "Prompt", "Verdict",
    "backoff_s", "endpoint_limiter", "retry_after_s", "test_connection",
]

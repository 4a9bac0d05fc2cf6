"""The judge's settings: JudgeConfig, read from JUDGE_* (else OPENAI_*) variables or given by a caller, each value
checked and converted (what a bad value is, in words a settings page can show)."""
from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, SupportsFloat, SupportsIndex, SupportsInt

from judge.retry import MAX_WAIT_S, safe_url
from translations import _

LANGUAGES = ("en", "zh")  # the languages prompts are written in (JudgeConfig.language)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local OpenAI-compatible servers (vLLM, Ollama, ...) accept any key; the SDK insists on one.
PLACEHOLDER_API_KEY = "EMPTY"


def _as_text(name: str, value: object) -> str:
    """A non-empty string setting."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(_("%(name)s must be a non-empty string, got %(value)s", name=name, value=repr(value)))
    return value.strip()


def _as_int(name: str, value: object, minimum: int) -> int:
    """An integer setting >= minimum, from an int or its decimal string."""
    number = None
    if isinstance(value, (str, SupportsInt, SupportsIndex)) and not isinstance(value, bool):  # a number or its text
        try:
            number = int(value.strip()) if isinstance(value, str) else int(value)
        except (TypeError, ValueError):
            pass
    if number is None or (isinstance(value, float) and value != number) or number < minimum:
        raise ValueError(_("%(name)s must be an integer >= %(minimum)s, got %(value)s", name=name, minimum=minimum,
                           value=repr(value)))
    return number


def _as_float(name: str, value: object, low: float, high: float, low_inclusive: bool) -> float:
    """A finite float setting in [low, high], or in (low, high] when low itself is not allowed."""
    number = math.nan
    if isinstance(value, (str, SupportsFloat, SupportsIndex)) and not isinstance(value, bool):  # a number or its text
        try:
            number = float(value.strip()) if isinstance(value, str) else float(value)
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
                           value=repr(safe_url(text))))
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
    "structured_output": ("JUDGE_STRUCTURED_OUTPUT", _as_bool),
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
    # whether the endpoint takes a prompt's `response_format` (structured output): JUDGE_STRUCTURED_OUTPUT, and for
    # an evaluation its endpoint's setting (judge/endpoints.py)
    structured_output: bool = True
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

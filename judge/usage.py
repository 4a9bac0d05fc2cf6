"""The `judge` block of a result document: the judge's settings, its calls, tokens and their cost."""
from __future__ import annotations

from urllib.parse import urlsplit

from judge.config import JudgeConfig


def endpoint_label(base_url: str | None) -> str:
    """Scheme and host of the judge endpoint, without path, query or credentials."""
    if not base_url:
        return "default"
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


USAGE_FIELDS = ("calls", "attempts", "cache_hits", "failed", "unparsed", "prompt_tokens", "completion_tokens")


def cost(usage: dict, prices: dict | None) -> float | None:
    """What the tokens cost at the configured prices per million tokens, or None without prices."""
    if not prices or prices.get("prompt") is None or prices.get("completion") is None:
        return None
    return (usage["prompt_tokens"] * prices["prompt"] + usage["completion_tokens"] * prices["completion"]) / 1e6


def usage_totals(rows: list[dict], prices: dict | None) -> dict:
    """Calls, cache hits, failures, tokens and cost summed over usage rows."""
    totals = {k: sum(row.get(k) or 0 for row in rows) for k in USAGE_FIELDS}
    return {**totals, "cost": cost(totals, prices)}


def judge_summary(config: JudgeConfig, usage: list[dict], prices: dict | None, methods: list[str],
                  prompt_version: str) -> dict:
    """The `judge` block: settings that shaped the scores, and what the calls cost in all and per method."""
    return {"model": config.model, "endpoint": endpoint_label(config.base_url), "prompt_version": prompt_version,
            "temperature": config.temperature, "language": config.language, "max_tokens": config.max_tokens,
            "prices_per_million": prices, **usage_totals(usage, prices),
            "by_method": {m: usage_totals([r for r in usage if r["method"] == m], prices) for m in methods}}

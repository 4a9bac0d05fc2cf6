"""What a judge's tokens cost: an endpoint's prices per million prompt and completion tokens, and the Batch API's."""
from __future__ import annotations

import math
from typing import Mapping

from judge import endpoints as judge_endpoints
from translations import _

PRICE_VARIABLES = ("JUDGE_PRICE_PROMPT_PER_M", "JUDGE_PRICE_COMPLETION_PER_M")
BATCH_PRICE_VARIABLE = "JUDGE_BATCH_PRICE_FACTOR"
BATCH_PRICE_FACTOR = 0.5  # OpenAI bills its Batch API at half the per-call price


def _number(environ: Mapping[str, str], variable: str) -> float | None:
    """A non-negative number from the environment (None when not set); ValueError when invalid."""
    text = (environ.get(variable) or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(_("%(name)s must be a number of 0 or more, got %(value)s", name=variable, value=repr(text)))
    return value


def prices(environ: Mapping[str, str], batch: bool = False, endpoint: str = judge_endpoints.DEFAULT) -> dict:
    """An endpoint's prices per million prompt and completion tokens (None when not configured): the default
    endpoint's are JUDGE_PRICE_PROMPT_PER_M and JUDGE_PRICE_COMPLETION_PER_M, a named endpoint's its own
    (price_prompt_per_m, price_completion_per_m), never another's; ValueError when invalid. With `batch`, the Batch
    API's: those prices times JUDGE_BATCH_PRICE_FACTOR (default 0.5), also given as `batch_factor`."""
    if endpoint == judge_endpoints.DEFAULT:
        out = {"prompt": _number(environ, PRICE_VARIABLES[0]), "completion": _number(environ, PRICE_VARIABLES[1])}
    else:
        own = judge_endpoints.choose(judge_endpoints.parse(environ), endpoint).prices
        out = {"prompt": own[0], "completion": own[1]}
    if batch:
        factor = _number(environ, BATCH_PRICE_VARIABLE)
        factor = BATCH_PRICE_FACTOR if factor is None else factor
        out = {name: None if price is None else price * factor for name, price in out.items()}
        out["batch_factor"] = factor
    return out

"""The judge settings a request names, checked before anything is recorded: one judge or a panel, overrides the
request may make, the endpoint the operator named, prices; and the judge configuration an evaluation runs with.

Evaluations (pipeline/evaluations.py), simulations that score their files (simulate/) and the pages check requests
here; RequestError says what cannot be honoured.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from judge import JudgeConfig, prices
from judge import endpoints as judge_endpoints
from kinds.kind import as_flag
from translations import _

# Settings a request may override per evaluation. The URL and the key come only from the endpoint the request
# picks among those the operator named ("endpoint", or a "base_url" equal to one of theirs).
JUDGE_OVERRIDES = ("model", "concurrency", "temperature", "language", "max_tokens", "timeout_s", "max_retries",
                   "use_cache")
REQUEST_FIELDS = ("endpoint", "base_url", "batch", *JUDGE_OVERRIDES)
MAX_JUDGES = 5  # of a panel
FAILED_RETRY_S = 600.0  # JUDGE_FAILED_RETRY_S: the longest an evaluation waits in all to ask failed judgments again


class RequestError(ValueError):
    """A request to create or change an evaluation that cannot be honoured; the message says why."""


def failed_retry_s(environ: Mapping[str, str]) -> float:
    """JUDGE_FAILED_RETRY_S: seconds an evaluation may wait in all before asking failed judgments again (0: never);
    ValueError when it is not a number >= 0."""
    raw = str(environ.get("JUDGE_FAILED_RETRY_S") or "").strip()
    try:
        value = float(raw) if raw else FAILED_RETRY_S
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(_("JUDGE_FAILED_RETRY_S must be a number of seconds >= 0, got %(value)s.", value=repr(raw)))
    return value


def judge_config(settings: Mapping, environ: Mapping[str, str]) -> JudgeConfig:
    """The judge configuration of an evaluation: its endpoint's URL and key, the environment's defaults, then its
    stored overrides. ValueError when the endpoint is unknown or does not allow the model."""
    endpoint = judge_endpoints.choose(judge_endpoints.parse(environ), settings.get("endpoint"),
                                      None if settings.get("endpoint") else settings.get("base_url"))
    defaults = {k: v for k, v in environ.items()
                if k not in judge_endpoints.URL_VARIABLES + judge_endpoints.KEY_VARIABLES}
    config = replace(JudgeConfig.from_env(defaults, **{k: settings.get(k) for k in JUDGE_OVERRIDES}),
                     base_url=endpoint.base_url, api_key=endpoint.api_key,
                     structured_output=endpoint.structured_output)
    if not endpoint.allows(config.model):
        raise ValueError(_("Judge endpoint '%(name)s' does not allow model %(model)s. Allowed: %(models)s.",
                           name=endpoint.name, model=repr(config.model), models=", ".join(endpoint.models)))
    return config


def check_judges(judge: Mapping | None, judges: list | None, environ: Mapping[str, str]) -> dict:
    """The judge settings an evaluation records, checked now: its one judge's, or its first judge's with the whole
    panel's under "judges"; RequestError when they cannot be used (a simulation that scores its files checks them
    before it starts)."""
    if judges is None:
        return _judge_settings(judge, environ)
    if not isinstance(judges, list) or not 1 <= len(judges) <= MAX_JUDGES or not all(
            isinstance(j, Mapping) for j in judges):
        raise RequestError(_("'judges' must be a list of 1 to %(max)s objects of judge settings.", max=MAX_JUDGES))
    panel = [_judge_settings({**(judge or {}), **j}, environ) for j in judges]
    seen: dict[tuple, int] = {}
    for number, settings in enumerate(panel, 1):
        same = seen.setdefault((settings["base_url"], settings["model"]), number)
        if same != number:
            raise RequestError(_("Judge %(number)s is the same model on the same endpoint as judge %(same)s; a "
                                 "panel needs different judges.", number=number, same=same))
    if len({bool(s.get("batch")) for s in panel}) > 1:
        raise RequestError(_("Either every judge of a panel uses batch mode or none does."))
    return panel[0] if len(panel) == 1 else {**panel[0], "judges": panel}


def _judge_settings(judge: Mapping | None, environ: Mapping[str, str]) -> dict:
    """The judge settings an evaluation records (overrides checked, prices, never the key)."""
    overrides = dict(judge or {})
    if "api_key" in overrides:
        raise RequestError(_("The judge's API key cannot be sent with a request; set JUDGE_API_KEY in the "
                             "server's environment or save it on the settings page."))
    bad = sorted(set(overrides) - set(REQUEST_FIELDS))
    if bad:
        raise RequestError(_("Unknown judge settings: %(bad)s. Allowed: %(allowed)s.", bad=", ".join(bad),
                             allowed=", ".join(REQUEST_FIELDS)))
    batch = as_flag(overrides.pop("batch", False))
    if batch is None:
        raise RequestError(_("'batch' must be true or false."))
    try:
        endpoint = judge_endpoints.choose(judge_endpoints.parse(environ), overrides.pop("endpoint", None),
                                          overrides.pop("base_url", None))
        config = judge_config({**overrides, "endpoint": endpoint.name}, environ)
        price = prices(environ, batch, endpoint.name)  # its own endpoint's, never another's
        failed_retry_s(environ)  # a bad setting is reported now, not when the evaluation ends
    except ValueError as exc:
        raise RequestError(str(exc)) from exc
    problem = config.problem()
    if problem:
        raise RequestError(problem)
    return {"endpoint": endpoint.name, "base_url": config.base_url,
            **{k: v for k, v in config.public().items() if k in JUDGE_OVERRIDES}, "prices": price,
            **({"batch": True} if batch else {})}

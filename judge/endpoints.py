"""Judge endpoints the operator has named: each binds a base URL to its own API key and allowed models.

A request never brings its own URL: it picks one of these endpoints (by name, or by a base URL equal to
one of theirs), so a key is only ever sent to the URL it was configured with.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Mapping

from translations import _

DEFAULT = "default"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
# Variables that carry the default endpoint's URL and key (JUDGE_* wins over OPENAI_*).
URL_VARIABLES = ("JUDGE_BASE_URL", "OPENAI_BASE_URL")
KEY_VARIABLES = ("JUDGE_API_KEY", "OPENAI_API_KEY")
# A named endpoint's own prices per million prompt and completion tokens (the default endpoint's are
# JUDGE_PRICE_PROMPT_PER_M and JUDGE_PRICE_COMPLETION_PER_M, judge/settings.py)
PRICE_FIELDS = ("price_prompt_per_m", "price_completion_per_m")


@dataclass(frozen=True)
class Endpoint:
    """One judge endpoint: where to call, with which key, and which models may be asked for."""

    name: str
    base_url: str | None  # None: the SDK's default (OpenAI); only the default endpoint may leave it out
    api_key: str | None = field(default=None, repr=False)
    models: tuple[str, ...] = ()  # empty: any model
    source: str = "environment"  # or "settings"
    prices: tuple[float | None, float | None] = (None, None)  # per million prompt, completion tokens (named ones)
    structured_output: bool = True  # whether it takes a JSON Schema `response_format` (structured output)

    def public(self) -> dict:
        """Everything but the key (only whether one is set)."""
        return {"name": self.name, "base_url": self.base_url, "models": list(self.models),
                "api_key_set": bool(self.api_key), "source": self.source,
                "prices": {"prompt": self.prices[0], "completion": self.prices[1]},
                "structured_output": self.structured_output}

    def allows(self, model: str) -> bool:
        """Whether this endpoint may be asked for `model`."""
        return not self.models or model in self.models


def normalise_url(url: str | None) -> str | None:
    """A base URL compared without its trailing slashes."""
    return url.strip().rstrip("/") if url else None


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = (environ.get(name) or "").strip()
        if value:
            return value
    return None


def split_models(text: str | None) -> tuple[str, ...]:
    """Model names from a comma-separated list."""
    return tuple(m.strip() for m in (text or "").split(",") if m.strip())


def check_name(name: object) -> str:
    """A valid endpoint name, or ValueError saying what a name may hold."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ValueError(_("An endpoint name is 1 to 40 letters, digits, '.', '_' or '-', got %(name)s",
                           name=repr(name)))
    return name


def check_url(name: str, url: object) -> str:
    """An http(s) base URL, or ValueError naming the endpoint."""
    normal = normalise_url(url) if isinstance(url, str) and re.match(r"^https?://[^\s/]+\S*$", url.strip()) else None
    if normal is None:
        raise ValueError(_("The base URL of judge endpoint '%(name)s' must be an http:// or https:// URL, got "
                           "%(value)s", name=name, value=repr(url)))
    return normal


def parse(environ: Mapping[str, str]) -> dict[str, Endpoint]:
    """The endpoints in force: `default` (JUDGE_BASE_URL, JUDGE_API_KEY, JUDGE_MODELS) and those of
    JUDGE_ENDPOINTS, a JSON object {name: {base_url, api_key or api_key_env, models}}. ValueError when invalid."""
    base_url = _first(environ, URL_VARIABLES)
    endpoints = {DEFAULT: Endpoint(DEFAULT, check_url(DEFAULT, base_url) if base_url else None,
                                   _first(environ, KEY_VARIABLES), split_models(environ.get("JUDGE_MODELS")),
                                   structured_output=check_flag(DEFAULT, "JUDGE_STRUCTURED_OUTPUT",
                                                                environ.get("JUDGE_STRUCTURED_OUTPUT")))}
    text = (environ.get("JUDGE_ENDPOINTS") or "").strip()
    if not text:
        return endpoints
    try:
        named = json.loads(text)
    except ValueError as exc:
        raise ValueError(_("JUDGE_ENDPOINTS must be a JSON object such as {\"local\": {\"base_url\": "
                           "\"http://localhost:8000/v1\", \"models\": [\"Qwen2.5-72B-Instruct\"]}}: %(error)s",
                           error=exc)) from exc
    if not isinstance(named, dict):
        raise ValueError(_("JUDGE_ENDPOINTS must be a JSON object of endpoints by name."))
    for name, spec in named.items():
        endpoints[name] = _endpoint(name, spec, environ, endpoints)
    return endpoints


def _endpoint(name: str, spec: object, environ: Mapping[str, str], known: Mapping[str, Endpoint]) -> Endpoint:
    """One entry of JUDGE_ENDPOINTS, checked."""
    check_name(name)
    if name in known:
        raise ValueError(_("Judge endpoint '%(name)s' is defined twice.", name=name))
    if not isinstance(spec, dict):
        raise ValueError(_("Judge endpoint '%(name)s' must be an object with base_url, api_key and models.",
                           name=name))
    unknown = sorted(set(spec) - {"base_url", "api_key", "api_key_env", "models", "source", "structured_output",
                                  *PRICE_FIELDS})
    if unknown:
        raise ValueError(_("Judge endpoint '%(name)s' has unknown fields: %(fields)s. Allowed: base_url, api_key, "
                           "api_key_env, models, price_prompt_per_m, price_completion_per_m, structured_output.",
                           name=name, fields=", ".join(unknown)))
    key = spec.get("api_key")
    if spec.get("api_key_env"):
        key = environ.get(str(spec["api_key_env"]))
    models = spec.get("models") or []
    if isinstance(models, str):
        models = split_models(models)
    if not (isinstance(models, (list, tuple)) and all(isinstance(m, str) and m.strip() for m in models)):
        raise ValueError(_("The models of judge endpoint '%(name)s' must be a list of model names.", name=name))
    if key is not None and not isinstance(key, str):
        raise ValueError(_("The API key of judge endpoint '%(name)s' must be a string.", name=name))
    prompt, completion = (check_price(name, field, spec.get(field)) for field in PRICE_FIELDS)
    return Endpoint(name, check_url(name, spec.get("base_url")), (key or "").strip() or None,
                    tuple(m.strip() for m in models), str(spec.get("source") or "environment"), (prompt, completion),
                    check_flag(name, "structured_output", spec.get("structured_output")))


def check_flag(name: str, field: str, value: object) -> bool:
    """An endpoint's yes/no setting (true when not given): a boolean, or 1/0, true/false, yes/no, on/off as text;
    ValueError naming the endpoint and the field otherwise."""
    if value is None or isinstance(value, bool):
        return value is not False
    text = str(value).strip().lower()
    if text in ("", "1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(_("The %(field)s of judge endpoint '%(name)s' must be true or false, got %(value)s.",
                       field=field, name=name, value=repr(value)))


def check_price(name: str, field: str, value: object) -> float | None:
    """A named endpoint's price per million tokens: a number of 0 or more (written as a number or a text), None
    when not given; ValueError naming the endpoint and the field otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = math.nan
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            number = float(value)
        except ValueError:
            pass
    if not math.isfinite(number) or number < 0:
        raise ValueError(_("%(field)s of judge endpoint '%(name)s' must be a number of 0 or more, got %(value)s",
                           field=field, name=name, value=repr(value)))
    return number


def describe(endpoints: Mapping[str, Endpoint]) -> str:
    """The endpoints as 'name (url)', for messages."""
    return ", ".join(f"{e.name} ({e.base_url or 'https://api.openai.com/v1'})" for e in endpoints.values())


def choose(endpoints: Mapping[str, Endpoint], name: object = None, base_url: object = None) -> Endpoint:
    """The endpoint a request asks for, by name or by an equal base URL (default: `default`); ValueError for
    any other, before any connection is made."""
    if name not in (None, ""):
        if not isinstance(name, str) or name not in endpoints:
            raise ValueError(_("Unknown judge endpoint %(name)s. This server allows: %(known)s.", name=repr(name),
                               known=describe(endpoints)))
        chosen = endpoints[name]
        if base_url not in (None, "") and normalise_url(str(base_url)) != chosen.base_url:
            raise ValueError(_("base_url %(url)s is not the URL of judge endpoint '%(name)s'; send the endpoint's "
                               "name alone.", url=repr(base_url), name=name))
        return chosen
    if base_url in (None, ""):
        return endpoints[DEFAULT]
    wanted = normalise_url(str(base_url))
    for endpoint in endpoints.values():
        if endpoint.base_url == wanted:
            return endpoint
    raise ValueError(_("The judge endpoint %(url)s is not one this server allows, so no request was sent to it. "
                       "Choose one of: %(known)s (by its name, as \"endpoint\"), or ask an admin to add it on the "
                       "settings page or in JUDGE_ENDPOINTS.", url=repr(base_url), known=describe(endpoints)))

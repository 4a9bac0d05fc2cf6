"""A request to run a simulation, checked whole before anything runs or any connection is made: the personas, the
simulator and methods (each on an endpoint the operator named, with a model it allows), rounds, protocol and the
judge (and rubric) that scores the files. Gives the settings a simulation keeps (never a URL's key)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from judge import LANGUAGES, JudgeConfig
from judge import endpoints as judge_endpoints
from kinds import registry
from kinds.kind import HoldsPersonas, as_flag
from pipeline.judge_requests import RequestError, check_judges, judge_config
from simulate import personas as persona_source
from simulate.plan import PROTOCOLS, USER
from storage import blobs
from translations import _

MAX_METHODS = 8
MAX_ROUNDS = 20
MAX_PERSONAS = 1000
MAX_NAME = 80
MAX_SYSTEM_PROMPT = 20_000
USER_RETRIES = 2  # the simulator's answers refused by the checks, asked again with the reason
FIELDS = ("personas_upload_id", "personas", "simulator", "methods", "rounds", "protocol", "reference", "score",
          "judge", "judges", "rubric", "sample")
SIMULATOR_FIELDS = ("model", "endpoint", "temperature", "language", "max_tokens")
METHOD_FIELDS = ("name", "model", "endpoint", "system_prompt", "temperature", "max_tokens")
SECRET_FIELDS = ("base_url", "api_key")
DEFAULTS = {"simulator": {"temperature": 0.7, "max_tokens": 256}, "method": {"temperature": 0.0, "max_tokens": 512}}


def settings_of(store, uploads: blobs.Blobs | None, request: Any, environ: Mapping[str, str]) -> dict:
    """The settings of a simulation a request asks for; RequestError saying what is wrong, before any call."""
    if not isinstance(request, Mapping):
        raise RequestError(_("Send a JSON object such as {\"personas\": \"builtin\", \"simulator\": {...}, "
                             "\"methods\": [...], \"rounds\": 5}."))
    unknown = sorted(set(request) - set(FIELDS))
    if unknown:
        raise RequestError(_("Unknown fields: %(bad)s. Allowed: %(allowed)s.", bad=", ".join(unknown),
                             allowed=", ".join(FIELDS)))
    source, personas = _personas(store, uploads, request)
    rounds = request.get("rounds")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS:
        raise RequestError(_("'rounds' must be a whole number from 1 to %(max)s.", max=MAX_ROUNDS))
    protocol = request.get("protocol") or "shared"
    if protocol not in PROTOCOLS:
        raise RequestError(_("'protocol' must be one of %(choices)s.", choices=", ".join(PROTOCOLS)))
    simulator = _speaker(request.get("simulator"), SIMULATOR_FIELDS, "simulator", environ, _("the simulator"))
    language = (request.get("simulator") or {}).get("language") or "en"
    if language not in LANGUAGES:
        raise RequestError(_("The simulator's language must be one of %(choices)s.", choices=", ".join(LANGUAGES)))
    methods = _methods(request.get("methods"), environ)
    names = [m["name"] for m in methods]
    reference = request.get("reference") or names[0]
    if reference not in names:
        raise RequestError(_("'reference' must be the name of one of the methods: %(names)s.",
                             names=", ".join(names)))
    score = as_flag(request.get("score", False))
    if score is None:
        raise RequestError(_("'score' must be true or false."))
    judge, judges = request.get("judge"), request.get("judges")
    if judge is not None and not isinstance(judge, Mapping):
        raise RequestError(_("'judge' must be an object of judge settings."))
    if score:
        check_judges(judge, judges, environ)
    rubric = request.get("rubric")
    if rubric not in (None, "") and (not isinstance(rubric, str) or not score):
        raise RequestError(_("'rubric' names the rubric the files are scored under (its id or SHA-256): a text, with "
                             "\"score\": true."))
    sample = request.get("sample", 0)
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise RequestError(_("'sample' must be a whole number of 0 or more."))
    return {"personas_source": source, "personas": [p.to_dict() for p in personas],
            "simulator": {**simulator, "language": language}, "methods": methods, "rounds": rounds,
            "protocol": protocol, "reference": reference, "score": score, "judge": dict(judge or {}),
            "judges": judges, "rubric": rubric or None, "sample": sample, "user_retries": USER_RETRIES}


def _personas(store, uploads: blobs.Blobs | None, request: Mapping) -> tuple[str, list]:
    """Where the personas come from ("builtin" or an upload id) and the personas."""
    upload_id, named = request.get("personas_upload_id"), request.get("personas")
    if upload_id and named:
        raise RequestError(_("Send either 'personas_upload_id' or \"personas\": \"builtin\", not both."))
    if named == "builtin" and not upload_id:
        try:
            return "builtin", persona_source.builtin()
        except (OSError, ValueError) as exc:  # an installation without the file, or with a broken one
            raise RequestError(_("The built-in personas cannot be read (%(error)s); upload a personas file instead.",
                                 error=getattr(exc, "strerror", None) or exc)) from exc
    if named not in (None, "") or not upload_id:
        raise RequestError(_("Choose the personas: \"personas\": \"builtin\", or 'personas_upload_id' with the id of "
                             "a personas or dialogue upload."))
    upload = store.get_upload(upload_id) if isinstance(upload_id, str) else None
    if upload is None:
        raise RequestError(_("Upload '%(id)s' does not exist. Upload the file first.", id=upload_id))
    kind = registry.get(upload["kind"]) if upload["kind"] in registry.names() else None
    if not isinstance(kind, HoldsPersonas) or uploads is None:
        raise RequestError(_("Upload '%(id)s' is a %(kind)s upload; personas come from an upload of one of these "
                             "kinds: %(kinds)s.", id=upload_id, kind=upload["kind"],
                             kinds=", ".join(k.name for k in registry.having(HoldsPersonas))))
    from pipeline.ingest import stored_name

    try:
        with uploads.open(stored_name(upload)) as raw:
            found = persona_source.read(kind, raw)
    except FileNotFoundError as exc:
        raise RequestError(_("The uploaded file is missing from the uploads folder; upload it again.")) from exc
    except ValueError as exc:  # a stored file that no longer reads as it was validated
        raise RequestError(str(exc)) from exc
    if not found:
        raise RequestError(_("Upload '%(id)s' holds no persona.", id=upload_id))
    if len(found) > MAX_PERSONAS:
        raise RequestError(_("A simulation takes at most %(max)s personas; upload '%(id)s' has %(count)s.",
                             max=MAX_PERSONAS, id=upload_id, count=len(found)))
    if len({p.persona_id for p in found}) != len(found):
        raise RequestError(_("The personas of upload '%(id)s' do not all have their own id.", id=upload_id))
    return upload_id, found


def _methods(methods: Any, environ: Mapping[str, str]) -> list[dict]:
    """The methods, each checked, with unique names."""
    if not isinstance(methods, list) or not 1 <= len(methods) <= MAX_METHODS:
        raise RequestError(_("'methods' must be a list of 1 to %(max)s methods, each {\"name\", \"model\", "
                             "\"endpoint\"}.", max=MAX_METHODS))
    checked = []
    for number, method in enumerate(methods, 1):
        who = _("method %(number)s", number=number)
        speaker = _speaker(method, METHOD_FIELDS, "method", environ, who)
        name = method.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME or name.strip() == USER:
            raise RequestError(_("The name of %(who)s must be a non-empty string of at most %(max)s characters, other "
                                 "than '%(user)s'.", who=who, max=MAX_NAME, user=USER))
        prompt = method.get("system_prompt") or ""
        if not isinstance(prompt, str) or len(prompt) > MAX_SYSTEM_PROMPT:
            raise RequestError(_("The system prompt of %(who)s must be a string of at most %(max)s characters.",
                                 who=who, max=MAX_SYSTEM_PROMPT))
        checked.append({"name": name.strip(), **speaker, "system_prompt": prompt})
    names = [m["name"] for m in checked]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise RequestError(_("Method names must differ; given more than once: %(names)s.", names=", ".join(twice)))
    return checked


def _speaker(spec: Any, fields: tuple[str, ...], role: str, environ: Mapping[str, str], who: str) -> dict:
    """A speaker's model, endpoint (by name, among those the operator named), temperature and max tokens."""
    if not isinstance(spec, Mapping):
        raise RequestError(_("Give %(who)s as an object with at least \"model\".", who=who))
    secret = sorted(set(spec) & set(SECRET_FIELDS))
    if secret:
        raise RequestError(_("%(who)s names %(fields)s: a request never carries a URL or a key. Choose one of the "
                             "endpoints the operator named (\"endpoint\": its name).", who=who,
                             fields=", ".join(secret)))
    unknown = sorted(set(spec) - set(fields))
    if unknown:
        raise RequestError(_("Unknown fields of %(who)s: %(bad)s. Allowed: %(allowed)s.", who=who,
                             bad=", ".join(unknown), allowed=", ".join(fields)))
    model = spec.get("model")
    if not isinstance(model, str) or not model.strip():
        raise RequestError(_("%(who)s needs a \"model\".", who=who))
    temperature = spec.get("temperature", DEFAULTS[role]["temperature"])
    max_tokens = spec.get("max_tokens", DEFAULTS[role]["max_tokens"])
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or \
            not (math.isfinite(temperature) and 0 <= temperature <= 2):
        raise RequestError(_("The temperature of %(who)s must be a number from 0 to 2.", who=who))
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 32_768:
        raise RequestError(_("max_tokens of %(who)s must be a whole number from 1 to 32768.", who=who))
    try:
        endpoint = judge_endpoints.choose(judge_endpoints.parse(environ), spec.get("endpoint") or None)
        settings = {"model": model.strip(), "endpoint": endpoint.name, "temperature": float(temperature),
                    "max_tokens": max_tokens}
        problem = speaker_config(settings, environ).problem()
    except ValueError as exc:
        raise RequestError(f"{who}: {exc}") from exc
    if problem:
        raise RequestError(f"{who}: {problem}")
    return settings


def speaker_config(settings: Mapping, environ: Mapping[str, str]) -> JudgeConfig:
    """The calls' configuration of a speaker's settings: its endpoint's URL and key, the environment's concurrency,
    timeout and retries; ValueError when the endpoint is gone or does not allow the model."""
    return judge_config(settings, environ)

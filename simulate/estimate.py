"""What a simulation will cost before it starts: every call it makes (the simulator's user messages, each method's
replies and, when its files are scored, the judge's judgments), the tokens of each as if every answer were as long
as its settings allow (4 characters a token), each speaker priced at its own endpoint's prices.

The judge's calls are those the dialogue kind plans and builds for the files the simulation writes: its real
prompts, for a file whose sessions are all complete, each text at its longest. To build them cheaply, every user
message and reply of that file is a short marker, and each marker found in a prompt counts as the text it stands for.
"""
from __future__ import annotations

import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import BinaryIO

from judge import cost, judge_labels, judge_of, panel_settings, prices
from kinds.host import Store
from kinds.kind import StartError, StartRequest
from pipeline.judge_requests import RequestError, check_judges, judge_config
from simulate import prompts
from simulate.output import Output, dialogue_kind, session
from simulate.personas import Persona
from simulate.plan import USER, Conversation, Plan

CHARS_PER_TOKEN = 4
FIELDS = ("calls", "prompt_tokens", "completion_tokens")
MARKER = re.compile(r"⟦[ur]\d+(?:\.\d+)?⟧")  # a user message ("⟦u3⟧") or a method's reply ("⟦r3.1⟧") of the file


def tokens(text: str) -> int:
    """The tokens of a text, at CHARS_PER_TOKEN characters a token, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate(settings: Mapping, environ: Mapping[str, str], store: Store | None = None) -> dict:
    """{rows, calls, prompt_tokens, completion_tokens, cost, rubric} of a simulation's settings (simulate/request.py's):
    a row per speaker (the simulator, each method, each judge when the files are scored) with its role, name, model,
    endpoint and prices, its calls (retries not counted), tokens and cost (None without its endpoint's prices); the
    total cost is None unless every row has one; `rubric`, the reference ({id, version, sha256}) of the rubric the
    judge's calls were counted under when it is not the default (the `store` holds the rubrics people added).
    ValueError for a price setting that is not a number, RequestError for judge settings (or a rubric) that cannot
    be used."""
    plan = Plan.from_settings(settings)
    rows, rubric = _speakers(plan, environ), None
    if settings.get("score"):
        judged, rubric = _judges(plan, settings, environ, store)
        rows += judged
    costs = [row["cost"] for row in rows]
    return {"rows": rows, **{field: sum(row[field] for row in rows) for field in FIELDS},
            "cost": None if None in costs else sum(costs), "rubric": rubric}


def _user_bound(plan: Plan) -> int:
    """The most tokens of a user message the simulator writes: its max tokens, and no more than MAX_USER_CHARS."""
    return min(plan.simulator.max_tokens, tokens("x" * prompts.MAX_USER_CHARS))


def _add(spent: dict, prompt: int, completion: int) -> None:
    spent["calls"] += 1
    spent["prompt_tokens"] += prompt
    spent["completion_tokens"] += completion


def _row(role: str, name: str, model: str, endpoint: str, price: Mapping, spent: Mapping) -> dict:
    """One speaker's row: who, where, at which prices, its calls, tokens and their cost."""
    counts = {field: spent[field] for field in FIELDS}
    return {"role": role, "name": name, "model": model, "endpoint": endpoint,
            "prices": {"prompt": price.get("prompt"), "completion": price.get("completion")}, **counts,
            "cost": cost(counts, dict(price))}


def _speakers(plan: Plan, environ: Mapping[str, str]) -> list[dict]:
    """The simulator's and the methods' rows: each turn to ask is one call, its prompt the persona and the exchanges
    so far (a persona's opening at its own length), its answer as long as the speaker's max tokens. A persona's first
    user message is one request for all of its conversations (the independent protocol's), asked once."""
    user = _user_bound(plan)
    spent = {s.name: dict.fromkeys(FIELDS, 0) for s in (plan.simulator, *plan.methods)}
    asked_first: set[int] = set()
    for conversation in plan.conversations():
        persona = conversation.persona
        system = tokens(prompts.system_message(persona, plan.language)) + tokens(prompts.START[plan.language])
        partner = plan.speaker(conversation.partner).max_tokens
        messages = [tokens(persona.opening) if persona.opening else user] + [user] * (plan.rounds - 1)
        for k in range(1, plan.rounds + 1):
            if k > 1 or not (persona.opening or conversation.persona_index in asked_first):
                _add(spent[USER], system + sum(messages[:k - 1]) + (k - 1) * partner, plan.simulator.max_tokens)
            for name in conversation.methods:
                method = plan.speaker(name)
                _add(spent[name], tokens(method.system_prompt) + sum(messages[:k]) + (k - 1) * method.max_tokens,
                     method.max_tokens)
        asked_first.add(conversation.persona_index)
    return [_row("simulator" if s.name == USER else "method", s.name, s.model, s.endpoint,
                 prices(environ, endpoint=s.endpoint), spent[s.name]) for s in (plan.simulator, *plan.methods)]


@dataclass
class _InMemory:
    """A file held in memory, read as a kind reads a stored file (kinds/host.py's StoredFile)."""

    name: str
    data: bytes

    def open(self, mode: str = "rb") -> BinaryIO:
        """The file for reading."""
        return io.BytesIO(self.data)

    def exists(self) -> bool:
        """Always there."""
        return True


def _judges(plan: Plan, settings: Mapping, environ: Mapping[str, str],
            store: Store | None) -> tuple[list[dict], dict | None]:
    """Each judge's row: every judgment of every file the simulation writes (shared: one file; independent: one per
    method), as the dialogue kind plans (`start`, under the simulation's rubric) and builds (`all_requests`) them for
    a file of complete sessions; each session asks the same, as long at most as the one with the longest profile,
    personality and texts. And the reference of the rubric, when it is not the default."""
    kind = dialogue_kind()
    judge = check_judges(settings.get("judge") or None, settings.get("judges"), environ)
    names = [m.name for m in plan.methods]
    files = [names] if plan.protocol == "shared" else [[name] for name in names]
    options = {"rubric": settings["rubric"]} if settings.get("rubric") else {}
    spent: dict[int, dict] = {}
    panel, labels, rubric = [], [], None
    for methods in files:
        data, sizes = _longest_file(plan, methods)
        report = kind.validate(io.BytesIO(data), "estimate.jsonl", {})
        if not report.ok:  # the file the simulation would write could not be uploaded either
            raise RequestError(report.problems[0].message)
        try:
            planned = kind.start({"id": "", "filename": "estimate.jsonl", "summary": report.summary},
                                 StartRequest(None, options, lambda: judge, store))
            panel, labels = panel_settings(planned.settings), judge_labels(planned.settings)
            configs = [judge_config(s, environ) for s in panel]
        except (StartError, ValueError) as exc:
            raise RequestError(str(exc)) from exc
        evaluation = {"methods": planned.methods, "settings": planned.settings}
        rubric = planned.settings.get("rubric")
        for key, request in kind.all_requests(evaluation, _InMemory("estimate.jsonl", data), configs, store):
            judge_number = judge_of(key)
            _add(spent.setdefault(judge_number, dict.fromkeys(FIELDS, 0)), _measure(request.messages, sizes),
                 configs[judge_number].max_tokens)
    sessions = len(plan.personas)
    return [_row("judge", labels[number], s["model"], s["endpoint"], s.get("prices") or {},
                 {field: sessions * value for field, value in spent.get(number, dict.fromkeys(FIELDS, 0)).items()})
            for number, s in enumerate(panel)], rubric


def _longest_file(plan: Plan, methods: list[str]) -> tuple[bytes, dict[str, int]]:
    """A dialogue file of one session as the simulation writes it, every round complete, with the longest profile and
    personality of the personas; its user messages and replies are markers, given with the characters each stands for
    at most (round 1: the longest opening when it is longer than what the simulator may write)."""
    user = _user_bound(plan) * CHARS_PER_TOKEN
    first = max(len(p.opening) if p.opening else user for p in plan.personas)
    persona = Persona("estimate", max((p.user_profile for p in plan.personas), key=len),
                      max((p.user_personality for p in plan.personas), key=len))
    kept, sizes = {}, {}
    for k in range(1, plan.rounds + 1):
        marker = f"⟦u{k}⟧"
        kept[(0, k, USER)], sizes[marker] = {"status": "ok", "text": marker}, first if k == 1 else user
        for number, name in enumerate(methods):
            marker = f"⟦r{k}.{number}⟧"
            kept[(0, k, name)] = {"status": "ok", "text": marker}
            sizes[marker] = plan.speaker(name).max_tokens * CHARS_PER_TOKEN
    found = session(Conversation(0, persona, tuple(methods), methods[0]), kept, plan.rounds)
    return Output("estimate.jsonl", None, [found] if found else []).content(), sizes


def _measure(messages: list[dict], sizes: Mapping[str, int]) -> int:
    """The prompt tokens of a request built from the markers' file: its characters, each marker counted as the
    characters it stands for."""
    chars = 0
    for message in messages:
        content = str(message.get("content", ""))
        chars += len(content) + sum(sizes[m] - len(m) for m in MARKER.findall(content))
    return -(-chars // CHARS_PER_TOKEN)

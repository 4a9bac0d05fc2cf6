"""A local OpenAI-compatible judge server for tests and benchmarks, and the `judge_server` fixture.

It serves POST /v1/chat/completions and GET /v1/models over HTTP/1.1 keep-alive and answers judge
prompts deterministically. The reply under judgment (the `reply` block of the prompt) may carry
markers: `[[score=NN]]` sets the fine total (split over the five dimensions so they sum to NN) and
`[[keep=0|1]]` sets the binary verdict; without markers the answer is derived from a hash of the reply.
Conversation annotation prompts are answered from a `[[annotate=D,V,U,H]]` marker anywhere in the
quoted conversation (Detail, Diversity, Practical Utility 0-2, Hallucination 0/1), else from a hash.

A custom rubric's prompt (kinds/rubrics/) is answered in the form it asks for (judge_form below); its markers and
hash are read from the reply block when the prompt quotes one, else from the whole prompt (ALOE's quotes none):
- with `response_format` {"type": "json_schema", ...} in the request: a JSON object valid for the schema, alone (as
  structured output answers), its properties in the schema's order: a string property ("reasoning") a short text, an
  integer or number property from a `[[dims=a,b,c]]` marker (its values in the order of those properties, written as
  given, even outside the scale) else from a hash of the reply and the key within the property's minimum..maximum,
  a boolean property from `[[keep=0|1]]` else a hash;
- without it, the prompt's own words say the form: a JSON object described as `"key": MIN-MAX` (or `<MIN-MAX>`, or
  `"key": true or false`) with the word JSON: the same object inside a sentence before and after it; ALOE's "Only
  output the score from MIN-MAX": the number alone, from `[[score1to5=n]]` (else `[[dims=n]]`, else a hash);
  lines `Label: n/MAX`: a reasoning line, then `Label: v/MAX` per label from `[[dims=...]]` else a hash in 1..MAX
  (a score on any scale from 0 or 1 to MAX). A scale is whole numbers unless a bound is written with a fraction.
A schema property with an `enum` (the conversation kind's behaviour labeller, kinds/conversation/labeller.py) is a label:
its value from a `[[label:<property>=<value>]]` marker anywhere in the prompt (as given, even outside the enum), else a
hash among the enum's values; "out_of_range" on a schema of labels only gives its first label "NotInTheTaxonomy"; a
schema named "label..." is counted under the mode "label".
A rubric's prompts are counted under the mode "fine" (its dimensions) or "binary" (a yes/no question: a boxed verdict,
or a JSON object with a boolean and no score). The prompts of the built-in personasteer rubric (today's prompts) keep
the answers above.

Knobs (safe to set from the test thread while requests are served):
    latency_s       seconds to wait before answering each chat request (faults included)
    retry_after_s   the wait a "429" fault asks for
    retry_after_form  how it is sent: "seconds" (Retry-After: 0.2), "date" (Retry-After as an HTTP
                    date, whole seconds) or "ms" (retry-after-ms: 200 plus Retry-After rounded up)
    hang_s          how long a "timeout" fault holds the request before closing the connection
    fail_next(n, kind, match=None)  the next n chat requests get fault `kind`; with `match` (a
                    substring of the reply under judgment, or a callable(request) -> bool) only
                    requests that match count
    fail_always(kind)   every chat request gets `kind` (None to turn off)
    fail_for(seconds, kind)  an outage: every chat request of the `seconds` from the next one gets `kind`, then none
    fail_fraction(p, kind, once_per_prompt=True)  a share p of the distinct prompts (chosen by a hash
                    of the messages, so deterministic) get `kind`; once_per_prompt: only their first
                    request, so a retry succeeds
    hook            None or a callable(request: dict) -> kind | None, consulted first
    models          {model name: (fine offset, flip binary)}: a judge "model" that answers differently from
                    the default one, for panels of judges: its fine total is the default one plus the offset
                    (clamped to 0..100, split over the dimensions the same way) and, with flip, its keep-chatting
                    verdict is the opposite; other models answer as the default. The value may also be
                    (rule, None) with rule(reply) -> (fine offset, flip binary): a judge that differs on
                    some replies only (a shift on some, a flipped verdict on others). A custom rubric's scores get
                    the offset too (kept within their scale) and its booleans the flip
    pair_first_always  pairwise prompts (reply_a shown first, reply_b second) are answered with the reply the
                    default judge scores higher, tie when equal; True: always the first shown (position bias)
    chat            None or a callable(request body: dict) -> str: the answer to every chat request that is not a
                    judge prompt (mode "other"; default "OK"), so that the server can play chat models (the simulated
                    user and the methods of tests/simulate/) whose answers derive from the model and messages
    repeats         [(fine offset, flip binary), ...]: the n-th answer (0-based) to the same model and messages
                    gets repeats[n % len] on top of the above, so repeated samples of one judgment (which
                    differ only by the temperature > 0 a real judge samples with) can be told apart; empty: off
Fault kinds: FAULTS below (an HTTP status code answers with that status and an OpenAI-style error). The answers
that do not parse: "malformed" (a sentence with no score: no JSON at all), "empty", "out_of_range" (a first score above
its scale: 25 of 20, a 6 of 1-5, a JSON property at its maximum + 1, a verdict 2 or a non-boolean answer),
"missing_property" (the first score left out: a JSON property, a `Label:` line) and "truncated" (the answer cut at
half its length, as by max_tokens: a JSON object that does not parse).
Counters: requests, requests_by_mode, in_flight, max_in_flight (a chat request is in flight from its arrival
until just before its answer is sent or its connection dropped, so that a client that has its answer, and
may have passed its slot on, is never counted with the next one), faults ({kind: n} injected),
last_request (the parsed JSON body), last_authorization, seen_headers (method, path and headers of every
request, any route), log (one (monotonic start time, reply under
judgment, fault) per chat request, the latest LOG_SIZE), answered ({prompt_hash: n} of the requests answered
without a fault); stats() and GET <url>/_stats return the counts.
`python -m tests.judge_server [--latency S] [--fail-fraction P --fail-kind KIND] [--capture FILE]` serves until
interrupted and prints its URL first; --capture appends the body of every chat request to FILE as received, one a
line (a JSON body holds no raw line break), so that a benchmark can send the same requests again.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, BinaryIO

import pytest

ERROR_STATUSES = ("400", "401", "403", "404", "408", "409", "429", "500", "502", "503", "504")
BAD_ANSWERS = ("malformed", "out_of_range", "empty", "missing_property", "truncated")
FAULTS = (*ERROR_STATUSES, "timeout", "drop", *BAD_ANSWERS)
RETRY_AFTER_FORMS = ("seconds", "date", "ms")
LOG_SIZE = 10_000
DIMENSIONS = ("Style", "Content", "Naturalness", "Personalization", "Conversation")

_REPLY_RE = re.compile(r"<<<reply #(\w+)>>>\n(.*?)\n<<<end reply #\1>>>", re.DOTALL)
_SCORE_RE = re.compile(r"\[\[score=(\d+)\]\]")
_KEEP_RE = re.compile(r"\[\[keep=([01])\]\]")
_PAIR_REPLY_RE = re.compile(r"<<<(reply_[ab]) #\w+>>>\n(.*?)\n<<<end \1 #\w+>>>", re.DOTALL)
_ANNOTATE_RE = re.compile(r"\[\[annotate=([0-2]),([0-2]),([0-2]),([01])\]\]")


_DIMS_RE = re.compile(r"\[\[dims=([^\]]*)\]\]")
_LABEL_RE = re.compile(r"\[\[label:(\w+)=([^\]]*)\]\]")
_SCORE1TO5_RE = re.compile(r"\[\[score1to5=([^\]]*)\]\]")
_BOUND = r"(-?\d+(?:\.\d+)?)"
_NUMBER_ASK_RE = re.compile(rf"[Oo]nly output the score from {_BOUND}\s*-\s*{_BOUND}")  # ALOE's words
_LINE_ASK_RE = re.compile(r"^[ \t>*#_-]*([^\s:][^\n:]{0,63}?)[ \t]*:[ \t]*n/(\d+(?:\.\d+)?)[ \t]*$", re.MULTILINE)
_JSON_SCORE_RE = re.compile(rf'"([A-Za-z_]\w*)"\s*:\s*<?\s*{_BOUND}\s*(?:-|to|\.\.)\s*{_BOUND}\s*>?')
_JSON_BOOLEAN_RE = re.compile(r'"([A-Za-z_]\w*)"\s*:\s*<?\s*true\s*(?:or|/|\|)\s*false\s*>?')
_SCORE_LINE_RE = re.compile(r"^[^\n:]+: \d+/\d+\n|^\\boxed\{\d\}$", re.MULTILINE)  # today's prompts' score lines
RUBRIC_SHAPES = ("schema", "json", "number", "lines")  # the answers of a custom rubric's prompts
REASONING_TEXT = "The reply suits this user in part: its tone fits, its content could use more of the profile."


@dataclass(frozen=True)
class Field:
    """One property of a rubric's answer: its name, JSON type and, for a score, its scale."""

    name: str
    kind: str  # "string", "integer", "number" or "boolean"
    low: float = 0
    high: float = 0
    choices: tuple = ()  # the schema's `enum`, when it has one


@dataclass(frozen=True)
class Form:
    """What a prompt asks for: the mode it is counted under and the shape of the answer, with a rubric's fields."""

    mode: str  # "fine", "binary", "annotate", "pairwise" or "other"
    shape: str  # the mode for today's prompts, else one of RUBRIC_SHAPES
    fields: tuple[Field, ...] = ()


def _messages_text(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages)


def _scale(low: str, high: str) -> tuple[str, float, float]:
    """A scale written as two bounds: whole numbers unless a bound has a fraction."""
    kind = "number" if "." in low + high else "integer"
    return kind, float(low), float(high)


def _rubric_mode(fields: tuple[Field, ...]) -> str:
    """A yes/no question's answer has a boolean and no score; any other is the dimensions' ("fine")."""
    scores = any(f.kind in ("integer", "number") for f in fields)
    return "binary" if not scores and any(f.kind == "boolean" for f in fields) else "fine"


def _schema_fields(schema: dict) -> tuple[Field, ...]:
    """The properties of a JSON Schema object, in its order."""
    found = []
    for name, spec in (schema.get("properties") or {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind or "string"
        choices = tuple(spec.get("enum") or ()) if isinstance(spec, dict) else ()
        numbers = [c for c in choices if isinstance(c, (int, float))]
        low = float(spec.get("minimum", min(numbers, default=0)))
        found.append(Field(name, kind, low, float(spec.get("maximum", max(numbers, default=low + 10))), choices))
    return tuple(found)


def judge_form(messages: list[dict], response_format: object = None) -> Form:
    """What a prompt asks for, from its `response_format` (a JSON Schema) or else its own words."""
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        fields = _schema_fields(schema)
        named = str((response_format.get("json_schema") or {}).get("name") or "")
        return Form("label" if named.startswith("label") else _rubric_mode(fields), "schema", fields)
    text = _messages_text(messages)
    if "Personalization: n/20" in text:
        return Form("fine", "fine")
    if "Practical Utility: n/2" in text:
        return Form("annotate", "annotate")
    if "\\boxed{tie}" in text:
        return Form("pairwise", "pairwise")
    if "\\boxed{1}" in text and "\\boxed{0}" in text:
        return Form("binary", "binary")
    asked = _NUMBER_ASK_RE.search(text)
    if asked:
        return Form("fine", "number", (Field("score", *_scale(*asked.groups())),))
    if "JSON" in text:
        named: dict[str, Field] = {}
        for match in re.finditer(f"{_JSON_SCORE_RE.pattern}|{_JSON_BOOLEAN_RE.pattern}", text):
            name, low, high, boolean = match.groups()
            key = name or boolean
            named.setdefault(key, Field(key, *_scale(low, high)) if name else Field(key, "boolean"))
        if named:
            fields = ((Field("reasoning", "string"),) if '"reasoning"' in text else ()) + tuple(named.values())
            return Form(_rubric_mode(fields), "json", fields)
    lines = _LINE_ASK_RE.findall(text)
    if lines:
        return Form("fine", "lines", tuple(Field(label, "integer", 1, float(high)) for label, high in lines))
    return Form("other", "other")


def detect_mode(messages: list[dict], response_format: object = None) -> str:
    """'fine', 'binary', 'annotate', 'pairwise' or 'other', from the answer format the prompt asks for."""
    return judge_form(messages, response_format).mode


def reply_under_judgment(messages: list[dict]) -> str:
    """The text of the last `reply` block of the prompt ("" when there is none)."""
    blocks = _REPLY_RE.findall(_messages_text(messages))
    return blocks[-1][1] if blocks else ""


def judged_text(messages: list[dict], form: Form) -> str:
    """The text whose markers and hash make the answer: the reply block, else (a rubric's prompt that quotes no
    block, such as ALOE's) the whole prompt."""
    reply = reply_under_judgment(messages)
    return reply if reply or form.shape not in RUBRIC_SHAPES else _messages_text(messages)


def _stable_int(text: str) -> int:
    """A process-independent hash of text."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16)


def split_total(total: int) -> list[int]:
    """Five integer scores as even as possible that sum to total."""
    base, extra = divmod(total, 5)
    return [base + (1 if i < extra else 0) for i in range(5)]


def fine_answer(reply: str, out_of_range: bool = False, offset: int = 0) -> str:
    """A fine-mode answer: short reasoning, five dimension lines and the boxed total (shifted by offset)."""
    marker = _SCORE_RE.search(reply)
    total = int(marker.group(1)) if marker else 40 + _stable_int(reply) % 56
    total = min(100, max(0, total + offset))
    scores = split_total(total)
    if out_of_range:
        scores[0] = 25
    lines = [f"The reply is {'strong' if total >= 70 else 'uneven'}: it addresses the message "
             "and mostly fits the user's profile.", ""]
    lines += [f"{name}: {score}/20" for name, score in zip(DIMENSIONS, scores)]
    lines.append(f"Total: \\boxed{{{total}}}")
    return "\n".join(lines)


def binary_answer(reply: str, out_of_range: bool = False, flip: bool = False) -> str:
    """A binary-mode answer: one line per criterion and the boxed verdict (the opposite one with flip)."""
    marker = _KEEP_RE.search(reply)
    keep = int(marker.group(1)) if marker else _stable_int(reply) % 2
    keep = 1 - keep if flip else keep
    verdict = 2 if out_of_range else keep
    status = "pass" if keep else "fail"
    criteria = ("Naturalness", "Relevance", "Logical consistency", "Interest", "Information value")
    lines = [f"{c}: {status if i == 4 else 'pass'}" for i, c in enumerate(criteria)]
    lines.append(f"\\boxed{{{verdict}}}")
    return "\n".join(lines)


def _pair_score(text: str) -> int:
    """The fine total the default judge would give a reply (its [[score=NN]] marker, else a hash)."""
    marker = _SCORE_RE.search(text)
    return int(marker.group(1)) if marker else 40 + _stable_int(text) % 56


def pairwise_answer(messages: list[dict], first_always: bool = False) -> str:
    """A pairwise answer: the reply (reply_a shown first, reply_b second) the default judge scores higher, tie when
    equal; with first_always, always the first shown (a judge with pure position bias)."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    replies = dict(_PAIR_REPLY_RE.findall(text))
    a, b = (_pair_score(replies.get(name, "")) for name in ("reply_a", "reply_b"))
    verdict = "A" if first_always or a > b else "B" if b > a else "tie"
    return f"Comparing the two latest replies for this user.\n\\boxed{{{verdict}}}"


def _number(text: str) -> int | float | str:
    """A marker's value as a number (an int when whole), or the text itself when it is none."""
    try:
        value = float(text)
    except ValueError:
        return text.strip()
    return int(value) if value.is_integer() and "." not in text else value


def _plain(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _field_values(form: Form, source: str, offset: int, flip: bool) -> dict[str, Any]:
    """Each field's value: a score from the markers (as given; with an offset, moved and kept within the scale) or a
    hash within its scale, a boolean from [[keep=]] or a hash, a text."""
    given = _SCORE1TO5_RE.findall(source)[-1:] if form.shape == "number" else []
    marker = _DIMS_RE.findall(source)
    given = given or ([v for v in marker[-1].split(",") if v.strip()] if marker else [])
    keep = _KEEP_RE.search(source)
    labels = dict(_LABEL_RE.findall(source))
    values: dict[str, Any] = {}
    scores = 0
    for field in form.fields:
        if field.choices:  # a label: from a [[label:name=value]] marker (as given) else a hash among the choices
            given_label = labels.get(field.name)
            values[field.name] = (_number(given_label) if field.kind == "integer" else given_label.strip()) \
                if given_label is not None else field.choices[_stable_int(f"{source}\n{field.name}") % len(field.choices)]
        elif field.kind == "boolean":
            bit = int(keep.group(1)) if keep else _stable_int(f"{source}\n{field.name}") % 2
            values[field.name] = bool(bit) != flip
        elif field.kind in ("integer", "number"):
            h = _stable_int(f"{source}\n{field.name}")
            if scores < len(given):
                value: Any = _number(given[scores])
            elif field.kind == "integer":
                low, high = math.ceil(field.low), math.floor(field.high)
                value = low + h % (high - low + 1)
            else:
                value = round(field.low + (h % 1001) / 1000 * (field.high - field.low), 3)
            if offset and isinstance(value, (int, float)):
                value = _plain(min(field.high, max(field.low, value + offset)))
            values[field.name] = value
            scores += 1
        else:
            values[field.name] = REASONING_TEXT
    return values


def rubric_answer(form: Form, source: str, fault: str | None = None, offset: int = 0, flip: bool = False) -> str:
    """The answer to a custom rubric's prompt (a shape of RUBRIC_SHAPES), with the bad-answer fault when given."""
    values = _field_values(form, source, offset, flip)
    scores = [f for f in form.fields if f.kind in ("integer", "number")]
    first = scores[0] if scores else next((f for f in form.fields if f.kind == "boolean"), None)
    if first is None and fault == "out_of_range":  # labels only: the first one outside its choices
        first_label = next((f for f in form.fields if f.choices), None)
        if first_label is not None:
            values[first_label.name] = "NotInTheTaxonomy"
    if first is not None and fault == "out_of_range":
        values[first.name] = _plain(first.high + 1) if first in scores else "yes"
    if first is not None and fault == "missing_property":
        del values[first.name]
    if form.shape == "number":
        return str(next(iter(values.values()), ""))
    if form.shape == "lines":
        lines = [REASONING_TEXT, ""]
        lines += [f"{f.name}: {values[f.name]}/{_plain(f.high)}" for f in form.fields if f.name in values]
        return "\n".join(lines)
    text = json.dumps(values, ensure_ascii=False)
    return text if form.shape == "schema" else f"My assessment of the reply, as asked:\n{text}\nThat is all."


def annotation_answer(prompt: str, out_of_range: bool = False) -> str:
    """An annotation answer: a sentence of reasoning, three 0-2 lines and the hallucination flag."""
    marker = _ANNOTATE_RE.findall(prompt)
    if marker:
        detail, diversity, utility, flag = (int(v) for v in marker[-1])
    else:
        h = _stable_int(prompt)
        detail, diversity, utility, flag = h % 3, (h // 3) % 3, (h // 9) % 3, (h // 27) % 2
    if out_of_range:
        detail = 3
    return "\n".join(["The assistant gives concrete options with some variety.", "",
                      f"Detail Level: {detail}/2", f"Diversity: {diversity}/2", f"Practical Utility: {utility}/2",
                      f"Hallucination: {'yes' if flag else 'no'}"])


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait for hung handlers
    request_queue_size = 256  # listen backlog: bursts of new keep-alive connections
    allow_reuse_address = True

    def __init__(self, owner: JudgeServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about clients that went away (timeouts, abandoned runs); report the rest."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every response carries Content-Length
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, True)

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok:  # every request's line and headers, whatever its route
            with self.server.owner._lock:
                self.server.owner.seen_headers.append((self.command, self.path, dict(self.headers)))
        return ok

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _answered(self) -> None:
        """The chat request being served stops counting as in flight (once)."""
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            self.server.owner._end()

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        self._answered()
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _drop(self) -> None:
        self._answered()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.rstrip("/").endswith("/_stats"):
            self._send_json(200, self.server.owner.stats())
        elif self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": "test-judge", "object": "model", "created": 0, "owned_by": "tests"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
            messages = list(body["messages"])
        except (ValueError, KeyError, TypeError):
            self._send_json(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
            return
        owner = self.server.owner
        form = judge_form(messages, body.get("response_format"))
        request = {"mode": form.mode, "form": form, "body": body, "raw": raw,
                   "authorization": self.headers.get("Authorization", ""), "reply": judged_text(messages, form)}
        fault = owner._begin(request)
        self._in_flight = True
        try:
            self._answer(owner, request, messages, fault)
        finally:
            self._answered()

    def _answer(self, owner: JudgeServer, request: dict, messages: list[dict], fault: str | None) -> None:
        if owner.latency_s > 0 and owner._stopping.wait(owner.latency_s):
            self._drop()
            return
        if fault == "timeout":
            owner._stopping.wait(owner.hang_s)
            self._drop()
            return
        if fault == "drop":
            self._drop()
            return
        if fault in ERROR_STATUSES:
            self._send_error_fault(owner, request, int(fault))
            return
        mode = request["mode"]
        reply = request["reply"]
        offset, flip = owner.models.get(str(request["body"].get("model")), (0, False))
        if callable(offset):  # a per-reply rule: offset(reply) -> (fine offset, flip binary)
            offset, flip = offset(reply)
        if getattr(owner, "repeats", None) and fault is None:  # the batch server's owner has no repeats
            asked = (str(request["body"].get("model")), prompt_hash(request["body"]))
            with owner._lock:
                seen = owner._asked[asked] = owner._asked.get(asked, -1) + 1
            extra, flipped = owner.repeats[seen % len(owner.repeats)]
            offset, flip = offset + extra, flip != flipped
        form = request.get("form") or judge_form(messages, request["body"].get("response_format"))
        if fault == "malformed":
            content = "The reply seems fine overall, I would rate it fairly well."
        elif fault == "empty":
            content = ""
        elif form.shape in RUBRIC_SHAPES:
            content = rubric_answer(form, reply, fault, offset, flip)
        elif mode == "fine":
            content = fine_answer(reply, out_of_range=fault == "out_of_range", offset=offset)
        elif mode == "binary":
            content = binary_answer(reply, out_of_range=fault == "out_of_range", flip=flip)
        elif mode == "pairwise":
            content = pairwise_answer(messages, first_always=getattr(owner, "pair_first_always", False))
        elif mode == "annotate":
            content = annotation_answer(str(messages[-1].get("content", "")), out_of_range=fault == "out_of_range")
        elif getattr(owner, "chat", None) is not None:  # the batch server's owner may have none
            content = owner.chat(request["body"])
        else:
            content = "OK"
        if fault == "missing_property" and form.shape not in RUBRIC_SHAPES:
            content = _SCORE_LINE_RE.sub("", content, count=1)
        if fault == "truncated":
            content = content[:len(content) // 2]
        prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
        usage = {"prompt_tokens": max(1, prompt_chars // 4), "completion_tokens": len(content) // 4}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        self._send_json(200, {
            "id": f"chatcmpl-test-{owner.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request["body"].get("model", "test-judge"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": usage,
        })

    def _send_error_fault(self, owner: JudgeServer, request: dict, status: int) -> None:
        if status == 429:
            self._send_json(429, {"error": {"message": "Rate limit reached (simulated).",
                                            "type": "rate_limit_error", "code": "rate_limit_exceeded"}},
                            _retry_after_headers(owner.retry_after_s, owner.retry_after_form))
        elif status == 401:
            # Like a careless gateway: echoes the key back, so tests can check it is scrubbed.
            token = request["authorization"].removeprefix("Bearer ")
            self._send_json(401, {"error": {"message": f"Invalid API key: {token}",
                                            "type": "invalid_request_error"}})
        elif status < 500:
            self._send_json(status, {"error": {"message": f"Simulated client error {status}.",
                                               "type": "invalid_request_error"}})
        else:
            self._send_json(status, {"error": {"message": f"Simulated server error {status}.",
                                               "type": "server_error"}})


def _retry_after_headers(seconds: float, form: str) -> dict[str, str]:
    """The headers that ask a client to wait `seconds`, in one of RETRY_AFTER_FORMS."""
    if form == "date":
        return {"Retry-After": formatdate(time.time() + seconds, usegmt=True)}
    if form == "ms":
        return {"retry-after-ms": f"{seconds * 1000:g}", "Retry-After": str(math.ceil(seconds))}
    return {"Retry-After": f"{seconds:g}"}


def prompt_hash(body: dict) -> str:
    """A stable id of a request's messages: the same for every retry of one judgment."""
    canonical = json.dumps(body.get("messages"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JudgeServer:
    """A deterministic OpenAI-compatible judge on 127.0.0.1 with latency and fault knobs."""

    def __init__(self, latency_s: float = 0.0, retry_after_s: float = 1.0, hang_s: float = 30.0) -> None:
        self._defaults = (latency_s, retry_after_s, hang_s)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.reset()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> JudgeServer:
        """Listen on a free port and serve in a background thread."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name="judge-server", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release hung requests and close every open connection."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port listened on."""
        if self._httpd is None:
            raise RuntimeError("JudgeServer is not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The base URL for the openai SDK, e.g. http://127.0.0.1:PORT/v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- knobs -------------------------------------------------------------------------------

    def reset(self) -> None:
        """Counters to zero, faults and hook cleared, knobs back to the constructor values."""
        with self._lock:
            self.latency_s, self.retry_after_s, self.hang_s = self._defaults
            self.retry_after_form = "seconds"
            self.hook: Callable[[dict], str | None] | None = None
            self.models: dict[str, tuple] = {}
            self.chat: Callable[[dict], str] | None = None
            self.repeats: list[tuple[int, bool]] = []
            self._asked: dict[tuple[str, str], int] = {}  # answers given per (model, prompt_hash), for repeats
            self._faults: deque[str] = deque()
            self._targeted: list[list] = []  # [remaining, kind, match]
            self._always: str | None = None
            self._outage: tuple[float | None, float, str] | None = None  # (monotonic end once begun, seconds, kind)
            self.answered: dict[str, int] = {}
            self._fraction: tuple[float, str, bool] | None = None
            self._fraction_failed: set[str] = set()
            self.faults: dict[str, int] = {}
            self.log: deque[tuple[float, str, str | None]] = deque(maxlen=LOG_SIZE)
            self.requests = 0
            self.requests_by_mode = {"fine": 0, "binary": 0, "annotate": 0, "pairwise": 0, "other": 0}
            self.pair_first_always = False
            self.in_flight = 0
            self.max_in_flight = 0
            self.accepted = 0  # connections opened
            self.last_request: dict | None = None
            self.last_authorization: str | None = None
            self.seen_headers: list[tuple[str, str, dict]] = []

    def stats(self) -> dict:
        """The counters as a dict (also served at GET <url>/_stats for a server in another process)."""
        with self._lock:
            return {"requests": self.requests, "requests_by_mode": dict(self.requests_by_mode),
                    "in_flight": self.in_flight, "max_in_flight": self.max_in_flight, "faults": dict(self.faults),
                    "accepted": self.accepted, "open_connections": len(self._connections)}

    def fail_next(self, n: int, kind: str, match: str | Callable[[dict], bool] | None = None) -> None:
        """Give the next n chat requests (only those matching `match`, when given) the fault `kind`."""
        _check_kind(kind)
        with self._lock:
            if match is None:
                self._faults.extend([kind] * n)
            elif n > 0:
                self._targeted.append([n, kind, match])

    def fail_fraction(self, p: float, kind: str | None, once_per_prompt: bool = True) -> None:
        """Give a share p of the distinct prompts the fault `kind` (once each, if once_per_prompt); None: off."""
        if kind is not None:
            _check_kind(kind)
        with self._lock:
            self._fraction = None if kind is None else (p, kind, once_per_prompt)
            self._fraction_failed.clear()

    def fail_for(self, seconds: float, kind: str) -> None:
        """An outage: give every chat request of the `seconds` from the next one the fault `kind` (timed from that
        request, not from now: on a loaded machine the caller's first request may come late)."""
        _check_kind(kind)
        with self._lock:
            self._outage = (None, seconds, kind)

    def fail_always(self, kind: str | None) -> None:
        """Give every chat request the fault `kind`; None turns it off."""
        if kind is not None:
            _check_kind(kind)
        with self._lock:
            self._always = kind

    def close_connections(self) -> None:
        """Close every open connection from this side, as a server does with those idle past its keep-alive."""
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # -- bookkeeping used by the handler -----------------------------------------------------

    def _track(self, conn: socket.socket, opened: bool) -> None:
        with self._lock:
            (self._connections.add if opened else self._connections.discard)(conn)
            self.accepted += opened

    def _begin(self, request: dict) -> str | None:
        """Count the request and choose its fault."""
        hook = self.hook
        fault = hook(request) if hook is not None else None
        if fault is not None:
            _check_kind(fault)
        with self._lock:
            self.requests += 1
            self.requests_by_mode[request["mode"]] = self.requests_by_mode.get(request["mode"], 0) + 1  # "label" when asked
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.last_request = request["body"]
            self.last_authorization = request["authorization"]
            if fault is None:
                fault = self._targeted_fault(request)
            if fault is None and self._faults:
                fault = self._faults.popleft()
            if fault is None:
                fault = self._fraction_fault(request)
            if fault is None and self._outage:
                end, seconds, kind = self._outage
                if end is None:
                    end = time.monotonic() + seconds
                    self._outage = (end, seconds, kind)
                if time.monotonic() < end:
                    fault = kind
            if fault is None:
                fault = self._always
            if fault is not None:
                self.faults[fault] = self.faults.get(fault, 0) + 1
            else:
                digest = prompt_hash(request["body"])
                self.answered[digest] = self.answered.get(digest, 0) + 1
            self.log.append((time.monotonic(), request["reply"], fault))
        return fault

    def _targeted_fault(self, request: dict) -> str | None:
        """The fault of the first fail_next(..., match) entry this request matches (lock held)."""
        for entry in self._targeted:
            remaining, kind, match = entry
            if match(request) if callable(match) else match in request["reply"]:
                entry[0] = remaining - 1
                if entry[0] <= 0:
                    self._targeted.remove(entry)
                return kind
        return None

    def _fraction_fault(self, request: dict) -> str | None:
        """The fail_fraction fault for this request's prompt, if it is one of the chosen (lock held)."""
        if self._fraction is None:
            return None
        p, kind, once = self._fraction
        digest = prompt_hash(request["body"])
        if int(digest[:13], 16) / 16**13 >= p or (once and digest in self._fraction_failed):
            return None
        self._fraction_failed.add(digest)
        return kind

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _check_kind(kind: str) -> None:
    if kind not in FAULTS:
        raise ValueError(f"unknown fault {kind!r}; expected one of {', '.join(FAULTS)}")


@pytest.fixture
def judge_server() -> Iterator[JudgeServer]:
    """A started JudgeServer, stopped after the test."""
    with JudgeServer() as server:
        yield server


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted: python -m tests.judge_server [--latency S]; prints the URL first."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--fail-fraction", type=float, default=0.0, help="share of distinct prompts that fail once")
    parser.add_argument("--fail-kind", default="503", choices=FAULTS, help="their fault (default 503)")
    parser.add_argument("--capture", help="append every chat request's body to this file, one a line")
    args = parser.parse_args(argv)
    with JudgeServer(latency_s=args.latency) as server, \
            open(args.capture, "ab") if args.capture else contextlib.nullcontext() as capture:
        if args.fail_fraction > 0:
            server.fail_fraction(args.fail_fraction, args.fail_kind)
        if capture is not None:
            server.hook = _capturing(capture)
        print(server.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


def _capturing(capture: BinaryIO) -> Callable[[dict], None]:
    """A hook that writes each chat request's body to `capture`, one a line, and injects no fault."""
    lock = threading.Lock()

    def hook(request: dict) -> None:
        with lock:
            capture.write(request["raw"].rstrip(b"\n") + b"\n")
            capture.flush()
    return hook


if __name__ == "__main__":
    main()

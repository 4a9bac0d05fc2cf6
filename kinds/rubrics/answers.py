"""How a judge's answer becomes scores, generated from a rubric's declaration; and the JSON Schema of a structured
answer, sent as the endpoint's `response_format`.

Formats of the dimensions' answer:
- `lines`: a line "Label: n" (or "Label: n/max") per dimension, the last such line of each counting; with `total:
  boxed`, the judge also writes the headline as \\boxed{N}, an integer 0-100, which is used when it is there;
- `number`: the whole answer is one number, the score of the rubric's one dimension (on a whole-number scale, any
  text Python's int() reads, as ALOE's code reads its judge's answer: " 4\\n", "+4", "0_4"; not "4.0");
- `json`: a JSON object {"reasoning": text, <key>: score, ...} (the last object of the answer when it is not alone).
Formats of the yes/no answer: `boxed` (\\boxed{1} or \\boxed{0}, the last one counting) and `json`
({"reasoning": text, "answer": true or false}).

An answer that misses a dimension, gives a score out of its scale, or a fraction on a whole-number scale, is
unparsed, with the reason: nothing is clamped, rounded or filled in.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable

from kinds.rubrics.model import Dimension, Rubric
from translations import _

Parser = Callable[[str], tuple[dict | None, str | None]]
_BOX = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
REASONING = "reasoning"
ANSWER = "answer"


def _line_pattern(label: str) -> re.Pattern:
    # optional bullet / quote / heading / bold, the label, a colon (ASCII or full width), then the number with an
    # optional "/ denominator", markdown emphasis tolerated around
    return re.compile(rf"^[ \t>*#_\-]*{re.escape(label)}[ \t*_]*[:：][ \t*_]*([+-]?\d+(?:\.\d+)?)"
                      rf"(?:[ \t*_]*/[ \t*_]*(\d+))?", re.IGNORECASE | re.MULTILINE)


def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


class _Unparsed(ValueError):
    """Why an answer does not give a score."""


def _score(dimension: Dimension, raw: str) -> float:
    """A dimension's score written as `raw` (an int on a whole-number scale); _Unparsed saying why it is not one."""
    label = dimension.answer_label
    if dimension.integer and not _INTEGER.fullmatch(raw):
        raise _Unparsed(_("%(dimension)s score %(score)s is not an integer", dimension=label, score=raw))
    value = float(raw)
    if not dimension.low <= value <= dimension.high:
        raise _Unparsed(_("%(dimension)s score %(score)s is outside %(scale)s", dimension=label,
                          score=_plain(value), scale=dimension.scale_text()))
    return int(value) if dimension.integer else value


def _lines(rubric: Rubric) -> Parser:
    patterns = [(d, _line_pattern(d.answer_label), _plain(d.high)) for d in rubric.dimensions]

    def scores(text: str) -> tuple[dict, str | None]:
        found: dict = {}
        for dimension, pattern, high in patterns:
            matches = pattern.findall(text)
            if not matches:
                return found, _("%(dimension)s score not found", dimension=dimension.answer_label)
            number, denominator = matches[-1]
            if denominator and denominator != high:
                return found, _("%(dimension)s score %(score)s is not out of %(max)s", dimension=dimension.answer_label,
                                score=f"{number}/{denominator}", max=high)
            try:
                found[dimension.key] = _score(dimension, number)
            except _Unparsed as exc:
                return found, str(exc)
        return found, None

    def parse(text: str) -> tuple[dict | None, str | None]:
        text = text or ""
        dims, problem = scores(text)
        boxes = _BOX.findall(text) if rubric.boxed_total else []
        if boxes:
            raw = boxes[-1].strip()
            if not _INTEGER.fullmatch(raw):
                return None, _("total \\boxed{%(total)s} is not an integer", total=raw)
            total = int(raw)
            if not 0 <= total <= 100:
                return None, _("total %(total)s is outside 0-100", total=total)
            return (None, problem) if problem else ({"total": float(total), "dims": dims}, None)
        if problem:
            if rubric.boxed_total:
                return None, _("no \\boxed{} total found and %(problem)s", problem=problem)
            return None, problem
        return {"total": rubric.headline(dims), "dims": dims}, None

    return parse


def _number(rubric: Rubric) -> Parser:
    [dimension] = rubric.dimensions

    def parse(text: str) -> tuple[dict | None, str | None]:
        raw = (text or "").strip()
        if dimension.integer:
            try:  # a whole number as Python's int() reads it (ALOE's code reads its judge so): digit groups too
                raw = str(int(raw))
            except ValueError:
                pass
        if not _NUMBER.fullmatch(raw):
            return None, _("the answer is not one number: %(answer)s", answer=raw[:40])
        try:
            dims = {dimension.key: _score(dimension, raw)}
        except _Unparsed as exc:
            return None, str(exc)
        return {"total": rubric.headline(dims), "dims": dims}, None

    return parse


def json_object(text: str) -> tuple[dict | None, str | None]:
    """The answer's JSON object: the whole answer, or (in a text answer) its last {...} that parses."""
    text = (text or "").strip()
    try:
        value = json.loads(text)
    except ValueError:
        value = None
        for start in reversed([m.start() for m in re.finditer(r"\{", text)]):
            try:
                value, _end = json.JSONDecoder().raw_decode(text[start:])
                break
            except ValueError:
                continue
    if not isinstance(value, dict):
        return None, _("no JSON object found in the answer")
    return value, None


def _json(rubric: Rubric) -> Parser:
    def parse(text: str) -> tuple[dict | None, str | None]:
        value, problem = json_object(text)
        if value is None:
            return None, problem
        dims = {}
        for dimension in rubric.dimensions:
            raw = value.get(dimension.key)
            if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                return None, _("%(dimension)s score not found", dimension=dimension.key)
            try:
                dims[dimension.key] = _score(dimension, json.dumps(raw))
            except _Unparsed as exc:
                return None, str(exc)
        return {"total": rubric.headline(dims), "dims": dims}, None

    return parse


def _boxed_verdict(text: str) -> tuple[dict | None, str | None]:
    boxes = _BOX.findall(text or "")
    if not boxes:
        return None, _("no \\boxed{} verdict found")
    raw = boxes[-1].strip()
    if raw not in ("0", "1"):
        return None, _("verdict \\boxed{%(verdict)s} is not 0 or 1", verdict=raw)
    return {"verdict": int(raw)}, None


def _json_verdict(text: str) -> tuple[dict | None, str | None]:
    value, problem = json_object(text)
    if value is None:
        return None, problem
    if not isinstance(value.get(ANSWER), bool):
        return None, _("the answer's \"%(field)s\" is not true or false", field=ANSWER)
    return {"verdict": int(value[ANSWER])}, None


def parser(rubric: Rubric, question: str) -> Parser:
    """The parser of a rubric's answers to a question ("fine" or "binary")."""
    form = rubric.answer_format(question)
    if question == "binary":
        return _json_verdict if form == "json" else _boxed_verdict
    return {"lines": _lines, "number": _number, "json": _json}[form](rubric)


def response_format(rubric: Rubric, question: str) -> dict | None:
    """The structured-output `response_format` of a question whose answer is JSON (None otherwise): a JSON Schema
    derived from the dimensions (each an integer or number within its scale, all required) or the yes/no answer."""
    if rubric.answer_format(question) != "json":
        return None
    properties: dict[str, dict] = {REASONING: {"type": "string"}}
    if question == "binary":
        properties[ANSWER] = {"type": "boolean"}
    else:
        for d in rubric.dimensions:
            properties[d.key] = {"type": "integer" if d.integer else "number", "minimum": _number_of(d.low),
                                 "maximum": _number_of(d.high)}
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": f"{question}_answer", "strict": True, "schema": schema}}


def _number_of(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value

"""Reading a rubric file (YAML or JSON) into a checked Rubric, or the problems that stop it, each naming its line and
field and saying what to change.

The checks, in order: the text (UTF-8, at most MAX_BYTES, well-formed YAML or JSON, no key twice in one mapping), the
published schema (rubric.schema.json: the fields, their types and forms), then the rules a schema cannot say (scales,
unique keys, weights, formats that fit the dimensions, levels within the scale) and last the templates, each compiled
in the sandbox and rendered for a first round and for a later one with the variables the rubric declares.
"""
from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import yaml
from jinja2 import TemplateError
from jinja2.exceptions import TemplateSyntaxError

from benchmarks.problems import Problem, describe
from benchmarks.readers import limits
from benchmarks.rubrics import templates
from benchmarks.rubrics.model import Rubric, make
from translations import _

MAX_BYTES = 256 * 1024
SCHEMA_PATH = Path(__file__).with_name("rubric.schema.json")
# Names the judgments, answers and result documents use themselves: a dimension called so would be mistaken for one.
RESERVED_KEYS = ("total", "verdict", "reasoning", "answer", "session", "session_idx", "session_id", "round", "method",
                 "mode", "status", "scores", "avg", "slope", "intercept", "r2", "n_ir", "n_r2", "binary_rate",
                 "binary_avg", "binary_slope", "binary_intercept", "binary_r2", "binary_n_ir", "binary_n_r2",
                 "sessions", "judged", "judged_fine", "judged_binary", "unparsed", "failed", "pending", "dimensions",
                 "ci95", "al_curve", "binary_curve", "n_al_curve")
_LEVEL = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:-\s*(-?\d+(?:\.\d+)?)\s*)?")


class RubricError(ValueError):
    """A rubric that cannot be used: its problems, each with line, path and a message."""

    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(p.message for p in problems[:3]))
        self.problems = problems


@cache
def schema() -> dict:
    """The published JSON Schema of a rubric file."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def read(data: bytes | str, builtin: bool = False) -> Rubric:
    """A rubric file's text as a checked Rubric; RubricError with every problem found otherwise."""
    document, lines = _parse(data)
    problems = list(_schema_problems(document, lines))
    if not problems:
        problems = list(_rule_problems(document, lines))
    if not problems:
        rubric = make(_with_defaults(document), builtin)
        problems = list(_template_problems(rubric, lines))
        if not problems:
            return rubric
    raise RubricError(sorted(problems, key=lambda p: (p.line or 0, p.path)))


def read_file(path: Path, builtin: bool = False) -> Rubric:
    """A rubric file on disk (read as `read`)."""
    return read(path.read_bytes(), builtin)


# -- the text ----------------------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """YAML's safe loader that refuses a key twice in one mapping."""


def _no_duplicates(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, _("the key %(key)s is given twice", key=json.dumps(key, ensure_ascii=False)),
                key_node.start_mark)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def _parse(data: bytes | str) -> tuple[Any, dict[str, int]]:
    """The document and the line of each path in it; RubricError when the text is not one."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > MAX_BYTES:
        raise RubricError([Problem(None, "", _("The rubric file is %(size)s; a rubric may be at most %(limit)s.",
                                               size=limits.format_size(len(data)),
                                               limit=limits.format_size(MAX_BYTES)))])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RubricError([Problem(data[:exc.start].count(b"\n") + 1, "",
                                   _("The rubric file is not UTF-8 text: save it as UTF-8."))]) from None
    if "\x00" in text:
        raise RubricError([Problem(text[:text.index("\x00")].count("\n") + 1, "",
                                   _("The rubric file holds a NUL character: it is not a text file."))])
    if text.lstrip().startswith("{"):  # JSON: read strictly first, as every JSON text a user sends is
        try:
            limits.loads(text, limits.current())
        except ValueError as exc:
            found = exc.problem() if isinstance(exc, limits.LimitError) else None
            line = found.line if found else _json_line(exc)
            raise RubricError([Problem(line, found.path if found else "",
                                       _("The rubric file is not valid JSON: %(reason)s", reason=_reason(exc)))]) \
                from None
    try:
        document = yaml.load(text, Loader=_Loader)  # noqa: S506 (a safe loader)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        reason = " ".join(str(part) for part in (getattr(exc, "context", None), getattr(exc, "problem", None)) if part)
        raise RubricError([Problem(mark.line + 1 if mark else None, "",
                                   _("The rubric file is not valid YAML or JSON: %(reason)s",
                                     reason=reason or str(exc)))]) from None
    if not isinstance(document, dict):
        raise RubricError([Problem(1, "", _("A rubric is a mapping of fields (id, version, title, ...), not %(what)s.",
                                            what=describe(document)))])
    lines: dict[str, int] = {}
    _node_lines(node, "", lines)
    return document, lines


def _json_line(exc: ValueError) -> int | None:
    return getattr(exc, "lineno", None)


def _reason(exc: ValueError) -> str:
    return exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)


def _node_lines(node: yaml.Node, path: str, lines: dict[str, int]) -> None:
    """Record the line of every path under a node (a mapping's key: the key's line)."""
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = f"{path}.{key.value}" if path else str(key.value)
            lines[child] = key.start_mark.line + 1
            _node_lines(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _node_lines(item, f"{path}[{index}]", lines)


def _line(lines: dict[str, int], path: str) -> int | None:
    """The line of a path, else of its nearest parent that has one."""
    while path not in lines and path:
        path = path.rsplit("[", 1)[0] if path.endswith("]") else path.rpartition(".")[0]
    return lines.get(path)


# -- the schema --------------------------------------------------------------------------------------------------


def _path(parts) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


_NAME_RULES = {
    "id": lambda: _("lower-case letters, digits, '.', '_' and '-', starting with a letter or a digit, at most 64"),
    "key": lambda: _("a lower-case letter, then lower-case letters, digits and '_', at most 32"),
}


def _message(error: jsonschema.ValidationError) -> tuple[str, str]:
    """The path and the translated message of one schema error."""
    path = _path(error.absolute_path)
    kind, value, expected = error.validator, error.instance, error.validator_value
    if kind == "required":  # one error per missing field, each naming it in its message as a repr
        missing = next((name for name in expected if repr(name) == error.message.split(" is a required")[0]),
                       next(name for name in expected if name not in value))
        return path, _("The field %(field)s is missing.", field=missing)
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(value) - set(allowed))
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        if allowed:
            return where, _("Unknown field %(field)s; the fields here are: %(fields)s.", field=unknown[0],
                            fields=", ".join(allowed))
        return where, _("%(field)s: %(problem)s", field=unknown[0], problem=describe(value[unknown[0]]))
    if kind == "type":
        names = {"string": _("a text"), "number": _("a number"), "integer": _("a whole number"),
                 "object": _("a mapping of fields"), "array": _("a list"), "boolean": _("true or false")}
        wanted = [expected] if isinstance(expected, str) else expected
        return path, _("Must be %(expected)s, not %(found)s.", expected=" / ".join(names[w] for w in wanted),
                       found=describe(value))
    if kind == "enum":
        return path, _("Must be one of %(values)s, not %(found)s.", values=", ".join(map(str, expected)),
                       found=describe(value))
    if kind == "pattern":
        rule = _NAME_RULES.get(str(error.absolute_path[-1]) if error.absolute_path else "", lambda: expected)()
        return path, _("%(found)s is not a valid name here: %(rule)s.", found=describe(value), rule=rule)
    if kind in ("minLength", "minProperties"):
        return path, _("Must not be empty.")
    if kind == "maxLength":
        return path, _("Must be at most %(n)s characters long.", n=expected)
    if kind == "minItems":
        return path, _("Must list at least %(n)s.", n=expected)
    if kind == "maxItems":
        return path, _("Must list at most %(n)s.", n=expected)
    if kind == "uniqueItems":
        return path, _("Lists an item twice.")
    if kind == "exclusiveMinimum":
        return path, _("Must be above %(n)s.", n=expected)
    if kind == "oneOf":  # a text: a string, or {en, zh, ko}
        if isinstance(value, dict):
            inner = [e for e in error.context if isinstance(e.instance, dict) or e.validator != "type"]
            if inner:
                return _message(min(inner, key=lambda e: len(e.absolute_path)))
        if value == "":
            return path, _("Must not be empty.")
        return path, _("Must be a text, or texts by language {en: ..., zh: ..., ko: ...}, not %(found)s.",
                       found=describe(value))
    return path, error.message


def _schema_problems(document: Any, lines: dict[str, int]) -> Iterator[Problem]:
    validator = jsonschema.Draft202012Validator(schema())
    for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path))):
        path, message = _message(error)
        yield Problem(_line(lines, path), path, message)


# -- the rules beside the schema -----------------------------------------------------------------------------------


def _rule_problems(document: dict, lines: dict[str, int]) -> Iterator[Problem]:
    dimensions = document["dimensions"]
    seen: set[str] = set()
    for index, dimension in enumerate(dimensions):
        where = f"dimensions[{index}]"
        key, scale = dimension["key"], dimension["scale"]
        if key in RESERVED_KEYS:
            yield Problem(_line(lines, where + ".key"), where + ".key",
                          _("%(key)s is a name the judgments use themselves; choose another (not %(names)s).",
                            key=key, names=", ".join(RESERVED_KEYS)))
        if key in seen:
            yield Problem(_line(lines, where + ".key"), where + ".key",
                          _("Two dimensions have the key %(key)s; each needs its own.", key=key))
        seen.add(key)
        if not scale["min"] < scale["max"]:
            yield Problem(_line(lines, where + ".scale"), where + ".scale",
                          _("The scale's min (%(min)s) must be below its max (%(max)s).", min=scale["min"],
                            max=scale["max"]))
        elif scale.get("integer", True) and not all(float(scale[end]).is_integer() for end in ("min", "max")):
            yield Problem(_line(lines, where + ".scale"), where + ".scale",
                          _("A whole-number scale needs whole-number ends; set integer: false for a scale of "
                            "fractions."))
        for level in dimension.get("levels") or {}:
            found = _LEVEL.fullmatch(str(level))
            ends = [float(x) for x in found.groups() if x is not None] if found else []
            if not ends or not all(scale["min"] <= end <= scale["max"] for end in ends):
                yield Problem(_line(lines, f"{where}.levels.{level}"), f"{where}.levels.{level}",
                              _("The level %(level)s is not a score (or a range such as 0-4) on the scale %(min)s-"
                                "%(max)s.", level=level, min=scale["min"], max=scale["max"]))
    yield from _headline_problems(document, seen, lines)
    answer = document["answer"]
    if answer["format"] == "number" and len(dimensions) != 1:
        yield Problem(_line(lines, "answer.format"), "answer.format",
                      _("The answer format 'number' is one number: it fits a rubric of one dimension, not %(n)s.",
                        n=len(dimensions)))
    if answer.get("total") and answer["format"] != "lines":
        yield Problem(_line(lines, "answer.total"), "answer.total",
                      _("total: boxed goes with the answer format 'lines'."))
    binary = document.get("binary")
    if binary and set(binary["prompts"]) != set(document["prompts"]):
        yield Problem(_line(lines, "binary.prompts"), "binary.prompts",
                      _("The yes/no question needs prompts in the same languages as the dimensions' (%(languages)s).",
                        languages=", ".join(sorted(document["prompts"]))))


def _headline_problems(document: dict, keys: set[str], lines: dict[str, int]) -> Iterator[Problem]:
    headline = document["headline"]
    weights = headline.get("weights")
    if headline["combine"] == "weighted":
        if not weights:
            yield Problem(_line(lines, "headline"), "headline",
                          _("combine: weighted needs weights: a positive weight per dimension key."))
        elif set(weights) != keys:
            yield Problem(_line(lines, "headline.weights"), "headline.weights",
                          _("The weights must name each dimension key once: %(keys)s.", keys=", ".join(sorted(keys))))
    elif weights:
        yield Problem(_line(lines, "headline.weights"), "headline.weights",
                      _("Weights go with combine: weighted."))


def _with_defaults(document: dict) -> dict:
    """The document with the schema's defaults written in, so that saying a default or not is the same rubric."""
    dimensions = [{**d, "scale": {"integer": True, **d["scale"]}} for d in document["dimensions"]]
    return {**document, "dimensions": dimensions}


# -- the templates -----------------------------------------------------------------------------------------------

_SAMPLES = (templates.Context("A 30-year-old nurse who runs marathons.", "Cheerful and direct.", [],
                              "Any tips for my first marathon?", "Pace yourself and enjoy it."),
            templates.Context("", "", [("Hi!", "Hello, how are you?"), ("Tired.", "Long shift?")],
                              "Yes, twelve hours.", "That is a lot; rest well."))


def _template_problems(rubric: Rubric, lines: dict[str, int]) -> Iterator[Problem]:
    questions = ("fine", "binary") if rubric.has_binary else ("fine",)
    for question in questions:
        base = "prompts" if question == "fine" else "binary.prompts"
        for language, parts in (rubric.document["prompts"] if question == "fine"
                                else rubric.document["binary"]["prompts"]).items():
            for part, source in parts.items():
                path = f"{base}.{language}.{part}"
                try:
                    template = templates.compile_template(source)
                    for sample in _SAMPLES:
                        templates.render(template, templates.variables(sample, rubric.context,
                                                                       dimension_values(rubric, language)))
                except TemplateSyntaxError as exc:
                    line = _line(lines, path)
                    yield Problem(line + exc.lineno if line and exc.lineno else line, path,
                                  _("The template does not compile: %(reason)s (line %(n)s of the template).",
                                    reason=exc.message, n=exc.lineno))
                except (TemplateError, TypeError, ValueError, ArithmeticError, LookupError) as exc:
                    yield Problem(_line(lines, path), path,
                                  _("The template cannot be rendered: %(reason)s. A template may use only %(names)s, "
                                    "and reads no file nor any attribute.",
                                    reason=str(exc) or type(exc).__name__,
                                    names=", ".join((*rubric.context, "round", "dimensions"))))


def dimension_values(rubric: Rubric, language: str) -> list[dict]:
    """The `dimensions` variable of the templates, in a language."""
    def plain(number: float) -> int | float:
        return int(number) if number.is_integer() else number

    return [{"key": d.key, "label": d.label_in(language), "min": plain(d.low), "max": plain(d.high),
             "integer": d.integer, "levels": dict(d.levels)} for d in rubric.dimensions]

"""Reading a rubric file (YAML or JSON) into a checked Rubric, or the problems that stop it, each naming its line and
field and saying what to change.

The checks, in order: the text (UTF-8, at most MAX_BYTES, well-formed YAML or JSON, no key twice in one mapping), the
published schema (rubric.schema.json: the fields, their types and forms), then the rules a schema cannot say (scales,
unique keys, weights, formats that fit the dimensions, levels within the scale) and last the templates, each compiled
in the sandbox and rendered for a first round and for a later one with the variables the rubric declares (templates.py
says what a template may not do); a template's problem names the line of the file it is on when the template is a
block text (`|` or `>`), else the line of its field.
"""
from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import yaml
from jinja2 import TemplateError
from jinja2.exceptions import TemplateSyntaxError, UndefinedError

from common.lazy_modules import lazy
from kinds.problems import Problem, describe
from kinds.readers import json_text, limits
from kinds.rubrics import templates
from kinds.rubrics.model import Rubric, make
from translations import _

if TYPE_CHECKING:
    import jsonschema
else:
    jsonschema = lazy("jsonschema")  # loaded when a rubric is first checked, not when the app starts

MAX_BYTES = 256 * 1024
SCHEMA_PATH = Path(__file__).with_name("rubric.schema.json")
# Names the judgments, answers and result documents use themselves: a dimension called so would be mistaken for one.
RESERVED_KEYS = ("total", "verdict", "reasoning", "answer", "session", "session_idx", "session_id", "round", "method",
                 "mode", "status", "scores", "avg", "slope", "intercept", "r2", "n_ir", "n_r2", "binary_rate",
                 "binary_avg", "binary_slope", "binary_intercept", "binary_r2", "binary_n_ir", "binary_n_r2",
                 "sessions", "judged", "judged_fine", "judged_binary", "unparsed", "failed", "pending", "dimensions",
                 "ci95", "al_curve", "binary_curve", "n_al_curve", "line")
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
    document = _quick_document(data)
    if document is not None:
        checked = _checked(document, {}, {}, builtin)
        if isinstance(checked, Rubric):
            return checked
    # Read by PyYAML's own parser, which knows the line of each path: the problems found, as the user reads them.
    document, lines, starts = _parse(data)
    checked = _checked(document, lines, starts, builtin)
    if isinstance(checked, Rubric):
        return checked
    raise RubricError(sorted(checked, key=lambda p: (p.line or 0, p.path)))


def _checked(document: Any, lines: dict[str, int], starts: dict[str, int], builtin: bool) -> Rubric | list[Problem]:
    """The document as a Rubric, or its problems (their lines from `lines` and `starts`)."""
    # The built-in files ship checked against the schema and their templates rendered (tests/kinds/
    # test_rubric_reading.py): read at each start without either, jsonschema stays unloaded until a user's rubric is
    # checked, and a template is compiled when first used (not all nine at every start of a process).
    problems = [] if builtin else list(dict.fromkeys(_schema_problems(document, lines)))  # (one problem once)
    if not problems:
        problems = list(_rule_problems(document, lines))
    if not problems:
        rubric = make(_with_defaults(document), builtin)
        problems = [] if builtin else list(_template_problems(rubric, lines, starts))
        if not problems:
            return rubric
    return problems


def read_file(path: Path, builtin: bool = False) -> Rubric:
    """A rubric file on disk (read as `read`)."""
    return read(path.read_bytes(), builtin)


# -- the text ----------------------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """YAML's safe loader that refuses a key twice in one mapping."""


class _Twice(yaml.constructor.ConstructorError):
    """A key given twice in one mapping (YAML would keep the last silently)."""

    def __init__(self, key: object, mark: yaml.Mark) -> None:
        super().__init__(None, None, "a key given twice", mark)
        self.key, self.mark = key, mark


def _no_duplicates(loader: yaml.SafeLoader | yaml.CSafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise _Twice(key, key_node.start_mark)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)

# libyaml's parser, when PyYAML was built with it: a rubric (the built-ins at every start) read in a fifth of the CPU of
# PyYAML's parser, which is pure Python. Its messages and marks are never shown: a text it refuses, or whose document
# has any problem, is read again by PyYAML's parser (`read`), whose lines and words the user gets, as before.
_QuickLoader: type[yaml.CSafeLoader] | None = None
if hasattr(yaml, "CSafeLoader"):
    class _CLoader(yaml.CSafeLoader):
        """libyaml's safe loader that refuses a key twice in one mapping."""

    _CLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)
    _QuickLoader = _CLoader


def _quick_document(data: bytes | str) -> dict | None:
    """The document of a YAML text that PyYAML's parser would read without a word, read by libyaml; None for any
    other text (too long, not UTF-8, JSON, with a character PyYAML refuses, not YAML, not a mapping), which `_parse`
    reads and explains."""
    if _QuickLoader is None:
        return None
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_BYTES:
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    if text.lstrip().startswith("{") or yaml.reader.Reader.NON_PRINTABLE.search(text):  # JSON is read strictly
        return None
    try:
        document = yaml.load(text, Loader=_QuickLoader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        return None
    return document if isinstance(document, dict) else None


def _parse(data: bytes | str) -> tuple[Any, dict[str, int], dict[str, int]]:
    """The document, the line of each path in it and the first line of each block text (`|` or `>`: a template's
    line 1); RubricError when the text is not one."""
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
            json_text.loads(text, limits.current())
        except limits.LimitError as exc:  # its message says where and what (a key twice, too deep, ...)
            raise RubricError([exc.problem()]) from None
        except ValueError as exc:
            raise RubricError([_json_problem(text, exc)]) from None
    try:
        document = yaml.load(text, Loader=_Loader)  # noqa: S506 (a safe loader)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except _Twice as exc:
        raise RubricError([Problem(exc.mark.line + 1, "", _(
            "The key %(key)s is given twice in one mapping; keep one (a YAML reader would silently keep the last).",
            key=json.dumps(exc.key, ensure_ascii=False, default=str)))]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        reason = " ".join(str(part) for part in (getattr(exc, "context", None), getattr(exc, "problem", None)) if part)
        if mark is None:
            raise RubricError([Problem(None, "", _("The rubric file is not valid YAML or JSON: %(reason)s",
                                                   reason=reason or str(exc)))]) from None
        raise RubricError([Problem(mark.line + 1, "", _(
            "The rubric file is not valid YAML or JSON at column %(column)s: %(reason)s. Indent with spaces, never "
            "tabs, and put a text that holds ': ' or starts with { or [ in quotes.",
            column=mark.column + 1, reason=reason or str(exc)))]) from None
    if not isinstance(document, dict) or node is None:  # (a mapping always has its node)
        raise RubricError([Problem(1, "", _("A rubric is a mapping of fields (id, version, title, ...), not %(what)s.",
                                            what=describe(document)))])
    lines: dict[str, int] = {}
    starts: dict[str, int] = {}
    _node_lines(node, "", lines, starts)
    return document, lines, starts


def _json_problem(text: str, exc: ValueError) -> Problem:
    """What is wrong with a JSON text, where: a comma before a closing bracket said as such."""
    if not isinstance(exc, json.JSONDecodeError):
        return Problem(getattr(exc, "lineno", None), "", _("The rubric file is not valid JSON: %(reason)s",
                                                           reason=str(exc)))
    before = text[:exc.pos].rstrip()
    if before.endswith(",") and text[exc.pos:exc.pos + 1] in ("}", "]"):
        return Problem(before.count("\n") + 1, "", _(
            "The rubric file is not valid JSON: a comma before the closing %(bracket)s; JSON allows none after the "
            "last item: remove it.", bracket=text[exc.pos]))
    return Problem(exc.lineno, "", _("The rubric file is not valid JSON: %(reason)s", reason=exc.msg))


def _node_lines(node: yaml.Node, path: str, lines: dict[str, int], starts: dict[str, int]) -> None:
    """Record the line of every path under a node (a mapping's key: the key's line), and of the first line of the
    text of each block scalar (`|` or `>`)."""
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
        starts[path] = node.start_mark.line + 2  # the text starts on the line after the indicator
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = f"{path}.{key.value}" if path else str(key.value)
            lines[child] = key.start_mark.line + 1
            _node_lines(value, child, lines, starts)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _node_lines(item, f"{path}[{index}]", lines, starts)


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
    kind = error.validator
    value: Any = error.instance  # the part of the document checked, and the keyword's value in the schema
    expected: Any = error.validator_value
    if kind == "required":  # one error per missing field, its name in the message
        named = re.match(r"^'(.+)' is a required property$", error.message)
        missing = named.group(1) if named else next(name for name in expected if name not in value)
        return path, _("The field %(field)s is missing.", field=missing)
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}) if isinstance(error.schema, dict) else {})
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
        if not value:
            return path, _("The list is empty; it must hold at least %(n)s.", n=expected)
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


def _template_problems(rubric: Rubric, lines: dict[str, int], starts: dict[str, int]) -> Iterator[Problem]:
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
                except (TemplateError, TypeError, ValueError, ArithmeticError, LookupError, RecursionError) as exc:
                    line = _template_line(exc)
                    at = starts[path] + line - 1 if path in starts and line else _line(lines, path)
                    yield Problem(at, path, _template_message(exc, rubric, line))


def _template_line(exc: BaseException) -> int | None:
    """The line of the template where rendering or compiling it failed, when known."""
    line = getattr(exc, "lineno", None)
    trace = exc.__traceback__
    while trace is not None:  # Jinja gives its template's frames the template's lines
        if trace.tb_frame.f_code.co_filename == "<template>":
            line = trace.tb_lineno
        trace = trace.tb_next
    return line


def _template_message(exc: BaseException, rubric: Rubric, line: int | None) -> str:
    """What a template may not do, or why it does not compile or render, in words that say what to change."""
    names = ", ".join((*rubric.context, "round", "dimensions"))
    if isinstance(exc, templates.Refused):
        return _refused(exc)
    if isinstance(exc, RecursionError):
        return _("The template calls a macro that calls itself without end.")
    if isinstance(exc, TemplateSyntaxError):
        unknown = re.match(r"^No filter named '(.+)'", exc.message or "")
        if unknown:
            return _("The template uses the filter %(name)s, which templates do not have; the filters are: "
                     "%(filters)s.", name=unknown.group(1), filters=", ".join(templates.filters()))
        return _("The template does not compile: %(reason)s (line %(n)s of the template).", reason=exc.message,
                 n=line)
    undefined = re.match(r"^'(\w+)' is undefined$", str(exc)) if isinstance(exc, UndefinedError) else None
    if undefined and undefined.group(1) in templates.CONTEXT:
        return _("The template uses %(name)s, which the rubric's context does not list: add %(name)s to context, or "
                 "take it out of the template.", name=undefined.group(1))
    if undefined:
        return _("The template uses %(name)s, which is no variable of a template; it may use %(names)s.",
                 name=undefined.group(1), names=names)
    missing = re.match(r"^'(\w+) object' has no attribute '(.+)'$", str(exc)) if isinstance(exc, UndefinedError) \
        else None
    if missing:
        return _("The template reads %(key)s of a value (a %(type)s) that has no such key: a dimension has key, label, "
                 "min, max, integer and levels, a round of history has user and reply.", key=missing.group(2),
                 type=missing.group(1))
    return _("The template cannot be rendered: %(reason)s. A template may use only %(names)s, and reads no file nor "
             "any attribute.", reason=str(exc) or type(exc).__name__, names=names)


def _refused(exc: templates.Refused) -> str:
    if exc.what == "file":
        return _("The template reads another file (%(statement)s): a template may not include, import or extend "
                 "anything.", statement=exc.detail)
    if exc.what == "attribute":
        return _("The template reads the attribute %(name)s of a value: a template reads its variables and their "
                 "items and keys (turn.user, dimensions[0].label), never an attribute or a method.", name=exc.detail)
    if exc.what == "width":
        return _("The template formats a value with a width or precision above %(limit)s, or given by *.",
                 limit=exc.detail)
    if exc.what == "power":
        return _("The template raises a number to a power above %(limit)s.", limit=exc.detail)
    if exc.what == "steps":
        return _("The template takes more than %(limit)s loop turns and calls to render: loop over the rubric's "
                 "values, not over huge ranges or macros that call themselves.", limit=exc.detail)
    return _("The template makes a text or a list longer than %(limit)s: a template may not build huge values.",
             limit=exc.detail)


def dimension_values(rubric: Rubric, language: str) -> list[dict]:
    """The `dimensions` variable of the templates, in a language."""
    def plain(number: float) -> int | float:
        return int(number) if number.is_integer() else number

    return [{"key": d.key, "label": d.label_in(language), "min": plain(d.low), "max": plain(d.high),
             "integer": d.integer, "levels": dict(d.levels)} for d in rubric.dimensions]

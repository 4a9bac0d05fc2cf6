"""A rubric's prompt templates: Jinja2 in a sandbox, with no file, attribute or loader access.

A template sees only the variables its rubric's `context` declares (profile, personality, history, message, reply),
and `round` (the reply's place in the conversation, 1 for the first) and `dimensions` (each {key, label, min, max,
integer, levels} in the judging language); the filter `text|quote(name, empty="")` makes a text a delimited data block
whose id is a hash of the whole context, so that quoted text cannot forge its own end marker. Lists and dicts are
read by index and key (`turn.user` reads the key "user"); no attribute or method of any object can be reached (but
the template language's own `loop`, `namespace`, `cycler` and `joiner`), and no other file can be included, imported
or extended. Rendering is bounded, so that a rubric someone uploads cannot hold a server: a `*` or `**` that would make
a huge value (MAX_OUTPUT_ITEMS, MAX_POWER), a text or list made longer than MAX_TEXT (by `~`, `+`, `join` or `replace`), a `%` or `format` width
above MAX_WIDTH and more than MAX_STEPS loop turns and calls in one rendering are refused. The filters that only pad or
shuffle (center, indent, wordwrap, batch, slice, random) and the random `lipsum` are left out: the same reply always
gets the same prompt. Everything refused raises Refused, which says what and, when known, where.

The built-in rubrics' templates, which ship with the dashboard, compile in TRUSTED instead: the same filters and the
same reading of keys, without the sandbox's checks.
"""
from __future__ import annotations

import hashlib
import json
import operator
import re
from collections.abc import Iterable, Mapping, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from jinja2 import Environment, StrictUndefined, Template, meta, nodes, pass_context, pass_eval_context
from jinja2.exceptions import SecurityError
from jinja2.filters import do_join, do_replace
from jinja2.runtime import LoopContext, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Cycler, Joiner, Namespace

MAX_OUTPUT_ITEMS = 100_000  # characters or items a `*` may make
MAX_POWER = 64  # the largest exponent of a `**` (of a base other than 0, 1 and -1)
MAX_TEXT = 10_000_000  # characters (or items) of a text or list made by `~`, `+`, join or replace
MAX_WIDTH = 1_000  # of a `%` or format conversion
MAX_STEPS = 100_000  # loop turns and calls in one rendering
CONTEXT = ("profile", "personality", "history", "message", "reply")
_TEMPLATE_HELPERS = (LoopContext, Namespace, Cycler, Joiner)
_OTHER_FILES = (nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)
LEFT_OUT = ("center", "indent", "wordwrap", "batch", "slice", "random", "lipsum")
_STEPS, _LIMITED = "_psb_steps", "_psb_limited"  # the filters the sandbox wraps loops and `~` in
_CONVERSION = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_SPENT: ContextVar[list[int] | None] = ContextVar("template_steps", default=None)
_SAFE: dict[tuple[type, str], bool] = {}  # (type, attribute) -> whether a template may read it
_DICT_ATTRIBUTES = frozenset(dir(dict))


class Refused(SecurityError):
    """What a template may not do: `what` is "file" (include, import, extends: `detail` the statement), "attribute"
    (`detail` its name), "too_long", "width", "power" or "steps" (`detail` the limit); `lineno` its line in the
    template when known."""

    def __init__(self, what: str, detail: object, lineno: int | None = None) -> None:
        super().__init__(f"{what}: {detail}")
        self.what, self.detail, self.lineno = what, str(detail), lineno


def _length(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple)) else 0


def _limited(value: Any) -> Any:
    """A text or list made by the template, refused when longer than MAX_TEXT."""
    if _length(value) > MAX_TEXT:
        raise Refused("too_long", MAX_TEXT)
    return value


def _spend(steps: int) -> None:
    """Count loop turns or calls of the rendering in progress; Refused past MAX_STEPS."""
    spent = _SPENT.get()
    if spent is not None:
        spent[0] += steps
        if spent[0] > MAX_STEPS:
            raise Refused("steps", MAX_STEPS)


def _steps(iterable: Any) -> Any:
    """A loop's items, each turn counted (all at once when the loop knows its length)."""
    if isinstance(iterable, (list, tuple, dict, str, range)):
        _spend(len(iterable))
        return iterable
    if isinstance(iterable, Undefined):
        return iterable
    return _each_counted(iterable)


def _each_counted(iterable: Iterable) -> Iterable:
    for item in iterable:
        _spend(1)
        yield item


def _check_widths(text: Any) -> None:
    """Refuse a `%` format whose width or precision is `*` or above MAX_WIDTH."""
    if isinstance(text, str):
        for width, precision in _CONVERSION.findall(text):
            if any(n == "*" or (n and int(n) > MAX_WIDTH) for n in (width, precision)):
                raise Refused("width", MAX_WIDTH)


@pass_eval_context
def _replace(eval_ctx: Any, s: str, old: str, new: str, count: int | None = None) -> str:
    """Jinja's replace, refused when its result would be longer than MAX_TEXT."""
    text, old, new = str(s), str(old), str(new)
    times = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    if len(text) + times * (len(new) - len(old)) > MAX_TEXT:
        raise Refused("too_long", MAX_TEXT)
    return do_replace(eval_ctx, s, old, new, count)


@pass_eval_context
def _join(eval_ctx: Any, value: Iterable, d: str = "", attribute: Any = None) -> str:
    """Jinja's join, refused when its result would be longer than MAX_TEXT."""
    items = list(value)
    size = max(len(items) - 1, 0) * len(str(d)) + (sum(len(str(x)) for x in items) if attribute is None else 0)
    if size > MAX_TEXT:
        raise Refused("too_long", MAX_TEXT)
    return _limited(do_join(eval_ctx, items, d, attribute))


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    """Jinja's format filter (`%` formatting), with bounded widths."""
    _check_widths(value)
    return _limited(str(value) % (kwargs or args))


class _DictKeys:
    """An environment's reading of `a.b`: a plain dict's key read at once when dict has no attribute of that name (as
    Jinja would read it, after looking for the attribute first), else as the environment reads it; and its templates'
    globals as one dict."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        """`a.b`: a dict's key, or as the environment reads it."""
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)  # type: ignore[misc]  # the environment's, mixed in after this class

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        """A template's globals as one plain dict, not Jinja's ChainMap over the environment's: each render copies them
        twice, which a ChainMap does in Python (a tenth of a prompt's rendering). The environment's globals are set
        once, before any template is compiled."""
        return {**self.globals, **(d or {})}  # type: ignore[attr-defined]  # the environment's, mixed in after this


class _Sandbox(_DictKeys, ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox with no attribute access at all (items only), no other file, and bounded work."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        """The template's tree, refused when it reads another file; every loop's items and every `~` counted."""
        tree = super()._parse(source, name, filename)
        for node in tree.find_all(_OTHER_FILES):
            statement = type(node).__name__.lower().replace("fromimport", "from ... import")
            raise Refused("file", f"{{% {statement} %}}", node.lineno)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Filter(loop.iter, _STEPS, [], [], None, None, lineno=loop.iter.lineno)
        for concat in list(tree.find_all(nodes.Concat)):
            concat.nodes = [nodes.Filter(nodes.Concat(concat.nodes, lineno=concat.lineno), _LIMITED, [], [], None,
                                         None, lineno=concat.lineno)]
        return tree

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """No attribute of any object but the template language's own helpers (`loop.index`, a namespace's
        values): templates read dict keys and list items only."""
        key = (type(obj), attr)  # Jinja's decision depends on these two only (never on the value): kept once made
        safe = _SAFE.get(key)
        if safe is None:
            safe = _SAFE[key] = isinstance(obj, _TEMPLATE_HELPERS) and super().is_safe_attribute(obj, attr, value)
        return safe

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        """An attribute a template may not read: refused at once, naming it."""
        raise Refused("attribute", attribute)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's names
        """A call from the template, counted."""
        _spend(1)
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Any, operator_name: str, left: Any, right: Any) -> Any:
        """`*`, `**`, `+` and `%`, refused when the result would be huge."""
        if operator_name == "**":
            if isinstance(right, (int, float)) and isinstance(left, (int, float)) and abs(right) > MAX_POWER \
                    and abs(left) > 1:
                raise Refused("power", MAX_POWER)
            return operator.pow(left, right)
        if operator_name == "+":
            return _limited(operator.add(left, right))
        if operator_name == "%":
            _check_widths(left)
            return _limited(operator.mod(left, right))
        for sequence, times in ((left, right), (right, left)):
            if isinstance(sequence, (str, list, tuple)) and isinstance(times, int) \
                    and len(sequence) * times > MAX_OUTPUT_ITEMS:
                raise Refused("too_long", MAX_OUTPUT_ITEMS)
        return operator.mul(left, right)


ENVIRONMENT = _Sandbox(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
for _name in LEFT_OUT:
    ENVIRONMENT.filters.pop(_name, None)
    ENVIRONMENT.globals.pop(_name, None)
ENVIRONMENT.filters.update({_STEPS: _steps, _LIMITED: _limited, "replace": _replace, "join": _join, "format": _format})
BLOCK_ID = "_block_id"  # the variable holding the reply's Context, for its delimiter id (a name templates do not use)


def filters() -> list[str]:
    """The filters a template may use, by name."""
    return sorted(name for name in ENVIRONMENT.filters if not name.startswith("_"))


def constant(source: str) -> bool:
    """Whether a template gives the same text for every reply: it reads no variable but `dimensions` and quotes
    nothing (a quoted block's id is a hash of the reply's context)."""
    tree = ENVIRONMENT.parse(source)
    return meta.find_undeclared_variables(tree) <= {"dimensions"} and \
        not any(node.name == "quote" for node in tree.find_all(nodes.Filter))


@lru_cache(maxsize=256)
def compile_template(source: str, trusted: bool = False) -> Template:
    """A template compiled in the sandbox (jinja2.TemplateSyntaxError when it does not compile, Refused when it
    reads another file), or, `trusted` (a built-in rubric's), outside it; compiled once, whether to check a rubric or
    to judge with it."""
    return (TRUSTED if trusted else ENVIRONMENT).from_string(source)


@dataclass(frozen=True)
class Context:
    """What the judge may see of one reply: the conversation so far and the reply."""

    profile: str
    personality: str
    history: list[tuple[str, str]]  # earlier rounds: (user message, this method's reply)
    message: str
    reply: str

    @cached_property  # when a template first quotes a text; once for all the questions about one reply
    def block_id(self) -> str:
        """A delimiter id derived from the quoted text, so the text cannot forge its own end marker."""
        payload = json.dumps([self.profile, self.personality, self.history, self.message, self.reply],
                             ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


@pass_context
def quote(context: Any, text: str, name: str, empty: str = "") -> str:
    """`text|quote(name, empty)`: the text (or `empty` when it is blank) between "<<<name #id>>>" and
    "<<<end name #id>>>" lines, the id a hash of the whole context."""
    block = context.parent[BLOCK_ID].block_id  # as render() gave it (not a variable a template set)
    body = text if text and str(text).strip() else empty
    return f"<<<{name} #{block}>>>\n{body}\n<<<end {name} #{block}>>>"


ENVIRONMENT.filters["quote"] = quote


class _Trusted(_DictKeys, Environment):
    """The environment of the built-in rubrics' templates, which ship with the dashboard: the sandbox's filters and
    its reading of `a.b` as a dict's key, without its checks, which took about a third of a prompt's rendering."""


TRUSTED = _Trusted(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
TRUSTED.filters = {name: f for name, f in ENVIRONMENT.filters.items() if not name.startswith("_")}
TRUSTED.globals = dict(ENVIRONMENT.globals)


def variables(ctx: Context, declared: tuple[str, ...], dimensions: list[dict]) -> dict[str, Any]:
    """The variables a template of a rubric that declares `declared` sees for this reply."""
    found: dict[str, Any] = {"profile": ctx.profile, "personality": ctx.personality,
                             "history": [{"user": user, "reply": reply} for user, reply in ctx.history],
                             "message": ctx.message, "reply": ctx.reply}
    return {**{name: found[name] for name in declared}, "round": len(ctx.history) + 1, "dimensions": dimensions,
            BLOCK_ID: ctx}


def render(template: Template, values: Mapping[str, Any]) -> str:
    """A template's text for these variables (Refused when it does what a template may not, or too much of it)."""
    token = _SPENT.set([0])
    try:
        return template.render(values)
    finally:
        _SPENT.reset(token)


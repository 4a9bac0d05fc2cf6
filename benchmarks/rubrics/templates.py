"""A rubric's prompt templates: Jinja2 in a sandbox, with no file, attribute or loader access.

A template sees only the variables its rubric's `context` declares (profile, personality, history, message, reply),
and `round` (the reply's place in the conversation, 1 for the first) and `dimensions` (each {key, label, min, max,
integer, levels} in the judging language); the filter `text|quote(name, empty="")` makes a text a delimited data block
whose id is a hash of the whole context, so that quoted text cannot forge its own end marker. Lists and dicts are
read by index and key (`turn.user` reads the key "user"); no attribute or method of any object can be reached (but
the template language's own `loop`, `namespace`, `cycler` and `joiner`), no
other file can be included, and a `*` or `**` that would make a huge value is refused.
"""
from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import StrictUndefined, Template, pass_context
from jinja2.exceptions import SecurityError
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Cycler, Joiner, Namespace

MAX_OUTPUT_ITEMS = 100_000  # characters or items a `*` may make; `**` exponents above this are refused too
CONTEXT = ("profile", "personality", "history", "message", "reply")
_TEMPLATE_HELPERS = (LoopContext, Namespace, Cycler, Joiner)


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox with no attribute access at all (items only) and bounded `*` and `**`."""

    intercepted_binops = frozenset({"*", "**"})

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """No attribute of any object but the template language's own helpers (`loop.index`, a namespace's
        values): templates read dict keys and list items only."""
        return isinstance(obj, _TEMPLATE_HELPERS) and super().is_safe_attribute(obj, attr, value)

    def call_binop(self, context: Any, operator_name: str, left: Any, right: Any) -> Any:
        """`*` and `**`, refused when the result would be huge."""
        if operator_name == "**":
            if isinstance(right, (int, float)) and isinstance(left, (int, float)) and abs(right) > 64 and abs(left) > 1:
                raise SecurityError("the power is too large")
            return operator.pow(left, right)
        for sequence, times in ((left, right), (right, left)):
            if isinstance(sequence, (str, list, tuple)) and isinstance(times, int) \
                    and len(sequence) * times > MAX_OUTPUT_ITEMS:
                raise SecurityError("the repetition is too long")
        return operator.mul(left, right)


ENVIRONMENT = _Sandbox(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
BLOCK_ID = "_block_id"  # the variable holding the context's delimiter id (a name templates do not use)


def compile_template(source: str) -> Template:
    """A template compiled in the sandbox (jinja2.TemplateSyntaxError when it does not compile)."""
    return ENVIRONMENT.from_string(source)


@dataclass(frozen=True)
class Context:
    """What the judge may see of one reply: the conversation so far and the reply."""

    profile: str
    personality: str
    history: list[tuple[str, str]]  # earlier rounds: (user message, this method's reply)
    message: str
    reply: str

    def block_id(self) -> str:
        """A delimiter id derived from the quoted text, so the text cannot forge its own end marker."""
        payload = json.dumps([self.profile, self.personality, self.history, self.message, self.reply],
                             ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


class _BlockId:
    """The context's delimiter id, computed when a template first quotes a text."""

    def __init__(self, ctx: Context) -> None:
        self.ctx, self.value = ctx, ""

    def get(self) -> str:
        if not self.value:
            self.value = self.ctx.block_id()
        return self.value


@pass_context
def quote(context: Any, text: str, name: str, empty: str = "") -> str:
    """`text|quote(name, empty)`: the text (or `empty` when it is blank) between "<<<name #id>>>" and
    "<<<end name #id>>>" lines, the id a hash of the whole context."""
    block = context[BLOCK_ID].get()
    body = text if text and str(text).strip() else empty
    return f"<<<{name} #{block}>>>\n{body}\n<<<end {name} #{block}>>>"


ENVIRONMENT.filters["quote"] = quote


def variables(ctx: Context, declared: tuple[str, ...], dimensions: list[dict]) -> dict[str, Any]:
    """The variables a template of a rubric that declares `declared` sees for this reply."""
    found: dict[str, Any] = {"profile": ctx.profile, "personality": ctx.personality,
                             "history": [{"user": user, "reply": reply} for user, reply in ctx.history],
                             "message": ctx.message, "reply": ctx.reply}
    return {**{name: found[name] for name in declared}, "round": len(ctx.history) + 1, "dimensions": dimensions,
            BLOCK_ID: _BlockId(ctx)}


def render(template: Template, values: Mapping[str, Any]) -> str:
    """A template's text for these variables."""
    return template.render(values)


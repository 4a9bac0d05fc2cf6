"""Search patterns people type (the sample grid's and the row-level diff's `q`): checked before they run.

A pattern is case-insensitive, at most MAX_PATTERN characters, and refused when it nests quantifiers (like (a+)+),
the shape of patterns whose backtracking takes exponential time over a long reply.
"""
from __future__ import annotations

import re

from translations import _

MAX_PATTERN = 200


class BadQuery(ValueError):
    """A filter that cannot be used (a pattern that does not compile or could take exponential time); the message
    says why."""


def _nested_repeat(items, inside: bool = False) -> bool:
    """Whether a parsed pattern repeats something that itself repeats, like (a+)+ (exponential backtracking)."""
    for op, arg in items:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = arg
            if inside and high != low:
                return True
            if _nested_repeat(body, inside or high > 1):
                return True
        elif name == "SUBPATTERN":
            if _nested_repeat(arg[-1], inside):
                return True
        elif name == "BRANCH":
            if any(_nested_repeat(branch, inside) for branch in arg[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT"):
            if _nested_repeat(arg[1], inside):
                return True
    return False


def compile_pattern(text: str) -> re.Pattern | None:
    """The `q` pattern (case-insensitive), None when blank; BadQuery when it is too long, does not compile, or
    nests quantifiers (such a pattern can take exponential time over a long reply)."""
    from re import _parser  # type: ignore[attr-defined]  # the parse tree, to find nested repeats

    text = text.strip()
    if not text:
        return None
    if len(text) > MAX_PATTERN:
        raise BadQuery(_("The pattern is longer than %(n)s characters.", n=MAX_PATTERN))
    try:
        compiled = re.compile(text, re.IGNORECASE)
    except re.error as exc:
        raise BadQuery(_("The pattern is not a valid regular expression: %(reason)s.", reason=str(exc))) from exc
    if _nested_repeat(_parser.parse(text, re.IGNORECASE)):
        raise BadQuery(_("The pattern repeats a group that itself repeats, like (a+)+; write it without the nesting."))
    return compiled

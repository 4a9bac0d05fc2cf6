"""JSON texts read within the hard limits (limits.py), refusing what cannot be kept as it was written.

JSON that cannot be kept is refused like a limit passed: an object with a key twice (json.loads would silently keep
the last), and a string or key holding a lone surrogate (it cannot be written as UTF-8) or NUL (PostgreSQL cannot
store it). JSON is parsed by json.loads and the value then walked level by level (no recursion); only a value past a
limit has its text scanned token by token to name the place. The other checks are as cheap: the keys of the parsed
objects are counted against the colons of the text (a key written twice leaves a colon whose key was not kept), and
the text is searched for the escape of a lone surrogate or of NUL only when it holds a backslash; only when one is
found are its strings read one by one to name the place.
"""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from itertools import chain, compress

from kinds.problems import short_json
from kinds.readers.limits import SETTINGS, LimitError, Limits, where
from translations import _

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_TOKENS = re.compile(_STRING + r'|[\[\]{}]')  # strings and brackets: what a JSON path is made of
_STRINGS = re.compile(_STRING)
_LONG_NUMBER = re.compile(_STRING + r'|-?\d{%d,}' % (sys.get_int_max_str_digits() + 1))
_KEY_END = re.compile(r'\s*:')
# The escape of a lone surrogate (a high half not followed by a low one, a low half not after a high one) or of NUL;
# also any escape of a surrogate after a backslash (which may be escaped itself: '\\ud800' is text), left to
# _check_characters. One pass, in which the escape of an ordinary character fails at its first digit.
_BAD_ESCAPE = re.compile(r'\\u(?:0000|[dD](?:(?<=\\\\u[dD])[89a-fA-F]|(?<!\\\\u[dD])(?:'
                         r'[89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<![dD][89abAB][0-9a-fA-F]{2}\\u[dD])[c-fC-F])))')
_BAD_CHARACTER = re.compile('[\ud800-\udfff\x00]')  # in a parsed string, a surrogate is always a lone one
_KEY_COLONS = re.compile(r':(?<=["\s]:)')  # each key's colon, and those in strings after a quote or a space


def loads(text: str, limits: Limits, label: str | None = None, first_line: int = 1) -> object:
    """json.loads within the depth and string limits, refusing duplicate keys, lone surrogates and NUL; LimitError
    names the place (JSONDecodeError passes). `text` is decoded strictly (as UTF-8), so only escapes hold these."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(text, limits, label, first_line) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer of more digits than Python converts
        raise _long_number(text, label, first_line) from None
    found, keys, texts = _exceeded(value, limits, strings=len(text) > limits.string_chars + 2)  # (else none too long)
    if found == "depth":
        raise _too_deep(text, limits, label, first_line)
    if found == "string":
        _check_strings(text, limits, label, first_line)
    if "\\" in text and _BAD_ESCAPE.search(text):  # (finding one character first is far faster)
        _check_characters(text, label, first_line)
    # A key written twice was not kept: the text holds more keys than json.loads kept. Each key and each string is
    # written between two quotes (any other quote is escaped), and outside strings a colon follows each key, after a
    # quote or a space. So if there are no more quotes than two per key and string kept, or no more colons (or of
    # those after a quote or a space) than keys kept, no key was written twice; else the keys are read one by one.
    if (text.count('"') != 2 * (keys + texts) and text.count(":") != keys
            and len(_KEY_COLONS.findall(text)) != keys):
        _check_duplicates(text, label, first_line)
    return value


_CONTAINERS = frozenset((list, dict))
_IS_CONTAINER = _CONTAINERS.__contains__
_IS_STRING = frozenset((str,)).__contains__
_IS_OBJECT = frozenset((dict,)).__contains__


def _exceeded(value: object, limits: Limits, strings: bool) -> tuple[str | None, int, int]:
    """('depth' or 'string' when a parsed value passes that limit, else None; the number of keys of its objects;
    the number of its strings). Walked level by level with every item of a level typed in C (no recursion, no
    Python step per item), so long lists of numbers cost little."""
    cap = limits.string_chars
    if type(value) is str:
        return ("string" if strings and len(value) > cap else None), 0, 1
    level: list = [value] if _IS_CONTAINER(type(value)) else []
    depth = keys = texts = 0
    while level:
        depth += 1
        if depth > limits.json_depth:
            return "depth", keys, texts
        parts: list[Iterable] = [node.values() if type(node) is dict else node for node in level]
        objects: Iterable = compress(level, map(_IS_OBJECT, map(type, level)))
        types = set(map(type, chain.from_iterable(parts)))
        if str in types:
            texts += sum(map(_IS_STRING, map(type, chain.from_iterable(parts))))
        if strings:
            objects = list(objects)  # read twice
            found = compress(chain.from_iterable(parts), map(_IS_STRING, map(type, chain.from_iterable(parts))))
            if max(map(len, chain(chain.from_iterable(objects), found)), default=0) > cap:
                return "string", keys, texts
        keys += sum(map(len, objects))
        if _CONTAINERS.isdisjoint(types):
            return None, keys, texts
        level = list(compress(chain.from_iterable(parts), map(_IS_CONTAINER, map(type, chain.from_iterable(parts)))))
    return None, keys, texts


def _locate(text: str, depth: int | None = None, offset: int | None = None) -> tuple[int, str]:
    """(offset, JSON path) of the first list or object opened deeper than `depth`, or of the token at `offset`."""
    stack: list[list] = []  # per open container: [is an object, its current key or index]
    end = 0
    for match in _TOKENS.finditer(text):
        start = match.start()
        if stack and not stack[-1][0]:  # the gap between tokens holds no strings
            stack[-1][1] += text.count(",", end, start if offset is None else min(start, offset))
        if offset is not None and start >= offset:
            if stack and stack[-1][0] and start == offset and _KEY_END.match(text, match.end()):
                stack[-1][1] = match.group()  # the token is a key: its own path
            return offset, _path(stack)
        end = match.end()
        char = text[start]
        if depth is not None and char in "[{" and len(stack) >= depth:
            return start, _path(stack)
        if char == '"':
            if stack and stack[-1][0] and _KEY_END.match(text, end):
                stack[-1][1] = match.group()
        elif char in "[{":
            stack.append([char == "{", "" if char == "{" else 0])
        elif stack:
            stack.pop()
    return len(text) if offset is None else offset, _path(stack)


def _path(stack: list[list]) -> str:
    """The JSON path of the open containers, e.g. 'rounds[2].responses["my method"]'."""
    parts = []
    for is_object, item in stack:
        if not is_object:
            parts.append(f"[{item}]")
            continue
        try:
            key = json.loads(item) if item else ""
        except ValueError:
            key = item.strip('"')
        key = key if len(key) <= 100 else key[:99] + "…"
        # a lone surrogate stays an escape: the path is shown and stored
        written = json.dumps(key, ensure_ascii=_BAD_CHARACTER.search(key) is not None)
        parts.append(f".{key}" if key.isidentifier() else f"[{written}]")
    return "".join(parts).removeprefix(".")


def _short(path: str) -> str:
    """A JSON path cut for a message (the problem keeps it whole)."""
    if len(path) <= 60:
        return path
    head, tail = path[:36], path[-20:]
    return f"{head[:head.rfind('[')] if '[' in head else head}…{tail[tail.find('['):] if '[' in tail else tail}"


def _at(text: str, offset: int, label: str | None, first_line: int) -> tuple[int, str]:
    """The line of an offset and the 'where' that starts a message about it."""
    line = first_line + text.count("\n", 0, offset)
    return line, where(label, line)


def _too_deep(text: str, limits: Limits, label: str | None, first_line: int) -> LimitError:
    offset, path = _locate(text, depth=limits.json_depth)
    line, place = _at(text, offset, label, first_line)
    return LimitError(_(
        "%(where)s: '%(path)s' nests lists and objects deeper than %(limit)s levels, the limit "
        "(%(setting)s). Flatten the data, or raise %(setting)s.",
        where=place, path=_short(path), limit=limits.json_depth, setting=SETTINGS["json_depth"]), line, path)


def _check_strings(text: str, limits: Limits, label: str | None, first_line: int) -> None:
    """Raise LimitError at the first string longer than LIMIT_STRING_CHARS (escapes counted once)."""
    cap = limits.string_chars
    for match in _STRINGS.finditer(text):
        if match.end() - match.start() - 2 <= cap:
            continue
        size = len(json.loads(match.group()))
        if size <= cap:
            continue
        offset, path = _locate(text, offset=match.start())
        line, place = _at(text, offset, label, first_line)
        raise LimitError(_(
            "%(where)s: '%(path)s' is a string of %(count)s characters, more than the limit of %(limit)s "
            "(%(setting)s). Shorten it, or raise %(setting)s.", where=place, path=_short(path) or "$", count=size,
            limit=cap, setting=SETTINGS["string_chars"]), line, path)


def _check_characters(text: str, label: str | None, first_line: int) -> None:
    """Raise LimitError at the first string or key holding a lone surrogate or NUL (both only written as escapes)."""
    for match in _STRINGS.finditer(text):
        token = match.group()
        found = _BAD_CHARACTER.search(json.loads(token)) if "\\u" in token else None
        if found is not None:
            break
    else:
        return
    offset, path = _locate(text, offset=match.start())
    line, place = _at(text, offset, label, first_line)
    if found.group() == "\x00":
        raise LimitError(_(
            "%(where)s: '%(path)s' holds a NUL character (written \\u0000), which cannot be stored (the database "
            "refuses it) or shown. Remove it.", where=place, path=_short(path) or "$"), line, path)
    raise LimitError(_(
        "%(where)s: '%(path)s' holds a lone surrogate %(escape)s (an invalid character: half of a pair written "
        "without its other half), which cannot be stored or shown. Remove it, or write the whole pair (such as "
        "\\ud83d\\ude00).", where=place, path=_short(path) or "$", escape="\\u%04x" % ord(found.group())),
        line, path)


def _check_duplicates(text: str, label: str | None, first_line: int) -> None:
    """Raise LimitError at the first key written twice in one object (the path is the object's)."""
    stack: list[tuple[int, set] | None] = []  # per open container: an object's offset and keys, or None (a list)
    for match in _TOKENS.finditer(text):
        start = match.start()
        char = text[start]
        if char == "{":
            stack.append((start, set()))
        elif char == "[":
            stack.append(None)
        elif char != '"':
            stack.pop()
        elif stack and stack[-1] is not None and _KEY_END.match(text, match.end()):
            token = match.group()
            key = json.loads(token) if "\\" in token else token[1:-1]
            opened, keys = stack[-1]
            if key in keys:
                path = _locate(text, offset=opened)[1]
                line, place = _at(text, start, label, first_line)
                raise LimitError(_(
                    "%(where)s: the key %(key)s appears twice in '%(path)s'; keep one (a JSON reader would "
                    "silently keep only the last).", where=place, key=short_json(key), path=_short(path) or "$"),
                    line, path)
            keys.add(key)


def _long_number(text: str, label: str | None, first_line: int) -> LimitError:
    """The error for an integer longer than Python converts (sys.get_int_max_str_digits())."""
    match = next((m for m in _LONG_NUMBER.finditer(text) if text[m.start()] != '"'), None)
    offset, path = _locate(text, offset=match.start()) if match else (0, "")
    line, place = _at(text, offset, label, first_line)
    return LimitError(_(
        "%(where)s: '%(path)s' is a number of more than %(limit)s digits, which cannot be read. Write it with "
        "fewer digits.", where=place, path=_short(path) or "$", limit=sys.get_int_max_str_digits()), line, path)



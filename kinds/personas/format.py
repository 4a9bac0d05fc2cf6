"""The personas file: JSON Lines, one simulated user a line, validated with line-level problems.

A line holds `persona_id` (a non-empty string, unique in the file), `user_profile` (a non-empty string: what the
simulated user reveals), `user_personality` (a string: how they write; warned about when missing) and optionally
`scenario` (why they open the chat) and `opening` (their first message, sent as it is). Other keys are ignored.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from kinds.problems import Problem, Report, describe, short_json
from kinds.readers.jsonl import iter_lines
from kinds.readers.limits import SETTINGS, Limits, current
from translations import _, ngettext

MAX_LINE_BYTES = 1024 * 1024  # one persona: a few paragraphs at most
REQUIRED = ("persona_id", "user_profile")
OPTIONAL = ("user_personality", "scenario", "opening")
FIELDS = (*REQUIRED, *OPTIONAL)
SHOWN = 10  # personas the upload page shows in its table
PREVIEW_CHARS = 160  # characters of each field the summary keeps for that table


@dataclass
class _State:
    """What validation remembers across the lines of one file."""

    report: Report = field(default_factory=Report)
    limits: Limits = field(default_factory=current)
    first_line_of: dict[str, int] = field(default_factory=dict)  # persona_id -> line
    personas: int = 0
    fields: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPTIONAL, 0))
    languages: dict[str, int] = field(default_factory=dict)
    first: list[dict] = field(default_factory=list)
    no_personality: int = 0
    no_personality_line: int = 0


def validate(stream: BinaryIO, max_line_bytes: int = MAX_LINE_BYTES) -> Report:
    """Check a personas JSONL stream: every problem (up to the cap) with its line and field, and a summary."""
    state = _State()
    for line, value in iter_lines(stream, max_line_bytes, state.limits):
        if isinstance(value, Problem):
            state.report.add(value)
        else:
            _read_persona(value, line, state)
        if state.personas > state.limits.sessions:
            state.report.add(Problem(line, "", _(
                "Line %(line)s: the file holds more than %(limit)s personas, the limit (%(setting)s). Split it into "
                "smaller files, or raise %(setting)s.", line=line, limit=state.limits.sessions,
                setting=SETTINGS["sessions"])))
            break
        if state.report.truncated:
            break
    _finish(state)
    return state.report


def personas(stream: BinaryIO, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[dict]:
    """The personas of a file that passed validation, each line read as `validate` reads it: {persona_id,
    user_profile, user_personality, scenario, opening} (empty texts when absent); ValueError at a line with a
    problem."""
    state = _State()
    for line, value in iter_lines(stream, max_line_bytes, state.limits):
        if isinstance(value, Problem):
            raise ValueError(value.message)
        errors = len(state.report.problems)
        _read_persona(value, line, state)
        if len(state.report.problems) > errors or type(value) is not dict:
            raise ValueError(state.report.problems[-1].message)
        yield {name: value.get(name) or "" for name in FIELDS}


def _read_persona(obj: object, line: int, state: _State) -> None:
    """Check one parsed line and count it."""
    report = state.report
    if type(obj) is not dict:
        report.add(Problem(line, "", _(
            "Line %(line)s is %(found)s, not a persona. Each line must be one JSON object with 'persona_id', "
            "'user_profile' and 'user_personality'.", line=line, found=describe(obj))))
        return
    state.personas += 1
    errors = len(report.problems)
    persona_id = _persona_id(obj, line, state)
    profile = _text(obj, "user_profile", line, report, required=True)
    if "user_personality" not in obj:
        if not state.no_personality:
            state.no_personality_line = line
        state.no_personality += 1
    for name in OPTIONAL:
        if name in obj and _text(obj, name, line, report, required=False):
            state.fields[name] += 1
    if len(report.problems) == errors and persona_id is not None and profile is not None:
        language = script(profile)
        state.languages[language] = state.languages.get(language, 0) + 1
        if len(state.first) < SHOWN:
            state.first.append({"line": line, **{name: _cut(obj[name]) for name in FIELDS if obj.get(name)}})


def _persona_id(obj: dict, line: int, state: _State) -> str | None:
    """The line's persona_id, checked: a non-empty string not used on an earlier line."""
    value = obj.get("persona_id")
    if type(value) in (int, float):
        state.report.add(Problem(line, "persona_id", _(
            "Line %(line)s: 'persona_id' must be a string, found a number (%(value)s); put the id in quotes, "
            "e.g. \"%(value)s\".", line=line, value=short_json(value))))
        return None
    persona_id = _text(obj, "persona_id", line, state.report, required=True)
    if persona_id is None:
        return None
    first = state.first_line_of.setdefault(persona_id, line)
    if first != line:
        state.report.add(Problem(line, "persona_id", _(
            "Line %(line)s: 'persona_id' %(value)s is used again; it first appeared on line %(first)s. Each "
            "persona needs its own id.", line=line, value=short_json(persona_id), first=first)))
        return None
    return persona_id


def _text(obj: dict, name: str, line: int, report: Report, required: bool) -> str | None:
    """A string field, checked; None (after recording the problem) when it is missing, not a string or, for a
    required field, blank."""
    if name not in obj:
        if required:
            report.add(Problem(line, name, _(
                "Line %(line)s: '%(field)s' is missing. Add it as a non-empty string.", line=line, field=name)))
        return None
    value = obj[name]
    if type(value) is not str:
        report.add(Problem(line, name, _(
            "Line %(line)s: '%(field)s' must be a string, found %(found)s.", line=line, field=name,
            found=describe(value))))
        return None
    if required and not value.strip():
        report.add(Problem(line, name, _(
            "Line %(line)s: '%(field)s' is empty. Write it as a non-empty string.", line=line, field=name)))
        return None
    return value


def _finish(state: _State) -> None:
    """The whole-file problems and warnings, and the summary."""
    report = state.report
    if not state.personas and report.ok:
        report.add(Problem(None, "", _(
            "The file contains no personas: it is empty or has only blank lines. Upload a .jsonl file with one "
            "persona object per line.")))
    if state.no_personality:
        count = state.no_personality
        report.warn(Problem(state.no_personality_line if count == 1 else None, "user_personality", ngettext(
            "%(num)s persona has no 'user_personality' (line %(first)s); the simulated user is then told "
            "nothing of how to write.",
            "%(num)s personas have no 'user_personality' (the first on line %(first)s); those simulated users "
            "are then told nothing of how to write.", count, first=state.no_personality_line)))
    report.summary = {"personas": state.personas, "languages": dict(sorted(state.languages.items())),
                      "fields": state.fields, "first": state.first}


def script(text: str) -> str:
    """The writing of a text, by the letters it holds most: "zh" (Chinese characters), "ja" (kana), "ko"
    (Hangul), "latin" (English and other Latin-script languages) or "other"."""
    counts = {"zh": 0, "ja": 0, "ko": 0, "latin": 0}
    for char in text:
        point = ord(char)
        if 0x3040 <= point <= 0x30FF:
            counts["ja"] += 1
        elif 0xAC00 <= point <= 0xD7AF or 0x1100 <= point <= 0x11FF:
            counts["ko"] += 1
        elif 0x4E00 <= point <= 0x9FFF or 0x3400 <= point <= 0x4DBF:
            counts["zh"] += 1
        elif char.isascii() and char.isalpha() or 0xC0 <= point <= 0x24F:
            counts["latin"] += 1
    if counts["ja"]:  # Japanese mixes Chinese characters with kana
        return "ja"
    counts["zh"] *= 3  # a Chinese character says about as much as a word's few letters
    best = max(counts, key=lambda name: counts[name])
    return best if counts[best] else "other"


def _cut(value: object) -> str:
    """A field as the summary keeps it: a string cut to PREVIEW_CHARS."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"

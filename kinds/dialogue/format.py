"""The dialogue benchmark (PersonaSteer / ALOE / RLPA style): upload format and validation.

A dialogue upload is JSON Lines, one session per line (docs/formats.md). PersonaSteer rounds
carry `user_message` and `responses` ({method: reply}); ALOE rounds carry `user` and `assistant`
(a reply, or {"preferred", "rejected"}) and are normalised to the same shape.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kinds.kind import Dialogue, StoredFile, open_file
from kinds.problems import Problem, Report, describe, short_json
from kinds.readers.jsonl import iter_lines
from kinds.readers.limits import SETTINGS, Limits, current
from translations import _, ngettext

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024


@dataclass
class Round:
    """One user turn and every method's reply to it."""

    number: int
    user_message: str
    responses: dict[str, str]


@dataclass
class Session:
    """One simulated user's conversation, normalised to PersonaSteer's shape."""

    session_id: str
    user_profile: str
    user_personality: str
    rounds: list[Round]


_MISSING = object()


@dataclass
class _FileState:
    """What validation remembers across the lines of one file."""

    report: Report = field(default_factory=Report)
    limits: Limits = field(default_factory=current)
    errors: int = 0  # every error seen, including those past the report's cap
    lines: int = 0  # non-blank lines read
    first_line_of: dict[str, int] = field(default_factory=dict)  # session_id -> line
    methods: list[str] | None = None  # method names of the file's first round, in order
    method_set: frozenset[str] = frozenset()
    methods_line: int = 0
    formats: set[str] = field(default_factory=set)
    sessions: int = 0
    rounds: int = 0
    min_rounds: int | None = None
    max_rounds: int = 0
    single_round: int = 0
    single_round_line: int = 0
    gapped: int = 0  # sessions whose rounds are not numbered 1, 2, 3, ... (the first's line and numbers kept)
    gapped_line: int = 0
    gapped_rounds: str = ""
    no_personality: int = 0
    no_personality_line: int = 0
    scored: int = 0  # rounds that carry their replies' scores (imported.py reads them)

    def error(self, line: int | None, path: str, message: str) -> None:
        """Record an error."""
        self.errors += 1
        self.report.add(Problem(line, path, message))


def validate(stream: BinaryIO, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Report:
    """Check a dialogue JSONL stream and report every problem (up to the cap), warnings and a summary."""
    state = _FileState()
    for line, value in iter_lines(stream, max_line_bytes, state.limits):
        state.lines += 1
        if isinstance(value, Problem):
            state.errors += 1
            state.report.add(value)
        else:
            _read_session(value, line, state)
        if state.sessions > state.limits.sessions:
            state.error(line, "", _(
                "Line %(line)s: the file holds more than %(limit)s sessions, the limit (%(setting)s). Split it "
                "into smaller files, or raise %(setting)s.", line=line, limit=state.limits.sessions,
                setting=SETTINGS["sessions"]))
            break
        if state.report.truncated:
            break
    _finish(state)
    return state.report


def iter_sessions(stream: BinaryIO, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[Session]:
    """Yield the normalised sessions of a validated file; raise ValueError at the first problem."""
    state = _FileState()
    for line, value in iter_lines(stream, max_line_bytes, state.limits):
        state.lines += 1
        if isinstance(value, Problem):
            raise ValueError(value.message)
        session = _read_session(value, line, state)
        if session is None:
            raise ValueError(state.report.problems[0].message)
        yield session
    if not state.lines:
        raise ValueError(_no_sessions_message())


def dialogue_lines(dialogues: Iterable[Dialogue]) -> bytes:
    """A dialogue file of conversations (a simulation's): a session per line, PersonaSteer's shape, in UTF-8."""
    return "".join(json.dumps({"session_id": d.persona_id, "user_profile": d.user_profile,
                               "user_personality": d.user_personality,
                               "rounds": [{"round": r.number, "user_message": r.user_message,
                                           "responses": dict(r.replies)} for r in d.rounds]},
                              ensure_ascii=False) + "\n" for d in dialogues).encode("utf-8")


def parse_session(obj: object, line: int = 1, limits: Limits | None = None) -> Session:
    """Normalise one parsed line of a validated file under `limits` (default: those in force now); raise ValueError
    on a problem."""
    state = _FileState() if limits is None else _FileState(limits=limits)
    session = _read_session(obj, line, state)
    if session is None:
        raise ValueError(state.report.problems[0].message)
    return session


def _finish(state: _FileState) -> None:
    """Add the whole-file problems and warnings, and the summary."""
    report = state.report
    if not state.lines:
        state.error(None, "", _no_sessions_message())
    if state.no_personality:
        count = state.no_personality
        report.warn(Problem(
            state.no_personality_line if count == 1 else None, "user_personality", ngettext(
                "%(num)s session has no 'user_personality' (line %(first)s); it is treated as empty, "
                "which gives the judge less to go on.",
                "%(num)s sessions have no 'user_personality' (the first on line %(first)s); they are "
                "treated as empty, which gives the judge less to go on.",
                count, first=state.no_personality_line)))
    if state.single_round:
        count = state.single_round
        report.warn(Problem(
            state.single_round_line if count == 1 else None, "rounds", ngettext(
                "%(num)s session has a single round (line %(first)s); curve statistics such as the "
                "slope, R2 and N-IR need sessions with 2 or more rounds.",
                "%(num)s sessions have a single round (the first on line %(first)s); curve statistics "
                "such as the slope, R2 and N-IR need sessions with 2 or more rounds.",
                count, first=state.single_round_line)))
    if state.gapped:
        count = state.gapped
        report.warn(Problem(
            state.gapped_line if count == 1 else None, "rounds", ngettext(
                "%(num)s session does not number its rounds 1, 2, 3, ... (line %(first)s has rounds %(rounds)s); "
                "AL(k) at a missing k counts only the sessions that have that round.",
                "%(num)s sessions do not number their rounds 1, 2, 3, ... (the first, line %(first)s, has rounds "
                "%(rounds)s); AL(k) at a missing k counts only the sessions that have that round.",
                count, first=state.gapped_line, rounds=state.gapped_rounds)))
    file_format: str | None
    if len(state.formats) == 1:
        file_format = next(iter(state.formats))
    else:
        file_format = "mixed" if state.formats else None
    report.summary = {
        "sessions": state.sessions,
        "rounds": state.rounds,
        "min_rounds": state.min_rounds or 0,
        "max_rounds": state.max_rounds,
        "methods": list(state.methods or []),
        "format": file_format,
        **({"scored_rounds": state.scored} if state.scored else {}),  # another judge's scores, to import
    }


def _no_sessions_message() -> str:
    return _("The file contains no sessions: it is empty or has only blank lines. "
             "Upload a .jsonl file with one session object per line.")


# --- one session -------------------------------------------------------------------------------

def _read_session(obj: object, line: int, state: _FileState) -> Session | None:
    """Check one parsed line; return the normalised session, or None when it has errors."""
    if type(obj) is not dict:
        _not_an_object(obj, line, state)
        return None
    errors_before = state.errors
    state.sessions += 1
    session_id = _session_id(obj, line, state)
    profile = _text(obj, "user_profile", line, "user_profile", state, non_empty=False)
    if "user_personality" in obj:
        personality = _text(obj, "user_personality", line, "user_personality", state, non_empty=False)
    else:
        personality = ""
        if not state.no_personality:
            state.no_personality_line = line
        state.no_personality += 1
    rounds = _rounds(obj, line, state)
    if state.errors != errors_before:
        return None
    if session_id is None or profile is None or personality is None or rounds is None:  # each None with an error
        return None
    return Session(session_id, profile, personality, rounds)


def _not_an_object(obj: object, line: int, state: _FileState) -> None:
    if type(obj) is list:
        state.error(line, "", _(
            "Line %(line)s is a JSON array, not a session object. Put each session on its own line "
            "as a JSON object instead of wrapping the sessions in a list.", line=line))
    else:
        state.error(line, "", _(
            "Line %(line)s is %(found)s, not a session object. Each line must be one JSON object "
            "with 'session_id', 'user_profile', 'user_personality' and 'rounds'.",
            line=line, found=describe(obj)))


def _session_id(obj: dict, line: int, state: _FileState) -> str | None:
    value = obj.get("session_id", _MISSING)
    if type(value) in (int, float):
        state.error(line, "session_id", _(
            "Line %(line)s: 'session_id' must be a string, found a number (%(value)s); put the id "
            "in quotes, e.g. \"%(value)s\".", line=line, value=short_json(value)))
        return None
    session_id = _text(obj, "session_id", line, "session_id", state, non_empty=True, value=value)
    if session_id is None:
        return None
    first = state.first_line_of.setdefault(session_id, line)
    if first != line:
        state.error(line, "session_id", _(
            "Line %(line)s: 'session_id' %(value)s is used again; it first appeared on line "
            "%(first)s. Each session needs its own id.", line=line, value=short_json(session_id), first=first))
    return session_id


def _rounds(obj: dict, line: int, state: _FileState) -> list[Round]:
    rounds = obj.get("rounds", _MISSING)
    if type(rounds) is not list:
        _wrong(rounds, line, "rounds", _("a non-empty list of rounds"), state)
        return []
    count = len(rounds)
    if not count:
        state.error(line, "rounds", _(
            "Line %(line)s: 'rounds' is an empty list; a session needs at least one round.", line=line))
    if count > state.limits.rounds:
        state.error(line, "rounds", _(
            "Line %(line)s: 'rounds' has %(count)s rounds, more than the limit of %(limit)s (%(setting)s). Split "
            "the session, or raise %(setting)s.", line=line, count=count, limit=state.limits.rounds,
            setting=SETTINGS["rounds"]))
        return []
    state.rounds += count
    if state.min_rounds is None or count < state.min_rounds:
        state.min_rounds = count
    if count > state.max_rounds:
        state.max_rounds = count
    if count == 1:
        if not state.single_round:
            state.single_round_line = line
        state.single_round += 1
    result = []
    previous = 0
    method_set = state.method_set
    plain = False
    for index, rnd in enumerate(rounds):
        if type(rnd) is dict and "scores" in rnd:
            state.scored += 1
        fast = _plain_round(rnd, previous, method_set)
        if fast is not None:
            plain = True
            result.append(fast)
            previous = fast.number
            continue
        path = f"rounds[{index}]"
        if type(rnd) is not dict:
            _wrong(rnd, line, path, _("an object (one round)"), state)
            continue
        parsed = _round(rnd, index, previous, line, path, state)
        if parsed is not None:
            result.append(parsed)
            previous = parsed.number
        elif type(rnd.get("round")) is int:
            previous = rnd["round"]  # keep checking the order of the later rounds
    if plain:
        state.formats.add("personasteer")
    numbers = [r.number for r in result]
    if len(result) == count and numbers != list(range(1, count + 1)):
        if not state.gapped:
            state.gapped_line, state.gapped_rounds = line, ", ".join(map(str, numbers[:10]))
        state.gapped += 1
    return result


# --- one round ---------------------------------------------------------------------------------

def _plain_round(rnd: object, previous: int, method_set: frozenset[str]) -> Round | None:
    """The hot path: a well-formed PersonaSteer round in one pass, else None for the full check."""
    if type(rnd) is not dict:
        return None
    number = rnd.get("round")
    message = rnd.get("user_message")
    responses = rnd.get("responses")
    if (type(number) is not int or number <= previous or type(message) is not str or not message
            or message.isspace() or type(responses) is not dict or not responses
            or responses.keys() != method_set):
        return None
    for text in responses.values():
        if type(text) is not str or not text or text.isspace():
            return None
    return Round(number, message, responses)


def _round(rnd: dict, index: int, previous: int, line: int, path: str, state: _FileState) -> Round | None:
    """Check one round (PersonaSteer or ALOE shape); return it normalised, or None on errors."""
    if "user_message" in rnd or "responses" in rnd:
        aloe = False
    elif "user" in rnd or "assistant" in rnd:
        aloe = True
    else:
        state.error(line, path, _(
            "Line %(line)s: '%(path)s' has neither 'user_message' and 'responses' nor ALOE-style "
            "'user' and 'assistant'; each round needs the user's message and the replies.",
            line=line, path=path))
        _round_number(rnd, index, previous, line, path, state, optional=False)
        return None
    state.formats.add("aloe" if aloe else "personasteer")
    errors_before = state.errors
    number = _round_number(rnd, index, previous, line, path, state, optional=aloe)
    if aloe:
        message = _text(rnd, "user", line, path + ".user", state, non_empty=True)
        responses = _aloe_responses(rnd, line, path, state)
    else:
        message = _text(rnd, "user_message", line, path + ".user_message", state, non_empty=True)
        responses = _responses(rnd, line, path, state)
    if responses is not None:
        responses_path = path + (".assistant" if aloe else ".responses")
        _check_methods(responses, number or index + 1, line, responses_path, state)
    if state.errors != errors_before:
        return None
    if number is None or message is None or responses is None:  # each None with an error
        return None
    return Round(number, message, responses)


def _round_number(rnd: dict, index: int, previous: int, line: int, path: str, state: _FileState,
                  optional: bool) -> int | None:
    value = rnd.get("round", _MISSING)
    number_path = path + ".round"
    if type(value) is int:
        if value < 1:
            state.error(line, number_path, _(
                "Line %(line)s: '%(path)s' is %(value)s; round numbers start at 1.",
                line=line, path=number_path, value=value))
            return None
        if value <= previous:
            state.error(line, number_path, _(
                "Line %(line)s: '%(path)s' is %(value)s but the round before it is %(previous)s; "
                "round numbers must increase within a session.",
                line=line, path=number_path, value=value, previous=previous))
            return None
        return value
    if value is _MISSING and optional:
        return index + 1
    if type(value) is str and value.strip().isdigit():
        state.error(line, number_path, _(
            "Line %(line)s: '%(path)s' must be a whole number, found a string (%(value)s); write the "
            "number without quotes.", line=line, path=number_path, value=short_json(value)))
        return None
    _wrong(value, line, number_path, _("a whole number of 1 or more"), state)
    return None


def _responses(rnd: dict, line: int, path: str, state: _FileState) -> dict[str, str] | None:
    responses = rnd.get("responses", _MISSING)
    responses_path = path + ".responses"
    if type(responses) is not dict:
        _wrong(responses, line, responses_path, _("an object mapping each method name to its response"),
               state)
        return None
    if not responses:
        state.error(line, responses_path, _(
            "Line %(line)s: '%(path)s' is empty; give at least one method's response, "
            "e.g. {\"Base\": \"...\"}.", line=line, path=responses_path))
        return None
    for name, text in responses.items():
        if type(text) is not str or not text or text.isspace():
            _text(responses, name, line, _method_path(responses_path, name), state, non_empty=True)
    return responses


def _aloe_responses(rnd: dict, line: int, path: str, state: _FileState) -> dict[str, str] | None:
    assistant = rnd.get("assistant", _MISSING)
    assistant_path = path + ".assistant"
    if type(assistant) is str:
        text = _text(rnd, "assistant", line, assistant_path, state, non_empty=True, value=assistant)
        return None if text is None else {"assistant": text}
    if type(assistant) is dict:
        preferred = _text(assistant, "preferred", line, assistant_path + ".preferred", state, non_empty=True)
        rejected = _text(assistant, "rejected", line, assistant_path + ".rejected", state, non_empty=True)
        if preferred is None or rejected is None:
            return None
        return {"preferred": preferred, "rejected": rejected}
    _wrong(assistant, line, assistant_path, _("a string or an object with 'preferred' and 'rejected'"), state)
    return None


def _check_methods(responses: dict[str, str], round_label: int, line: int, responses_path: str,
                   state: _FileState) -> None:
    """Compare a round's method names with those of the file's first round."""
    if len(responses) > state.limits.methods:
        state.error(line, responses_path, _(
            "Line %(line)s: '%(path)s' has %(count)s methods, more than the limit of %(limit)s (%(setting)s). "
            "Compare fewer methods at a time, or raise %(setting)s.", line=line, path=responses_path,
            count=len(responses), limit=state.limits.methods, setting=SETTINGS["methods"]))
        return
    if state.methods is None:
        state.methods = list(responses)
        state.method_set = frozenset(responses)
        state.methods_line = line
        if "" in responses:
            state.error(line, responses_path, _(
                "Line %(line)s: '%(path)s' has a method with an empty name; give every method a name.",
                line=line, path=responses_path))
        return
    if responses.keys() == state.method_set:
        return
    missing = [name for name in state.methods if name not in responses]
    extra = [name for name in responses if name not in state.method_set]
    args = dict(line=line, round=round_label, first=state.methods_line,
                missing=_names(missing), extra=_names(extra))
    if missing and extra:
        message = _(
            "Line %(line)s, round %(round)s: the methods differ from the file's first round (line "
            "%(first)s): missing %(missing)s; extra %(extra)s. Every round needs responses from the "
            "same methods.", **args)
    elif missing:
        message = _(
            "Line %(line)s, round %(round)s: missing %(missing)s, which the file's first round (line "
            "%(first)s) has. Every round needs responses from the same methods.", **args)
    else:
        message = _(
            "Line %(line)s, round %(round)s: extra %(extra)s, which the file's first round (line "
            "%(first)s) does not have. Every round needs responses from the same methods.", **args)
    state.error(line, responses_path, message)


# --- helpers -----------------------------------------------------------------------------------

def _text(container: dict, key: str, line: int, path: str, state: _FileState, non_empty: bool,
          value: object = _MISSING) -> str | None:
    """Return container[key] when it is a (non-empty) string; otherwise record why not."""
    if value is _MISSING:
        value = container.get(key, _MISSING)
    if type(value) is str:
        if non_empty and (not value or value.isspace()):
            state.error(line, path, _(
                "Line %(line)s: '%(path)s' is empty; it must be a non-empty string.", line=line, path=path))
            return None
        return value
    _wrong(value, line, path, _("a non-empty string") if non_empty else _("a string"), state)
    return None


def _wrong(value: object, line: int, path: str, expected: str, state: _FileState) -> None:
    """Record a missing value or a value of the wrong type."""
    if value is _MISSING:
        state.error(line, path, _(
            "Line %(line)s: '%(path)s' is missing; add it as %(expected)s.",
            line=line, path=path, expected=expected))
    else:
        state.error(line, path, _(
            "Line %(line)s: '%(path)s' must be %(expected)s, found %(found)s.",
            line=line, path=path, expected=expected, found=describe(value)))


def _names(names: list[str]) -> str:
    return ", ".join(short_json(name) for name in names)


def _method_path(responses_path: str, name: str) -> str:
    if name.isidentifier():
        return f"{responses_path}.{name}"
    return f"{responses_path}[{json.dumps(name, ensure_ascii=False)}]"


def iter_sessions_with_offsets(path: str | Path | StoredFile, idx: int = 0,
                               offset: int = 0) -> Iterator[tuple[int, int, Session]]:
    """(index, byte offset, session) for every session of an already validated dialogue file, from session number
    `idx`, which starts at byte `offset` (as iter_sessions_with_offsets gave them)."""
    limits = current()  # read once: from the environment, it costs more than a short session's reading
    with open_file(path) as f:
        f.seek(offset)
        for line in f:
            start, offset = offset, offset + len(line)
            if start == 0 and line.startswith(b"\xef\xbb\xbf"):
                line, start = line[3:], 3
            if not line.strip():
                continue
            yield idx, start, parse_session(json.loads(line), limits=limits)
            idx += 1


def read_session(path: str | Path | StoredFile, offset: int) -> Session:
    """The session stored on the line starting at a byte offset."""
    with open_file(path) as f:
        f.seek(offset)
        return parse_session(json.loads(f.readline()))

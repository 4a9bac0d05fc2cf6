"""Scores another judge gave a dialogue upload's replies, imported instead of judged (docs/formats.md#scores-from-
another-judge).

A scores file is attached to a stored dialogue upload (the kind's attachment "scores") and checked against the upload
and a rubric. It is one of:
- JSON Lines, one reply per line: {"session_id": "u1", "round": 1, "method": "Base", "scores": {"style": 15, ...}};
- CSV with a header: session_id, round, method, then one column per score;
- a dialogue file whose rounds carry their replies' scores, {"scores": {"Base": {...}, "Ours": {...}}} beside
  "responses" (the upload itself, when it carries a judge's scores).

A reply's scores are the rubric's dimensions, each within its scale, and optionally `total` (the 0-100 headline as the
judge gave it; without it the rubric's formula makes it) and `verdict` (0 or 1: the rubric's yes/no question). Without
a rubric named, a file whose first reply gives no dimension is read as bare totals: `total` alone, the headline and no
dimensions. A key given for one reply is given for all; every reply of a method the file scores has its scores.
Numbers are kept at the precision given, never rounded or clamped.
"""
from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kinds.dialogue import rubric_store
from kinds.dialogue.format import DEFAULT_MAX_LINE_BYTES, parse_session
from kinds.host import StoredFile, open_file
from kinds.kind import Site, StartError
from kinds.problems import Problem, Report, describe, short_json
from kinds.readers.jsonl import iter_lines, wrong_encoding
from kinds.readers.limits import current
from kinds.rubrics import Rubric
from kinds.rubrics.model import plain
from translations import _, ngettext

NAME = "scores"  # the attachment's name, and the start field that chooses one
KEYS = ("session_id", "round", "method")
TOTAL, VERDICT = "total", "verdict"
VERDICTS = {"0": 0, "1": 1, "true": 1, "false": 0}


@dataclass
class Scored:
    """One reply's scores as a file gives them: where (line, and the path of its scores: "" in a CSV, whose columns
    are named alone), which reply, its values as written (a JSON value, or a CSV cell: "" when empty) and, in a JSON
    line, the keys beside its scores that were not read."""

    line: int
    path: str
    session_id: str
    round: int
    method: str
    values: Mapping[str, object]
    ignored: tuple[str, ...] = ()

    def where(self, key: str) -> str:
        """The field of one of its scores, as a message names it: "scores.style", "rounds[0].scores.A.style"."""
        return f"{self.path}.{key}" if self.path else key


@dataclass
class UploadSession:
    """What a check needs of one session of the upload: its index and line, and its rounds' numbers."""

    idx: int
    line: int
    rounds: tuple[int, ...]


def upload_sessions(file: StoredFile) -> dict[str, UploadSession]:
    """The sessions of a stored (so valid) dialogue upload by id, read as it was validated."""
    sessions: dict[str, UploadSession] = {}
    with open_file(file) as stream:
        for line, value in iter_lines(stream, DEFAULT_MAX_LINE_BYTES, current()):
            session = parse_session(value, line)
            sessions[session.session_id] = UploadSession(len(sessions), line, tuple(r.number for r in session.rounds))
    return sessions


# -- reading ---------------------------------------------------------------------------------------------------

def records(stream: BinaryIO, filename: str, report: Report) -> Iterator[Scored]:
    """Every reply's scores of a scores file (JSON Lines, CSV or a dialogue file), the problems of its form added to
    `report` (the values themselves are checked by `check`)."""
    head = stream.read(64)
    stream.seek(0)
    problem = wrong_encoding(head)
    if problem is not None:
        report.add(problem)
        return
    if is_csv(head, filename):
        yield from _csv(stream, report)
    else:
        yield from _jsonl(stream, report)


def is_csv(head: bytes, filename: str) -> bool:
    """Whether a scores file is CSV: by its name's extension, else by not starting like JSON."""
    suffix = Path(filename or "").suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return False
    return suffix == ".csv" or not head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] == b"{"


def _jsonl(stream: BinaryIO, report: Report) -> Iterator[Scored]:
    for line, value in iter_lines(stream, DEFAULT_MAX_LINE_BYTES, current()):
        if isinstance(value, Problem):
            report.add(value)
        elif type(value) is not dict:
            report.add(Problem(line, "", _(
                "Line %(line)s must be a JSON object such as {\"session_id\": \"u1\", \"round\": 1, \"method\": "
                "\"Base\", \"scores\": {\"total\": 72}}, found %(found)s.", line=line, found=describe(value))))
        elif "rounds" in value:
            yield from _session_scores(value, line, report)
        else:
            found = _scores_line(value, line, report)
            if found is not None:
                yield found


def _reply(record: Mapping, line: int, report: Report) -> tuple[str, int, str] | None:
    """The reply a JSON line or CSV row names (session id, round, method), or None after reporting what is wrong."""
    before = len(report.problems)
    session_id = record.get("session_id")
    if type(session_id) is int:
        session_id = str(session_id)
    if type(session_id) is not str or not session_id.strip():
        report.add(Problem(line, "session_id", _("Line %(line)s: 'session_id' must name a session of the upload, "
                                                 "found %(found)s.", line=line, found=_found(session_id))))
    number = _whole(record.get("round"))
    if number is None or number < 1:
        report.add(Problem(line, "round", _("Line %(line)s: 'round' must be a whole number from 1, found "
                                            "%(found)s.", line=line, found=_found(record.get("round")))))
    method = record.get("method")
    if type(method) is not str or not method:
        report.add(Problem(line, "method", _("Line %(line)s: 'method' must name a method of the upload, found "
                                             "%(found)s.", line=line, found=_found(method))))
    if len(report.problems) != before:
        return None
    return str(session_id), int(number or 0), str(method)


def _scores_line(value: dict, line: int, report: Report) -> Scored | None:
    reply = _reply(value, line, report)
    scores = value.get(NAME)
    if type(scores) is not dict:
        report.add(Problem(line, NAME, _(
            "Line %(line)s: 'scores' must be an object of the reply's scores, e.g. {\"style\": 15, \"content\": 12} "
            "or {\"total\": 72}, found %(found)s.", line=line,
            found=_("nothing") if NAME not in value else describe(scores))))
        return None
    if reply is None:
        return None
    ignored = tuple(k for k in value if k not in (*KEYS, NAME))
    return Scored(line, NAME, *reply, scores, ignored)


def _session_scores(value: dict, line: int, report: Report) -> Iterator[Scored]:
    """The scores a dialogue file's session carries in its rounds' `scores`."""
    try:
        session = parse_session(value, line)
    except ValueError as exc:
        report.add(Problem(line, "", str(exc)))
        return
    for index, (raw, rnd) in enumerate(zip(value["rounds"], session.rounds)):
        path = f"rounds[{index}].{NAME}"
        by_method = raw.get(NAME)
        if by_method is None:
            continue
        if type(by_method) is not dict:
            report.add(Problem(line, path, _("Line %(line)s: '%(path)s' must be an object of each method's scores, "
                                             "e.g. {\"Base\": {\"total\": 72}}, found %(found)s.", line=line,
                                             path=path, found=describe(by_method))))
            continue
        for method, scores in by_method.items():
            where = f"{path}.{method}"
            if type(scores) is not dict:
                report.add(Problem(line, where, _("Line %(line)s: '%(path)s' must be an object of the reply's scores, "
                                                  "found %(found)s.", line=line, path=where, found=describe(scores))))
                continue
            yield Scored(line, where, session.session_id, rnd.number, method, scores)


def _csv(stream: BinaryIO, report: Report) -> Iterator[Scored]:
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    reader = csv.reader(text)
    try:
        header = [name.strip() for name in next(reader, [])]
        missing = [k for k in KEYS if k not in header]
        if missing or len(header) == len(KEYS):
            report.add(Problem(1, "", _("The header must name the columns session_id, round and method, then a "
                                        "column per score (a dimension of the rubric, total, verdict); it has: "
                                        "%(found)s.", found=", ".join(header) or "—")))
            return
        twice = sorted({name for name in header if header.count(name) > 1})
        if twice:
            report.add(Problem(1, "", _("The header names %(columns)s more than once; keep one column of each.",
                                        columns=", ".join(twice))))
            return
        scores = [name for name in header if name not in KEYS]
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                report.add(Problem(line, "", _("Line %(line)s has %(found)s values; the header has %(count)s "
                                               "columns.", line=line, found=len(row), count=len(header))))
                continue
            cells = {name: cell.strip() for name, cell in zip(header, row)}
            reply = _reply(cells, line, report)
            if reply is not None:
                yield Scored(line, "", *reply, {name: cells[name] for name in scores})
    except UnicodeDecodeError:
        line = reader.line_num + 1
        report.add(Problem(line, "", _("Line %(line)s is not valid UTF-8; save the file as UTF-8.", line=line)))
    except csv.Error as exc:
        report.add(Problem(reader.line_num, "", _("Line %(line)s cannot be read as CSV: %(reason)s.",
                                                  line=reader.line_num, reason=str(exc))))
    finally:
        text.detach()  # the caller's stream stays open


def _whole(value: object) -> int | None:
    """A whole number as JSON or a CSV cell writes it (3, 3.0, "3"), else None."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    if type(value) is str and value.strip().lstrip("+").isdigit():
        return int(value.strip())
    return None


def _found(value: object) -> str:
    """A value as a message shows it: a CSV cell as written, anything else described."""
    return short_json(value) if type(value) is str else describe(value)


# -- checking ----------------------------------------------------------------------------------------------------

@dataclass
class Protocol:
    """What a file's scores are read under: a rubric's dimensions (each within its scale), or bare totals
    (`rubric` None: the headline alone)."""

    rubric: Rubric | None

    @property
    def keys(self) -> tuple[str, ...]:
        """The dimensions every reply scores."""
        return self.rubric.keys if self.rubric else ()

    @property
    def name(self) -> str:
        """The rubric's id, as messages name it."""
        return self.rubric.id if self.rubric else _("bare totals")

    def allowed(self) -> tuple[str, ...]:
        """Every key a reply's scores may hold."""
        if self.rubric is None:
            return (TOTAL,)
        return (*self.keys, TOTAL, *((VERDICT,) if self.rubric.has_binary else ()))


@dataclass
class _Tally:
    """What the check remembers across the replies of one file."""

    seen: dict[tuple[str, int, str], int] = field(default_factory=dict)  # reply -> its line
    given: dict[str, tuple[int, int]] = field(default_factory=dict)  # total, verdict -> (lines with, first line)
    lacking: dict[str, int] = field(default_factory=dict)  # total, verdict -> first line without
    fractions: tuple[int, int] = (0, 0)  # scores that are not whole on a whole-number scale, and the first line
    ignored: int = 0  # the first line with keys that were not read
    columns: list[str] = field(default_factory=list)  # a CSV's columns that are no score, left out


def number(value: object) -> float | None:
    """A score as JSON (a number) or a CSV cell (its text) writes it, when it is a finite number; else None."""
    if type(value) in (int, float):
        found = float(value)  # type: ignore[arg-type]
    elif type(value) is str:
        try:
            found = float(value)
        except ValueError:
            return None
    else:
        return None
    return found if math.isfinite(found) else None


def verdict(value: object) -> int | None:
    """A verdict as JSON (0, 1, true, false) or a CSV cell writes it, else None."""
    if type(value) is bool:
        return int(value)
    if type(value) in (int, float) and value in (0, 1):
        return int(value)
    return VERDICTS.get(value.strip().lower()) if type(value) is str else None


def protocol(options: Mapping[str, str], first: Scored | None, site: Site) -> Protocol:
    """The rubric a file's scores are checked under: the one named (`rubric`: id or SHA-256); without one, the default
    rubric when the file's first reply gives any of its dimensions (a CSV: has a column of one), else bare totals.
    StartError for an unknown rubric."""
    name = (options.get("rubric") or "").strip()
    if name:
        return Protocol(rubric_store.chosen(site.store, name))
    default = rubric_store.chosen(site.store, None)
    return Protocol(default if first is not None and set(first.values) & set(default.keys) else None)


def check(stream: BinaryIO, filename: str, upload: dict, options: Mapping[str, str], site: Site) -> Report:
    """Check a scores file against a stored dialogue upload and the rubric it is read under; its summary
    (`format`, `extension`, `rubric` reference or None for bare totals, `dimensions`, `methods` scored, `replies`,
    whether it gives `total` and `verdict`, `fractions`) is kept with it."""
    report = Report()
    form = "csv" if is_csv(stream.read(64), filename) else "jsonl"
    stream.seek(0)
    sessions = upload_sessions(site.file_of(upload))
    methods = upload["summary"]["methods"]
    tally = _Tally()
    rules: Protocol | None = None
    for scored in records(stream, filename, report):
        if rules is None:
            try:
                rules = protocol(options, scored, site)
            except StartError as exc:
                report.add(Problem(None, "rubric", str(exc)))
                return report
        _check_reply(scored, rules, sessions, methods, tally, report)
        if report.truncated:
            return report
    if rules is None:
        if report.ok:
            report.add(Problem(None, "", _("The file gives no scores: give one reply's scores per line, as JSON Lines "
                                           "or as CSV with a header.")))
        return report
    _check_all_or_none(tally, report)
    scored_methods = [m for m in methods if any(key[2] == m for key in tally.seen)]
    _check_every_reply(sessions, scored_methods, tally, report)
    _warnings(methods, scored_methods, tally, report)
    report.summary = {"format": form, "extension": f".{form}",
                      "rubric": rules.rubric.reference() if rules.rubric else None, "dimensions": list(rules.keys),
                      "methods": scored_methods, "replies": len(tally.seen), "total": TOTAL in tally.given,
                      "verdict": VERDICT in tally.given, "fractions": tally.fractions[0]}
    return report


def _check_reply(scored: Scored, rules: Protocol, sessions: Mapping[str, UploadSession], methods: list[str],
                 tally: _Tally, report: Report) -> None:
    """Check one reply's scores: the reply is the upload's and scored once, each score is there and in scale."""
    line = scored.line
    session = sessions.get(scored.session_id)
    if session is None:
        report.add(Problem(line, "session_id", _("Line %(line)s: the upload has no session %(session)s.", line=line,
                                                 session=short_json(scored.session_id))))
    elif scored.round not in session.rounds:
        report.add(Problem(line, "round", _("Line %(line)s: session %(session)s of the upload has no round "
                                            "%(round)s (its rounds: %(rounds)s).", line=line,
                                            session=short_json(scored.session_id), round=scored.round,
                                            rounds=_numbers(session.rounds))))
    if scored.method not in methods:
        report.add(Problem(line, "method", _("Line %(line)s: method %(method)s is not one of the upload's: "
                                             "%(methods)s.", line=line, method=short_json(scored.method),
                                             methods=", ".join(methods))))
    reply = (scored.session_id, scored.round, scored.method)
    if reply in tally.seen:
        report.add(Problem(line, "", _("Line %(line)s scores the same reply as line %(first)s (session %(session)s, "
                                       "round %(round)s, %(method)s); keep one of them.", line=line,
                                       first=tally.seen[reply], session=short_json(reply[0]), round=reply[1],
                                       method=short_json(reply[2]))))
    else:
        tally.seen[reply] = line
    misplaced = [k for k in scored.ignored if k in rules.allowed() or k in (TOTAL, VERDICT)]
    for key in misplaced:
        report.add(Problem(line, key, _("Line %(line)s: '%(key)s' is a score: put it in 'scores', beside the "
                                        "reply's other scores.", line=line, key=key)))
    if scored.ignored and not misplaced and not tally.ignored:
        tally.ignored = line
    _check_values(scored, rules, tally, report)


def _check_values(scored: Scored, rules: Protocol, tally: _Tally, report: Report) -> None:
    line = scored.line
    given = {k: v for k, v in scored.values.items() if v != ""}
    for key in scored.values:
        if key in rules.allowed() or key in (TOTAL, VERDICT):
            continue
        if not scored.path:  # a CSV's other columns are left out, with a warning
            if key not in tally.columns:
                tally.columns.append(key)
        elif key in given:
            report.add(Problem(line, scored.where(key), _(
                "Line %(line)s: '%(field)s' is not a score of %(rubric)s, which scores %(keys)s; name the rubric the "
                "scores are on if it is another.", line=line, field=scored.where(key), rubric=rules.name,
                keys=", ".join(rules.allowed()))))
    for dimension in rules.rubric.dimensions if rules.rubric else ():
        where = scored.where(dimension.key)
        if dimension.key not in given:
            report.add(Problem(line, where, _(
                "Line %(line)s: '%(field)s' is missing: every reply needs each dimension of the rubric %(rubric)s "
                "(%(keys)s); to import totals alone, name no rubric.", line=line, field=where, rubric=rules.name,
                keys=", ".join(rules.keys))))
            continue
        value = number(given[dimension.key])
        if value is None:
            report.add(Problem(line, where, _("Line %(line)s: '%(field)s' must be a number, found %(found)s.",
                                              line=line, field=where, found=_found(given[dimension.key]))))
        elif not dimension.low <= value <= dimension.high:
            report.add(Problem(line, where, _(
                "Line %(line)s: '%(field)s' is %(value)s, outside the scale %(scale)s of the rubric %(rubric)s.",
                line=line, field=where, value=plain(value), scale=dimension.scale_text(), rubric=rules.name)))
        elif dimension.integer and not value.is_integer():
            count, first = tally.fractions
            tally.fractions = (count + 1, first or line)
    _optional(scored, TOTAL, given, rules, tally, report)
    if rules.rubric is not None and rules.rubric.has_binary:
        _optional(scored, VERDICT, given, rules, tally, report)
    elif VERDICT in given:
        report.add(Problem(line, scored.where(VERDICT), _(
            "Line %(line)s: '%(field)s' answers a rubric's yes/no question, and there is none here (%(rubric)s): "
            "leave it out, or name a rubric that asks one.", line=line, field=scored.where(VERDICT),
            rubric=rules.name)))


def _optional(scored: Scored, key: str, given: Mapping[str, object], rules: Protocol, tally: _Tally,
              report: Report) -> None:
    """`total` (required for bare totals) or `verdict`: checked when given, and counted for all-or-none."""
    line, where = scored.line, scored.where(key)
    if key not in given:
        if rules.rubric is None:
            report.add(Problem(line, where, _("Line %(line)s: '%(field)s' is missing: bare totals give every reply "
                                              "its total, 0-100.", line=line, field=where)))
        tally.lacking.setdefault(key, line)
        return
    count, first = tally.given.get(key, (0, line))
    tally.given[key] = (count + 1, first)
    if key == VERDICT:
        if verdict(given[key]) is None:
            report.add(Problem(line, where, _("Line %(line)s: '%(field)s' must be 0 or 1 (or true / false), found "
                                              "%(found)s.", line=line, field=where, found=_found(given[key]))))
        return
    value = number(given[key])
    if value is None or not 0 <= value <= 100:
        report.add(Problem(line, where, _("Line %(line)s: '%(field)s' must be a number from 0 to 100, found "
                                          "%(found)s.", line=line, field=where, found=_found(given[key]))))


def _check_all_or_none(tally: _Tally, report: Report) -> None:
    """A total or a verdict given for some replies and not others."""
    for key, (count, first) in tally.given.items():
        if key in tally.lacking:
            report.add(Problem(tally.lacking[key], key, _(
                "Line %(line)s gives no %(key)s, which line %(first)s gives: give it for every reply or for none.",
                line=tally.lacking[key], key=key, first=first)))


def _check_every_reply(sessions: Mapping[str, UploadSession], methods: list[str], tally: _Tally,
                       report: Report) -> None:
    """Every reply of each method the file scores has its scores; a missing one is named by the upload's line."""
    for session_id, session in sessions.items():
        for position, rnd in enumerate(session.rounds):
            for method in methods:
                if (session_id, rnd, method) not in tally.seen:
                    report.add(Problem(None, "", _(
                        "The upload's line %(line)s (session %(session)s), round %(round)s: the reply of %(method)s "
                        "has no scores; give every reply of the methods the file scores.", line=session.line,
                        session=short_json(session_id), round=rnd, method=short_json(method))))
                    if report.truncated:
                        return


def _warnings(methods: list[str], scored: list[str], tally: _Tally, report: Report) -> None:
    left_out = [m for m in methods if m not in scored]
    if left_out and scored:
        report.warn(Problem(None, "method", _("The file scores no reply of %(methods)s: an evaluation of these scores "
                                              "leaves them out.", methods=", ".join(left_out))))
    count, first = tally.fractions
    if count:
        report.warn(Problem(first, "", ngettext(
            "%(num)s score is not a whole number though its dimension's scale is (first on line %(first)s); it is "
            "kept as given.",
            "%(num)s scores are not whole numbers though their dimensions' scales are (the first on line %(first)s); "
            "they are kept as given.", count, first=first)))
    if tally.ignored:
        report.warn(Problem(tally.ignored, "", _("Keys beside session_id, round, method and scores are not read (the "
                                                 "first on line %(line)s).", line=tally.ignored)))
    if tally.columns:
        report.warn(Problem(1, "", _("Columns ignored: %(columns)s.", columns=", ".join(tally.columns))))


def _numbers(rounds: tuple[int, ...]) -> str:
    if rounds == tuple(range(1, len(rounds) + 1)):
        return f"1-{len(rounds)}" if len(rounds) > 1 else "1"
    return ", ".join(map(str, rounds[:10])) + (", ..." if len(rounds) > 10 else "")


# -- the judgments ---------------------------------------------------------------------------------------------

def outcomes(file: StoredFile, filename: str, rubric: Rubric | None, indexes: Mapping[str, int],
             methods: list[str], modes: list[str]) -> Iterator[tuple[tuple, dict]]:
    """The judgments of a checked scores file's replies of `methods`, as a judge's outcomes are stored: (key:
    session index, round, method, mode; fields): "fine" with the total (as given, else the rubric's headline of the
    dimensions) and the dimensions as `scores`, "binary" with the verdict."""
    keys = rubric.keys if rubric else ()
    with open_file(file) as stream:
        for scored in records(stream, filename, Report()):
            if scored.method not in methods:
                continue
            values = {k: v for k, v in scored.values.items() if v != ""}
            dims = {k: _kept(values[k]) for k in keys}
            total = _kept(values[TOTAL]) if TOTAL in values else rubric.headline(dims)  # type: ignore[union-attr]
            idx = indexes[scored.session_id]
            yield (idx, scored.round, scored.method, "fine"), {"status": "ok", "total": total, "scores": dims or None}
            if "binary" in modes:
                yield (idx, scored.round, scored.method, "binary"), {"status": "ok",
                                                                     "verdict": verdict(values[VERDICT])}


def _kept(value: object) -> float | int:
    """A checked score as stored: a whole number as an int, any other at the precision given."""
    found = number(value)
    assert found is not None  # checked when the file was attached
    return plain(found)

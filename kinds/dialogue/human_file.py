"""A file of people's ratings of some replies of a dialogue evaluation (CSV or JSONL), read and checked.

Each row names a reply (`session_id`, `round`, `method`) and gives at least one rating, on the evaluation's rubric:
`total` (the 0-100 headline), `binary` (the answer to its yes/no question, 0 or 1, also true/false; only when it asks
one) and/or its dimensions, each under its key and on its scale (the default rubric's: style, content, naturalness,
personalization, conversation, 0-20 each). An optional `rater` names who gave the ratings of its row (several
people's ratings in one file); without it, or where it is blank, they are the rater the caller names (the CLI's
--rater, the API's form field `rater`), else the file's name. Every problem is reported with its line and column, as
for every upload; other columns are ignored (with a warning).
"""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import IO

from kinds.dialogue import result_rubric
from kinds.dialogue.rating_store import MAX_RATER, UNNAMED
from kinds.dialogue.result_rubric import RubricBlock
from kinds.problems import Problem, Report, describe, short_json
from kinds.readers import json_text
from kinds.readers import limits as hard_limits
from translations import _

MAX_BYTES = 20 * 1024 * 1024
KEYS = ("session_id", "round", "method")
RATER = "rater"  # the optional column naming a row's rater
TOTAL = (0.0, 100.0)  # the headline's range


def ratings(rubric: RubricBlock) -> tuple[str, ...]:
    """The ratings a file may give under a rubric (result_rubric's block): total, binary when it asks a yes/no
    question, then its dimension keys."""
    return ("total", *(("binary",) if result_rubric.has_binary(rubric) else ()), *result_rubric.keys(rubric))


def ranges(rubric: RubricBlock) -> dict[str, tuple[float, float]]:
    """The range of each numeric rating under a rubric: the total's 0-100, each dimension's scale."""
    return {"total": TOTAL, **{d["key"]: (d["min"], d["max"]) for d in rubric["dimensions"]}}


def default_rater(filename: str, rater: str | None = None) -> str:
    """Whose ratings a file's rows without a rater are: `rater` when given (not blank), else the file's name."""
    named = (rater or "").strip() or Path(filename or "").name.strip() or UNNAMED
    return named[:MAX_RATER]


def read(stream: IO[bytes], filename: str, cells: set[tuple[str, int]], methods: list[str],
         rubric: RubricBlock | None = None, rater: str | None = None) -> tuple[Report, list[dict]]:
    """Check a ratings file against an evaluation (its (session id, round) pairs and methods) and its rubric
    (result_rubric's block, the default's when None); the report and, when it has no errors, the rows ({line, rater,
    session_id, round, method, total, verdict, and each dimension's rating under its key}). A row without a rater is
    `rater`'s (default_rater())."""
    block = rubric or result_rubric.default_block()
    default = default_rater(filename, rater)
    names, scales = ratings(block), ranges(block)
    report = Report()
    raw = stream.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        report.add(Problem(None, "", _("The file is larger than %(mb)s MB; split it or keep only the rated replies.",
                                       mb=MAX_BYTES // (1024 * 1024))))
        return report, []
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        report.add(Problem(line, "", _("Line %(line)s is not valid UTF-8; save the file as UTF-8.", line=line)))
        return report, []
    if not text.strip():
        report.add(Problem(None, "", _("The file is empty: give one rating per line, as CSV with a header or as "
                                       "JSONL.")))
        return report, []
    records = _jsonl(text, report) if _is_jsonl(text, filename) else _csv(text, report, names)
    rows: list[dict] = []
    first_line: dict[tuple, int] = {}
    for line, record in records:
        row = _row(line, record, cells, methods, report, names, scales, default)
        if row is None:
            continue
        key = (row["rater"], row["session_id"], row["round"], row["method"])
        if key in first_line:
            report.add(Problem(line, "", _("Line %(line)s rates the same reply as line %(first)s (session %(session)s, "
                                           "round %(round)s, %(method)s); keep one of them.", line=line,
                                           first=first_line[key], session=key[1], round=key[2], method=key[3])))
            continue
        first_line[key] = line
        rows.append(row)
    if report.ok and not rows:
        report.add(Problem(None, "", _("The file has a header but no ratings.")))
    report.summary = {"ratings": len(rows), "raters": sorted({r["rater"] for r in rows}),
                      "sessions": len({r["session_id"] for r in rows}),
                      "rated": [c for c in names if any(r[column(c)] is not None for r in rows)]}
    return report, rows if report.ok else []


def _is_jsonl(text: str, filename: str) -> bool:
    suffix = Path(filename or "").suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return True
    return suffix != ".csv" and text.lstrip().startswith("{")


def _jsonl(text: str, report: Report) -> list[tuple[int, dict]]:
    """(line, object) of each non-blank line of a JSONL file."""
    records = []
    limits = hard_limits.current()
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            value = json_text.loads(content, limits, first_line=line)
        except hard_limits.LimitError as exc:
            report.add(exc.problem())
            continue
        except json.JSONDecodeError as exc:
            report.add(Problem(line, "", _("Line %(line)s is not valid JSON (%(reason)s at column %(column)s).",
                                           line=line, reason=exc.msg, column=exc.colno)))
            continue
        if not isinstance(value, dict):
            report.add(Problem(line, "", _("Line %(line)s must be a JSON object such as {\"session_id\": \"s1\", "
                                           "\"round\": 1, \"method\": \"Base\", \"total\": 70}, found %(found)s.",
                                           line=line, found=describe(value))))
            continue
        records.append((line, value))
    return records


def _csv(text: str, report: Report, names: tuple[str, ...]) -> list[tuple[int, dict]]:
    """(line, row) of each data row of a CSV file with a header (`names`: the ratings it may give)."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [k for k in KEYS if k not in header]
    if missing or not any(c in header for c in names):
        report.add(Problem(1, "", _("The header must name the columns session_id, round and method, and at least "
                                    "one of %(ratings)s; it has: %(found)s.", ratings=", ".join(names),
                                    found=", ".join(header) or "—")))
        return []
    reader.fieldnames = header
    unknown = [h for h in header if h not in (*KEYS, RATER, *names)]
    if unknown:
        report.warn(Problem(1, "", _("Columns ignored: %(columns)s.", columns=", ".join(unknown))))
    records = []
    for row in reader:
        if None in row:
            report.add(Problem(reader.line_num, "", _("Line %(line)s has more values than the header has columns.",
                                                      line=reader.line_num)))
            continue
        records.append((reader.line_num, {k: v for k, v in row.items() if v is not None and v.strip() != ""}))
    return records


def column(rating: str) -> str:
    """The stored column of a rating ("binary" is kept as the verdict)."""
    return "verdict" if rating == "binary" else rating


def _row(line: int, record: dict, cells: set[tuple[str, int]], methods: list[str], report: Report,
         names: tuple[str, ...], scales: dict[str, tuple[float, float]], default: str) -> dict | None:
    """One checked rating row (`names`: the ratings it may give, `scales` their ranges, `default` the rater of a
    row that names none), or None after reporting what is wrong with it."""
    before = len(report.problems)
    rater = _rater(line, record.get(RATER), default, report)
    session_id = record.get("session_id")
    if isinstance(session_id, (int, float)) and not isinstance(session_id, bool):
        session_id = str(session_id)
    if not isinstance(session_id, str) or not session_id.strip():
        report.add(Problem(line, "session_id", _("Line %(line)s: 'session_id' must name a session of the "
                                                 "evaluation.", line=line)))
    rnd = _integer(record.get("round"))
    if rnd is None or rnd < 1:
        report.add(Problem(line, "round", _("Line %(line)s: 'round' must be a whole number from 1, found %(found)s.",
                                            line=line, found=_found(record.get("round")))))
    method = record.get("method")
    if method not in methods:
        report.add(Problem(line, "method", _("Line %(line)s: method %(method)s is not one of this evaluation's: "
                                             "%(methods)s.", line=line, method=short_json(method),
                                             methods=", ".join(methods))))
    if len(report.problems) == before and (session_id, rnd) not in cells:
        report.add(Problem(line, "round", _("Line %(line)s: the evaluation has no round %(round)s in session "
                                            "%(session)s.", line=line, round=rnd, session=session_id)))
    row = {"line": line, "rater": rater, "session_id": session_id, "round": rnd, "method": method}
    for rating in names:
        row[column(rating)] = _rating(line, rating, record.get(rating), report, scales.get(rating))
    if len(report.problems) == before and all(row[column(c)] is None for c in names):
        report.add(Problem(line, "", _("Line %(line)s gives no rating: fill in total, binary or a dimension.",
                                       line=line)))
    return row if len(report.problems) == before else None


def _rater(line: int, value, default: str, report: Report) -> str:
    """The rater a row names (a name, or a number read as one), `default` when it names none; reported when it is
    not a name of at most MAX_RATER characters."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or len(value.strip()) > MAX_RATER:
        report.add(Problem(line, RATER, _("Line %(line)s: 'rater' must be a name of at most %(max)s characters, found "
                                          "%(found)s.", line=line, max=MAX_RATER, found=describe(value))))
        return default
    return value.strip()


def _found(value) -> str:
    """A value as the message about it shows it: a CSV cell as written, anything else described."""
    return value if isinstance(value, str) else describe(value)


def _integer(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+").isdigit():
        return int(value.strip())
    return None


def _rating(line: int, rating: str, value, report: Report, scale: tuple[float, float] | None) -> float | int | None:
    """One rating checked against its `scale` (None for binary): None when absent, else its number (binary: 0 or
    1)."""
    if value is None:
        return None
    if rating == "binary":
        verdict = {"0": 0, "1": 1, "true": 1, "false": 0}.get(str(value).strip().lower())
        if isinstance(value, float) and value in (0.0, 1.0):
            verdict = int(value)
        if verdict is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value not in (0, 1)):
            report.add(Problem(line, rating, _("Line %(line)s: 'binary' must be 0 or 1 (or true / false), found "
                                               "%(found)s.", line=line, found=_found(value))))
            return None
        return verdict
    number = None
    if not isinstance(value, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = None
    low, high = scale or TOTAL
    if number is None or not math.isfinite(number) or not low <= number <= high:
        report.add(Problem(line, rating, _("Line %(line)s: '%(column)s' must be a number from %(min)s to %(max)s, "
                                           "found %(found)s.", line=line, column=rating, min=_plain(low),
                                           max=_plain(high), found=_found(value))))
        return None
    return number


def _plain(number: float) -> str:
    """A number without a needless ".0" (a scale's 20.0 reads 20)."""
    return str(int(number)) if float(number).is_integer() else str(number)

"""The sample grid of a dialogue evaluation: one row per session x round, the methods side by side, sorted and
filtered as the query string says (so every view is a permalink, on share pages too).

Query string: `sort` = round (file order) | fine:<method> | binary:<method> (the share of yes to the rubric's yes/no
question) | <dimension>:<method> (a dimension of the evaluation's rubric, by its key) | diff:<a>:<b> (a's fine score minus
b's) | spread (the highest fine score of the row minus the lowest: where the methods disagree most); `order` = asc |
desc; `range` = <method> with `min` / `max` (its fine score); `status` = problems (a judgment failed or did not
parse) | failed | unparsed; `q` = a regular expression over the user message and the replies; `page`.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from common.lazy_modules import lazy
from judge import judge_labels
from kinds.dialogue.format import iter_sessions_with_offsets, read_session
from kinds.dialogue.panel import by_judge
from kinds.dialogue.prompts import DIMENSIONS
from kinds.dialogue.records import CHUNK, STORED, Table, judgment_table
from kinds.kind import StoredFile
from kinds.search import MAX_PATTERN, BadQuery, compile_pattern
from translations import _

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy("pandas")

PER_PAGE = 25
def stored_judgments(store, evaluation: dict, dimensions: tuple[str, ...] = DIMENSIONS) -> Table:
    """Every judgment of the evaluation as compact columns (records.judgment_table)."""
    return judgment_table(store.iter_judgments(evaluation["id"], batch=CHUNK, columns=STORED),
                          size=store.progress(evaluation["id"])["total"], dimensions=dimensions)


def score_table(store, evaluation: dict, dimensions: tuple[str, ...] = DIMENSIONS,
                frame: Table | None = None) -> pd.DataFrame:
    """One row per (session index, round) with the session id and, per method, its fine score ("fine:<m>") and
    `dimensions` (its rubric's keys: "style:<m>", ...), its share of yes to the yes/no question in % ("binary:<m>",
    NaN without one) and whether a judgment of it failed or did not parse ("failed:<m>", "unparsed:<m>"); the
    first judge's judgments (a panel's others are on the session's page), read from the store unless `frame`
    (stored_judgments) is given."""
    if frame is None:
        frame = stored_judgments(store, evaluation, dimensions)
    records = by_judge(frame, len(judge_labels(evaluation["settings"])))[0].frame()
    keys = ["session_idx", "round"]
    table = records.groupby(keys, observed=True)["session_id"].first().astype(str).to_frame()
    ok = records[records["status"] == "ok"]
    scores = [("fine", "total", 1.0, "fine"), ("binary", "verdict", 100.0, "binary")]
    scores += [("fine", d, 1.0, d) for d in dimensions]
    for mode, column, scale, name in scores:
        values = ok[ok["mode"] == mode].pivot_table(index=keys, columns="method", values=column, aggfunc="mean",
                                                    observed=True)
        for method in evaluation["methods"]:
            table[f"{name}:{method}"] = values[method] * scale if method in values else float("nan")
    for status in ("failed", "unparsed"):
        hit = records[records["status"] == status].groupby(keys + ["method"], observed=True).size().unstack()
        for method in evaluation["methods"]:
            table[f"{status}:{method}"] = (hit[method] > 0).reindex(table.index, fill_value=False).astype(bool) \
                if method in hit else False
    return table.reset_index()


def matching_rounds(path: str | Path | StoredFile, methods: list[str], pattern: re.Pattern) -> set[tuple[int, int]]:
    """(session index, round) of the rounds whose user message or a method's reply matches the pattern."""
    found = set()
    for idx, _offset, session in iter_sessions_with_offsets(path):
        for rnd in session.rounds:
            texts = [rnd.user_message, *(rnd.responses.get(m, "") for m in methods)]
            if any(pattern.search(text) for text in texts):
                found.add((idx, rnd.number))
    return found


def _number(args: Mapping, name: str) -> float | None:
    try:
        return float(args[name]) if str(args.get(name, "")).strip() else None
    except ValueError:
        raise BadQuery(_("'%(name)s' must be a number.", name=name)) from None


class GridQuery(TypedDict):
    """A sample grid's query as understood (the page shows it back)."""

    sort: str  # "round", or a column or difference of columns (_sort_key); "round" when it names none
    order: str  # "asc" or "desc"
    range: str  # the method whose fine score min and max bound, else ""
    min: float | None
    max: float | None
    status: str  # "", "failed", "unparsed" or "problems"
    q: str  # the pattern searched for in the texts


def grid(table: pd.DataFrame, methods: list[str], args: Mapping, texts=None,
         dimensions: tuple[str, ...] = DIMENSIONS) -> tuple[pd.DataFrame, GridQuery]:
    """The rows the query string asks for, in its order, and the query as understood (`texts`: a function giving
    the (session index, round) pairs that match a pattern, called only when there is one; `dimensions`: the keys
    a sort may name, the table's)."""
    query: GridQuery = {"sort": str(args.get("sort", "round")),
                        "order": "asc" if args.get("order") == "asc" else "desc",
                        "range": str(args.get("range", "")), "min": _number(args, "min"), "max": _number(args, "max"),
                        "status": str(args.get("status", "")), "q": str(args.get("q", ""))[:MAX_PATTERN]}
    rows = table
    if query["range"] in methods:
        score = rows[f"fine:{query['range']}"]
        if query["min"] is not None:
            rows = rows[score >= query["min"]]
            score = rows[f"fine:{query['range']}"]
        if query["max"] is not None:
            rows = rows[score <= query["max"]]
    if query["status"] in ("failed", "unparsed", "problems"):
        kinds = ("failed", "unparsed") if query["status"] == "problems" else (query["status"],)
        rows = rows[rows[[f"{k}:{m}" for k in kinds for m in methods]].any(axis=1)]
    pattern = compile_pattern(query["q"])
    if pattern is not None and texts is not None:
        keep = texts(pattern)
        rows = rows[[(i, r) in keep for i, r in zip(rows["session_idx"], rows["round"])]]
    key = _sort_key(rows, methods, query, dimensions)
    if key is None:  # file order (the order asked for applies to the scores)
        query["sort"] = "round"
        rows = rows.sort_values(["session_idx", "round"])
    else:
        # Rows without the value (a method not judged there) go last either way; ties keep file order.
        rows = rows.assign(_key=key).sort_values(["_key", "session_idx", "round"], ascending=[query["order"] == "asc",
                                                                                             True, True],
                                                 na_position="last").drop(columns="_key")
    return rows, query


def _sort_key(rows: pd.DataFrame, methods: list[str], query: GridQuery, dimensions: tuple[str, ...]):
    parts = query["sort"].split(":")
    if parts[0] in ("fine", "binary", *dimensions) and len(parts) == 2 and parts[1] in methods:
        return rows[query["sort"]]
    if parts[0] == "diff" and len(parts) == 3 and parts[1] in methods and parts[2] in methods:
        return rows[f"fine:{parts[1]}"] - rows[f"fine:{parts[2]}"]
    if parts == ["spread"] and len(methods) > 1:
        fine = rows[[f"fine:{m}" for m in methods]]
        return fine.max(axis=1) - fine.min(axis=1)
    return None


def page_of(rows: pd.DataFrame, args: Mapping, path: str | Path | StoredFile, store, upload_id: str,
            methods: list[str], dimensions: tuple[str, ...] = DIMENSIONS) -> tuple[list[dict], int, int]:
    """The rows of the asked page with each method's reply read from the file: (rows, page, pages)."""
    pages = max(1, -(-len(rows) // PER_PAGE))
    try:
        page = min(max(int(args.get("page", 1)), 1), pages)
    except (TypeError, ValueError):
        page = 1
    shown, sessions = [], {}
    for row in rows.iloc[(page - 1) * PER_PAGE: page * PER_PAGE].to_dict("records"):
        idx = int(row["session_idx"])
        if idx not in sessions:
            found = store.session_offsets(upload_id, idx, 1)
            sessions[idx] = read_session(path, found[0]["offset"]) if found and found[0]["idx"] == idx else None
        session = sessions[idx]
        rnd = next((r for r in session.rounds if r.number == row["round"]), None) if session else None
        shown.append({"index": idx, "session_id": row["session_id"], "round": int(row["round"]),
                      "user_message": rnd.user_message if rnd else "",
                      "methods": {m: {"reply": rnd.responses.get(m, "") if rnd else "",
                                      "fine": _value(row[f"fine:{m}"]), "binary": _value(row[f"binary:{m}"]),
                                      "dims": {d: _value(row[f"{d}:{m}"]) for d in dimensions},
                                      "failed": bool(row[f"failed:{m}"]), "unparsed": bool(row[f"unparsed:{m}"])}
                                  for m in methods}})
    return shown, page, pages


def _value(value) -> float | None:
    return None if value is None or value != value else float(value)

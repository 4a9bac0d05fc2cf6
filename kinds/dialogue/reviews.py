"""People's reviews of single judgments, made on a judgment's page: agreed, or overridden with their own fine score
or their answer to the rubric's yes/no question (the keep-chatting verdict of the default rubric), with a comment.
Reviews count on the result page, turn the metrics into "with overrides applied" beside "as judged", and export as a
people's ratings file (human_file.py's format), so that they feed the judge-vs-people agreement."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TypedDict

from judge import split_mode
from kinds.dialogue.records import Table, Text
from translations import _

DECISIONS = ("agreed", "overridden")
MAX_COMMENT = 2000
KEY = ("session_idx", "round", "method", "mode")


class ReviewError(ValueError):
    """A review that cannot be kept as given; the message says what to fix."""


def checked(judgment: dict, form: Mapping) -> dict:
    """The review of a stored judgment that a form or JSON body gives: its decision, the person's score (fine) or
    verdict (binary) when overridden, and a comment; ReviewError when it is not a valid one."""
    decision = form.get("decision")
    if decision not in DECISIONS:
        raise ReviewError(_("'decision' must be agreed or overridden."))
    review = {"decision": decision, "total": None, "verdict": None,
              "comment": str(form.get("comment") or "").strip()[:MAX_COMMENT] or None}
    if decision == "agreed":
        if judgment["status"] != "ok":
            raise ReviewError(_("This judgment has no score to agree with; override it with your own."))
        return review
    if split_mode(judgment["mode"])[0] == "fine":
        try:
            total = float(form.get("total", ""))
        except (TypeError, ValueError):
            total = math.nan
        if not 0 <= total <= 100:
            raise ReviewError(_("Give your fine score as a number from 0 to 100."))
        review["total"] = total
    else:
        verdict = {"1": 1, "0": 0, "yes": 1, "no": 0, "true": 1, "false": 0}.get(str(form.get("verdict")).lower())
        if verdict is None:
            raise ReviewError(_("Give your verdict: 1 (yes) or 0 (no)."))
        review["verdict"] = verdict
    return review


class ReviewCounts(TypedDict):
    """How many judgments people reviewed, agreed with and overrode."""

    reviewed: int
    agreed: int
    overridden: int


def counts(reviews: list[dict]) -> ReviewCounts:
    """How many judgments were reviewed, agreed with and overridden."""
    agreed = sum(r["decision"] == "agreed" for r in reviews)
    return {"reviewed": len(reviews), "agreed": agreed, "overridden": len(reviews) - agreed}


def applied(table: Table, reviews: list[dict]) -> Table:
    """The judgments (records.judgment_table) with each overridden one given the person's score or verdict."""
    overridden = [r for r in reviews if r["decision"] == "overridden"]
    if not overridden:
        return table
    position: dict[tuple, list[int]] = {}
    for row, key in enumerate(zip(*(table[k].tolist() for k in KEY))):
        position.setdefault(key, []).append(row)
    values = {"total": table["total"].copy(), "verdict": table["verdict"].copy()}
    status = table["status"].tolist()
    for review in overridden:
        column = "total" if review["total"] is not None else "verdict"
        for row in position.get(tuple(review[k] for k in KEY), []):
            values[column][row] = review[column]
            status[row] = "ok"  # "ok" may not be among the column's texts yet
    return table.with_columns(**values, status=Text.of(status))


def ratings_rows(reviews: list[dict], judgments: dict[tuple, dict]) -> list[dict]:
    """The reviews as people's ratings (human_file.py's rows): per reply, the fine score and verdict the person
    gave (overridden) or accepted (agreed); `judgments` are the stored judgments by KEY."""
    rows: dict[tuple, dict] = {}
    for review in reviews:
        question = split_mode(review["mode"])[0]
        judged = judgments.get(tuple(review[k] for k in KEY)) or {}
        row = rows.setdefault((review["session_id"], review["round"], review["method"]),
                              {"session_id": review["session_id"], "round": review["round"],
                               "method": review["method"], "total": None, "verdict": None})
        if question == "fine":
            row["total"] = review["total"] if review["decision"] == "overridden" else judged.get("total")
        else:
            row["verdict"] = review["verdict"] if review["decision"] == "overridden" else judged.get("verdict")
    return [{"line": n, **row} for n, row in enumerate(rows.values(), start=2)]

"""Reviewing judgments one after another: the judgments behind a sample grid's rows, in the grid's order, so that a
judgment's page can link to the previous and next one, say where it stands ("17 of 73") and lead back to its row.

The order: the grid's rows as sorted; within a row the methods in the order the grid shows them; within a method
its questions (fine, then the yes/no one) and their samples. The first judge's judgments only, as the grid shows
them. With a problems filter (`status`) only the judgments with that status are stepped through: the grid lists the
rows with a problem, the review the problems themselves.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from judge import split_mode
from kinds.dialogue import triage
from kinds.dialogue.prompts import MODES
from kinds.dialogue.views import chosen_methods

if TYPE_CHECKING:
    import pandas as pd

Key = tuple[int, int, str, str]  # session index, round, method, stored mode

# The query string of a sample grid that a judgment's page carries, to step within it and to return to it.
GRID_ARGS = ("sort", "order", "range", "min", "max", "status", "q", "methods", "raw")
STATUSES = {"failed": ("failed",), "unparsed": ("unparsed",), "problems": ("failed", "unparsed")}


class Step(NamedTuple):
    """Where a judgment stands among the grid's: 1-based position, of how many, its neighbours, its grid row's page."""

    position: int
    total: int
    previous: Key | None
    next: Key | None
    page: int


def grid_args(args: Mapping) -> dict[str, str]:
    """The grid's query (filter, sort, columns shown) among a request's arguments, those given only."""
    return {name: str(args[name]) for name in GRID_ARGS if str(args.get(name, ""))}


def grid_sequence(store, record: dict, args: Mapping, dimensions: tuple[str, ...], texts) -> tuple[list[Key],
                                                                                               pd.DataFrame]:
    """The review order of the grid the query string `args` describes, and the grid's rows (search.BadQuery when the
    query is bad; `texts` and `dimensions` as triage.grid takes them)."""
    frame = triage.stored_judgments(store, record, dimensions)
    rows, query = triage.grid(triage.score_table(store, record, dimensions, frame), record["methods"], args, texts,
                              dimensions)
    return sequence(frame.frame(), rows, chosen_methods(record["methods"], args), query["status"]), rows


def sequence(judgments: pd.DataFrame, rows: pd.DataFrame, shown: list[str], status: str) -> list[Key]:
    """The keys of the first judge's judgments of the grid's `rows` (in their order) and of the methods `shown`,
    in review order; only those with a problem when `status` filters on one."""
    parsed = {mode: split_mode(mode) for mode in judgments["mode"].unique()}
    question = judgments["mode"].map({m: MODES.index(p[0]) if p[0] in MODES and p[1] == 0 else -1
                                      for m, p in parsed.items()}).astype(int)
    keep = (question >= 0) & judgments["method"].isin(shown)
    if status in STATUSES:
        keep &= judgments["status"].isin(STATUSES[status])
    mine = judgments.loc[keep, ["session_idx", "round", "method", "mode"]].astype(
        {"method": str, "mode": str, "session_idx": int, "round": int})
    mine["question"] = question[keep]
    mine["sample"] = mine["mode"].map(lambda m: parsed[m][2])
    mine["column"] = mine["method"].map({m: i for i, m in enumerate(shown)})
    order = rows[["session_idx", "round"]].astype(int).assign(row=range(len(rows)))
    ordered = mine.merge(order, on=["session_idx", "round"]).sort_values(["row", "column", "question", "sample"])
    return list(zip(ordered["session_idx"].tolist(), ordered["round"].tolist(), ordered["method"].tolist(),
                    ordered["mode"].tolist()))


def step(keys: list[Key], rows: pd.DataFrame, key: Key) -> Step | None:
    """Where `key` stands in `keys` (sequence) and the page of the grid that shows its row; None when it is not
    among them."""
    try:
        at = keys.index(key)
    except ValueError:
        return None
    found = (rows["session_idx"].astype(int).to_numpy() == key[0]) & (rows["round"].astype(int).to_numpy() == key[1])
    row = int(found.argmax())
    return Step(position=at + 1, total=len(keys), previous=keys[at - 1] if at > 0 else None,
                next=keys[at + 1] if at + 1 < len(keys) else None, page=row // triage.PER_PAGE + 1)

"""A dialogue evaluation's judgments as compact columns, the form its result document is scored from.

A million judgments as dicts take gigabytes; as arrays of numbers and of codes of texts they take tens of megabytes.
The table is filled from the store's keyset-paginated rows a chunk at a time, so that at most one chunk of dicts
exists at once. It is scored without pandas (kinds/groups.py); the pages that sort and pivot it take it as a
DataFrame (Table.frame).
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from common.lazy_modules import lazy
from kinds.dialogue.format import iter_sessions_with_offsets
from kinds.dialogue.prompts import DIMENSIONS
from kinds.kind import StoredFile

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:
    np = lazy("numpy")
    pd = lazy("pandas")

TEXT = ("session_id", "method", "mode", "status")
KEYS = ("session_idx", "session_id", "round", "method", "mode", "status")


def columns(dimensions: tuple[str, ...] = DIMENSIONS) -> tuple[str, ...]:
    """The table's columns for a rubric's dimensions: the keys, the total and verdict, then the dimensions."""
    return KEYS + ("total", "verdict") + tuple(dimensions)

# What the table is read from in the store: the dimensions are keys of a judgment's `scores`.
STORED = ("session_idx", "session_id", "round", "method", "mode", "status", "total", "verdict", "scores")
CHUNK = 2_000


class Text:
    """A text column: each row's code into its names, which are sorted (so that grouping by codes sorts as the texts
    do)."""

    def __init__(self, codes: np.ndarray, names: list):
        self.codes, self.names = codes, names

    @classmethod
    def of(cls, values: list) -> Text:
        """The column of these texts."""
        found: dict[Any, int] = {}
        return cls.in_order(np.array([found.setdefault(v, len(found)) for v in values], dtype=np.int32), list(found))

    @classmethod
    def in_order(cls, codes: np.ndarray, names: list) -> Text:
        """The column whose rows are `codes` into `names` (in any order; -1 for none), its names put in order."""
        order = sorted(range(len(names)), key=names.__getitem__)
        recode = np.empty(len(order) + 1, dtype=np.int32)
        recode[order] = np.arange(len(order), dtype=np.int32)
        recode[-1] = -1  # code -1 stays none
        return cls(recode[codes], [names[i] for i in order])

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, rows) -> Text:
        return Text(self.codes[rows], self.names)

    def equals(self, value) -> np.ndarray:
        """Whether each row's text is `value`."""
        return self.isin([value])

    def isin(self, values) -> np.ndarray:
        """Whether each row's text is one of `values`."""
        wanted = np.array([name in values for name in self.names] + [False])
        return wanted[self.codes]  # code -1 (none) takes the last entry

    def mapped(self, function) -> Text:
        """Each row's text through `function`."""
        found: dict[Any, int] = {}
        lookup = np.array([found.setdefault(function(name), len(found)) for name in self.names] + [-1], dtype=np.int32)
        return Text.in_order(lookup[self.codes], list(found))

    def tolist(self) -> list:
        """Each row's text (None for none)."""
        names = [*self.names, None]
        return [names[c] for c in self.codes.tolist()]


Column = Union["np.ndarray", Text]


class Table:
    """Columns of equal length: numbers as numpy arrays (NaN for none), texts as Text."""

    def __init__(self, columns: dict[str, Column]):
        self.columns = columns

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, name: str) -> Any:  # a numpy array, or a Text for a text column
        return self.columns[name]

    def __contains__(self, name: str) -> bool:
        return name in self.columns

    def only(self, *names: str) -> Table:
        """The table of these columns (the same arrays, not copies)."""
        return Table({name: self.columns[name] for name in names})

    def rows(self, mask: np.ndarray) -> Table:
        """The rows where `mask` is true."""
        return Table({name: column[mask] for name, column in self.columns.items()})

    def with_columns(self, **columns: Column) -> Table:
        """The table with these columns added or replaced."""
        return Table({**self.columns, **columns})

    def records(self) -> list[dict]:
        """The rows as dicts, NaN as None (for the code that reads a judgment at a time)."""
        names = list(self.columns)
        values = []
        for column in self.columns.values():
            listed = column.tolist()
            if isinstance(column, np.ndarray) and column.dtype.kind == "f":
                listed = [None if v != v else v for v in listed]
            values.append(listed)
        return [dict(zip(names, row)) for row in zip(*values)]

    def frame(self) -> pd.DataFrame:
        """The table as a pandas DataFrame (texts as categories), for the pages that sort and pivot it."""
        return pd.DataFrame({name: pd.Categorical.from_codes(column.codes, pd.Index(column.names))
                             if isinstance(column, Text) else column for name, column in self.columns.items()},
                            copy=False)


def judgment_table(rows: Iterable[dict] | Table, size: int = 0,
                   dimensions: tuple[str, ...] = DIMENSIONS) -> Table:
    """The judgments' scoring columns (KEYS, total, verdict and the rubric's `dimensions`; text as Text, values as
    floats with NaN for None), read CHUNK rows at a time into arrays of `size` rows (the number expected; they grow
    if it is short). `rows` are the store's (STORED: the dimensions in `scores`) or have the dimensions as keys of
    their own."""
    if isinstance(rows, Table):
        return rows
    return table_of(rows, columns(dimensions), dimensions, size)


def table_of(rows: Iterable[dict], names: tuple[str, ...], dimensions: tuple[str, ...] = (), size: int = 0,
             text: tuple[str, ...] = TEXT) -> Table:
    """The columns `names` of `rows` (a column in `text` as Text, "session_idx" and "round" as integers, others as
    floats: NaN for None or for what is not a number), read CHUNK rows at a time; a column in `dimensions` is read
    from a row's `scores` when it has them."""
    rows = iter(rows)
    whole = ("session_idx", "round")
    arrays = {c: np.empty(size, dtype=np.int32 if c in text or c in whole else float) for c in names}
    codes: dict[str, dict[Any, int]] = {c: {} for c in names if c in text}  # a session id may be a number
    filled = 0
    while chunk := list(islice(rows, CHUNK)):
        end = filled + len(chunk)
        if end > len(arrays[names[0]]):
            arrays = {c: np.concatenate([a[:filled], np.empty(max(end, 2 * filled), dtype=a.dtype)])
                      for c, a in arrays.items()}
        dims = [row.get("scores") or row for row in chunk]  # a store row without scores has no dimensions
        for column in names:
            values = [d.get(column) for d in dims] if column in dimensions else [row.get(column) for row in chunk]
            if column in codes:
                found = codes[column]
                values = [found.setdefault(v, len(found)) for v in values]
            try:
                arrays[column][filled:end] = values  # None becomes NaN in the float columns
            except (TypeError, ValueError):  # a value that is no number: NaN, as pandas.to_numeric(errors="coerce")
                if arrays[column].dtype.kind != "f":
                    raise
                arrays[column][filled:end] = [_number(v) for v in values]
        filled = end
    found_columns: dict[str, Column] = {}
    for column in names:
        kept = arrays.pop(column)[:filled]
        found_columns[column] = Text.in_order(kept, list(codes[column])) if column in codes else kept
    return Table(found_columns)


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


@dataclass
class ReplyLengths:
    """Each reply's length in characters, looked up for many judgments at once by a number made of (session index,
    round, method), among sorted keys."""

    keys: np.ndarray
    lengths: np.ndarray
    methods: dict[str, int]
    rounds: int  # one more than the highest round

    def _key(self, idx: np.ndarray, rounds: np.ndarray, codes: np.ndarray) -> np.ndarray:
        return (idx * self.rounds + rounds) * len(self.methods) + codes

    def of(self, judgments: Table) -> np.ndarray:
        """The length of each judgment's reply (its session_idx, round, method), -1 where the file has none."""
        if not len(self.keys):
            return np.full(len(judgments), -1)
        idx = np.asarray(judgments["session_idx"], dtype=np.int64)
        rounds = np.asarray(judgments["round"], dtype=np.int64)
        names = judgments["method"]
        lookup = np.array([self.methods.get(name, -1) for name in names.names] + [-1], dtype=np.int64)
        codes = lookup[names.codes]  # code -1 (no method) takes the last entry
        known = (codes >= 0) & (rounds >= 0) & (rounds < self.rounds)
        keys = np.where(known, self._key(idx, rounds, codes), -1)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.where(known & (self.keys[at] == keys), self.lengths[at], -1)


def reply_lengths(path: str | Path | StoredFile, methods: list[str]) -> ReplyLengths:
    """The replies' lengths in characters, read from the uploaded file."""
    idx, rounds, codes, lengths = array("q"), array("q"), array("q"), array("q")
    for session_idx, _offset, session in iter_sessions_with_offsets(path):
        for rnd in session.rounds:
            for code, method in enumerate(methods):
                if method in rnd.responses:
                    idx.append(session_idx)
                    rounds.append(rnd.number)
                    codes.append(code)
                    lengths.append(len(rnd.responses[method]))
    found = ReplyLengths(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                         {m: n for n, m in enumerate(methods)}, max(rounds, default=0) + 1)
    keys = found._key(np.asarray(idx), np.asarray(rounds), np.asarray(codes))
    order = np.argsort(keys, kind="stable")
    found.keys, found.lengths = keys[order], np.asarray(lengths)[order]
    return found

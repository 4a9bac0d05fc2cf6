"""A dialogue evaluation's judgments as compact columns, the form its result document is scored from.

A million judgments as dicts take gigabytes; as a DataFrame of numbers and categories they take tens of megabytes.
The frame is filled from the store's keyset-paginated rows a chunk at a time, so that at most one chunk of dicts
exists at once.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    """The frame's columns for a rubric's dimensions: the keys, the total and verdict, then the dimensions."""
    return KEYS + ("total", "verdict") + tuple(dimensions)

# What the frame is read from in the store: the dimensions are keys of a judgment's `scores`.
STORED = ("session_idx", "session_id", "round", "method", "mode", "status", "total", "verdict", "scores")
CHUNK = 2_000


def judgment_frame(rows: Iterable[dict] | pd.DataFrame, size: int = 0,
                   dimensions: tuple[str, ...] = DIMENSIONS) -> pd.DataFrame:
    """The judgments' scoring columns (KEYS, total, verdict and the rubric's `dimensions`; text as categories in
    sorted order, values as floats with NaN for None), read CHUNK rows at a time into arrays of `size` rows (the
    number expected; they grow if it is short). `rows` are the store's (STORED: the dimensions in `scores`) or have
    the dimensions as keys of their own."""
    if isinstance(rows, pd.DataFrame):
        return rows
    rows = iter(rows)
    columns_of = columns(dimensions)
    values_of = columns_of[len(KEYS):]
    arrays = {c: np.empty(size, dtype=float if c in values_of else np.int32) for c in columns_of}  # int32: text codes too
    codes: dict[str, dict[Any, int]] = {c: {} for c in TEXT}  # a session id may be a number
    filled = 0
    while chunk := list(islice(rows, CHUNK)):
        end = filled + len(chunk)
        if end > len(arrays["round"]):
            arrays = {c: np.concatenate([a[:filled], np.empty(max(end, 2 * filled), dtype=a.dtype)])
                      for c, a in arrays.items()}
        dims = [row.get("scores") or row for row in chunk]  # a store row without scores has no dimensions
        for column in columns_of:
            values = [d.get(column) for d in dims] if column in dimensions else [row[column] for row in chunk]
            if column in TEXT:
                found = codes[column]
                values = [found.setdefault(v, len(found)) for v in values]
            arrays[column][filled:end] = values  # None becomes NaN in the float columns
        filled = end
    found_columns: dict[str, np.ndarray | pd.Categorical] = {}
    for column in columns_of:
        kept = arrays.pop(column)[:filled]
        if column in TEXT:
            categories = list(codes[column])
            text = pd.Categorical.from_codes(np.asarray(kept, dtype=np.int32), pd.Index(categories))
            found_columns[column] = text.reorder_categories(sorted(categories))
        else:
            found_columns[column] = kept
    return pd.DataFrame(found_columns, copy=False)  # the arrays as they are, not copied into one block


def as_records(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows as dicts, NaN as None (for the code that reads a judgment at a time)."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


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

    def of(self, judgments: pd.DataFrame) -> np.ndarray:
        """The length of each judgment's reply (its session_idx, round, method), -1 where the file has none."""
        if not len(self.keys):
            return np.full(len(judgments), -1)
        idx = judgments["session_idx"].to_numpy(dtype=np.int64)
        rounds = judgments["round"].to_numpy(dtype=np.int64)
        names = pd.Categorical(judgments["method"])  # as it is when it already is one
        lookup = np.array([self.methods.get(name, -1) for name in names.categories] + [-1], dtype=np.int64)
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

"""The compact columns a dialogue result is scored from (kinds/dialogue/records.py), against the rows they hold."""
from __future__ import annotations

import math

import pytest

from kinds.dialogue.prompts import DIMENSIONS
from kinds.dialogue.records import columns, judgment_table, reply_lengths
from tests.conftest import jsonl, session_line


def row(idx: int, rnd: int, method: str, mode: str, status: str = "ok", total=None, verdict=None) -> dict:
    return {"session_idx": idx, "session_id": f"s{idx}", "round": rnd, "method": method, "mode": mode,
            "status": status, "total": total, "verdict": verdict, **{d: (total / 5 if total else None) for d in DIMENSIONS}}


ROWS = [row(2, 1, "B", "fine", total=70.0), row(0, 1, "A", "binary", verdict=1), row(0, 2, "A", "fine", "failed"),
        row(1, 1, "C", "fine#1", total=55.5), row(0, 1, "A", "fine", "unparsed")]


@pytest.mark.parametrize("size", [0, 2, 5, 9])  # none expected, too few (the arrays grow), exact, too many
def test_the_frame_holds_every_row_as_given(monkeypatch, size):
    monkeypatch.setattr("kinds.dialogue.records.CHUNK", 2)
    table = judgment_table(iter(ROWS), size=size)
    assert list(table.columns) == list(columns()) and len(table) == len(ROWS)
    assert table.records() == ROWS  # NaN back as None
    assert all(math.isnan(v) for v in table["total"][[1, 2, 4]])
    # Texts coded in sorted order, so that grouping by session id sorts as the strings do.
    assert table["session_id"].names == ["s0", "s1", "s2"] and table["session_id"].codes.tolist() == [2, 0, 0, 1, 0]
    assert table["mode"].names == ["binary", "fine", "fine#1"]
    frame = table.frame()  # as the sample grid reads it
    assert list(frame["mode"].cat.categories) == ["binary", "fine", "fine#1"]
    assert frame["session_id"].tolist() == [r["session_id"] for r in ROWS]


def test_store_rows_give_the_dimensions_out_of_their_scores():
    # The store's rows hold the dimensions in `scores` (None when there are none), other scores beside them.
    stored = [{**{k: v for k, v in r.items() if k not in DIMENSIONS},
               "scores": {**{d: r[d] for d in DIMENSIONS if r[d] is not None}, "extra": 1} if r["total"] else None}
              for r in ROWS]
    assert judgment_table(iter(stored)).records() == judgment_table(iter(ROWS)).records() == ROWS


def test_no_rows_give_an_empty_table_with_every_column():
    table = judgment_table(iter([]), size=3)
    assert list(table.columns) == list(columns()) and len(table) == 0 and table.records() == []


def test_reply_lengths_are_found_by_session_round_and_method(tmp_path):
    path = tmp_path / "log.jsonl"
    first, second = session_line("a", rounds=2), session_line("b", rounds=1)
    first["rounds"][0]["responses"] = {"A": "x", "B": "zzz"}
    first["rounds"][1]["responses"] = {"A": "yy", "B": "w" * 10}
    second["rounds"][0]["responses"] = {"A": "1234", "B": "12345"}
    path.write_bytes(jsonl(first, second))
    lengths = reply_lengths(path, ["A", "B"])
    asked = judgment_table(iter([row(0, 2, "B", "fine"), row(1, 1, "A", "fine"), row(0, 1, "A", "fine"),
                                 row(0, 3, "A", "fine"), row(1, 1, "Z", "fine"), row(7, 1, "A", "fine")]))
    # The last three have no reply in the file: round 3, method Z, session 7.
    assert lengths.of(asked).tolist() == [10, 4, 1, -1, -1, -1]

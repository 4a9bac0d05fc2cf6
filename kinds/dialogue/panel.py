"""A dialogue evaluation's judgments seen per judge, per reply (cell), and as the panel's.

A stored judgment's mode names its question, judge and sample (judge/keys.py). Each judge's records
keep only its own judgments with the plain question as mode, so the metrics (metrics.score_methods) read them as
they read a single judge's; repeated samples of a reply are averaged there.

The panel's score of a reply is the mean of its judges' scores (each judge's own mean over its samples), over
the judges that gave a valid one. Its binary verdict is the majority of the judges' verdicts: 1 when more than
half say keep chatting, 0 when fewer than half do, and a tie (as many for as against, e.g. two judges who
disagree) counts as 0.5, half a "keep chatting", rather than favouring either side.
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from common.lazy_modules import lazy
from judge import split_mode
from kinds.dialogue.prompts import DIMENSIONS, MODES
from kinds.dialogue.records import Table, judgment_table

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")


def by_judge(table: Table, judges: int) -> list[Table]:
    """Each judge's dialogue judgments (fine and binary, every sample; records.judgment_table), their mode the
    plain question and their session id also as "session" (what metrics.score_methods groups by)."""
    modes = table["mode"]
    parsed = {mode: split_mode(mode) for mode in modes.names}
    base = modes.mapped(lambda mode: parsed[mode][0])
    judge = np.array([parsed[mode][1] for mode in modes.names] + [-1])[modes.codes]
    out = []
    for n in range(judges):
        mine = base.isin(MODES) & (judge == n)
        own = table if mine.all() else table.rows(mine)  # one judge and no pairwise question: no copy
        out.append(own.with_columns(mode=base[mine], session=own["session_id"]))
    return out


def _valid(j: dict) -> bool:
    if j["status"] != "ok":
        return False
    if j["mode"] == "fine":
        return j["total"] is not None and 0 <= j["total"] <= 100
    return j["verdict"] in (0, 1)


def cells(records: list[dict] | Table, dimensions: tuple[str, ...] = DIMENSIONS) -> dict[tuple, dict]:
    """One judge's valid judgments per reply (session index, session id, round, method): the mean of each value
    over its samples ("binary" the mean verdict, in [0, 1]), and the values of every sample ("totals", "verdicts",
    and each dimension's in "dimension_samples")."""
    if isinstance(records, Table):
        records = records.records()
    found: dict[tuple, dict] = defaultdict(lambda: {"totals": [], "verdicts": [], **{d: [] for d in dimensions}})
    for j in records:
        if not _valid(j):
            continue
        cell = found[(j["session_idx"], j["session_id"], j["round"], j["method"])]
        if j["mode"] == "fine":
            cell["totals"].append(float(j["total"]))
            for d in dimensions:
                if j.get(d) is not None:
                    cell[d].append(float(j[d]))
        else:
            cell["verdicts"].append(int(j["verdict"]))
    return {key: {"total": _mean(c["totals"]), "binary": _mean(c["verdicts"]),
                  **{d: _mean(c[d]) for d in dimensions}, "totals": c["totals"], "verdicts": c["verdicts"],
                  "dimension_samples": {d: c[d] for d in dimensions}}
            for key, c in found.items()}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def majority(votes: list[float]) -> float:
    """The panel's verdict from its judges' (mean) verdicts: 1, 0, or 0.5 on a tie."""
    share = sum(votes) / len(votes)
    return 1.0 if share > 0.5 else 0.0 if share < 0.5 else 0.5


def panel_records(per_judge: list[Table], dimensions: tuple[str, ...] = DIMENSIONS) -> Table:
    """Records of the panel in the shape metrics.score_methods reads: per reply, one fine record (mean of the
    judges' totals and dimensions) and one binary record (majority verdict); the judgments that failed, did not
    parse or are pending are passed through so that the panel counts them too."""
    judges_records = [table.records() for table in per_judge]
    judged = [cells(records, dimensions) for records in judges_records]
    records = [j for judge in judges_records for j in judge if not _valid(j)]
    for key in sorted(set().union(*judged), key=str):
        idx, session_id, rnd, method = key
        mine = [c[key] for c in judged if key in c]
        base = {"session_idx": idx, "session_id": session_id, "session": session_id, "round": rnd,
                "method": method, "status": "ok"}
        totals = [c for c in mine if c["total"] is not None]
        if totals:
            records.append({**base, "mode": "fine", "total": _mean([c["total"] for c in totals]), "verdict": None,
                            **{d: _mean([c[d] for c in totals if c[d] is not None]) for d in dimensions}})
        votes = [c["binary"] for c in mine if c["binary"] is not None]
        if votes:
            records.append({**base, "mode": "binary", "total": None, "verdict": majority(votes),
                            **{d: None for d in dimensions}})
    table = judgment_table(records, dimensions=dimensions)
    return table.with_columns(session=table["session_id"])

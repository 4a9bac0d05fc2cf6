"""How far the judges agree with people: the `agreement.human` block of a dialogue result with ratings attached.

Items are the replies people rated (kinds/dialogue/human_file.py). For each rater (each judge, and the panel)
over the items both rated: Spearman's rho, Krippendorff's alpha (interval), Pearson's r and Kendall's tau-b of the
fine total and of each dimension people rated, Cohen's kappa and alpha (nominal) of the keep-chatting verdict, each
with a 95% bootstrap interval over sessions; and the methods ranked by people and by the rater on the same replies
(Kendall's tau, with its interval over sessions). A rater's verdict on a reply is the majority of its samples (a
panel's, of its judges); a tie is left out. Given each person's own ratings, and some reply rated by two or more,
`people` is Krippendorff's alpha among them per field rated (nominal for the verdict), with its interval. When people
gave totals, `scatter` holds each reply both rated: the headline rater's total (the panel's, else the one judge's)
against people's mean, with how many people rated it and the lowest and highest of their totals (the spread the
result page's scatter draws).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict, final

from common.lazy_modules import lazy
from kinds.agreement import (
    Agreement,
    bootstrap_alpha,
    bootstrap_kappa,
    bootstrap_kendall,
    bootstrap_method_tau,
    bootstrap_pearson,
    bootstrap_spearman,
    kendall_tau,
)
from kinds.dialogue.judge_agreement import N_BOOT, vote
from kinds.dialogue.prompts import DIMENSIONS

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy


@final
class ScoreAgreement(TypedDict):
    """A rater against people on a score, over the replies both rated."""

    spearman: Agreement
    alpha: Agreement  # Krippendorff's, interval
    pearson: Agreement
    kendall: Agreement  # tau-b


@final
class VerdictAgreement(TypedDict):
    """A rater against people on the keep-chatting verdict."""

    kappa: Agreement  # Cohen's
    alpha: Agreement  # Krippendorff's, nominal


class RaterAgreement(TypedDict):
    """One rater (a judge, or the panel) against people, on what people rated."""

    total: NotRequired[ScoreAgreement]  # when people gave fine totals
    binary: NotRequired[VerdictAgreement]  # when people gave verdicts
    dimensions: NotRequired[dict[str, ScoreAgreement]]  # each dimension people rated (always given, after the two)


class Ranking(TypedDict):
    """The methods ranked by people and by each rater on the same replies."""

    by: str | None  # what ranks them: "total", else "verdict" (the rate x 100), None when people gave neither
    human: dict[str, dict[str, float | None]]  # rater -> method -> people's mean on the replies both rated
    by_rater: dict[str, dict[str, float | None]]  # rater -> method -> the rater's own mean there
    kendall_tau: dict[str, float | None]  # rater -> Kendall's tau of the two rankings
    kendall_tau_interval: dict[str, Agreement]  # rater -> the same tau with its bootstrap interval over sessions


class ReplyPoint(TypedDict):
    """One rated reply: the rater's total against people's."""

    session_id: str
    round: int
    method: str
    judge: float  # the rater's total (the mean of its samples; a panel's, of its judges)
    people: float  # people's mean total
    raters: int  # how many people gave it a total
    low: float  # the lowest of their totals
    high: float  # the highest


class Scatter(TypedDict):
    """The replies both rated, for a scatter of the headline rater against people."""

    rater: str  # whose totals: "panel" with a panel of judges, else the one judge's label
    points: list[ReplyPoint]


class HumanAgreement(TypedDict):
    """The `agreement.human` block: the judges (and the panel) against people's ratings."""

    ratings: int  # the replies people rated
    sessions: int
    rated: list[str]  # what people rated: "total", "verdict" and dimension keys
    by_rater: dict[str, RaterAgreement]
    ranking: Ranking
    people: NotRequired[dict[str, Agreement]]  # field -> alpha among people, when some reply has several raters
    scatter: NotRequired[Scatter]  # when people gave totals


def _values(rows: list, field: str) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in (row.get(field) for row in rows)])


def _scores(human: np.ndarray, rater: np.ndarray, sessions: list, n_boot: int) -> ScoreAgreement:
    """Agreement of two aligned columns of scores (NaN: not rated)."""
    return {"spearman": bootstrap_spearman(human, rater, sessions, n_boot=n_boot),
            "alpha": bootstrap_alpha(np.column_stack([human, rater]), sessions, "interval", n_boot=n_boot),
            "pearson": bootstrap_pearson(human, rater, sessions, n_boot=n_boot),
            "kendall": bootstrap_kendall(human, rater, sessions, n_boot=n_boot)}


def _verdicts(human: np.ndarray, rater: np.ndarray, sessions: list, n_boot: int) -> VerdictAgreement:
    """Agreement of two aligned columns of verdicts (NaN: not rated)."""
    return {"kappa": bootstrap_kappa(human, rater, sessions, n_boot=n_boot),
            "alpha": bootstrap_alpha(np.column_stack([human, rater]), sessions, "nominal", n_boot=n_boot)}


def _method_means(values: np.ndarray, mask: np.ndarray, methods_of: list,
                  methods: list[str]) -> dict[str, float | None]:
    """Mean of the values per method over the items in mask."""
    means: dict[str, float | None] = {}
    for method in methods:
        chosen = [v for v, m, keep in zip(values, methods_of, mask) if m == method and keep]
        means[method] = float(np.mean(chosen)) if chosen else None
    return means


def people_alpha(per_rater: list[dict], dimensions: tuple[str, ...] = DIMENSIONS,
                 n_boot: int = N_BOOT) -> dict[str, Agreement] | None:
    """Krippendorff's alpha among people per field rated (total, verdict, dimensions), replies x raters with a
    bootstrap interval over sessions; None unless some reply has two raters or more. `per_rater` are each person's
    rows (rater, session_id, round, method, total, verdict, each dimension under its key)."""
    replies: dict[tuple, dict[str, dict]] = {}
    for row in per_rater:
        replies.setdefault((row["session_id"], row["round"], row["method"]), {})[row["rater"]] = row
    if not any(len(by) >= 2 for by in replies.values()):
        return None
    names = list(dict.fromkeys(row["rater"] for row in per_rater))
    sessions = [key[0] for key in replies]
    out: dict[str, Agreement] = {}
    for field in ("total", "verdict", *dimensions):
        if all(row.get(field) is None for row in per_rater):
            continue
        matrix = np.array([[np.nan if (v := by.get(name, {}).get(field)) is None else float(v) for name in names]
                           for by in replies.values()])
        out[field] = bootstrap_alpha(matrix, sessions, "nominal" if field == "verdict" else "interval", n_boot=n_boot)
    return out


def reply_points(ratings: list[dict], cells: dict, per_rater: list[dict] | None = None) -> list[ReplyPoint]:
    """Each reply with people's total and the rater's (`cells` as human_agreement's `raters` values): the rater's
    total, people's mean, and how many people gave a total with the lowest and highest of them (from `per_rater`,
    each person's own rows; without them, the mean stands for one rating)."""
    by_key = {(sid, rnd, method): cell for (_idx, sid, rnd, method), cell in cells.items()}
    totals: dict[tuple, list[float]] = {}
    for row in per_rater or ():
        if row.get("total") is not None:
            totals.setdefault((row["session_id"], row["round"], row["method"]), []).append(float(row["total"]))
    points: list[ReplyPoint] = []
    for r in ratings:
        key = (r["session_id"], r["round"], r["method"])
        judge = by_key.get(key, {}).get("total")
        if r.get("total") is None or judge is None or judge != judge:
            continue
        given = totals.get(key) or [float(r["total"])]
        points.append({"session_id": key[0], "round": key[1], "method": key[2], "judge": float(judge),
                       "people": float(r["total"]), "raters": len(given), "low": min(given), "high": max(given)})
    return points


def human_agreement(ratings: list[dict], raters: dict[str, dict], methods: list[str],
                    dimensions: tuple[str, ...] = DIMENSIONS, n_boot: int = N_BOOT,
                    per_rater: list[dict] | None = None) -> HumanAgreement:
    """Judges (and panel) against people. `ratings` are stored human ratings (each dimension's rating under its key);
    `raters` each rater's reply cells (panel.cells) by its label, keyed (session index, session id, round, method);
    `dimensions` the rubric's keys; `per_rater` each person's own ratings (people_alpha), when known."""
    sessions = [r["session_id"] for r in ratings]
    methods_of = [r["method"] for r in ratings]
    rated = [field for field in ("total", "verdict", *dimensions) if any(r.get(field) is not None for r in ratings)]
    human = {field: _values(ratings, field) for field in rated}
    # Rank methods by the people's totals, else by their keep-chatting rate (x100).
    rank_field = "total" if "total" in rated else "verdict" if "verdict" in rated else None
    scale = 100.0 if rank_field == "verdict" else 1.0
    by_rater: dict[str, RaterAgreement] = {}
    ranking: Ranking = {"by": rank_field, "human": {}, "by_rater": {}, "kendall_tau": {}, "kendall_tau_interval": {}}
    for label, cells in raters.items():
        by_key = {(sid, rnd, method): cell for (_idx, sid, rnd, method), cell in cells.items()}
        mine = [by_key.get((r["session_id"], r["round"], r["method"]), {}) for r in ratings]
        rater = {field: _values(mine, "binary" if field == "verdict" else field) for field in rated}
        if "verdict" in rated:
            rater["verdict"] = np.array([np.nan if (v := vote(c.get("binary"))) is None else v for c in mine])
        figures: RaterAgreement = {}
        if "total" in rated:
            figures["total"] = _scores(human["total"], rater["total"], sessions, n_boot)
        if "verdict" in rated:
            figures["binary"] = _verdicts(human["verdict"], rater["verdict"], sessions, n_boot)
        figures["dimensions"] = {d: _scores(human[d], rater[d], sessions, n_boot) for d in dimensions if d in rated}
        by_rater[label] = figures
        if rank_field:
            # The rater's own value for ranking: its mean total, or its mean verdict (not the majority) x100.
            own = rater["total"] if rank_field == "total" else _values(mine, "binary")
            mask = ~np.isnan(human[rank_field]) & ~np.isnan(own)
            ranking["human"][label] = _method_means(human[rank_field] * scale, mask, methods_of, methods)
            ranking["by_rater"][label] = _method_means(own * scale, mask, methods_of, methods)
            ranking["kendall_tau"][label] = kendall_tau(list(ranking["human"][label].values()),
                                                        list(ranking["by_rater"][label].values()))
            ranking["kendall_tau_interval"][label] = bootstrap_method_tau(
                np.where(mask, human[rank_field], np.nan), np.where(mask, own, np.nan), methods_of, sessions,
                n_boot=n_boot)
    document: HumanAgreement = {"ratings": len(ratings), "sessions": len(set(sessions)), "rated": rated,
                                "by_rater": by_rater, "ranking": ranking}
    people = people_alpha(per_rater, dimensions, n_boot) if per_rater is not None else None
    if people is not None:
        document["people"] = people
    if "total" in rated and raters:
        headline = "panel" if "panel" in raters else next(iter(raters))
        document["scatter"] = {"rater": headline, "points": reply_points(ratings, raters[headline], per_rater)}
    return document

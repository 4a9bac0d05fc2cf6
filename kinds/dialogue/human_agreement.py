"""How far the judges agree with people: the `agreement.human` block of a dialogue result with ratings attached.

Items are the replies people rated (kinds/dialogue/human_file.py). For each rater (each judge, and the panel)
over the items both rated: Spearman's rho and Krippendorff's alpha (interval) of the fine total and of each
dimension people rated, Cohen's kappa and alpha (nominal) of the keep-chatting verdict, each with a 95% bootstrap
interval over sessions; and the methods ranked by people and by the rater on the same replies (Kendall's tau).
A rater's verdict on a reply is the majority of its samples (a panel's, of its judges); a tie is left out.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict, final

from common.lazy_modules import lazy
from kinds.agreement import Agreement, bootstrap_alpha, bootstrap_kappa, bootstrap_spearman, kendall_tau
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


class HumanAgreement(TypedDict):
    """The `agreement.human` block: the judges (and the panel) against people's ratings."""

    ratings: int  # the replies people rated
    sessions: int
    rated: list[str]  # what people rated: "total", "verdict" and dimension keys
    by_rater: dict[str, RaterAgreement]
    ranking: Ranking


def _values(rows: list, field: str) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in (row.get(field) for row in rows)])


def _scores(human: np.ndarray, rater: np.ndarray, sessions: list, n_boot: int) -> ScoreAgreement:
    """Agreement of two aligned columns of scores (NaN: not rated)."""
    return {"spearman": bootstrap_spearman(human, rater, sessions, n_boot=n_boot),
            "alpha": bootstrap_alpha(np.column_stack([human, rater]), sessions, "interval", n_boot=n_boot)}


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


def human_agreement(ratings: list[dict], raters: dict[str, dict], methods: list[str],
                    dimensions: tuple[str, ...] = DIMENSIONS, n_boot: int = N_BOOT) -> HumanAgreement:
    """Judges (and panel) against people. `ratings` are stored human ratings (each dimension's rating under its key);
    `raters` each rater's reply cells (panel.cells) by its label, keyed (session index, session id, round, method);
    `dimensions` the rubric's keys."""
    sessions = [r["session_id"] for r in ratings]
    methods_of = [r["method"] for r in ratings]
    rated = [field for field in ("total", "verdict", *dimensions) if any(r.get(field) is not None for r in ratings)]
    human = {field: _values(ratings, field) for field in rated}
    # Rank methods by the people's totals, else by their keep-chatting rate (x100).
    rank_field = "total" if "total" in rated else "verdict" if "verdict" in rated else None
    scale = 100.0 if rank_field == "verdict" else 1.0
    by_rater: dict[str, RaterAgreement] = {}
    ranking: Ranking = {"by": rank_field, "human": {}, "by_rater": {}, "kendall_tau": {}}
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
    return {"ratings": len(ratings), "sessions": len(set(sessions)), "rated": rated, "by_rater": by_rater,
            "ranking": ranking}

"""A dataset's leaderboard from its runs (storage/datasets.py's `dataset_runs`): each method's figure chosen among
its runs (the latest, the best, or the latest with a tag), the methods ranked by it, and each method's trend over its
runs. The figures are the kind's headline numbers and intervals as the runs kept them (`Scored.headline`,
`Scored.headline_intervals`): nothing is computed again here but the order."""
from __future__ import annotations

from typing import Any

from translations import _

CHOICES = ("latest", "best", "tag")


class LeaderboardError(ValueError):
    """A choice the leaderboard cannot answer, with a message for the user."""


def points(runs: list[dict]) -> dict[str, list[dict]]:
    """{method: [point, ...]}: every headline number of every run, in the runs' order (oldest first), each point
    {run, created_at, value, ci95} (ci95: [low, high], or None when the run kept no interval for it)."""
    trends: dict[str, list[dict]] = {}
    for run in runs:
        intervals = run.get("intervals") or {}
        for name, value in run.get("headline") or []:
            if value is None:
                continue
            ci = intervals.get(name)
            trends.setdefault(name, []).append({"run": run["id"], "created_at": run["created_at"], "value": value,
                                                "ci95": list(ci) if ci else None})
    return trends


def chosen_point(trend: list[dict], choice: str, higher_is_better: bool, tagged: set[str]) -> dict | None:
    """The point of one method's trend that ranks it: the latest; the best (ties: the later); the latest of a run in
    `tagged` (None when the method has none)."""
    if choice == "tag":
        trend = [point for point in trend if point["run"] in tagged]
    if not trend:
        return None
    if choice == "best":
        sign = 1 if higher_is_better else -1
        return max(reversed(trend), key=lambda point: sign * point["value"])
    return trend[-1]


def competition_ranks(values: list[float]) -> list[int]:
    """Ranks of values already in order, best first: equal values share the better rank, the next rank skips
    (1, 2, 2, 4)."""
    ranks: list[int] = []
    for position, value in enumerate(values):
        ranks.append(ranks[-1] if position and value == values[position - 1] else position + 1)
    return ranks


def leaderboard(runs: list[dict], choice: str = "latest", tag: str | None = None,
                higher_is_better: bool = True) -> dict[str, Any]:
    """{choice, tag, tags, ranking, trends}: the methods ranked by the figure `choice` picks for each (ties: by name),
    with their rank, value, interval, run and how many runs measured them; each method's trend; the runs' tags."""
    if choice not in CHOICES:
        raise LeaderboardError(_("Unknown choice %(choice)s: use latest, best or tag.", choice=choice))
    if choice == "tag" and not tag:
        raise LeaderboardError(_("choice=tag ranks each method by its latest run with a tag: name it with tag=."))
    tagged = {run["id"] for run in runs if tag and tag in (run.get("tags") or [])}
    trends = points(runs)
    chosen = {name: point for name, trend in trends.items()
              if (point := chosen_point(trend, choice, higher_is_better, tagged)) is not None}
    sign = -1 if higher_is_better else 1
    order = sorted(chosen, key=lambda name: (sign * chosen[name]["value"], name))
    ranks = competition_ranks([chosen[name]["value"] for name in order])
    ranking = [{"rank": rank, "method": name, "value": chosen[name]["value"], "ci95": chosen[name]["ci95"],
                "run": chosen[name]["run"], "created_at": chosen[name]["created_at"], "runs": len(trends[name])}
               for rank, name in zip(ranks, order)]
    tags = sorted({t for run in runs for t in run.get("tags") or []})
    return {"choice": choice, "tag": tag if choice == "tag" else None, "tags": tags, "ranking": ranking,
            "trends": trends}


RANKING_COLUMNS = ("rank", "method", "value", "ci95_low", "ci95_high", "run", "created_at", "runs")
TREND_COLUMNS = ("method", "run", "created_at", "value", "ci95_low", "ci95_high")


def ranking_rows(board: dict) -> list[tuple]:
    """The ranking as RANKING_COLUMNS (the interval as two columns)."""
    return [(row["rank"], row["method"], row["value"], *(row["ci95"] or (None, None)), row["run"], row["created_at"],
             row["runs"]) for row in board["ranking"]]


def methods_in_order(board: dict) -> list[str]:
    """Every method of the trends: the ranked ones in their order, then those the choice left out."""
    ranked = [row["method"] for row in board["ranking"]]
    return ranked + [name for name in board["trends"] if name not in ranked]


def trend_rows(board: dict) -> list[tuple]:
    """Every method's trend as TREND_COLUMNS, method by method (methods_in_order)."""
    return [(name, point["run"], point["created_at"], point["value"], *(point["ci95"] or (None, None)))
            for name in methods_in_order(board) for point in board["trends"][name]]

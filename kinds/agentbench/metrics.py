"""Every number the agentbench kind computes, one function per metric; the table of them is README.md.

Per agent x task: `task_score` (main metric x 100), `normalised_score` (score / the paper's weight),
`group_fractions` (the status breakdown), `fork_metric` (a fork's main metric). Per agent: `overall_score` (OA) and
`oa_split` (the split it was computed from). How results are keyed (-std / -dev): kinds.agentbench.tasks.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from kinds.agentbench.tasks import GROUP_OF_STATUS, STANDARD_TASKS, STATUS_GROUPS, WEIGHTS, TaskResult

FORK_METRICS = ("accuracy", "success_rate", "score", "pass_rate", "reward")  # a fork's main metric, by name


def task_score(result: TaskResult) -> float | None:
    """Score of a standard task: its main metric (0-1 scale, tasks.MAIN_METRICS) x 100; None for other tasks."""
    return None if result.metric is None else result.metric * 100


def normalised_score(score: float | None, weight: float | None) -> float | None:
    """A standard task's score divided by its weight (WEIGHTS, the paper's normaliser); None without either."""
    return score / weight if score is not None and weight else None


def overall_score(scores: Mapping[str, float | None]) -> float | None:
    """AgentBench OA: mean over the eight standard tasks of score / WEIGHTS; None unless all eight are given."""
    given = {task: score for task in STANDARD_TASKS if (score := scores.get(task)) is not None}
    if len(given) < len(STANDARD_TASKS):
        return None
    return sum(given[task] / WEIGHTS[task] for task in STANDARD_TASKS) / len(STANDARD_TASKS)


def oa_split(results: Iterable[TaskResult]) -> str:
    """The split the OA was computed from: "std", "dev", "mixed", or "unknown" (config names without a split)."""
    splits = {result.split for result in results}
    return "mixed" if len(splits) > 1 else (splits.pop() or "unknown")


def group_fractions(statuses: Mapping[str, float]) -> dict[str, float]:
    """Status fractions summed into STATUS_GROUPS, as AgentBench's analysis groups them (running, cancelled: none)."""
    groups = {group: 0.0 for group in STATUS_GROUPS}
    for status, fraction in statuses.items():
        group = GROUP_OF_STATUS.get(status)
        if group is not None:
            groups[group] += fraction
    return groups


def fork_metric(custom: dict) -> tuple[str, float] | None:
    """A task outside the standard eight (a fork such as medagentbench): its main metric on the 0-1 scale, found by
    name (FORK_METRICS, in that order), else its only number in [0, 1]; None when there is no such one."""
    numbers = {k: float(v) for k, v in custom.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1}
    named = next((name for name in FORK_METRICS if name in numbers), None)
    if named is None and len(numbers) == 1:
        named = next(iter(numbers))
    return None if named is None else (named, numbers[named])

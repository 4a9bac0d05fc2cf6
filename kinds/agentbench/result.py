"""The agentbench result document of docs/result-documents.md, assembled from kinds.agentbench.metrics."""
from __future__ import annotations

from typing import Any, TypedDict

from kinds.agentbench import metrics
from kinds.agentbench.tasks import (
    STANDARD_TASKS,
    STATUS_GROUPS,
    TASK_NAMES,
    WEIGHTS,
    Run,
    TaskResult,
    ordered_tasks,
    task_keys,
)
from kinds.result_document import ResultDocument, UploadInput


class TaskScores(TypedDict):
    """One agent's result on one task (keyed as tasks.task_keys says)."""

    score: float | None  # the main metric x 100, 0-100; None outside the eight standard tasks
    fork_score: float | None  # another task's main metric x 100 (metrics.fork_metric), never part of the OA
    fork_metric: str | None  # that metric's name
    normalised: float | None  # score / weight
    weight: float | None  # the paper's normaliser (tasks.WEIGHTS) of a standard task
    in_oa: bool  # whether the score counts in the agent's OA
    standard: str | None  # the standard task's key, None for another task
    name: str  # the task's English name (a standard one's), else its config name
    config_name: str
    split: str | None  # "std", "dev", or None
    metric: float | None  # the main metric on the 0-1 scale
    metric_path: str | None  # where overall.json gives it
    total: int | None  # samples
    status: dict[str, float] | None  # fraction per status group (tasks.STATUS_GROUPS); None without `validation`
    status_raw: dict[str, float]  # the `validation` fractions as written
    history_length: dict[str, float | int | None] | None  # {"average", "max", "min"}
    custom: dict[str, Any]  # the scalar leaves of `custom`, by dotted path
    source_file: str
    run: str | None  # the run folder inside a ZIP
    modified: str | None  # when overall.json was written, when known
    samples: dict[str, Any] | None  # runs.jsonl counted by status, and each sample's line (tasks.Log.to_dict)
    errors: dict[str, Any] | None  # error.jsonl counted by kind of error


class AgentScores(TypedDict):
    """One agent's tasks and overall score."""

    tasks: dict[str, TaskScores]  # in task order (tasks.ordered_tasks)
    oa: float | None  # the overall score; None unless all eight standard tasks have a score
    missing: list[str]  # the standard tasks without a score
    oa_split: str | None  # the split the OA was computed from (metrics.oa_split); None without an OA


class AgentBenchScores(TypedDict):
    """The document `score` makes of a run, before the evaluation's keys."""

    kind: str  # "agentbench"
    source: str  # what was uploaded: "overall", "outputs" (a ZIP), "result_json" or "summary_csv"
    agents: dict[str, AgentScores]  # sorted by name
    tasks: list[str]  # every task key any agent has, in task order
    superseded: list[dict[str, str]]  # the overall.json files newer runs replaced: {"agent", "task", "file", "kept"}
    weights: dict[str, float]  # tasks.WEIGHTS
    status_groups: list[str]  # tasks.STATUS_GROUPS


class AgentBenchResult(ResultDocument, AgentBenchScores):
    """An AgentBench evaluation's result document; every key is always present."""

    input: UploadInput


def build_result(evaluation: dict, upload: dict, run: Run) -> AgentBenchResult:
    """The result document of an evaluation: the run's `score` with the evaluation and its input."""
    return {**score(run), "evaluation_id": evaluation["id"],
            "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"]}}


def score(run: Run) -> AgentBenchScores:
    """The agentbench result document of docs/result-documents.md (agents sorted, tasks in standard order)."""
    agents: dict[str, AgentScores] = {}
    all_keys: set[str] = set()
    for agent in sorted({t.agent for t in run.tasks}):
        keyed = task_keys([t for t in run.tasks if t.agent == agent])
        all_keys.update(keyed)
        in_oa = {key: keyed[key] for key in STANDARD_TASKS
                 if key in keyed and metrics.task_score(keyed[key]) is not None}
        oa = metrics.overall_score({key: metrics.task_score(result) for key, result in in_oa.items()})
        agents[agent] = {
            "tasks": {key: _task_doc(result, key in in_oa) for key, result in keyed.items()},
            "oa": oa,
            "missing": [key for key in STANDARD_TASKS if key not in in_oa],
            "oa_split": metrics.oa_split(in_oa.values()) if oa is not None else None,
        }
    return {"kind": "agentbench", "source": run.source, "agents": agents, "tasks": ordered_tasks(all_keys),
            "superseded": list(run.superseded), "weights": dict(WEIGHTS), "status_groups": list(STATUS_GROUPS)}


def _task_doc(result: TaskResult, in_oa: bool) -> TaskScores:
    weight = WEIGHTS.get(result.standard) if result.standard else None
    score_value = metrics.task_score(result)
    fork = metrics.fork_metric(result.custom) if not result.standard else None
    return {
        "score": score_value,
        # a fork's main metric x 100, shown beside the others (never part of the OA)
        "fork_score": None if fork is None else 100 * fork[1],
        "fork_metric": None if fork is None else fork[0],
        "normalised": metrics.normalised_score(score_value, weight),
        "weight": weight,
        "in_oa": in_oa,
        "standard": result.standard,
        "name": TASK_NAMES.get(result.standard, result.config_name) if result.standard else result.config_name,
        "config_name": result.config_name,
        "split": result.split,
        "metric": result.metric,
        "metric_path": result.metric_path,
        "total": result.total,
        "status": dict(result.groups) if result.groups is not None else None,
        "status_raw": dict(result.statuses),
        "history_length": dict(result.history_length) if result.history_length else None,
        "custom": dict(result.custom),
        "source_file": result.source_file,
        "run": result.run,
        "modified": result.modified,
        "samples": result.samples.to_dict("by_status") if result.samples else None,
        "errors": result.errors.to_dict("by_kind") if result.errors else None,
    }

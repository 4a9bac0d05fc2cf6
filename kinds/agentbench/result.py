"""The agentbench result document of docs/result-documents.md, assembled from kinds.agentbench.metrics."""
from __future__ import annotations

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


def build_result(evaluation: dict, upload: dict, run: Run) -> dict:
    """The result document of an evaluation: the run's `score` with the evaluation and its input."""
    return {**score(run), "evaluation_id": evaluation["id"],
            "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"]}}


def score(run: Run) -> dict:
    """The agentbench result document of docs/result-documents.md (agents sorted, tasks in standard order)."""
    agents: dict[str, dict] = {}
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


def _task_doc(result: TaskResult, in_oa: bool) -> dict:
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
        "name": TASK_NAMES.get(result.standard, result.config_name),
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

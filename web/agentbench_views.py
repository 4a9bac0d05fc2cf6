"""AgentBench pages: the result page (tables, charts, leaderboard comparison) and the per-sample view.

View state lives in the query string: `?models=gpt-4,claude-2` picks the published leaderboard models to
compare with; the sample view takes `agent`, `task`, `status` and `page`.
"""
from __future__ import annotations

from typing import Mapping

from flask import Blueprint, abort, render_template, request

import agentbench_charts
from benchmarks.agentbench import STANDARD_TASKS
from benchmarks.agentbench_leaderboard import SOURCE, leaderboard
from web import get_store
from web.payloads import evaluation_status, list_arg

bp = Blueprint("agentbench", __name__)
PER_PAGE = 25
DEFAULT_MODELS = ("gpt-4", "gpt-3.5-turbo")


def chosen_models(args: Mapping) -> list[dict]:
    """The leaderboard rows picked in `models` (unknown names ignored), else DEFAULT_MODELS."""
    rows = {row["model"]: row for row in leaderboard()}
    names = list_arg(args, "models") if "models" in args else list(DEFAULT_MODELS)
    return [rows[name] for name in names if name in rows]


def result_page(record: dict):
    """The result page of an AgentBench evaluation."""
    result = record.get("result")
    models = chosen_models(request.args)
    return render_template(
        "result_agentbench.html", evaluation=record, result=result, status=evaluation_status(record),
        upload=get_store().get_upload(record["upload_id"]), task_labels=agentbench_charts.task_labels(),
        status_labels=agentbench_charts.status_labels(), standard=STANDARD_TASKS, leaderboard=leaderboard(),
        models=models, chosen=[m["model"] for m in models], source=SOURCE,
        figures=agentbench_charts.agentbench_figures(result, models) if result else None)


def _int(value, default: int) -> int:
    try:
        return max(int(value), 1)
    except (TypeError, ValueError):
        return default


@bp.get("/evaluations/<evaluation_id>/samples")
def samples(evaluation_id: str):
    """One agent x task's samples from runs.jsonl (filtered by status, paged) and its error.jsonl entries."""
    record = get_store().get_evaluation(evaluation_id) or abort(404)
    result = record.get("result") or abort(404)
    if result.get("kind") != "agentbench":
        abort(404)
    agent, task = request.args.get("agent", ""), request.args.get("task", "")
    entry = ((result["agents"].get(agent) or {}).get("tasks") or {}).get(task) or abort(404)
    items = (entry.get("samples") or {}).get("items", [])
    status = request.args.get("status", "")
    shown = [item for item in items if not status or item["status"] == status]
    pages = max(1, -(-len(shown) // PER_PAGE))
    page = min(_int(request.args.get("page"), 1), pages)
    return render_template("agentbench_samples.html", evaluation=record, agent=agent, task=task, entry=entry,
                           label=agentbench_charts.task_labels().get(task, task), status=status,
                           shown=shown[(page - 1) * PER_PAGE:page * PER_PAGE], count=len(shown), page=page,
                           pages=pages)

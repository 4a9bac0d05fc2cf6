"""The AgentBench kind's reading view: one agent x task's samples (runs.jsonl, by status, paged) and errors; the
result page's page of agents."""
from __future__ import annotations

from typing import Mapping

from kinds.agentbench import figures, logs
from kinds.agentbench.result import AgentBenchResult
from kinds.kind import Site
from kinds.readers import limits

PER_PAGE = 25
AGENTS_PER_PAGE = 10  # agents in a page of the result page's tables of agent x task rows
SHOWN_ERRORS = 200  # error.jsonl entries listed on a samples page


def _int(value, default: int) -> int:
    try:
        return max(int(value), 1)
    except (TypeError, ValueError):
        return default


def samples_view(record: dict, args: Mapping, site: Site) -> tuple[str, dict] | None:
    """One agent x task's samples from runs.jsonl (filtered by status, paged) and its error.jsonl entries."""
    result: AgentBenchResult | None = record.get("result")
    if not result:
        return None
    agent, task = args.get("agent", ""), args.get("task", "")
    found = result["agents"].get(agent)
    entry = found["tasks"].get(task) if found else None
    if entry is None:
        return None
    status = str(args.get("status", ""))
    samples, errors = entry.get("samples") or {}, entry.get("errors") or {}
    count = samples.get("by_status", {}).get(status, 0) if status else samples.get("total", 0)
    pages = max(1, -(-count // PER_PAGE))
    page = min(_int(args.get("page"), 1), pages)
    upload = site.store.get_upload(record["upload_id"])
    if upload is None:
        return None
    path = site.file_of(upload)
    shown = logs.sample_page(path, samples, limits.current(), status, (page - 1) * PER_PAGE, PER_PAGE) \
        if samples else []
    return "agentbench/samples.html", {
        "agent": agent, "task": task, "entry": entry, "label": figures.task_labels().get(task, task),
        "status": status, "shown": shown, "count": count, "page": page, "pages": pages,
        "errors": logs.stored_errors(path, errors["file"], limits.current(), SHOWN_ERRORS) if errors else []}


def agent_page(result: AgentBenchResult | None, args: Mapping) -> dict:
    """The agents shown in one page (`agents_page` in the query) of the result page's tables that have a row per
    agent x task, so that a leaderboard of many agents does not put thousands of rows on the page."""
    names = list(result["agents"]) if result else []
    pages = max(1, -(-len(names) // AGENTS_PER_PAGE))
    page = min(_int(args.get("agents_page"), 1), pages)
    return {"page": page, "pages": pages, "names": names[(page - 1) * AGENTS_PER_PAGE:page * AGENTS_PER_PAGE]}

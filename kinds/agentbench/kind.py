"""The AgentBench kind: run outputs aggregated into per-task tables, status breakdowns and the overall score."""
from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Iterable, Mapping

import click

from kinds.agentbench import figures, paired_samples
from kinds.agentbench.format import read_any
from kinds.agentbench.leaderboard import SOURCE, leaderboard
from kinds.agentbench.result import AgentBenchResult, build_result
from kinds.agentbench.tasks import STANDARD_TASKS, STATUS_GROUPS
from kinds.agentbench.views import agent_page, samples_view
from kinds.kind import Job, Paired, Plan, Sample, Site, StartRequest, list_arg, open_file, upload_as, upload_stem
from kinds.problems import Report
from kinds.readers import zip as zips
from translations import _
from translations import lazy_gettext as _l

CSV_COLUMNS = ("agent", "task", "config_name", "split", "score", "normalised", "in_oa", "total", *STATUS_GROUPS,
               "average_history_length", "oa")
DEFAULT_MODELS = ("gpt-4", "gpt-3.5-turbo")


class AgentBenchKind(Paired[AgentBenchResult]):
    """overall.json, a ZIP of outputs/, the analysis' result.json or summary.csv; no judge, one scoring step."""

    name = "agentbench"
    label = _l("AgentBench outputs")
    formats = _l("overall.json, result.json, summary.csv, or a .zip of the outputs folder")
    headline_label = _l("Overall score (OA)")
    upload_fields = ("agent", "task")
    cli_options = (
        click.Option(["--agent"], help="AgentBench: the agent of a lone overall.json whose path does not name it."),
        click.Option(["--task"], help="AgentBench: the task config name (e.g. os-std) of a lone overall.json."))

    def sniff(self, head: bytes, filename: str, path: Path | None) -> bool:
        """A ZIP holding overall.json files, an overall.json, result.json, summary.csv or a runs.jsonl line."""
        if head.startswith(b"PK\x03\x04"):
            return path is not None and zips.zip_has(path, "overall.json")
        return ((b'"validation"' in head and b'"total"' in head) or head.startswith(b"Agent\\Task")
                or (b'"summary"' in head and b'"details"' in head)
                or (head.startswith(b'{"index"') and b'"output"' in head))

    def upload_hint(self, head: bytes, filename: str, path: Path) -> str | None:
        """What `sniff` claims; a lone overall.json is also told that it needs its agent and task."""
        if not self.sniff(head, filename, path):
            return None
        hint = upload_as(self, recognised=True)
        if b'"validation"' in head and b'"total"' in head:
            hint += " " + _("A lone overall.json also needs its agent and task names, unless its path "
                            "(<run>/<agent>/<task>/overall.json) shows them.")
        return hint

    def validate(self, stream: BinaryIO, filename: str, options: Mapping[str, str]) -> Report:
        """Read the outputs; a lone overall.json keeps its agent and task names in the summary (given as
        options, or taken from the uploaded path, which is not stored)."""
        report, run = read_any(stream, filename, options.get("agent"), options.get("task"))
        if report.ok and run.source == "overall":
            report.summary["names"] = {"agent": run.tasks[0].agent, "task": run.tasks[0].config_name}
        return report

    def start(self, upload: dict, request: StartRequest) -> Plan:
        """One scoring step over the whole upload."""
        return Plan([upload_stem(upload)], {})

    def score(self, job: Job) -> AgentBenchResult:
        """Per-task scores, status breakdowns and OA."""
        names = job.upload["summary"].get("names") or {}
        with open_file(job.path) as f:
            _report, run = read_any(f, job.upload["filename"], names.get("agent"), names.get("task"))
        return build_result(job.evaluation, job.upload, run)

    def upload_context(self, upload: dict, site: Site) -> dict:
        """The tasks' names."""
        return {"task_labels": figures.task_labels()}

    def result_context(self, record: dict, args: Mapping, site: Site) -> dict:
        """The leaderboard models picked in `models` to compare with (DEFAULT_MODELS by default), and the page of
        agents shown in the tables of agent x task rows (`agents_page`)."""
        models = chosen_models(args)
        return {"task_labels": figures.task_labels(), "status_labels": figures.status_labels(),
                "standard": STANDARD_TASKS, "leaderboard": leaderboard(), "models": models,
                "chosen": [m["model"] for m in models], "source": SOURCE,
                "agent_page": agent_page(record.get("result"), args)}

    def figures(self, result: AgentBenchResult, record: dict, args: Mapping) -> dict:
        """Task scores against the chosen leaderboard models, and status breakdowns."""
        return figures.agentbench_figures(result, chosen_models(args))

    def csv(self, result: AgentBenchResult) -> tuple[tuple, list[tuple]]:
        """One row per agent x task, with the agent's OA."""
        rows = []
        for agent, a in result["agents"].items():
            for key, t in a["tasks"].items():
                status, history = t["status"] or {}, t["history_length"] or {}
                rows.append((agent, key, t["config_name"], t["split"], t["score"], t["normalised"], t["in_oa"],
                             t["total"], *(status.get(g) for g in STATUS_GROUPS), history.get("average"), a["oa"]))
        return CSV_COLUMNS, rows

    def views(self) -> dict:
        """`samples?agent=A&task=T&status=S&page=N`: one agent x task's samples and errors."""
        return {"samples": samples_view}

    paired_metrics = paired_samples.METRICS

    def paired_samples(self, record: dict, site: Site) -> Iterable[Sample]:
        """Each agent x standard task's runs.jsonl samples, keyed (task, index), valued so that a task's mean is its
        score (paired_samples.py); tasks without per-sample logs give none."""
        return paired_samples.samples(record, site)

    def paired_aggregates(self, pairs: list[tuple[Sample, Sample]]) -> list[dict]:
        """Each agent's OA recomputed from the paired samples of the eight tasks, and its paired difference."""
        return paired_samples.oa_rows(pairs)

    def participants(self, evaluation: dict) -> list[str]:
        """The agents found, once scored (their names are the headline's)."""
        return [name for name, _score in evaluation.get("headline") or []]

    def headline(self, result: AgentBenchResult) -> list[list]:
        """Each agent's overall score."""
        return [[name, agent["oa"]] for name, agent in result["agents"].items()]

    def compare(self, runs: list[dict]) -> dict:
        """One row per (upload, agent) with its task scores and OA."""
        tasks: list[str] = []
        for run in runs:
            tasks += [t for t in run["result"]["tasks"] if t not in tasks]
        rows = [{"run": run, "agent": name, "doc": agent}
                for run in runs for name, agent in run["result"]["agents"].items()]
        return {"runs": runs, "tasks": tasks, "rows": rows, "task_labels": figures.task_labels()}


def chosen_models(args: Mapping) -> list[dict]:
    """The leaderboard rows picked in `models` (unknown names ignored), else DEFAULT_MODELS."""
    rows = {row["model"]: row for row in leaderboard()}
    names = list_arg(args, "models") if "models" in args else list(DEFAULT_MODELS)
    return [rows[name] for name in names if name in rows]

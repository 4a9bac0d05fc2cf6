"""The agentbench benchmark: AgentBench (THUDM, v0.2 client) run outputs, validation and the overall score.

Accepted uploads (DESIGN.md section 3):

- one `overall.json`, as the AgentBench client writes it when a task is finished:
  `{"total": n, "validation": {status: fraction, ..., "average_history_length", "max_history_length",
  "min_history_length"}, "custom": {task-specific metrics}}`. The agent and task names are given as
  arguments, else taken from the path `<run>/<agent>/<task>/overall.json` of the file name.
- a ZIP of an `outputs/` tree: `.../<run>/<agent>/<task>/overall.json`, each with an optional
  `runs.jsonl` (finished samples) and `error.jsonl` (failed attempts) beside it. When the same agent and
  task appear in several runs the newest overall.json wins, as in AgentBench's `src/analysis.py` (which
  compares file modification times; here ZipInfo.date_time, ties broken by the run folder name, later
  wins). The superseded files are listed in the result.
- `result.json` and `summary.csv` written by AgentBench's `src/analysis.py`: result.json is
  `{"summary": {agent: {task: main metric}}, "details": {agent: {task: {"file", "time", "overall"}}}}`
  where `overall` is the overall.json with its `validation` already grouped under the display names
  ("Completed", "Context Limit Exceeded", ...); summary.csv is a header `Agent\\Task,<task>,...` and one
  row per agent of main metrics (0-1 scale, Mind2Web already divided by 100), empty when not run.

Task config names map to the eight standard tasks (`os-std`/`os-dev` -> os, `dbbench-*` -> db, `kg-*` ->
kg, `cg-*` -> dcg, `ltp-*` -> ltp, `alfworld-*` -> hh, `webshop-*` -> ws, `m2w-*` -> wb); the split is
kept. Other tasks (forks such as `medagentbench-std`) are kept under their own name with no score.

Scores: main metric x 100 (MAIN_METRICS). OA = mean over the eight standard tasks of score / WEIGHTS
(`overall_score`, the only place for this arithmetic), null unless all eight are present. When one agent
has both a `-std` and a `-dev` result for a task, the `-std` one is keyed by the standard key and counts
in the OA; the `-dev` one is kept under its config name (e.g. "os-dev") and does not count. When only
`-dev` results exist they are keyed by the standard key and the OA is computed from them, marked by the
agent's `oa_split` ("dev"; "mixed" when splits differ) since the published OA is on the test (std) split.
"""
from __future__ import annotations

import csv
import io
import json
import math
import zipfile
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import BinaryIO

from benchmarks import limits as hard_limits
from benchmarks.conversation import _ZIP_MAGIC, _member_name
from benchmarks.jsonl import UTF8_BOM, _json_reason, decode_file
from benchmarks.limits import SETTINGS, LimitError, Limits, ZipReader
from benchmarks.problems import Problem, Report, describe, short_json
from translations import _

STANDARD_TASKS = ("os", "db", "kg", "dcg", "ltp", "hh", "ws", "wb")
# The paper's fixed normalisers: the mean score of all tested models per task (Liu et al., section 4.1).
WEIGHTS = {"os": 10.8, "db": 13.0, "kg": 13.9, "dcg": 12.0, "ltp": 3.5, "hh": 13.0, "ws": 30.7, "wb": 11.6}
# English display names (the integrator wraps them for translation).
TASK_NAMES = {"os": "Operating System", "db": "Database", "kg": "Knowledge Graph", "dcg": "Digital Card Game",
              "ltp": "Lateral Thinking Puzzles", "hh": "House-Holding", "ws": "Web Shopping", "wb": "Web Browsing"}
# AgentBench task config name (without the -std / -dev split) -> standard key.
CONFIG_BASES = {"os": "os", "dbbench": "db", "kg": "kg", "cg": "dcg", "ltp": "ltp", "alfworld": "hh",
                "webshop": "ws", "m2w": "wb"}
SPLITS = ("std", "dev")
# Standard key -> (JSON path of the main metric in overall.json, factor to the 0-1 scale).
MAIN_METRICS = {"os": ("custom.overall.acc", 1.0), "db": ("custom.overall_cat_accuracy", 1.0),
                "kg": ("custom.main", 1.0), "dcg": ("custom.score", 1.0), "ltp": ("custom.main", 1.0),
                "hh": ("custom.overall.success_rate", 1.0), "ws": ("custom.reward", 1.0),
                "wb": ("custom.step_sr", 0.01)}

# SampleStatus values as written in overall.json's `validation` (src/typings/status.py).
STATUSES = ("running", "completed", "agent context limit", "agent validation failed", "agent invalid action",
            "task limit reached", "unknown", "task error", "cancelled")
STATUS_GROUPS = ("completed", "context_limit", "invalid_format", "invalid_action", "task_limit")
STATUS_GROUP_NAMES = {"completed": "Completed", "context_limit": "Context Limit Exceeded",
                      "invalid_format": "Invalid Format", "invalid_action": "Invalid Action",
                      "task_limit": "Task Limit Exceeded"}
GROUP_OF_STATUS = {"completed": "completed", "agent context limit": "context_limit",
                   "agent validation failed": "invalid_format", "agent invalid action": "invalid_action",
                   "unknown": "task_limit", "task error": "task_limit", "task limit reached": "task_limit"}
HISTORY_KEYS = {"average_history_length": "average", "max_history_length": "max", "min_history_length": "min"}

MAX_SAMPLES = 1000  # runs.jsonl samples kept per agent x task (all are counted)
MAX_ERRORS = 2000  # error.jsonl entries kept per agent x task (all are counted)
MAX_MESSAGE_CHARS = 4000  # each history message is cut to this length
MAX_HISTORY_CHARS = 500_000  # history text kept per agent x task; later samples keep no history
MAX_RESULT_CHARS = 300
MAX_INFO_CHARS = 1000
MAX_CUSTOM_FIELDS = 50
MAX_CUSTOM_TEXT = 200
MAX_LINE_WARNINGS = 5  # bad runs.jsonl / error.jsonl lines warned about one by one, per file

_TREE_FILES = ("overall.json", "runs.jsonl", "error.jsonl")
_SPLIT_RANK = {"std": 0, None: 1, "dev": 2}
# Grouped `validation` keys, as src/analysis.py writes them into result.json ("Completed", ...).
_GROUP_DISPLAY = {name: group for group, name in STATUS_GROUP_NAMES.items()}
_FAILED = object()
_SKIP = object()


@dataclass
class Log:
    """The per-sample records of one runs.jsonl or error.jsonl: counts of all lines, the first ones kept."""

    file: str  # path inside the ZIP
    total: int = 0  # lines read (valid ones)
    counts: Counter = field(default_factory=Counter)  # by status (runs) or error kind (errors)
    items: list[dict] = field(default_factory=list)
    cut: bool = False  # more lines than were kept
    history_omitted: int = 0  # kept samples whose history was dropped (MAX_HISTORY_CHARS)
    messages_cut: int = 0  # history messages cut to MAX_MESSAGE_CHARS
    history_chars: int = 0

    def to_dict(self, counts_name: str) -> dict:
        """The log as a JSON-ready dict; the counts under `counts_name` (most frequent first)."""
        return {"file": self.file, "total": self.total, "kept": len(self.items), "cut": self.cut,
                counts_name: dict(sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))),
                "history_omitted": self.history_omitted, "messages_cut": self.messages_cut, "items": self.items}


@dataclass
class TaskResult:
    """One agent's result on one task: an overall.json (or a row of result.json / summary.csv)."""

    agent: str
    config_name: str  # the AgentBench task config name, e.g. "os-std" or "medagentbench-std"
    source_file: str  # path inside the ZIP, or the upload's name
    standard: str | None = None  # standard key (os, db, ...) or None for other tasks
    split: str | None = None  # "std", "dev" or None
    metric: float | None = None  # main metric on the 0-1 scale
    metric_path: str | None = None
    total: int | None = None
    statuses: dict[str, float] = field(default_factory=dict)  # raw `validation` fractions
    groups: dict[str, float] | None = None  # STATUS_GROUPS fractions, None without `validation`
    history_length: dict | None = None  # {"average", "max", "min"}
    custom: dict = field(default_factory=dict)  # scalar leaves of `custom`, dotted paths
    modified: str | None = None  # "YYYY-MM-DD HH:MM:SS" of the overall.json, when known
    run: str | None = None  # run folder inside the ZIP
    samples: Log | None = None
    errors: Log | None = None

    @property
    def score(self) -> float | None:
        """Main metric x 100 (0-100); None for non-standard tasks."""
        return None if self.metric is None else self.metric * 100


@dataclass
class Run:
    """What was read from one upload: the task results and the overall.json files that newer runs replaced."""

    source: str  # "overall", "outputs" (ZIP), "result_json" or "summary_csv"
    tasks: list[TaskResult] = field(default_factory=list)
    superseded: list[dict] = field(default_factory=list)  # {"agent", "task", "file", "kept"}


# --- names ---------------------------------------------------------------------------------------

def task_key(config_name: str) -> tuple[str | None, str | None]:
    """(standard key, split) of an AgentBench task config name: "dbbench-dev" -> ("db", "dev"); others (None, split)."""
    name = config_name.strip().lower()
    base, _sep, split = name.rpartition("-")
    if split not in SPLITS:
        base, split = name, None
    return CONFIG_BASES.get(base), split


def overall_score(scores: Mapping[str, float | None]) -> float | None:
    """AgentBench OA: mean over the eight standard tasks of score / WEIGHTS; None unless all eight are given."""
    if any(scores.get(task) is None for task in STANDARD_TASKS):
        return None
    return sum(scores[task] / WEIGHTS[task] for task in STANDARD_TASKS) / len(STANDARD_TASKS)


def ordered_tasks(keys) -> list[str]:
    """Standard task keys in their order (os, db, kg, dcg, ltp, hh, ws, wb), then other keys sorted."""
    present = set(keys)
    return [k for k in STANDARD_TASKS if k in present] + sorted(present - set(STANDARD_TASKS))


def task_keys(tasks: list[TaskResult]) -> dict[str, TaskResult]:
    """One agent's results keyed for the result document (see the module docstring), in task order."""
    preferred: dict[str, TaskResult] = {}
    for result in tasks:
        current = preferred.get(result.standard) if result.standard else None
        if result.standard and (current is None or _SPLIT_RANK[result.split] < _SPLIT_RANK[current.split]):
            preferred[result.standard] = result
    keyed: dict[str, TaskResult] = {}
    for result in tasks:
        key = result.standard if preferred.get(result.standard) is result else result.config_name
        candidate, n = key, 1
        while candidate in keyed:  # only when a config name equals a standard key already in use
            n += 1
            candidate = f"{key} ({n})"
        keyed[candidate] = result
    return {key: keyed[key] for key in ordered_tasks(keyed)}


# --- reading -------------------------------------------------------------------------------------

def validate(stream: BinaryIO, agent: str | None = None, task: str | None = None) -> Report:
    """Check an upload for the app's upload step; the summary names the agents and tasks found."""
    return read_any(stream, getattr(stream, "name", "") or "upload", agent, task)[0]


def read_any(stream: BinaryIO, filename: str, agent: str | None = None,
             task: str | None = None) -> tuple[Report, Run]:
    """Read an overall.json, a ZIP of an outputs tree, result.json or summary.csv; an empty Run on errors."""
    report = Report()
    raw = stream.read()
    name = str(filename or "upload").replace("\\", "/")
    agent, task = _clean(agent), _clean(task)
    limits = hard_limits.current()
    try:
        if raw.startswith(_ZIP_MAGIC):
            run = _read_zip(raw, report, agent, task, limits, name)
        else:
            run = _read_file(raw, name, report, agent, task, limits)
        if run is not None:
            _check_agents(run, limits)
    except LimitError as exc:
        report.add(exc.problem())
        run = None
    if run is None or not report.ok:
        return report, Run(source=run.source if run else "unknown")
    _warn_splits(run, report)
    report.summary = _summary(run)
    return report, run


def _check_agents(run: Run, limits: Limits) -> None:
    """LimitError when the results hold more than LIMIT_METHODS agents (named at the first result past it)."""
    agents: set[str] = set()
    for result in run.tasks:
        agents.add(result.agent)
        if len(agents) > limits.methods:
            raise LimitError(_(
                "%(file)s: the upload holds results of more than %(limit)s agents, the limit (%(setting)s). "
                "Upload fewer agents at a time, or raise %(setting)s.", file=result.source_file,
                limit=limits.methods, setting=SETTINGS["methods"]), None, result.source_file)


def _clean(name: str | None) -> str | None:
    return name.strip() if isinstance(name, str) and name.strip() else None


def _summary(run: Run) -> dict:
    agents = sorted({t.agent for t in run.tasks})
    keys = set()
    for agent in agents:
        keys.update(task_keys([t for t in run.tasks if t.agent == agent]))
    return {"source": run.source, "agents": len(agents), "agent_names": agents, "tasks": ordered_tasks(keys),
            "results": len(run.tasks), "superseded": len(run.superseded),
            "samples": sum(t.samples.total for t in run.tasks if t.samples),
            "errors": sum(t.errors.total for t in run.tasks if t.errors)}


def _warn_splits(run: Run, report: Report) -> None:
    """Warn where an agent has a -dev result beside the -std one (kept, but left out of the OA)."""
    for agent in sorted({t.agent for t in run.tasks}):
        keyed = task_keys([t for t in run.tasks if t.agent == agent])
        for key, result in keyed.items():
            kept = keyed.get(result.standard) if result.standard else None
            if kept is not None and kept is not result and result.split == "dev":
                report.warn(Problem(None, "", _(
                    "Agent %(agent)s has results for both %(std)s and %(dev)s; both are shown, and the "
                    "overall score (OA) uses %(std)s only.", agent=agent, std=kept.config_name, dev=key)))


def _decode(raw: bytes, name: str, report: Report) -> str | None:
    return decode_file(raw, name, report, lambda file, byte, offset: _(
        "%(file)s is not valid UTF-8: byte 0x%(byte)s at byte offset %(offset)s cannot be decoded. "
        "AgentBench writes UTF-8; save the file as UTF-8 and upload it again.", file=file, byte=byte, offset=offset))


def _parse_json(text: str, name: str, report: Report, limits: Limits):
    """The JSON value of a whole file, or _FAILED after recording why; LimitError past a hard limit."""
    try:
        return hard_limits.loads(text, limits, label=name)
    except json.JSONDecodeError as exc:
        report.add(Problem(exc.lineno, "", _(
            "%(file)s is not valid JSON at line %(line)s, column %(column)s: %(reason)s.",
            file=name, line=exc.lineno, column=exc.colno, reason=_json_reason(exc.msg))))
    return _FAILED


def _names_from_path(path: str) -> tuple[str | None, str | None]:
    """(agent, task) from `<agent>/<task>/overall.json` at the end of a path; None where absent, or where the
    folder is not named like an AgentBench task (a known config name, or one with a -std / -dev split), so
    that an ordinary local path does not lend its folders as names."""
    parts = PurePosixPath(path).parts
    if len(parts) >= 3 and parts[-1] == "overall.json":
        standard, split = task_key(parts[-2])
        if standard or split:
            return parts[-3], parts[-2]
    return None, None


def _read_file(raw: bytes, name: str, report: Report, agent: str | None, task: str | None,
               limits: Limits) -> Run | None:
    text = _decode(raw, name, report)
    if text is None:
        return None
    if not text.strip():
        report.add(Problem(None, "", _(
            "%(file)s is empty. Upload an AgentBench overall.json, a ZIP of the outputs folder, or the "
            "result.json or summary.csv of AgentBench's analysis.", file=name)))
        return None
    base = PurePosixPath(name).name.lower()
    if base.endswith(".csv") or text.lstrip().startswith("Agent\\Task"):
        return Run("summary_csv", _read_summary_csv(text, name, report))
    if base in ("runs.jsonl", "error.jsonl"):
        report.add(Problem(None, "", _(
            "%(file)s holds per-sample records and no scores. Upload the overall.json next to it, or a ZIP "
            "of the whole outputs folder (overall.json, runs.jsonl and error.jsonl together).", file=name)))
        return None
    value = _parse_json(text, name, report, limits)
    if value is _FAILED:
        return None
    if isinstance(value, dict) and ("summary" in value or "details" in value) and "validation" not in value:
        return Run("result_json", _read_result_json(value, name, report))
    path_agent, path_task = _names_from_path(name)
    agent, task = agent or path_agent, task or path_task
    if agent is None:
        report.add(Problem(None, "agent", _(
            "The agent name is needed: %(file)s does not show it (AgentBench writes "
            "<run>/<agent>/<task>/overall.json). Give the agent name, or upload a ZIP of the outputs folder.",
            file=name)))
    if task is None:
        report.add(Problem(None, "task", _(
            "The task name is needed: %(file)s does not show it (AgentBench writes "
            "<run>/<agent>/<task>/overall.json). Give the task config name (for example os-std), or upload a "
            "ZIP of the outputs folder.", file=name)))
    result = _task_result(value, name, agent or "", task or "", report)
    return Run("overall", [result] if result is not None and agent and task else [])


# --- one overall.json ----------------------------------------------------------------------------

def _is_number(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _task_result(value, file: str, agent: str, config_name: str, report: Report,
                 prefix: str = "") -> TaskResult | None:
    """A TaskResult from a parsed overall.json, or None after recording its problems."""
    def at(path: str) -> str:
        return f"{prefix}.{path}" if prefix else path

    def problem(path: str, message: str) -> None:
        report.add(Problem(None, at(path) or file, f"{file}: {message}"))  # the whole value: its file

    def warn(path: str, message: str) -> None:
        report.warn(Problem(None, at(path), f"{file}: {message}"))

    if not isinstance(value, dict):
        problem("", _("an AgentBench overall.json must be a JSON object with 'total', 'validation' and "
                      "'custom', found %(found)s.", found=describe(value)))
        return None
    standard, split = task_key(config_name)
    result = TaskResult(agent=agent, config_name=config_name, source_file=file, standard=standard, split=split)
    ok = _read_total(value, result, problem)
    ok = _read_validation(value, result, problem, warn) and ok
    custom = value.get("custom")
    if isinstance(custom, dict):
        result.custom = _scalars(custom)
    elif custom is not None and standard is None:
        warn("custom", _("'custom' should be an object, found %(found)s; it is ignored.", found=describe(custom)))
    if standard is not None:
        ok = _read_metric(value, result, problem, warn) and ok
    return result if ok else None


def _read_total(value: dict, result: TaskResult, problem) -> bool:
    if "total" not in value:
        problem("total", _("'total' is missing; an AgentBench overall.json gives the number of samples there."))
        return False
    total = value["total"]
    if type(total) is not int or total < 0:
        problem("total", _("'total' must be a whole number of samples (0 or more), found %(found)s.",
                           found=describe(total)))
        return False
    result.total = total
    return True


def _status_of(key: str) -> str | None:
    """The SampleStatus value of a `validation` key ("completed", "AGENT_CONTEXT_LIMIT", ...), else None."""
    name = key.strip().lower().replace("_", " ")
    return name if name in STATUSES else None


def _read_validation(value: dict, result: TaskResult, problem, warn) -> bool:
    validation = value.get("validation")
    if validation is None:
        warn("validation", _("'validation' is missing, so the breakdown of sample statuses is not available."))
        return True
    if not isinstance(validation, dict):
        problem("validation", _("'validation' must be an object of status fractions, found %(found)s.",
                                found=describe(validation)))
        return False
    ok = True
    groups: dict[str, float] = {}
    history: dict = {}
    for key, fraction in validation.items():
        where = f"validation.{key}"
        if key in HISTORY_KEYS:
            ok = _read_history_length(key, fraction, history, problem) and ok
            continue
        group = _GROUP_DISPLAY.get(key)
        status = None if group else _status_of(key)
        if status is None and group is None:
            continue  # other keys are not part of the format; they are left alone
        if not _is_number(fraction) or not 0 <= fraction <= 1:
            problem(where, _("%(path)s must be a fraction between 0 and 1, found %(found)s.",
                             path=where, found=describe(fraction)))
            ok = False
        elif status:
            result.statuses[status] = float(fraction)
        else:
            groups[group] = float(fraction)
    if not ok:
        return False
    result.history_length = {name: history.get(name) for name in HISTORY_KEYS.values()} if history else None
    if result.statuses:
        result.groups = group_fractions(result.statuses)
        _warn_fractions(result, warn)
    elif groups:
        result.groups = {group: groups.get(group, 0.0) for group in STATUS_GROUPS}
    return True


def _read_history_length(key: str, value, history: dict, problem) -> bool:
    where = f"validation.{key}"
    if key == "average_history_length":
        if not _is_number(value) or value < 0:
            problem(where, _("%(path)s must be a number of 0 or more, found %(found)s.", path=where,
                             found=describe(value)))
            return False
        history["average"] = float(value)
        return True
    if type(value) is not int or value < 0:
        problem(where, _("%(path)s must be a whole number of 0 or more, found %(found)s.", path=where,
                         found=describe(value)))
        return False
    history[HISTORY_KEYS[key]] = value
    return True


def group_fractions(statuses: Mapping[str, float]) -> dict[str, float]:
    """Status fractions summed into STATUS_GROUPS, as AgentBench's analysis groups them (running, cancelled: none)."""
    groups = {group: 0.0 for group in STATUS_GROUPS}
    for status, fraction in statuses.items():
        group = GROUP_OF_STATUS.get(status)
        if group is not None:
            groups[group] += fraction
    return groups


def _warn_fractions(result: TaskResult, warn) -> None:
    total = sum(result.statuses.values())
    if result.total and abs(total - 1) > 0.01:
        warn("validation", _("the status fractions in 'validation' add up to %(sum)s instead of 1.",
                             sum=f"{total:.3f}"))
    running = result.statuses.get("running", 0.0)
    if running > 0:
        warn("validation.running", _("%(share)s of the samples are still marked running: the run may not have "
                                     "finished when overall.json was written.", share=f"{running:.1%}"))


def _read_metric(value: dict, result: TaskResult, problem, warn) -> bool:
    path, factor = MAIN_METRICS[result.standard]
    node = value
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            problem(path, _("%(path)s is missing; it holds the main metric of task %(task)s.",
                            path=path, task=result.config_name))
            return False
        node = node[part]
    if not _is_number(node):
        problem(path, _("%(path)s, the main metric of task %(task)s, must be a finite number, found %(found)s.",
                        path=path, task=result.config_name, found=describe(node)))
        return False
    result.metric = float(node) * factor
    result.metric_path = path
    if not 0 <= result.metric <= 1:
        warn(path, _("%(path)s is %(value)s, outside the expected range %(range)s.",
                     path=path, value=node, range="0-100" if factor != 1 else "0-1"))
    return True


def _scalars(node: dict, prefix: str = "", out: dict | None = None) -> dict:
    """Scalar leaves of a JSON object under dotted paths (lists are left out), at most MAX_CUSTOM_FIELDS."""
    out = {} if out is None else out
    for key, item in node.items():
        if len(out) >= MAX_CUSTOM_FIELDS:
            break
        path = f"{prefix}{key}"
        if isinstance(item, dict):
            _scalars(item, path + ".", out)
        elif isinstance(item, str):
            out[path] = item if len(item) <= MAX_CUSTOM_TEXT else item[:MAX_CUSTOM_TEXT - 1] + "…"
        elif item is None or type(item) is bool:
            out[path] = item
        elif type(item) in (int, float):
            out[path] = item if math.isfinite(item) else None
    return out


# --- result.json and summary.csv of src/analysis.py ---------------------------------------------

def _read_result_json(value: dict, name: str, report: Report) -> list[TaskResult]:
    results: list[TaskResult] = []
    seen: set[tuple[str, str]] = set()
    details = {} if value.get("details") is None else value["details"]
    summary = {} if value.get("summary") is None else value["summary"]
    for section, found in (("details", details), ("summary", summary)):
        if not isinstance(found, dict):
            report.add(Problem(None, section, _("%(file)s: '%(section)s' must be an object of agents, found "
                                                "%(found)s.", file=name, section=section, found=describe(found))))
            return []
    for agent, tasks in details.items():
        if not _agent_tasks_ok(tasks, f"details.{agent}", name, report):
            continue
        for config, entry in tasks.items():
            where = f"details.{agent}.{config}"
            overall = entry.get("overall") if isinstance(entry, dict) else None
            if not isinstance(overall, dict):
                report.add(Problem(None, f"{where}.overall", _(
                    "%(file)s: %(path)s.overall must be the task's overall.json object, found %(found)s.",
                    file=name, path=where, found=describe(overall))))
                continue
            result = _task_result(overall, name, agent, config, report, prefix=f"{where}.overall")
            if result is not None:
                result.modified = entry.get("time") if isinstance(entry.get("time"), str) else None
                results.append(result)
            seen.add((agent, config))
    for agent, tasks in summary.items():
        if not _agent_tasks_ok(tasks, f"summary.{agent}", name, report):
            continue
        for config, metric in tasks.items():
            if (agent, config) not in seen:
                result = _summary_result(agent, config, metric, name, None, f"summary.{agent}.{config}", report)
                if result is not None:
                    results.append(result)
    if not results and report.ok:
        report.add(Problem(None, "", _("%(file)s holds no agent results in 'summary' or 'details'.", file=name)))
    return results


def _agent_tasks_ok(tasks, where: str, name: str, report: Report) -> bool:
    if isinstance(tasks, dict):
        return True
    report.add(Problem(None, where, _("%(file)s: %(path)s must be an object of tasks, found %(found)s.",
                                      file=name, path=where, found=describe(tasks))))
    return False


def _summary_result(agent: str, config: str, metric, name: str, line: int | None, where: str,
                    report: Report) -> TaskResult | None:
    """A TaskResult from a main metric as src/analysis.py summarises it (0-1 scale, Mind2Web already / 100)."""
    standard, split = task_key(config)
    result = TaskResult(agent=agent, config_name=config, source_file=name, standard=standard, split=split)
    if isinstance(metric, dict) or (isinstance(metric, str) and "win_rate" in metric):
        report.warn(Problem(line, where, _(
            "%(file)s: %(path)s holds an old card-game result (win_rate) rather than the score; the task is "
            "left out.", file=name, path=where)))
        return None
    if not _is_number(metric):
        report.add(Problem(line, where, _("%(file)s: %(path)s, the main metric of task %(task)s, must be a "
                                          "finite number, found %(found)s.",
                                          file=name, path=where, task=config, found=describe(metric))))
        return None
    if standard is None:
        result.custom = {"main metric": metric}
    else:
        result.metric, result.metric_path = float(metric), "summary"
    return result


def _read_summary_csv(text: str, name: str, report: Report) -> list[TaskResult]:
    reader = csv.reader(io.StringIO(text))
    try:
        rows = list(reader)
    except csv.Error as exc:  # e.g. a cell longer than the csv module's field limit
        report.add(Problem(reader.line_num, "", _("%(file)s line %(line)s cannot be read as CSV: %(reason)s.",
                                                  file=name, line=reader.line_num, reason=str(exc))))
        return []
    header = [cell.strip() for cell in rows[0]] if rows else []
    tasks = header[1:]
    if not tasks or not all(tasks):
        report.add(Problem(1, "", _("%(file)s: the first line must be the header Agent\\Task,<task>,<task>,... "
                                    "as written by AgentBench's analysis.", file=name)))
        return []
    results: list[TaskResult] = []
    agents: set[str] = set()
    for lineno, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        agent = row[0].strip()
        if len(row) != len(header) or not agent or agent in agents:
            report.add(Problem(lineno, "", _(
                "%(file)s line %(line)s must be an agent name (each once) followed by %(count)s values, one per "
                "task of the header.", file=name, line=lineno, count=len(tasks))))
            continue
        agents.add(agent)
        for config, cell in zip(tasks, row[1:]):
            cell = cell.strip()
            if not cell:
                continue  # the agent did not run this task
            metric = _csv_number(cell)
            result = _summary_result(agent, config, metric, name, lineno, config, report)
            if result is not None:
                results.append(result)
    if not results and report.ok:
        report.add(Problem(None, "", _("%(file)s holds no agent results.", file=name)))
    return results


def _csv_number(cell: str):
    try:
        return float(cell)
    except ValueError:
        return cell


# --- ZIP of an outputs tree -------------------------------------------------------------------------

@dataclass
class _Candidate:
    agent: str
    task: str
    run: str
    folder: tuple[str, ...]
    name: str
    info: zipfile.ZipInfo


def _read_zip(raw: bytes, report: Report, agent: str | None, task: str | None, limits: Limits,
              label: str) -> Run | None:
    try:
        archive = hard_limits.open_zip(raw, limits, label)
    except LimitError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        report.add(Problem(None, "", _("The file is not a valid ZIP archive (%(reason)s).", reason=str(exc))))
        return None
    with archive:
        folders, other = _tree_members(archive)
        candidates = _candidates(folders, other, report, agent, task)
        if not candidates:
            return None
        winners, superseded = _newest(candidates, report)
        members = [folders[c.folder][base] for c in winners for base in _TREE_FILES if base in folders[c.folder]]
        reader = ZipReader(archive, limits)
        reader.check_declared(members)
        run = Run("outputs", superseded=superseded)
        for candidate in winners:
            result = _read_candidate(reader, candidate, folders[candidate.folder], report, limits)
            if report.truncated:
                return None
            if result is not None:
                run.tasks.append(result)
        return run


def _tree_members(archive: zipfile.ZipFile) -> tuple[dict, list[str]]:
    """{folder parts: {file name: (member name, info)}} of the outputs-tree files, and the other member names."""
    folders: dict[tuple[str, ...], dict[str, tuple[str, zipfile.ZipInfo]]] = {}
    other: list[str] = []
    for info in archive.infolist():
        name = _member_name(info)
        parts = PurePosixPath(name).parts
        if info.is_dir() or not parts or parts[0] == "__MACOSX" or parts[-1].startswith("._"):
            continue
        if parts[-1] in _TREE_FILES:
            folders.setdefault(parts[:-1], {})[parts[-1]] = (name, info)
        else:
            other.append(name)
    return folders, other


def _candidates(folders: dict, other: list[str], report: Report, agent: str | None,
                task: str | None) -> list[_Candidate]:
    """Every overall.json with its agent and task (from the path, else the arguments); problems recorded."""
    if not folders and not other:
        report.add(Problem(None, "", _("The ZIP is empty.")))
        return []
    with_overall = sorted(folder for folder, files in folders.items() if "overall.json" in files)
    if not with_overall:
        analysis = [n for n in other if PurePosixPath(n).name in ("result.json", "summary.csv")]
        hint = _(" It holds %(files)s: upload that file by itself.", files=", ".join(analysis[:3])) if analysis else ""
        report.add(Problem(None, "", _(
            "The ZIP holds no overall.json. Zip AgentBench's outputs folder, where each finished task has "
            "<run>/<agent>/<task>/overall.json.") + hint))
        return []
    for folder, files in sorted(folders.items()):
        if "overall.json" not in files:
            found = next(files[base][0] for base in _TREE_FILES if base in files)
            report.warn(Problem(None, "", _(
                "%(file)s has no overall.json beside it: the task has not finished, so it is left out.",
                file=found)))
    candidates = []
    for folder in with_overall:
        name, info = folders[folder]["overall.json"]
        if len(folder) >= 2:
            candidates.append(_Candidate(folder[-2], folder[-1], "/".join(folder[:-2]), folder, name, info))
        elif agent and task:
            candidates.append(_Candidate(agent, task, "/".join(folder), folder, name, info))
        else:
            report.add(Problem(None, "agent" if not agent else "task", _(
                "%(file)s is not inside <agent>/<task>/ folders, so the agent and task names are needed. "
                "Keep AgentBench's folder layout in the ZIP, or give the agent and task names.", file=name)))
    return candidates if report.ok else []


def _newest(candidates: list[_Candidate], report: Report) -> tuple[list[_Candidate], list[dict]]:
    """Per agent and task the newest overall.json (date_time, then run folder name); the others superseded."""
    groups: dict[tuple[str, str], list[_Candidate]] = {}
    for candidate in candidates:
        groups.setdefault((candidate.agent, candidate.task), []).append(candidate)
    winners, superseded = [], []
    for (agent, task), group in sorted(groups.items()):
        ordered = sorted(group, key=lambda c: (c.info.date_time, c.run, c.name))
        newest = ordered[-1]
        winners.append(newest)
        for old in reversed(ordered[:-1]):
            superseded.append({"agent": agent, "task": task, "file": old.name, "kept": newest.name})
            report.warn(Problem(None, "", _(
                "%(file)s is replaced by %(newer)s, a newer run of agent %(agent)s on task %(task)s: only the "
                "newest overall.json counts, as in AgentBench's own analysis.",
                file=old.name, newer=newest.name, agent=agent, task=task)))
    return winners, superseded


def _read_candidate(reader: ZipReader, candidate: _Candidate, files: dict, report: Report,
                    limits: Limits) -> TaskResult | None:
    data = _read_member(reader, candidate.name, candidate.info, report)
    if data is None:
        return None
    text = _decode(data, candidate.name, report)
    value = _FAILED if text is None else _parse_json(text, candidate.name, report, limits)
    if value is _FAILED:
        return None
    result = _task_result(value, candidate.name, candidate.agent, candidate.task, report)
    if result is None:
        return None
    result.modified = _date_text(candidate.info.date_time)
    result.run = candidate.run
    if "runs.jsonl" in files:
        result.samples = _read_samples(_member_lines(reader, *files["runs.jsonl"], report),
                                       files["runs.jsonl"][0], report, limits)
    if "error.jsonl" in files:
        result.errors = _read_errors(_member_lines(reader, *files["error.jsonl"], report),
                                     files["error.jsonl"][0], report, limits)
    return result


def _date_text(date_time: tuple) -> str:
    return datetime(*date_time).strftime("%Y-%m-%d %H:%M:%S")


def _read_member(reader: ZipReader, name: str, info: zipfile.ZipInfo, report: Report) -> bytes | None:
    try:
        return reader.read(name, info)
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
        report.add(Problem(None, name, _("%(file)s in the ZIP cannot be read (%(reason)s).", file=name,
                                         reason=str(exc))))
        return None


def _member_lines(reader: ZipReader, name: str, info: zipfile.ZipInfo,
                  report: Report) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of a JSONL member, within the ZIP limits; a read failure is a warning."""
    try:
        yield from reader.lines(name, info)
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
        report.warn(Problem(None, "", _("%(file)s in the ZIP cannot be read (%(reason)s).", file=name,
                                        reason=str(exc))))


# --- runs.jsonl and error.jsonl -------------------------------------------------------------------

class _BadLines:
    """Warnings for unusable JSONL lines: the first few one by one, then a count."""

    def __init__(self, file: str, report: Report) -> None:
        self.file, self.report, self.count = file, report, 0

    def add(self, lineno: int, path: str, message: str) -> None:
        """Warn about one line (skipped), or only count it once MAX_LINE_WARNINGS were shown."""
        self.count += 1
        if self.count <= MAX_LINE_WARNINGS:
            self.report.warn(Problem(lineno, path, message))

    def finish(self) -> None:
        """Warn with the number of bad lines not shown one by one."""
        if self.count > MAX_LINE_WARNINGS:
            self.report.warn(Problem(None, "", _("%(count)s more unusable lines in %(file)s were skipped.",
                                                 count=self.count - MAX_LINE_WARNINGS, file=self.file)))


def _parse_line(lineno: int, raw: bytes, bad: _BadLines, limits: Limits):
    """The JSON object of one line, or _SKIP (blank, or warned about); LimitError past a hard limit."""
    if lineno == 1 and raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM):]
    if not raw.strip():
        return _SKIP
    try:
        value = hard_limits.loads(raw.decode("utf-8"), limits, bad.file, lineno)
    except UnicodeDecodeError:
        bad.add(lineno, "", _("%(file)s line %(line)s is not valid UTF-8; the line is skipped.",
                              file=bad.file, line=lineno))
        return _SKIP
    except json.JSONDecodeError as exc:
        bad.add(lineno, "", _("%(file)s line %(line)s is not valid JSON at character %(column)s: %(reason)s. "
                              "The line is skipped.", file=bad.file, line=lineno, column=exc.colno,
                              reason=_json_reason(exc.msg)))
        return _SKIP
    if not isinstance(value, dict):
        bad.add(lineno, "", _("%(file)s line %(line)s must be a JSON object, found %(found)s; the line is "
                              "skipped.", file=bad.file, line=lineno, found=describe(value)))
        return _SKIP
    return value


def _read_samples(lines: Iterator[tuple[int, bytes]], file: str, report: Report, limits: Limits) -> Log:
    log = Log(file=file)
    bad = _BadLines(file, report)
    for lineno, raw in lines:
        value = _parse_line(lineno, raw, bad, limits)
        if value is _SKIP:
            continue
        output = value.get("output")
        if not isinstance(output, dict) or not isinstance(output.get("status"), str):
            bad.add(lineno, "output.status", _(
                "%(file)s line %(line)s has no 'output' object with a 'status' string; the line is skipped.",
                file=file, line=lineno))
            continue
        _add_sample(log, value, output)
    bad.finish()
    if log.cut:
        report.warn(Problem(None, "", _(
            "%(file)s has %(total)s samples; the first %(kept)s are kept for display and all are counted.",
            file=file, total=log.total, kept=len(log.items))))
    return log


def _add_sample(log: Log, value: dict, output: dict) -> None:
    status = output["status"]
    log.total += 1
    log.counts[status] += 1
    if len(log.items) >= MAX_SAMPLES:
        log.cut = True
        return
    history = output.get("history")
    index = value.get("index", output.get("index"))
    item = {"index": index if _is_scalar(index) else short_json(index), "status": status,
            "result": _text(output.get("result"), MAX_RESULT_CHARS),
            "history_length": len(history) if isinstance(history, list) else None, "history": None}
    if isinstance(history, list):
        if log.history_chars < MAX_HISTORY_CHARS:
            item["history"] = [_message(turn, log) for turn in history]
        else:
            log.history_omitted += 1
    log.items.append(item)


def _message(turn, log: Log) -> dict:
    """One history message as {"role", "content", "cut"}, the content cut to MAX_MESSAGE_CHARS."""
    if isinstance(turn, dict):
        role = turn.get("role")
        content = turn.get("content")
    else:
        role, content = None, turn
    text = content if isinstance(content, str) else ("" if content is None else json.dumps(content, ensure_ascii=False))
    cut = len(text) > MAX_MESSAGE_CHARS
    if cut:
        text = text[:MAX_MESSAGE_CHARS]
        log.messages_cut += 1
    log.history_chars += len(text)
    return {"role": role if isinstance(role, str) else None, "content": text, "cut": cut}


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, str) or _is_number(value)


def _text(value, limit: int) -> str | None:
    """A value as short text: strings as they are, other values as JSON; None stays None."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _read_errors(lines: Iterator[tuple[int, bytes]], file: str, report: Report, limits: Limits) -> Log:
    log = Log(file=file)
    bad = _BadLines(file, report)
    for lineno, raw in lines:
        value = _parse_line(lineno, raw, bad, limits)
        if value is _SKIP:
            continue
        kind = value.get("error")
        if not isinstance(kind, str) or not kind:
            bad.add(lineno, "error", _("%(file)s line %(line)s has no 'error' kind; the line is skipped.",
                                       file=file, line=lineno))
            continue
        log.total += 1
        log.counts[kind] += 1
        if len(log.items) >= MAX_ERRORS:
            log.cut = True
            continue
        time = value.get("time")
        index = value.get("index")
        log.items.append({"index": index if _is_scalar(index) else short_json(index), "kind": kind,
                          "info": _text(value.get("info"), MAX_INFO_CHARS),
                          "time": time.get("str") if isinstance(time, dict) and isinstance(time.get("str"), str)
                          else None})
    bad.finish()
    return log


# --- scoring -------------------------------------------------------------------------------------

def score(run: Run) -> dict:
    """The agentbench result document of DESIGN.md section 7 (agents sorted, tasks in standard order)."""
    agents: dict[str, dict] = {}
    all_keys: set[str] = set()
    for agent in sorted({t.agent for t in run.tasks}):
        keyed = task_keys([t for t in run.tasks if t.agent == agent])
        all_keys.update(keyed)
        in_oa = {key: keyed[key] for key in STANDARD_TASKS if key in keyed and keyed[key].score is not None}
        oa = overall_score({key: result.score for key, result in in_oa.items()})
        agents[agent] = {
            "tasks": {key: _task_doc(key, result, key in in_oa) for key, result in keyed.items()},
            "oa": oa,
            "missing": [key for key in STANDARD_TASKS if key not in in_oa],
            "oa_split": _oa_split(in_oa.values()) if oa is not None else None,
        }
    return {"kind": "agentbench", "source": run.source, "agents": agents, "tasks": ordered_tasks(all_keys),
            "superseded": list(run.superseded), "weights": dict(WEIGHTS), "status_groups": list(STATUS_GROUPS)}


def _oa_split(results) -> str:
    """The split the OA was computed from: "std", "dev", "mixed", or "unknown" (config names without a split)."""
    splits = {result.split for result in results}
    return "mixed" if len(splits) > 1 else (splits.pop() or "unknown")


def _task_doc(key: str, result: TaskResult, in_oa: bool) -> dict:
    weight = WEIGHTS.get(result.standard) if result.standard else None
    score_value = result.score
    return {
        "score": score_value,
        "normalised": score_value / weight if score_value is not None and weight else None,
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

"""AgentBench (THUDM, v0.2 client) uploads: validating and reading overall.json, result.json, summary.csv and ZIPs.

Accepted uploads (docs/formats.md):

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

Task config names and splits: kinds.agentbench.tasks; one overall.json: kinds.agentbench.overall;
per-sample logs (runs.jsonl, error.jsonl): kinds.agentbench.logs; the numbers: kinds.agentbench.metrics;
the result document: kinds.agentbench.result.
"""
from __future__ import annotations

import csv
import io
import json
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import BinaryIO

from kinds.agentbench.logs import is_number, member_lines, read_errors, read_samples
from kinds.agentbench.overall import task_result
from kinds.agentbench.tasks import (
    Run,
    TaskResult,
    ordered_tasks,
    task_key,
    task_keys,
)
from kinds.problems import Problem, Report, describe
from kinds.readers import json_text
from kinds.readers import limits as hard_limits
from kinds.readers import zip as zips
from kinds.readers.jsonl import decode_file, json_reason
from kinds.readers.limits import SETTINGS, LimitError, Limits
from kinds.readers.zip import ZIP_MAGIC, ZipReader, member_name
from translations import _

_TREE_FILES = ("overall.json", "runs.jsonl", "error.jsonl")
_Members = dict[str, tuple[str, zipfile.ZipInfo]]  # the outputs-tree files of one folder: name -> (member, info)
_FAILED = object()


# --- reading -------------------------------------------------------------------------------------

def validate(stream: BinaryIO, agent: str | None = None, task: str | None = None) -> Report:
    """Check an upload for the app's upload step; the summary names the agents and tasks found."""
    return read_any(stream, getattr(stream, "name", "") or "upload", agent, task)[0]


def read_any(stream: BinaryIO, filename: str, agent: str | None = None,
             task: str | None = None) -> tuple[Report, Run]:
    """Read an overall.json, a ZIP of an outputs tree, result.json or summary.csv; an empty Run on errors."""
    report = Report()
    start = stream.tell()
    head = stream.read(4)
    stream.seek(start)
    name = str(filename or "upload").replace("\\", "/")
    agent, task = _clean(agent), _clean(task)
    limits = hard_limits.current()
    try:
        if head.startswith(ZIP_MAGIC):  # read member by member from the file, never whole
            run = _read_zip(stream, report, agent, task, limits)
        else:
            run = _read_file(stream.read(), name, report, agent, task, limits)
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
    keys: set[str] = set()
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
        return json_text.loads(text, limits, label=name)
    except json.JSONDecodeError as exc:
        report.add(Problem(exc.lineno, "", _(
            "%(file)s is not valid JSON at line %(line)s, column %(column)s: %(reason)s.",
            file=name, line=exc.lineno, column=exc.colno, reason=json_reason(exc))))
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
    result = task_result(value, name, agent or "", task or "", report)
    return Run("overall", [result] if result is not None and agent and task else [])


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
            result = task_result(overall, name, agent, config, report, prefix=f"{where}.overall")
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
    if not is_number(metric):
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


def _read_zip(stream: BinaryIO, report: Report, agent: str | None, task: str | None, limits: Limits) -> Run | None:
    try:
        archive = zips.open_zip_file(stream, limits)
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


def _tree_members(archive: zipfile.ZipFile) -> tuple[dict[tuple[str, ...], _Members], list[str]]:
    """{folder parts: {file name: (member name, info)}} of the outputs-tree files, and the other member names."""
    folders: dict[tuple[str, ...], _Members] = {}
    other: list[str] = []
    for info in archive.infolist():
        name = member_name(info)
        parts = PurePosixPath(name).parts
        if info.is_dir() or not parts or parts[0] == "__MACOSX" or parts[-1].startswith("._"):
            continue
        if parts[-1] in _TREE_FILES:
            folders.setdefault(parts[:-1], {})[parts[-1]] = (name, info)
        else:
            other.append(name)
    return folders, other


def _candidates(folders: dict[tuple[str, ...], _Members], other: list[str], report: Report, agent: str | None,
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


def _read_candidate(reader: ZipReader, candidate: _Candidate, files: _Members, report: Report,
                    limits: Limits) -> TaskResult | None:
    data = _read_member(reader, candidate.name, candidate.info, report)
    if data is None:
        return None
    text = _decode(data, candidate.name, report)
    value = _FAILED if text is None else _parse_json(text, candidate.name, report, limits)
    if value is _FAILED:
        return None
    result = task_result(value, candidate.name, candidate.agent, candidate.task, report)
    if result is None:
        return None
    result.modified = _date_text(candidate.info.date_time)
    result.run = candidate.run
    # Samples and errors are counted here; a page reads the ones it shows from the stored ZIP (logs.read_member).
    if "runs.jsonl" in files:
        result.samples = read_samples(member_lines(reader, *files["runs.jsonl"], report),
                                       files["runs.jsonl"][0], report, limits, keep=0)
    if "error.jsonl" in files:
        result.errors = read_errors(member_lines(reader, *files["error.jsonl"], report),
                                     files["error.jsonl"][0], report, limits, keep=0)
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

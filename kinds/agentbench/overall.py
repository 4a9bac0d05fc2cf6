"""One AgentBench overall.json read into a TaskResult: the sample count, the status fractions of `validation`
and its history lengths, the task's main metric (tasks.MAIN_METRICS) and the scalar leaves of `custom`."""
from __future__ import annotations

import math

from kinds.agentbench.logs import is_number
from kinds.agentbench.metrics import group_fractions
from kinds.agentbench.tasks import (
    HISTORY_KEYS,
    MAIN_METRICS,
    STATUS_GROUP_NAMES,
    STATUS_GROUPS,
    STATUSES,
    TaskResult,
    task_key,
)
from kinds.problems import Problem, Report, describe
from translations import _

MAX_CUSTOM_FIELDS = 50
MAX_CUSTOM_TEXT = 200

# Grouped `validation` keys, as src/analysis.py writes them into result.json ("Completed", ...).
_GROUP_DISPLAY = {name: group for group, name in STATUS_GROUP_NAMES.items()}


def task_result(value, file: str, agent: str, config_name: str, report: Report,
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
        ok = _read_metric(value, result, standard, problem, warn) and ok
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
        if not is_number(fraction) or not 0 <= fraction <= 1:
            problem(where, _("%(path)s must be a fraction between 0 and 1, found %(found)s.",
                             path=where, found=describe(fraction)))
            ok = False
        elif status:
            result.statuses[status] = float(fraction)
        elif group is not None:
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
        if not is_number(value) or value < 0:
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


def _warn_fractions(result: TaskResult, warn) -> None:
    total = sum(result.statuses.values())
    if result.total and abs(total - 1) > 0.01:
        warn("validation", _("the status fractions in 'validation' add up to %(sum)s instead of 1.",
                             sum=f"{total:.3f}"))
    running = result.statuses.get("running", 0.0)
    if running > 0:
        warn("validation.running", _("%(share)s of the samples are still marked running: the run may not have "
                                     "finished when overall.json was written.", share=f"{running:.1%}"))


def _read_metric(value: dict, result: TaskResult, standard: str, problem, warn) -> bool:
    path, factor = MAIN_METRICS[standard]
    node: object = value
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            problem(path, _("%(path)s is missing; it holds the main metric of task %(task)s.",
                            path=path, task=result.config_name))
            return False
        node = node[part]
    if not is_number(node):
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

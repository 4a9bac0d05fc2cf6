"""AgentBench runs sample by sample: each standard task's samples (runs.jsonl) as `Sample`s, and the OA's paired
difference from them.

A sample's value is its share of the task's score: the per-sample field of `output.result` whose mean over the
task's samples reproduces the score read from overall.json (metrics.task_score), x 100 and x the task's factor
(tasks.MAIN_METRICS). The fields tried, in order, are FIELDS (a bare true/false or number counts as itself; a
sample without the field counts 0, as AgentBench counts a failed sample); when every result names a category
(`type`, as DBBench's do) the mean of the categories' means is tried too, each sample weighted N / (K x n_cat) so
that the plain mean over samples is that mean. A task where no field reproduces its score (or without runs.jsonl)
gives no samples: it compares unpaired.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Iterator, Mapping
from urllib.parse import urlencode

from kinds.agentbench import logs
from kinds.agentbench.tasks import MAIN_METRICS, STANDARD_TASKS, WEIGHTS
from kinds.kind import Metric, Sample, Site
from kinds.paired_stats import weighted_strata
from kinds.readers import limits
from kinds.stats import DEFAULT_N_BOOT
from translations import lazy_gettext as _l

FIELDS = ("result", "is_correct", "success", "reward", "score", "f1", "acc", "accuracy", "step_sr")
CATEGORY = "type"
TOLERANCE = 1e-6  # on the 0-100 scale: float dust between AgentBench's mean and ours
OA = "oa"

# The same names as figures.task_labels, lazy: they are read when a table is drawn.
LABELS = {"os": _l("Operating System"), "db": _l("Database"), "kg": _l("Knowledge Graph"),
          "dcg": _l("Digital Card Game"), "ltp": _l("Lateral Thinking Puzzles"), "hh": _l("House-Holding"),
          "ws": _l("Web Shopping"), "wb": _l("Web Browsing")}
# Named like the result document's tasks (agents.<agent>.tasks.<task>.score): "os", "db", ...
METRICS = tuple(Metric(task, LABELS[task]) for task in STANDARD_TASKS)


def metric_name(task: str) -> str:
    """The paired metric of a standard task's score: the task's key in the result document, "os"."""
    return task


def _field_value(result, field: str) -> float:
    """A sample's number for `field`: the result itself when it is a bare true/false or number; 0 without it."""
    value = result.get(field) if isinstance(result, dict) else result
    if isinstance(value, bool):
        return float(value)
    return float(value) if logs.is_number(value) else 0.0


def _category_weights(results: list) -> list[float] | None:
    """N / (K x n_cat) per sample when every result names its category; None otherwise."""
    cats = [r.get(CATEGORY) if isinstance(r, dict) else None for r in results]
    if not cats or not all(isinstance(c, str) for c in cats):
        return None
    counts = Counter(cats)
    return [len(cats) / (len(counts) * counts[c]) for c in cats]


def sample_scores(results: list, score: float | None, factor: float) -> list[float] | None:
    """Each sample's value (x 100 x factor) whose mean is `score`, by the first field that reproduces it; None when
    none does."""
    if score is None or not results:
        return None
    candidates = [[_field_value(r, f) for r in results] for f in FIELDS]
    weights = _category_weights(results)
    tried = candidates + ([[w * x for w, x in zip(weights, c)] for c in candidates] if weights else [])
    for values in tried:
        scaled = [100.0 * factor * x for x in values]
        if math.isclose(sum(scaled) / len(scaled), score, rel_tol=0.0, abs_tol=TOLERANCE):
            return scaled
    return None


def _final_answer(output: dict) -> str | None:
    """The agent's last message of the sample's history, cut to the logs' message limit."""
    history = output.get("history")
    if not isinstance(history, list):
        return None
    for turn in reversed(history):
        if isinstance(turn, dict) and turn.get("role") == "agent" and isinstance(turn.get("content"), str):
            return turn["content"][:logs.MAX_MESSAGE_CHARS]
    return None


def samples(record: dict, site: Site) -> Iterator[Sample]:
    """Every standard task's samples of each agent, keyed (task, sample index), each its own cluster."""
    result = record.get("result") or {}
    agents: Mapping = result.get("agents") or {}
    if not agents:
        return
    upload = site.store.get_upload(record["upload_id"])
    if upload is None:
        return
    path = site.file_of(upload)
    for agent, doc in agents.items():
        for task, entry in (doc.get("tasks") or {}).items():
            if task not in STANDARD_TASKS or not entry.get("samples"):
                continue
            outputs = [(index, output) for index, output in
                       logs.stored_outputs(path, entry["samples"]["file"], limits.current())]
            values = sample_scores([output.get("result") for _i, output in outputs], entry.get("score"),
                                   MAIN_METRICS[task][1])
            if values is None:
                continue
            for (index, output), value in zip(outputs, values):
                query = urlencode({"agent": agent, "task": task, "status": output["status"]})
                yield Sample(method=agent, key=(task, index), cluster=f"{task}:{index}",
                             values={metric_name(task): value}, text=_final_answer(output),
                             links={"sample": f"samples?{query}"})


def oa_rows(pairs: list[tuple[Sample, Sample]], n_boot: int = DEFAULT_N_BOOT, seed: int = 0) -> list[dict]:
    """Per agent, the OA of both runs recomputed from the paired samples of the eight tasks, its difference, a
    bootstrap CI resampling samples within each task, a z test and the MDD; no row for an agent unless all
    eight tasks pair (the OA needs all eight, as metrics.overall_score)."""
    by_agent: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for base, other in pairs:
        task = base.key[0]
        a, b = base.values.get(metric_name(task)), other.values.get(metric_name(task))
        if a is None or b is None or math.isnan(a) or math.isnan(b):
            continue
        by_agent.setdefault(base.method, {}).setdefault(task, []).append((a, b))
    rows = []
    for agent, tasks in by_agent.items():
        if any(task not in tasks for task in STANDARD_TASKS):
            continue
        coefficients = [1.0 / (len(STANDARD_TASKS) * WEIGHTS[task]) for task in STANDARD_TASKS]
        strata = [tasks[task] for task in STANDARD_TASKS]
        baseline = sum(c * sum(a for a, _b in s) / len(s) for c, s in zip(coefficients, strata))
        value = sum(c * sum(b for _a, b in s) / len(s) for c, s in zip(coefficients, strata))
        figures = weighted_strata([[b - a for a, b in s] for s in strata], coefficients, n_boot, seed)
        rows.append({"method": agent, "metric": OA, "baseline_value": baseline, "value": value,
                     "diff": value - baseline, "ci95": figures.ci95, "p_value": figures.p_value,
                     "n_pairs": sum(len(s) for s in strata), "test": "z", "mdd": figures.mdd})
    return rows

"""AgentBench task and status constants, the data model (Log, TaskResult, Run) and the task-key helpers.

Task config names map to the eight standard tasks (`os-std`/`os-dev` -> os, `dbbench-*` -> db, `kg-*` ->
kg, `cg-*` -> dcg, `ltp-*` -> ltp, `alfworld-*` -> hh, `webshop-*` -> ws, `m2w-*` -> wb); the split is
kept. Other tasks (forks such as `medagentbench-std`) are kept under their own name with no score.

Scores: main metric x 100 (MAIN_METRICS). OA = mean over the eight standard tasks of score / WEIGHTS
(kinds.agentbench.metrics.overall_score, the only place for this arithmetic), null unless all eight are
present. When one agent
has both a `-std` and a `-dev` result for a task, the `-std` one is keyed by the standard key and counts
in the OA; the `-dev` one is kept under its config name (e.g. "os-dev") and does not count. When only
`-dev` results exist they are keyed by the standard key and the OA is computed from them, marked by the
agent's `oa_split` ("dev"; "mixed" when splits differ) since the published OA is on the test (std) split.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

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

_SPLIT_RANK = {"std": 0, None: 1, "dev": 2}


@dataclass
class Log:
    """The per-sample records of one runs.jsonl or error.jsonl: counts of all lines, the first ones kept."""

    file: str  # path inside the ZIP
    total: int = 0  # lines read (valid ones)
    counts: Counter = field(default_factory=Counter)  # by status (runs) or error kind (errors)
    items: list[dict] = field(default_factory=list)
    keep: int = 0  # lines kept in items at most
    cut: bool = False  # more lines than were kept
    history_omitted: int = 0  # kept samples whose history was dropped (MAX_HISTORY_CHARS)
    messages_cut: int = 0  # history messages cut to MAX_MESSAGE_CHARS
    history_chars: int = 0
    offsets: list[tuple[int, str]] = field(default_factory=list)  # (byte offset in the file, status) per sample

    def to_dict(self, counts_name: str) -> dict:
        """The log's counts as a JSON-ready dict, under `counts_name` (most frequent first), and for runs.jsonl the
        byte offset of each sample's line with its status: a page reads the samples it shows from the file."""
        counts = dict(sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))
        document = {"file": self.file, "total": self.total, counts_name: counts}
        if self.offsets:
            code = {status: n for n, status in enumerate(counts)}
            document["index"] = {"statuses": list(counts),
                                 "lines": [[offset, code[status]] for offset, status in self.offsets]}
        return document


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
    base, _sep, suffix = name.rpartition("-")
    split: str | None = suffix
    if suffix not in SPLITS:
        base, split = name, None
    return CONFIG_BASES.get(base), split


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
        key = (result.standard if result.standard and preferred.get(result.standard) is result
               else result.config_name)
        candidate, n = key, 1
        while candidate in keyed:  # only when a config name equals a standard key already in use
            n += 1
            candidate = f"{key} ({n})"
        keyed[candidate] = result
    return {key: keyed[key] for key in ordered_tasks(keyed)}

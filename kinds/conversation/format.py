"""The conversation benchmark (RecLLMSim, Human-vs-Agent): upload format, validation and reading.

An upload holds conversations between a user and an assistant (docs/formats.md): the RecLLMSim
JSON, one object per conversation with a `history` of turns `{role, content, content_zh, intent,
intent_zh, hallucination, satisfaction}`. Simulated users ("agent") carry a `rating` object of numeric
fields; real people ("human") carry a `questionnaire` instead. Accepted as a single JSON object, a
JSON array of objects, JSON Lines, or a ZIP of the dataset's folders:

    LLM_agent_user/<task>/<n>.json                 simulated users
    real_human_user/User_<i>/<task>/<n>.json       real people (with questionnaire)
    human_exp_V2/User_<i>/<task>/<n>.json          real people (per-turn satisfaction)

The source and the task come from the file, else from the path. Chinese and English task and intent
labels are mapped to one English set (TASKS, INTENTS).

Questionnaire answers are mapped to numbers: Detail 详细/一般/简略 -> 2/1/0, Availability
很有用/有一定参考/不可用 -> 2/1/0, Diversity 结果多样/一般/结果单一 -> 2/1/0. Memorization asks "did the
assistant forget something said earlier?": 是 (yes) -> 1, 否 (no) -> 0, so for Memorization a higher
mean means *more* forgetting.

The numbers computed from the conversations are kinds.conversation.metrics; the result document is
kinds.conversation.result.
"""
from __future__ import annotations

import json
import math
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from kinds.conversation import behaviour, dialogue_sessions
from kinds.problems import Problem, Report, describe
from kinds.readers import json_text
from kinds.readers import limits as hard_limits
from kinds.readers import zip as zips
from kinds.readers.jsonl import decode_file, json_reason
from kinds.readers.limits import SETTINGS, LimitError, Limits
from kinds.readers.zip import ZIP_MAGIC, member_name
from translations import _

TASKS = ("travel planning", "recipe planning", "preparing gifts", "skills learning planning")
SOURCES = ("agent", "human")
INTENTS = ("Planning", "Recommendation", "Search", "Search & Recommendation", "Evaluation", "Others")

# Folder names of the dataset -> source.
SOURCE_FOLDERS = {"LLM_agent_user": "agent", "real_human_user": "human", "human_exp_V2": "human"}

_TASK_NAMES = {
    "旅行规划": "travel planning", "旅游规划": "travel planning", "travel planning": "travel planning",
    "new travel planning": "travel planning", "travel": "travel planning",
    "菜谱规划": "recipe planning", "食谱规划": "recipe planning", "recipe planning": "recipe planning",
    "new recipe planning": "recipe planning", "recipe": "recipe planning",
    "礼物准备": "preparing gifts", "准备礼物": "preparing gifts", "preparing gifts": "preparing gifts",
    "new preparing gifts": "preparing gifts", "gift preparation": "preparing gifts", "gifts": "preparing gifts",
    "技能学习规划": "skills learning planning", "skills learning planning": "skills learning planning",
    "new skills learning planning": "skills learning planning",
    "skill learning planning": "skills learning planning",
}

_INTENT_NAMES = {
    "planning": "Planning", "规划": "Planning",
    "recommendation": "Recommendation", "推荐": "Recommendation",
    "search": "Search", "检索": "Search",
    "search & recommendation": "Search & Recommendation", "search+recommendation": "Search & Recommendation",
    "检索+推荐": "Search & Recommendation",
    "evaluation": "Evaluation", "评估": "Evaluation",
    "others": "Others", "other": "Others", "其他": "Others", "其它": "Others",
}

# Questionnaire: summary field -> {answer: value}.
QUESTIONNAIRE = {
    "Detail": {"详细": 2, "一般": 1, "简略": 0},
    "Availability": {"很有用": 2, "有一定参考": 1, "不可用": 0},
    "Diversity": {"结果多样": 2, "一般": 1, "结果单一": 0},
    "Memorization": {"是": 1, "否": 0},
}

# The fields of a simulated user's own `satisfaction` object (the agents' self-report of the assistant, 0-2 each).
SELF_REPORT = ("detail", "utility", "diversity")

_FAILED = object()
HINT_BYTES = 16 << 20  # the largest file read whole to see whether it holds conversations its start does not show


@dataclass
class Conversation:
    """One conversation of a simulated ("agent") or real ("human") user."""

    source: str  # "agent" (LLM-simulated user) or "human"
    task: str  # one of TASKS when recognised, else as given
    path: str  # where it came from: the member path inside the ZIP, or the upload name (with [i] / :line)
    history: list[dict]  # the turns as in the file
    ratings: dict[str, float] = field(default_factory=dict)  # numeric `rating` fields, names as in the data
    questionnaire: dict[str, int] = field(default_factory=dict)  # answers mapped by QUESTIONNAIRE
    task_context: str = ""  # the task as it was given to the user
    profile: str = ""  # the user's profile (simulated users' `preference`, real users' `profile` as JSON)
    labels: dict[str, dict] = field(default_factory=dict)  # behaviour label sets in the file ("gpt", "human")
    self_report: dict[str, int] = field(default_factory=dict)  # simulated users' `satisfaction`: 0-2 per field
    chat_model: str | None = None  # the assistant's model as the file names it (`chat_model`), else None

    @property
    def turns(self) -> int:
        """Number of user-assistant exchanges: len(history) // 2."""
        return len(self.history) // 2


# --- labels ------------------------------------------------------------------------------------

def task_name(task: str) -> str:
    """The English task name of a Chinese or English task label; unknown labels kept as given."""
    text = task.strip()
    return _TASK_NAMES.get(text, _TASK_NAMES.get(text.lower(), text))


def intent_label(label):
    """The English intent label of a Chinese or English label (a list: each label); unknown kept."""
    if isinstance(label, list):
        return [intent_label(item) for item in label]
    if not isinstance(label, str):
        return label
    text = label.strip()
    return _INTENT_NAMES.get(text, _INTENT_NAMES.get(text.lower().replace(" + ", "+"), text))


# --- reading -----------------------------------------------------------------------------------

def validate(stream: BinaryIO) -> Report:
    """Check an upload for the app's upload step; the summary counts conversations by source and task."""
    return read_any(stream, getattr(stream, "name", "") or "upload")[0]


def read_any(stream: BinaryIO, filename: str) -> tuple[Report, list[Conversation]]:
    """Read a JSON object, JSON array, JSONL or ZIP of conversations; no conversations when any error."""
    report = Report()
    start = stream.tell()
    head = stream.read(4)
    stream.seek(start)
    name = str(filename).replace("\\", "/")
    conversations: list[Conversation] = []
    limits = hard_limits.current()
    try:
        if head.startswith(ZIP_MAGIC):  # read member by member from the file, never whole
            _read_zip(stream, report, conversations, limits)
        else:
            values = _parse_document(stream.read(), name, report, limits)
            if values is not _FAILED:
                _collect(values, name, report, conversations, limits)
                if not values:
                    report.add(Problem(None, name, _("%(file)s holds no conversations.", file=name)))
    except LimitError as exc:
        report.add(exc.problem())
    if not report.ok:
        return report, []
    report.summary = _summary(conversations)
    return report, conversations


def read_one(stream: BinaryIO, filename: str, path: str) -> Conversation | None:
    """The conversation read from `path` (Conversation.path) of a stored upload: for a ZIP, only its member is
    read; None when there is no such conversation."""
    limits, report = hard_limits.current(), Report()
    head = stream.read(4)
    stream.seek(0)
    if not head.startswith(ZIP_MAGIC):
        name = str(filename).replace("\\", "/")
        values = _parse_document(stream.read(), name, report, limits)
    else:
        with zips.open_zip_file(stream, limits) as archive:
            found = [(name, info) for info in archive.infolist() if path.startswith(name := member_name(info))
                     and path[len(name):][:1] in ("", "[", ":")]
            if not found:
                return None
            name, info = max(found, key=lambda pair: len(pair[0]))
            values = _parse_document(zips.ZipReader(archive, limits).read(name, info), name, report, limits)
    if values is _FAILED:
        return None
    out: list[Conversation] = []
    session = path.rpartition(dialogue_sessions.SEPARATOR)[0]  # a dialogue session's conversation: label#method
    _collect([v for v in values if v[0] in (path, session)], name, report, out, limits)
    return next((conv for conv in out if conv.path == path), None)


def holds_conversations(path: Path) -> bool:
    """Whether a JSON file (of at most HINT_BYTES) holds conversations: an object with a `history` list, or a list
    whose first item is one."""
    try:
        if path.stat().st_size > HINT_BYTES:
            return False
        value = json_text.loads(path.read_bytes().decode("utf-8-sig"), hard_limits.current())
    except (OSError, ValueError):  # not UTF-8, not JSON, past a limit (LimitError is a ValueError)
        return False
    first = value[0] if isinstance(value, list) and value else value
    return isinstance(first, dict) and isinstance(first.get("history"), list)


def _summary(conversations: list[Conversation]) -> dict:
    by_source = Counter(conv.source for conv in conversations)
    by_task = Counter(conv.task for conv in conversations)
    return {"conversations": len(conversations),
            "by_source": {source: by_source[source] for source in SOURCES if by_source[source]},
            "by_task": {task: by_task[task] for task in ordered_tasks(by_task)}}


def ordered_tasks(tasks) -> list[str]:
    """Task names: TASKS first (in their order), then other task names alphabetically."""
    present = set(tasks)
    return [t for t in TASKS if t in present] + sorted(present - set(TASKS))


def _decode(raw: bytes, name: str, report: Report) -> str | None:
    return decode_file(raw, name, report, lambda file, byte, offset: _(
        "%(file)s is not valid UTF-8 JSON: byte 0x%(byte)s at byte offset %(offset)s cannot be decoded. "
        "Upload conversation JSON files saved as UTF-8, or a ZIP of them.", file=file, byte=byte, offset=offset))


def _collect(values, path: str, report: Report, out: list[Conversation], limits: Limits) -> None:
    """Add the conversations of one file's values to `out`; LimitError past LIMIT_SESSIONS conversations."""
    for label, line, value in values:
        found = (_session_conversations(value, label, line, report) if dialogue_sessions.is_session(value)
                 else [_conversation(value, label, line, path, report, limits)])
        for conv in found:
            if conv is None:
                continue
            out.append(conv)
            if len(out) > limits.sessions:
                raise LimitError(_(
                    "%(file)s: the upload holds more than %(limit)s conversations, the limit (%(setting)s). Upload "
                    "fewer at a time, or raise %(setting)s.", file=label, limit=limits.sessions,
                    setting=SETTINGS["sessions"]), line, label)


def _parse_document(raw: bytes, name: str, report: Report, limits: Limits):
    """[(label, line, value)] of the conversations in a JSON / JSON array / JSONL file, or _FAILED."""
    text = _decode(raw, name, report)
    if text is None:
        return _FAILED
    if not text.strip():
        report.add(Problem(None, "", _(
            "%(file)s is empty. Upload a conversation JSON file, a JSON array or JSON Lines of them, or a "
            "ZIP of the dataset's folders.", file=name)))
        return _FAILED
    try:
        value = json_text.loads(text, limits, label=name)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return _parse_lines(text, name, report, limits)
        report.add(Problem(exc.lineno, "", _(
            "%(file)s is not valid JSON at line %(line)s, column %(column)s: %(reason)s.",
            file=name, line=exc.lineno, column=exc.colno, reason=json_reason(exc))))
        return _FAILED
    if isinstance(value, list):
        return [(f"{name}[{i}]", None, item) for i, item in enumerate(value)]
    return [(name, None, value)]


def _parse_lines(text: str, name: str, report: Report, limits: Limits):
    values = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append((f"{name}:{lineno}", lineno, json_text.loads(line, limits, name, lineno)))
        except json.JSONDecodeError as exc:
            report.add(Problem(lineno, "", _(
                "%(file)s line %(line)s is not valid JSON at character %(column)s: %(reason)s.",
                file=name, line=lineno, column=exc.colno, reason=json_reason(exc))))
    return values if report.ok else _FAILED


def _read_zip(stream: BinaryIO, report: Report, out: list[Conversation], limits: Limits) -> None:
    """Add the conversations of a ZIP's .json members to `out`; LimitError past a hard limit."""
    try:
        archive = zips.open_zip_file(stream, limits)
    except LimitError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        report.add(Problem(None, "", _("The file is not a valid ZIP archive (%(reason)s).", reason=str(exc))))
        return
    with archive:
        members = []
        for info in archive.infolist():
            name = member_name(info)
            parts = PurePosixPath(name).parts
            if info.is_dir() or not parts or parts[0] == "__MACOSX" or parts[-1].startswith("._"):
                continue
            if name.lower().endswith(".json"):
                members.append((name, info))
        reader = zips.ZipReader(archive, limits)
        reader.check_declared(members)
        if not members:
            report.add(Problem(None, "", _(
                "The ZIP holds no .json files. Put the dataset's folders (LLM_agent_user, real_human_user, "
                "human_exp_V2) with their conversation .json files in the ZIP.")))
            return
        for name, info in members:
            try:
                data = reader.read(name, info)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
                report.add(Problem(None, name, _("%(file)s in the ZIP cannot be read (%(reason)s).",
                                                 file=name, reason=str(exc))))
                continue
            values = _parse_document(data, name, report, limits)
            if values is _FAILED:
                continue
            _collect(values, name, report, out, limits)
            if report.truncated:
                return


def _from_path(path: str) -> tuple[str | None, str | None]:
    """(source, task) from a dataset path such as real_human_user/User_0/旅行规划/6.json."""
    parts = PurePosixPath(path).parts
    for i, part in enumerate(parts):
        source = SOURCE_FOLDERS.get(part)
        if source is None:
            continue
        rest = list(parts[i + 1:-1])  # folders between the source folder and the file
        if rest and rest[0].lower().startswith("user_"):
            rest = rest[1:]
        return source, (rest[0] if rest else None)
    return None, None


def _conversation(value, label: str, line: int | None, path: str, report: Report,
                  limits: Limits) -> Conversation | None:
    """A Conversation from one parsed JSON value, or None after recording its problems."""
    def problem(json_path: str, message: str) -> None:
        report.add(Problem(line, json_path or label, f"{label}: {message}"))  # the whole value: its file

    if not isinstance(value, dict):
        problem("", _("a conversation must be a JSON object with a 'history' list, found %(found)s.",
                      found=describe(value)))
        return None
    history = value.get("history")
    if history is None:
        problem("history", _("'history' is missing; this is not a conversation file (a conversation has "
                             "'history', a list of turns with 'role' and 'content')."))
        return None
    if not isinstance(history, list):
        problem("history", _("'history' must be a list of turns, found %(found)s.", found=describe(history)))
        return None
    if not history:
        problem("history", _("'history' is empty; a conversation needs at least one turn."))
        return None
    if len(history) > limits.rounds:
        problem("history", _("'history' has %(count)s turns, more than the limit of %(limit)s (%(setting)s). Split "
                             "the conversation, or raise %(setting)s.", count=len(history), limit=limits.rounds,
                             setting=SETTINGS["rounds"]))
        return None
    ok = True
    for i, turn in enumerate(history):
        where = f"history[{i}]"
        if not isinstance(turn, dict):
            problem(where, _("%(path)s must be an object with 'role' and 'content', found %(found)s.",
                             path=where, found=describe(turn)))
            ok = False
        elif turn.get("role") not in ("user", "assistant"):
            problem(f"{where}.role", _("%(path)s.role must be \"user\" or \"assistant\", found %(found)s.",
                                       path=where, found=describe(turn.get("role"))))
            ok = False
        elif not isinstance(turn.get("content"), str):
            problem(f"{where}.content", _("%(path)s.content must be a string, found %(found)s.",
                                          path=where, found=describe(turn.get("content"))))
            ok = False
    path_source, path_task = _from_path(path)
    source = value.get("source")
    if source not in SOURCES:
        source = path_source
    if source is None:
        if isinstance(value.get("rating"), dict):
            source = "agent"
        elif "questionnaire" in value:
            source = "human"
    if source is None:
        problem("source", _("cannot tell whether the user is simulated or a real person: add \"source\": "
                            "\"agent\" or \"human\", or keep the dataset's folders (LLM_agent_user, "
                            "real_human_user, human_exp_V2) in a ZIP."))
        ok = False
    task = next((value[key] for key in ("task", "task_type") if isinstance(value.get(key), str)
                 and value[key].strip()), None) or path_task
    if task is None:
        problem("task", _("the task is missing: add 'task' (for example \"travel planning\") or keep the "
                          "dataset's task folders in a ZIP."))
        ok = False
    if not ok or source is None or task is None:
        return None
    rating = value.get("rating")
    ratings = {}
    if isinstance(rating, dict):
        ratings = {str(k): float(v) for k, v in rating.items()
                   if type(v) in (int, float) and math.isfinite(v)}
    return Conversation(source=source, task=task_name(task), path=label, history=history, ratings=ratings,
                        questionnaire=_questionnaire(value.get("questionnaire")),
                        task_context=_text(value.get("task_context")),
                        profile=_text(value.get("preference") or value.get("profile")),
                        labels=_file_labels(value),
                        self_report=_self_report(value.get("satisfaction")),
                        chat_model=_chat_model(value.get("chat_model")))


def _self_report(value) -> dict[str, int]:
    """A simulated user's own `satisfaction` object: each of SELF_REPORT's fields that is 0, 1 or 2."""
    if not isinstance(value, dict):
        return {}
    return {key: value[key] for key in SELF_REPORT if type(value.get(key)) is int and value[key] in (0, 1, 2)}


def _chat_model(value) -> str | None:
    """The assistant's model named by `chat_model` (stripped), None when absent or not a non-empty string."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def _file_labels(value: dict) -> dict[str, dict]:
    """The behaviour label sets a conversation's object holds (any of a set's four groups present)."""
    return {name: behaviour.labels_of(value, name) for name, prefix in behaviour.LABEL_SETS.items()
            if any(behaviour.group_labels(value, prefix, group) is not None for group in behaviour.GROUPS)}


def _session_conversations(value: dict, label: str, line: int | None, report: Report) -> list[Conversation | None]:
    """The conversations of a dialogue file's session (dialogue_sessions.py): one per method, a simulated user."""
    def problem(json_path: str, message: str) -> None:
        report.add(Problem(line, json_path or label, f"{label}: {message}"))

    found = dialogue_sessions.histories(value, problem)
    if found is None:
        return []
    profile = _text(value.get("user_profile"))
    return [Conversation(source="agent", task=task_name(dialogue_sessions.task_of(value)),
                         path=dialogue_sessions.path_of(label, method), history=history, profile=profile)
            for method, history in found.items()]


def _text(value) -> str:
    """A string as is, any other JSON value as compact JSON, nothing as ""."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _questionnaire(items) -> dict[str, int]:
    """Answers mapped to numbers by QUESTIONNAIRE; unknown fields and answers are left out."""
    out: dict[str, int] = {}
    if not isinstance(items, list):
        return out
    for item in items:
        if not isinstance(item, dict):
            continue
        summary, answer = item.get("summary"), item.get("option")
        if not isinstance(summary, str) or not isinstance(answer, str):  # a list, say, is no field's name
            continue
        options = QUESTIONNAIRE.get(summary)
        if options is not None and answer.strip() in options:
            out[summary] = options[answer.strip()]
    return out

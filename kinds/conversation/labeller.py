"""The dashboard's own behaviour labeller: the judge labels each conversation on the eleven dimensions of
kinds.conversation.behaviour with the paper's prompts (behaviour_prompts.py), one call per label group as the paper's
strategy_cls.py makes them, each answer a JSON object asked for by structured output.

Each conversation gets one judgment per group and judge, mode `label<group>` (`label1`..`label4`, "label2@1" for a
panel's second judge: judge.mode_key), method METHOD, round 0. The request carries a `response_format` JSON Schema
derived from the group's dimensions (output_format.py's fields: each category an enum, each 1-5 rating an integer
enum), beside a "reasoning" text; an endpoint without structured output gets the same object asked for in words, and
the answer's last JSON object is read (kinds.rubrics.answers.json_object). An answer that misses a dimension of its
group, or gives a value outside the taxonomy, is unparsed with the reason: nothing is defaulted.

A parsed judgment's scores are the group's labels ({dimension key: value}). The labels of one judge make a label set
(judge_label_sets): "judge" for the first (or only) judge, "judge@2", "judge@3"... for a panel's others.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator, TypedDict

from judge import Prompt, judge_of, mode_key, split_mode
from kinds.conversation import behaviour_prompts
from kinds.conversation.behaviour import DIMENSIONS, GROUPS, Dimension, valid_value
from kinds.conversation.format import Conversation
from kinds.kind import Job
from kinds.rubrics.answers import json_object
from translations import _

PROMPT_VERSION = "recllmsim-405f80d-labels-1"  # part of the cache key: change it when the prompts change
METHOD = "behaviour"  # the `method` column of labelling judgments
BASE = "label"  # their mode is BASE + the group number ("label1"), with a panel judge's "@n"
REASONING = "reasoning"
STATUSES = ("ok", "unparsed", "failed", "pending")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


class LabellingSummary(TypedDict):
    """The `labelling` block of a result: what each judge's labelling calls gave and cost."""

    prompt_version: str
    groups: list[int]
    by_judge: list[dict[str, Any]]  # per judge: its label set's name, "judge" (judge_summary) and "counts"


def mode(group: int, judge: int = 0) -> str:
    """The stored mode of a group's labelling judgment by a judge (0-based)."""
    return mode_key(f"{BASE}{group}", judge)


def group_of(stored_mode: str) -> int | None:
    """The label group of a stored mode, or None when it is no labelling judgment's."""
    try:
        base = split_mode(stored_mode)[0]
    except ValueError:
        return None
    number = base[len(BASE):] if base.startswith(BASE) else ""
    return int(number) if number.isdigit() and int(number) in GROUPS else None


def set_name(judge: int) -> str:
    """The label set of a judge's labels: "judge" for the first, "judge@2" for the second..."""
    return "judge" if judge == 0 else f"judge@{judge + 1}"


def group_dimensions(group: int) -> tuple[Dimension, ...]:
    """The dimensions of one label group, in the taxonomy's order."""
    return tuple(d for d in DIMENSIONS if d.group == group)


def dialogue_language(turns: list[tuple[str, str]]) -> str:
    """The `[Language]` the paper's prompt names: "Chinese" when the user writes Chinese characters, else "English"
    (the paper fills in Chinese for its real people and English for its simulated users, who write so)."""
    return "Chinese" if any(_CJK.search(text) for role, text in turns if role == "user") else "English"


def _choices(dimension: Dimension) -> str:
    return ", ".join(json.dumps(v) for v in dimension.values)


def answer_instruction(group: int) -> str:
    """What the prompt adds to the paper's: the answer as the JSON object the paper's second call formats it into."""
    lines = [f'  "{REASONING}": your justification, with examples from the dialogue,']
    lines += [f'  "{d.key}": one of {_choices(d)},' for d in group_dimensions(group)]
    return ("\n\nAnswer with one JSON object and nothing else, in this format:\n{\n" + "\n".join(lines).rstrip(",")
            + "\n}")


def response_format(group: int) -> dict:
    """The structured-output `response_format` of a group: a JSON Schema with "reasoning" and each dimension, its
    values an enum (strings for categories, integers for 1-5 ratings), all required."""
    properties: dict[str, dict] = {REASONING: {"type": "string"}}
    for d in group_dimensions(group):
        properties[d.key] = {"type": "integer" if d.is_scale else "string", "enum": list(d.values)}
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": f"{BASE}{group}_answer", "strict": True, "schema": schema}}


def parser(group: int):
    """The parser of a group's answers: (Verdict fields {"dims": labels}, None), or (None, why it does not parse)."""
    dimensions = group_dimensions(group)

    def parse(text: str) -> tuple[dict | None, str | None]:
        value, problem = json_object(text)
        if value is None:
            return None, problem
        labels = {}
        for d in dimensions:
            if d.key not in value:
                return None, _("%(dimension)s label not found", dimension=d.key)
            if not valid_value(d, value[d.key]):
                return None, _("%(dimension)s label %(label)s is not one of %(values)s", dimension=d.key,
                               label=json.dumps(value[d.key], ensure_ascii=False), values=_choices(d))
            labels[d.key] = value[d.key]
        return {"dims": labels}, None

    return parse


def _turns(conv: Conversation) -> list[tuple[str, str]]:
    return [("user" if turn["role"] == "user" else "assistant", turn["content"]) for turn in conv.history]


def prompt(conv: Conversation, group: int) -> Prompt:
    """The judge request that labels one group of one conversation: the paper's messages, the answer's schema."""
    turns = _turns(conv)
    text = behaviour_prompts.fill(group, turns, dialogue_language(turns)) + answer_instruction(group)
    return Prompt([{"role": "system", "content": behaviour_prompts.SYSTEM}, {"role": "user", "content": text}],
                  parser(group), PROMPT_VERSION, response_format(group))


def template(group: int) -> str:
    """The template a group's judgments fill in, as JSON (the result's provenance keeps its SHA-256)."""
    return json.dumps({"system": behaviour_prompts.SYSTEM,
                       "user": behaviour_prompts.TEMPLATES[behaviour_prompts.TEMPLATE_IDS[group - 1]],
                       "aspects": behaviour_prompts.ASPECTS[group - 1], "answer": answer_instruction(group),
                       "response_format": response_format(group)}, ensure_ascii=False, sort_keys=True)


def plan_rows(conversations: list[Conversation], judges: int) -> list[tuple]:
    """The judgment rows of labelling: (index, path, round 0, METHOD, mode) per conversation, group and judge."""
    return [(idx, conv.path, 0, METHOD, mode(group, judge))
            for idx, conv in enumerate(conversations) for judge in range(judges) for group in GROUPS]


def requests(conversations: list[Conversation], pending: set) -> Iterator[tuple[tuple, Prompt]]:
    """(key, Prompt) for the conversations' pending labelling judgments (any judge's: each asks its own)."""
    for key in sorted(k for k in pending if k[2] == METHOD):
        group = group_of(key[3])
        if group is not None and 0 <= key[0] < len(conversations):
            yield key, prompt(conversations[key[0]], group)


def labels_by_judge(judgments: list[dict], size: int) -> dict[int, list[dict | None]]:
    """Each judge's labels, one entry per conversation (of `size`): every dimension's value (None where its group's
    answer did not parse or is pending), or None for a conversation with no parsed group."""
    found: dict[int, list[dict | None]] = {}
    for j in judgments:
        group = group_of(j["mode"]) if j["method"] == METHOD else None
        if group is None:
            continue
        judge = judge_of((j["mode"],))
        labels = found.setdefault(judge, [None] * size)
        if j["status"] != "ok" or not j.get("scores") or not 0 <= j["session_idx"] < size:
            continue
        row = labels[j["session_idx"]]
        if row is None:
            row = labels[j["session_idx"]] = {d.key: None for d in DIMENSIONS}
        row.update({d.key: j["scores"].get(d.key) for d in group_dimensions(group)})
    return found


def judge_label_sets(job: Job, conversations: list[Conversation]) -> dict[str, list[dict | None]]:
    """The judge's label sets of an evaluation ("judge", "judge@2"...), one entry per conversation in upload order
    (None: not labelled); none when the evaluation was not labelled."""
    if not job.evaluation["settings"].get("label"):
        return {}
    by_judge = labels_by_judge(job.store.judgments(job.evaluation["id"]), len(conversations))
    return {set_name(judge): labels for judge, labels in sorted(by_judge.items())}


def counts(judgments: list[dict], judge: int) -> dict[str, dict[str, int]]:
    """A judge's labelling judgments by status, per group ("1".."4")."""
    out = {str(g): dict.fromkeys(STATUSES, 0) for g in GROUPS}
    for j in judgments:
        group = group_of(j["mode"]) if j["method"] == METHOD else None
        if group is not None and judge_of((j["mode"],)) == judge and j["status"] in STATUSES:
            out[str(group)][j["status"]] += 1
    return out

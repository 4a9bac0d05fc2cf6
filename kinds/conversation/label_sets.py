"""Every behaviour label set of an evaluation, by name: the one place the analysis (analysis.py) reads labels from.

A label set is one labeller's values of the eleven dimensions (behaviour.py) for each conversation, in upload order,
None for a conversation it did not label. The file brings two: "gpt" (GPT-4o's, `strategy_V1..V4`) and "human" (the
people's of the release, `strategy_human_V1..V4`); "people" is the consensus of the people who labelled in the
browser or through the API (people_labels.py); "judge" (and "judge@2"... for a panel's others) the dashboard's
labeller's (labeller.py). Other labellers add theirs here, each by one call in `label_sets`.
"""
from __future__ import annotations

from typing import Any

from kinds.conversation import labeller
from kinds.conversation.behaviour import LABEL_SETS
from kinds.conversation.format import Conversation
from kinds.conversation.people_labels import people_label_sets
from kinds.kind import Job

LabelSet = list[dict[str, Any] | None]  # one entry per conversation: {dimension key: value or None}, or None

# The sets people's labels are read from, the references the labels are checked against (the first the default).
REFERENCES = ("human", "people")
DEFAULT_SET = "gpt"


def from_file(conversations: list[Conversation]) -> dict[str, LabelSet]:
    """The label sets the conversations' files hold ("gpt", "human"), each only when some conversation has it."""
    sets = {name: [_labelled(conv.labels.get(name)) for conv in conversations] for name in LABEL_SETS}
    return {name: labels for name, labels in sets.items() if any(entry is not None for entry in labels)}


def _labelled(labels: dict | None) -> dict | None:
    """A conversation's labels, or None when the file gives no value for any dimension."""
    return labels if labels and any(v is not None for v in labels.values()) else None


def label_sets(job: Job | None, conversations: list[Conversation]) -> dict[str, LabelSet]:
    """Every label set of an evaluation by name, one entry per conversation in upload order (None: not labelled);
    without a job (a file read on its own) only the file's."""
    sets = from_file(conversations)
    people = people_label_sets(job, conversations) if job is not None else []
    if any(entry is not None for entry in people):
        sets["people"] = people
    if job is not None:
        sets.update(labeller.judge_label_sets(job, conversations))
    return sets

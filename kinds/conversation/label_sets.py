"""Every behaviour label set of a conversation evaluation, by name: "gpt" and "human" from the file
(behaviour.LABEL_SETS) and "people", the consensus of the people who labelled in the browser (people_labels.py)."""
from __future__ import annotations

from typing import Sequence

from kinds.conversation.behaviour import LABEL_SETS
from kinds.conversation.format import Conversation
from kinds.conversation.people_labels import people_label_sets
from kinds.kind import Job


def _labelled(labels: dict | None) -> dict | None:
    """A conversation's labels, or None when the file gives no value for any dimension."""
    return labels if labels and any(v is not None for v in labels.values()) else None


def label_sets(job: Job, conversations: Sequence[Conversation]) -> dict[str, list[dict | None]]:
    """Each label set of the evaluation by name: per conversation in upload order its labels, None where it has none."""
    sets = {name: [_labelled(c.labels.get(name)) for c in conversations] for name in LABEL_SETS}
    sets["people"] = people_label_sets(job, conversations)
    return sets

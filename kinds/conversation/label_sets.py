"""Every behaviour label set of an evaluation by name, one entry per conversation in upload order (None: not
labelled): "gpt" and "human" as the file holds them, and the dashboard's judge's ("judge", "judge@2"...)."""
from __future__ import annotations

from kinds.conversation import labeller
from kinds.conversation.behaviour import LABEL_SETS
from kinds.conversation.format import Conversation
from kinds.kind import Job


def label_sets(job: Job, conversations: list[Conversation]) -> dict[str, list[dict | None]]:
    """The label sets of an evaluation: those of the file that any conversation holds, then the judge's."""
    sets: dict[str, list[dict | None]] = {name: [c.labels.get(name) for c in conversations] for name in LABEL_SETS
                                          if any(name in c.labels for c in conversations)}
    sets.update(labeller.judge_label_sets(job, conversations))
    return sets

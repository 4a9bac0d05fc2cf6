"""The conversation result document of docs/result-documents.md, assembled from kinds.conversation.metrics."""
from __future__ import annotations

from collections import Counter
from typing import Any, NotRequired, TypedDict

from kinds.conversation import metrics
from kinds.conversation.analysis import Analysis
from kinds.conversation.annotation import AnnotationSummary
from kinds.conversation.format import SOURCES, Conversation, ordered_tasks
from kinds.conversation.labeller import LabellingSummary
from kinds.result_document import ResultDocument, UploadInput


class Source(TypedDict):
    """How many conversations a source ("agent", "human") has, in all and per task (English task names)."""

    conversations: int
    by_task: dict[str, int]


class OverallFidelity(metrics.Fidelity):
    """Fidelity over all tasks, and per task."""

    by_task: dict[str, metrics.Fidelity]


class Statistics(TypedDict):
    """What the conversations say by themselves. The per-source keys are "agent" (simulated users) and "human"
    (real people), both always present (empty, or None, without data); field names as in the data."""

    sources: dict[str, Source]
    by_turns: dict[str, list[metrics.TurnGroup]]
    ratings: dict[str, dict[str, float]]  # the mean of each rating field (simulated users rate)
    intents: dict[str, dict[str, float]]  # the share of each user intent, most frequent first
    hallucination_rate: dict[str, float | None]  # of the labelled assistant turns
    questionnaire: dict[str, dict[str, float]]  # the mean of each questionnaire answer (real people answer)
    satisfaction: dict[str, metrics.Satisfaction | None]  # per-turn satisfaction, where turns give it
    fidelity: OverallFidelity  # how far simulated users are from real ones


class Annotation(AnnotationSummary):
    """The judge's annotation of every conversation."""

    judge: dict[str, Any]  # the judge and its usage (judge/usage.py's judge_summary)


class ConversationInput(UploadInput):
    """The upload, and how many conversations it holds."""

    conversations: int


class ConversationResult(ResultDocument, Statistics):
    """A conversation evaluation's result document (kind "conversation")."""

    input: ConversationInput
    annotation: NotRequired[Annotation]  # only when the evaluation was annotated by a judge
    analysis: NotRequired[Analysis]  # the paper's analysis (analysis.py); absent from results of earlier versions
    labelling: NotRequired[LabellingSummary]  # only when the judge labelled the conversations' behaviour


def statistics(conversations: list[Conversation]) -> Statistics:
    """The conversation result document of docs/result-documents.md, without "kind".

    Every per-source section has both "agent" and "human" keys (empty, or None, without data).
    Fidelity compares simulated with real users by JS divergence in bits (0 = same distribution,
    1 = disjoint), over all tasks and per task; None where either side has no data.
    """
    groups = {source: [c for c in conversations if c.source == source] for source in SOURCES}
    agent, human = groups["agent"], groups["human"]
    tasks = ordered_tasks({c.task for c in conversations})
    return {"sources": {source: _source(convs) for source, convs in groups.items()},
            "by_turns": {source: metrics.by_turns(convs) for source, convs in groups.items()},
            "ratings": {source: metrics.ratings(convs) for source, convs in groups.items()},
            "intents": {source: metrics.intents(convs) for source, convs in groups.items()},
            "hallucination_rate": {source: metrics.hallucination_rate(convs) for source, convs in groups.items()},
            "questionnaire": {source: metrics.questionnaire(convs) for source, convs in groups.items()},
            "satisfaction": {source: metrics.mean_satisfaction(convs) for source, convs in groups.items()},
            "fidelity": {**metrics.fidelity(agent, human),
                         "by_task": {task: metrics.fidelity([c for c in agent if c.task == task],
                                                            [c for c in human if c.task == task])
                                     for task in tasks}}}


def _source(conversations: list[Conversation]) -> Source:
    counts = Counter(c.task for c in conversations)
    return {"conversations": len(conversations), "by_task": {t: counts[t] for t in ordered_tasks(counts)}}


def build_result(evaluation: dict, upload: dict, conversations: list[Conversation]) -> ConversationResult:
    """The result document of an evaluation without its `annotation` block: its input and the statistics."""
    return {"kind": "conversation", "evaluation_id": evaluation["id"],
            "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"],
                      "conversations": len(conversations)},
            **statistics(conversations)}

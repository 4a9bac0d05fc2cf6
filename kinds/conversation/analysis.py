"""The `analysis` block of a conversation result: the Human-vs-Agent paper's own analysis (issue 39, items 1, 2, 5
and 6), once over every conversation and once for each assistant model (`chat_model`) the conversations name.

Every label set (label_sets.py) is analysed, so the result page chooses one without scoring again; the figures and
downloads read this block only.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from kinds.conversation import assistant_stats, behaviour_stats
from kinds.conversation.format import SOURCES, Conversation, ordered_tasks
from kinds.conversation.label_sets import REFERENCES, LabelSet


class Awareness(TypedDict):
    """Hallucination awareness of each source, over all tasks and per task."""

    all: dict[str, assistant_stats.Awareness]
    by_task: dict[str, dict[str, assistant_stats.Awareness]]


class View(TypedDict):
    """Every figure over the conversations kept for one assistant model (`chat_model` None: all of them)."""

    chat_model: str | None
    conversations: dict[str, int]  # kept, per source
    behaviour: dict[str, behaviour_stats.Behaviour]  # per label set
    label_checks: dict[str, dict[str, behaviour_stats.LabelCheck]]  # per reference set, per label set checked
    hallucination: dict[str, Awareness]  # per counting rule (assistant_stats.HALLUCINATION_RULES)
    quality: assistant_stats.Quality


class Analysis(TypedDict):
    """The label sets analysed, the reference sets present, the assistant models named and the tasks; one view
    for all conversations, then one per model."""

    label_sets: list[str]
    references: list[str]
    chat_models: list[str]
    tasks: list[str]
    views: list[View]


def chat_models(conversations: Sequence[Conversation]) -> list[str]:
    """The assistant models the conversations name (assistant_stats.assistant_model), sorted."""
    return sorted({m for m in map(assistant_stats.assistant_model, conversations) if m is not None})


def view(conversations: Sequence[Conversation], sets: Mapping[str, LabelSet], tasks: Sequence[str],
         model: str | None) -> View:
    """Every figure over the conversations kept for `model` (assistant_stats.talked_to)."""
    kept = [i for i, conv in enumerate(conversations) if assistant_stats.talked_to(conv, model)]
    convs = [conversations[i] for i in kept]
    kept_sets = {name: [labels[i] for i in kept] for name, labels in sets.items()}
    sources = [c.source for c in convs]
    task_of = [c.task for c in convs]
    references = [name for name in REFERENCES if name in sets]
    return {
        "chat_model": model,
        "conversations": {source: sources.count(source) for source in SOURCES},
        "behaviour": {name: behaviour_stats.behaviour(labels, sources, task_of, tasks)
                      for name, labels in kept_sets.items()},
        "label_checks": {ref: {name: behaviour_stats.label_check(labels, kept_sets[ref], sources)
                               for name, labels in kept_sets.items() if name != ref}
                         for ref in references},
        "hallucination": {rule: _awareness(convs, tasks, rule) for rule in assistant_stats.HALLUCINATION_RULES},
        "quality": assistant_stats.quality(convs)}


def _awareness(conversations: Sequence[Conversation], tasks: Sequence[str], rule: str) -> Awareness:
    def by_source(task: str | None) -> dict[str, assistant_stats.Awareness]:
        return {source: assistant_stats.awareness([c for c in conversations if c.source == source
                                                   and (task is None or c.task == task)], rule)
                for source in SOURCES}
    return {"all": by_source(None), "by_task": {task: by_source(task) for task in tasks}}


def analysis(conversations: Sequence[Conversation], sets: Mapping[str, LabelSet]) -> Analysis:
    """The block: a view of every conversation, then one per assistant model named."""
    tasks = ordered_tasks({c.task for c in conversations})
    models = chat_models(conversations)
    return {"label_sets": list(sets), "references": [name for name in REFERENCES if name in sets],
            "chat_models": models, "tasks": tasks,
            "views": [view(conversations, sets, tasks, model) for model in (None, *models)]}


def chosen_view(block: Analysis, model: str | None) -> View:
    """The view of `model` (None, or a model the block has no view of: every conversation)."""
    return next((v for v in block["views"] if v["chat_model"] == model), block["views"][0])

"""The conversation result document of docs/result-documents.md, assembled from kinds.conversation.metrics."""
from __future__ import annotations

from collections import Counter

from kinds.conversation import metrics
from kinds.conversation.format import SOURCES, Conversation, ordered_tasks


def statistics(conversations: list[Conversation]) -> dict:
    """The conversation result document of docs/result-documents.md, without "kind".

    Every per-source section has both "agent" and "human" keys (empty, or None, without data).
    Fidelity compares simulated with real users by JS divergence in bits (0 = same distribution,
    1 = disjoint), over all tasks and per task; None where either side has no data.
    """
    groups = {source: [c for c in conversations if c.source == source] for source in SOURCES}
    doc: dict = {"sources": {}, "by_turns": {}, "ratings": {}, "intents": {}, "hallucination_rate": {},
                 "questionnaire": {}, "satisfaction": {}}
    for source, convs in groups.items():
        tasks = Counter(c.task for c in convs)
        doc["sources"][source] = {"conversations": len(convs),
                                  "by_task": {t: tasks[t] for t in ordered_tasks(tasks)}}
        doc["by_turns"][source] = metrics.by_turns(convs)
        doc["ratings"][source] = metrics.ratings(convs)
        doc["intents"][source] = metrics.intents(convs)
        doc["hallucination_rate"][source] = metrics.hallucination_rate(convs)
        doc["questionnaire"][source] = metrics.questionnaire(convs)
        doc["satisfaction"][source] = metrics.mean_satisfaction(convs)
    agent, human = groups["agent"], groups["human"]
    fidelity = metrics.fidelity(agent, human)
    tasks = ordered_tasks({c.task for c in conversations})
    fidelity["by_task"] = {task: metrics.fidelity([c for c in agent if c.task == task],
                                                  [c for c in human if c.task == task]) for task in tasks}
    doc["fidelity"] = fidelity
    return doc


def build_result(evaluation: dict, upload: dict, conversations: list[Conversation]) -> dict:
    """The result document of an evaluation without its `annotation` block: its input and the statistics."""
    return {"kind": "conversation", "evaluation_id": evaluation["id"],
            "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"],
                      "conversations": len(conversations)},
            **statistics(conversations)}

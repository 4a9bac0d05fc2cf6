"""LLM annotation of Human-vs-Agent conversations: the judge's requests and the summary of its answers.

Each conversation gets one judgment (mode ANNOTATE, its prompt from kinds.conversation.prompts):
the assistant's Detail Level, Diversity and Practical Utility, each 0-2, and a hallucination flag.
Agreement with people:
- the three scales against the real users' questionnaire answers (Detail, Diversity, Availability,
  mapped to 0-2 by kinds.conversation.QUESTIONNAIRE), on conversations that have both;
- the flag against the dataset's per-turn hallucination labels: a conversation counts as hallucinating
  when any assistant turn is labelled so, as not when all its labelled turns are not; conversations
  without labels are left out.
The numbers are kinds.conversation.metrics (labelled_hallucination, judge_means, annotation_agreement).
"""
from __future__ import annotations

from typing import Any, Iterator, TypedDict

from judge import Prompt
from kinds.agreement import LabelAgreement
from kinds.conversation import prompts
from kinds.conversation.format import SOURCES, Conversation
from kinds.conversation.metrics import JudgeMeans, annotation_agreement, judge_means, labelled_hallucination
from kinds.conversation.prompts import ANNOTATION_SCALES, ConversationContext

METHOD = "assistant"  # the `method` column of annotation judgments
ANNOTATE = "annotate"  # their `mode` column
QUESTIONNAIRE_FIELDS = {"detail": "Detail", "diversity": "Diversity", "utility": "Availability"}
FLAG = "hallucination"


class AnnotatedConversation(TypedDict):
    """One conversation's annotation beside what people said of it."""

    index: int  # its position in the upload
    path: str
    source: str  # "agent" or "human"
    task: str
    status: str  # the judgment's: "ok", "unparsed", "failed" or "pending"
    scores: dict[str, Any] | None  # the judge's scales and FLAG, when its answer was parsed
    error: str | None  # why the judgment failed or did not parse
    questionnaire: dict[str, int | None]  # people's answer mapped to 0-2 per scale (QUESTIONNAIRE_FIELDS)
    labelled_hallucination: int | None  # metrics.labelled_hallucination


class AnnotationSummary(TypedDict):
    """The `annotation` block but its judge: what the judge said, per source and per conversation."""

    by_source: dict[str, JudgeMeans]  # "agent" and "human"
    agreement: dict[str, LabelAgreement]  # each scale against the questionnaire, FLAG against the labels
    counts: dict[str, int]  # conversations by judgment status ("ok", "unparsed", "failed", "pending")
    conversations: list[AnnotatedConversation]


def context(conv: Conversation) -> ConversationContext:
    """What the judge is shown for one conversation."""
    turns = [("user" if turn["role"] == "user" else "assistant", turn["content"]) for turn in conv.history]
    return ConversationContext(conv.task, conv.task_context, conv.profile, turns)


def plan_rows(conversations: list[Conversation]) -> list[tuple]:
    """The judgment rows of an annotation run: (index, path, round 0, METHOD, ANNOTATE) per conversation."""
    return [(idx, conv.path, 0, METHOD, ANNOTATE) for idx, conv in enumerate(conversations)]


def requests(conversations: list[Conversation], pending: set, language: str) -> Iterator[tuple[tuple, Prompt]]:
    """(key, Prompt in `language`) for the conversations whose annotation is still pending."""
    for idx, conv in enumerate(conversations):
        key = (idx, 0, METHOD, ANNOTATE)
        if key in pending:
            yield key, prompts.prompt(context(conv), language)


def _scores(judgment: dict) -> dict | None:
    return (judgment.get("scores") or None) if judgment["status"] == "ok" else None


def summarise(conversations: list[Conversation], judgments: list[dict]) -> AnnotationSummary:
    """The `annotation` block: means per source, agreement with people, and one row per conversation."""
    by_index = {j["session_idx"]: j for j in judgments}
    rows: list[AnnotatedConversation] = []
    for idx, conv in enumerate(conversations):
        judgment = by_index.get(idx, {"status": "pending"})
        rows.append({"index": idx, "path": conv.path, "source": conv.source, "task": conv.task,
                     "status": judgment["status"], "scores": _scores(judgment), "error": judgment.get("error"),
                     "questionnaire": {scale: conv.questionnaire.get(field)
                                       for scale, field in QUESTIONNAIRE_FIELDS.items()},
                     "labelled_hallucination": labelled_hallucination(conv)})
    scales = (*ANNOTATION_SCALES, FLAG)
    return {"by_source": {source: judge_means([r for r in rows if r["source"] == source], scales)
                          for source in SOURCES},
            "agreement": annotation_agreement(rows, ANNOTATION_SCALES, FLAG),
            "counts": {status: sum(r["status"] == status for r in rows)
                       for status in ("ok", "unparsed", "failed", "pending")},
            "conversations": rows}

"""The assistant as users saw it (issue 39, items 5 and 6): hallucination awareness under the paper's rule or the
dashboard's, the shares of each rating, and the assistant's model; docs/metrics.md#the-assistant-as-users-saw-it.

The paper's counting is RecLLMSim's `statistics/hallucination.py` and `statistics/assistant_quality.py` (branch
Human_Vs_Agent, commit 405f80d).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict

from kinds import stats
from kinds.agreement import Agreement
from kinds.conversation.format import Conversation
from kinds.conversation.metrics import hallucination, labelled_hallucination

# How hallucination flags are counted (the first the default): "paper" counts every assistant turn that has a label,
# "can't judge" (无法判断) as no, and every conversation (one with a flag counts 1, any other 0); "known" leaves out
# turns labelled "can't judge" and conversations with no known label (the rate the statistics block reports).
HALLUCINATION_RULES = ("paper", "known")
# The model real people's files that name none talked to (RecLLMSim user_behavior/count_human.py:
# data.get('chat_model', 'gpt-4-turbo-preview')); simulated users' files name none and are not given one.
PAPER_DEFAULT_MODEL = "gpt-4-turbo-preview"
RATING_VALUES = (0, 1, 2)  # the scale of the ratings, the questionnaire's answers and the self-report


class Awareness(TypedDict):
    """How often users flagged the assistant: assistant turns counted and flagged, conversations counted and with at
    least one flag, each share with its bootstrap CI (resampling conversations)."""

    turns: int
    flagged_turns: int
    turn_share: Agreement
    conversations: int
    flagged_conversations: int
    conversation_share: Agreement


class Shares(TypedDict):
    """One rating field over the conversations that give it: n, mean, and the count and share of each value."""

    n: int
    mean: float | None
    values: list[float]
    counts: list[int]
    shares: list[float | None]


class Quality(TypedDict):
    """The assistant's quality by each measure that has data: simulated users' `rating`, their own `satisfaction`
    (self_report) and real people's questionnaire, each {field: Shares}."""

    ratings: dict[str, Shares]
    self_report: dict[str, Shares]
    questionnaire: dict[str, Shares]


def assistant_model(conv: Conversation) -> str | None:
    """The assistant's model: the file's `chat_model`; for a real person's file without one the paper's default
    (PAPER_DEFAULT_MODEL); None for a simulated user's file without one."""
    if conv.chat_model is not None:
        return conv.chat_model
    return PAPER_DEFAULT_MODEL if conv.source == "human" else None


def talked_to(conv: Conversation, model: str | None) -> bool:
    """Whether a conversation is kept when figures are restricted to `model` (None: no restriction): its assistant
    model is `model`, or is not known (simulated users' files name none)."""
    return model is None or assistant_model(conv) in (model, None)


def turn_flags(conv: Conversation, rule: str) -> list[int]:
    """1 or 0 for each counted assistant turn of a conversation under a rule of HALLUCINATION_RULES."""
    if rule not in HALLUCINATION_RULES:
        raise ValueError(f"rule must be one of {HALLUCINATION_RULES}, got {rule!r}")
    turns = [turn for turn in conv.history if turn.get("role") == "assistant" and "hallucination" in turn]
    if rule == "paper":
        return [int(hallucination(turn) is True) for turn in turns]
    return [int(flag) for flag in (hallucination(turn) for turn in turns) if flag is not None]


def conversation_flag(conv: Conversation, rule: str) -> int | None:
    """1 when a conversation has a flagged assistant turn, else 0; under "known" None when no turn has a known
    label (left out)."""
    if rule == "known":
        return labelled_hallucination(conv)
    return int(any(turn_flags(conv, rule)))


def awareness(conversations: Sequence[Conversation], rule: str, seed: int = stats.DEFAULT_SEED) -> Awareness:
    """The share of counted assistant turns flagged and of counted conversations with a flag, with CIs."""
    flags = [turn_flags(conv, rule) for conv in conversations]
    per_conv = [f for f in (conversation_flag(conv, rule) for conv in conversations) if f is not None]
    turns, flagged = sum(len(f) for f in flags), sum(sum(f) for f in flags)
    turn_ci = stats.bootstrap_curve_mean_ci([sum(f) for f in flags], [len(f) for f in flags], seed=seed) \
        if turns else None
    conv_ci = stats.bootstrap_ci(per_conv, seed=seed) if per_conv else None
    return {"turns": turns, "flagged_turns": flagged,
            "turn_share": _share(flagged, turns, turn_ci),
            "conversations": len(per_conv), "flagged_conversations": sum(per_conv),
            "conversation_share": _share(sum(per_conv), len(per_conv), conv_ci)}


def _share(part: int, whole: int, ci: list[float] | None) -> Agreement:
    return {"value": part / whole if whole else None, "low": ci[0] if ci else None, "high": ci[1] if ci else None,
            "n": whole}


def shares(values: Iterable[float]) -> Shares:
    """n, mean, and the count and share of each value (RATING_VALUES and any other value given, ascending)."""
    given = list(values)
    scale = sorted(set(RATING_VALUES) | {int(v) if float(v).is_integer() else v for v in given})
    counts = [sum(1 for v in given if v == value) for value in scale]
    return {"n": len(given), "mean": sum(given) / len(given) if given else None, "values": scale,
            "counts": counts, "shares": [c / len(given) if given else None for c in counts]}


def field_shares(records: Iterable[Mapping[str, float]]) -> dict[str, Shares]:
    """Shares of each field over the records that give it (fields in order of first appearance)."""
    by_field: dict[str, list[float]] = {}
    for record in records:
        for key, value in record.items():
            by_field.setdefault(key, []).append(value)
    return {key: shares(values) for key, values in by_field.items()}


def quality(conversations: Sequence[Conversation]) -> Quality:
    """The shares of every rating field: simulated users' ratings and self-report, real people's questionnaire."""
    agents = [c for c in conversations if c.source == "agent"]
    people = [c for c in conversations if c.source == "human"]
    return {"ratings": field_shares(c.ratings for c in agents),
            "self_report": field_shares(c.self_report for c in agents),
            "questionnaire": field_shares(c.questionnaire for c in people)}

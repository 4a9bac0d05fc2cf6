"""Every number the conversation kind computes, one function per metric; the table of them is README.md.

Per turn: the labels the dataset gives a turn (`user_intents`, `hallucination`, `satisfaction`). Per source
(simulated "agent" or real "human" users): `by_turns`, `ratings`, `questionnaire`, `intents`, `hallucination_rate`,
`mean_satisfaction`. Fidelity of simulated to real users: `turns_jsd`, `user_message_length_jsd`, `intents_jsd`
(Jensen-Shannon divergence in bits, kinds.stats.js_divergence_bits). The judge's annotation:
`labelled_hallucination`, `judge_means`, `annotation_agreement`.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from kinds import stats
from kinds.agreement import LabelAgreement, label_agreement
from kinds.conversation.format import Conversation, intent_label

LENGTH_BINS = 20  # equal bins over the joint range of user-message lengths (fidelity)

_HALLUCINATION_VALUES = {"是": True, "否": False, "yes": True, "no": False, "true": True, "false": False}


class TurnGroup(TypedDict):
    """The conversations of one number of turns (by_turns)."""

    turns: int
    conversations: int
    ratings: dict[str, float]  # their mean of each rating field


class SatisfactionAt(TypedDict):
    """The mean satisfaction at one assistant turn number (1-based), over the turns that give one."""

    turn: int
    mean: float
    n: int


class Satisfaction(TypedDict):
    """Mean per-turn satisfaction overall and per assistant turn number."""

    mean: float
    n: int
    by_turn: list[SatisfactionAt]


class Fidelity(TypedDict):
    """Jensen-Shannon divergences (bits) of simulated from real users; None where a side has no data."""

    turns: float | None
    user_message_length: float | None
    intents: float | None


class JudgeMeans(TypedDict):
    """How many conversations the judge annotated, and its mean of each scale over them (None: none annotated)."""

    annotated: int
    means: dict[str, float | None]


# --- per turn ----------------------------------------------------------------------------------

def user_intents(turn: dict) -> list[str]:
    """The English intent labels of a user turn (from `intent`, else `intent_zh`); [] when none."""
    value = turn.get("intent")
    if value in (None, "", []):
        value = turn.get("intent_zh")
    if isinstance(value, str):
        value = [value] if value.strip() else []
    if not isinstance(value, list):
        return []
    return [intent_label(item) for item in value if isinstance(item, str) and item.strip()]


def hallucination(turn: dict) -> bool | None:
    """Whether an assistant turn is marked as hallucinating: True/False, None when absent or unknown.

    Accepts booleans, {"hallucination": bool, ...} objects and 是/否/无法判断 (无法判断 = unknown).
    """
    value = turn.get("hallucination")
    if isinstance(value, dict):
        value = value.get("hallucination")
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        return _HALLUCINATION_VALUES.get(text)
    return None


def satisfaction(turn: dict) -> float | None:
    """The per-turn satisfaction score of an assistant turn (a number or numeric string), else None."""
    value = turn.get("satisfaction")
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


# --- per source ----------------------------------------------------------------------------------

def by_turns(conversations: list[Conversation]) -> list[TurnGroup]:
    """Per number of turns (len(history) // 2): how many conversations have it, and their mean of each rating."""
    groups: dict[int, list[Conversation]] = {}
    for conv in conversations:
        groups.setdefault(conv.turns, []).append(conv)
    return [{"turns": n, "conversations": len(group), "ratings": ratings(group)}
            for n, group in sorted(groups.items())]


def ratings(conversations: list[Conversation]) -> dict[str, float]:
    """Mean of each numeric `rating` field over the conversations that have it (simulated users rate)."""
    return _means(c.ratings for c in conversations)


def questionnaire(conversations: list[Conversation]) -> dict[str, float]:
    """Mean of each questionnaire answer mapped to a number (format.QUESTIONNAIRE) over the conversations with it."""
    return _means(c.questionnaire for c in conversations)


def intents(conversations: list[Conversation]) -> dict[str, float]:
    """Share of each intent label among all labels of the user turns, most frequent first."""
    return _shares(_intent_counts(conversations))


def hallucination_rate(conversations: list[Conversation]) -> float | None:
    """Share of the labelled assistant turns marked as hallucinating (unknown left out); None without any."""
    flags = [hallucination(turn) for conv in conversations for turn in conv.history
             if isinstance(turn, dict) and turn.get("role") == "assistant"]
    known = [f for f in flags if f is not None]
    return sum(known) / len(known) if known else None


def mean_satisfaction(conversations: list[Conversation]) -> Satisfaction | None:
    """Mean per-turn satisfaction overall and per assistant turn number (1-based), None without any."""
    by_turn: dict[int, list[float]] = {}
    for conv in conversations:
        k = 0
        for turn in conv.history:
            if isinstance(turn, dict) and turn.get("role") == "assistant":
                k += 1
                score = satisfaction(turn)
                if score is not None:
                    by_turn.setdefault(k, []).append(score)
    if not by_turn:
        return None
    scores = [s for values in by_turn.values() for s in values]
    return {"mean": sum(scores) / len(scores), "n": len(scores),
            "by_turn": [{"turn": k, "mean": sum(v) / len(v), "n": len(v)} for k, v in sorted(by_turn.items())]}


# --- fidelity of simulated to real users -----------------------------------------------------------

def fidelity(agent: list[Conversation], human: list[Conversation]) -> Fidelity:
    """The three divergences of simulated from real users: turns, user_message_length, intents."""
    return {"turns": turns_jsd(agent, human), "user_message_length": user_message_length_jsd(agent, human),
            "intents": intents_jsd(agent, human)}


def turns_jsd(agent: list[Conversation], human: list[Conversation]) -> float | None:
    """JS divergence (bits) of the two sides' turn counts, as categories; None when a side has none."""
    return _categorical_jsd(Counter(c.turns for c in agent), Counter(c.turns for c in human))


def user_message_length_jsd(agent: list[Conversation], human: list[Conversation]) -> float | None:
    """JS divergence (bits) of user-message lengths in characters of `content`, on LENGTH_BINS equal bins over
    both sides' joint range; None when a side has none."""
    a, b = _user_lengths(agent), _user_lengths(human)
    if not a or not b:
        return None
    _edges, counts_a, counts_b = stats.shared_histograms(a, b, bins=LENGTH_BINS)
    return stats.js_divergence_bits(counts_a, counts_b)


def intents_jsd(agent: list[Conversation], human: list[Conversation]) -> float | None:
    """JS divergence (bits) of the two sides' user-intent label counts; None when a side has none."""
    return _categorical_jsd(_intent_counts(agent), _intent_counts(human))


# --- the judge's annotation ------------------------------------------------------------------------

def labelled_hallucination(conv: Conversation) -> int | None:
    """1 when any assistant turn is labelled as hallucinating, 0 when all labelled ones are not, else None."""
    flags = [hallucination(turn) for turn in conv.history if turn.get("role") == "assistant"]
    known = [f for f in flags if f is not None]
    return int(any(known)) if known else None


def judge_means(rows: Sequence[Mapping[str, Any]], scales: Iterable[str]) -> JudgeMeans:
    """How many conversations the judge annotated, and the mean of each of its `scales` over them."""
    scored = [r["scores"] for r in rows if r["scores"]]
    means = {scale: (sum(s[scale] for s in scored) / len(scored) if scored else None) for scale in scales}
    return {"annotated": len(scored), "means": means}


def annotation_agreement(rows: Sequence[Mapping[str, Any]], scales: Iterable[str],
                         flag: str) -> dict[str, LabelAgreement]:
    """Exact agreement and Cohen's kappa (kinds.agreement.label_agreement) of the judge with people: each of
    `scales` against the questionnaire answer, `flag` against the labelled hallucination; pairs with both only."""
    out = {}
    for scale in scales:
        pairs = [(r["scores"][scale], r["questionnaire"][scale]) for r in rows
                 if r["scores"] and r["questionnaire"][scale] is not None]
        out[scale] = label_agreement([p[0] for p in pairs], [p[1] for p in pairs])
    pairs = [(r["scores"][flag], r["labelled_hallucination"]) for r in rows
             if r["scores"] and r["labelled_hallucination"] is not None]
    out[flag] = label_agreement([p[0] for p in pairs], [p[1] for p in pairs])
    return out


# --- helpers ---------------------------------------------------------------------------------------

def _means(dicts) -> dict[str, float]:
    """Per key, the mean over the dicts that have it (keys in order of first appearance)."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for d in dicts:
        for key, v in d.items():
            sums[key] = sums.get(key, 0.0) + v
            counts[key] = counts.get(key, 0) + 1
    return {key: sums[key] / counts[key] for key in sums}


def _shares(counter: Counter) -> dict[str, float]:
    total = sum(counter.values())
    return {label: n / total for label, n in counter.most_common()} if total else {}


def _intent_counts(conversations) -> Counter:
    counts: Counter = Counter()
    for conv in conversations:
        for turn in conv.history:
            if isinstance(turn, dict) and turn.get("role") == "user":
                counts.update(user_intents(turn))
    return counts


def _user_lengths(conversations) -> list[int]:
    return [len(turn["content"]) for conv in conversations for turn in conv.history
            if isinstance(turn, dict) and turn.get("role") == "user" and isinstance(turn.get("content"), str)]


def _categorical_jsd(a: Counter, b: Counter) -> float | None:
    if not sum(a.values()) or not sum(b.values()):
        return None
    keys = sorted(set(a) | set(b), key=str)
    return stats.js_divergence_bits([a[k] for k in keys], [b[k] for k in keys])

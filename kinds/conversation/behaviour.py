"""The Human-vs-Agent behaviour taxonomy: eleven dimensions of how a user converses, in the paper's four label groups
(RecLLMSim, branch Human_Vs_Agent, commit 405f80d, `user_behavior/output_format.py`), and reading one label set of a
conversation.

A conversation file holds each label set as four objects, one per group, e.g. `strategy_V1` (GPT-4o's labels) or
`strategy_human_V1` (a person's), whose `final` object holds the group's labels (the labeller's per-round answers sit
beside it under "1", "2", ...; only `final` is read).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from translations import lazy_gettext as _l

SCALE = (1, 2, 3, 4, 5)  # the 1-5 ratings of group 2 (output_format.py: Rating)


@dataclass(frozen=True)
class Dimension:
    """One behaviour dimension: its key in the file, its group (1-4: strategy_V<group>), its label for people and
    its values in the paper's order (categories, or SCALE for a 1-5 rating)."""

    key: str
    group: int
    label: Any  # a lazy translated string
    values: tuple

    @property
    def is_scale(self) -> bool:
        """Whether the dimension is a 1-5 rating (ordered numbers) rather than categories."""
        return self.values == SCALE


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("problem_solving", 1, _l("Problem solving"), ("AllInOne", "StepByStep")),
    Dimension("order", 1, _l("Order of questions"), ("Depth", "Breadth", "DepthBreadth", "BreadthDepth")),
    Dimension("question_broadness", 2, _l("Question broadness"), SCALE),
    Dimension("context_dependency", 2, _l("Context dependency"), SCALE),
    Dimension("explanation", 3, _l("Explanation"), ("Frequent", "Rare", "NoExplanation")),
    Dimension("promise", 3, _l("Promise"), ("HavePromise", "NoPromise")),
    Dimension("feedback", 3, _l("Feedback"), ("NoFeedback", "Positive", "Negative", "Both")),
    Dimension("politeness", 3, _l("Politeness"), ("Polite", "Neutral", "Impolite")),
    Dimension("formality", 3, _l("Formality"), ("Oral", "Formal", "Mixed")),
    Dimension("utility", 4, _l("Utility"), ("High", "Moderate", "Low")),
    Dimension("operability", 4, _l("Operability"), ("High", "Moderate", "Low")),
)
BY_KEY = {dimension.key: dimension for dimension in DIMENSIONS}
GROUPS = (1, 2, 3, 4)

# The label sets a file may hold, by name: the prefix of their four group objects.
LABEL_SETS = {"gpt": "strategy_V", "human": "strategy_human_V"}


def valid_value(dimension: Dimension, value: object) -> bool:
    """Whether `value` is one of the dimension's values (a 1-5 rating is an int, not a bool or a float)."""
    if dimension.is_scale:
        return type(value) is int and value in SCALE
    return isinstance(value, str) and value in dimension.values


def group_labels(raw: Mapping, prefix: str, group: int) -> Mapping | None:
    """The `final` labels of one group (`<prefix><group>`) of a conversation's JSON object; None when absent or not
    an object."""
    block = raw.get(f"{prefix}{group}")
    final = block.get("final") if isinstance(block, Mapping) else None
    return final if isinstance(final, Mapping) else None


def labels_of(raw: Mapping, label_set: str) -> dict[str, Any]:
    """One label set ("gpt", "human") of a conversation's JSON object: each dimension's value, None where the file
    has no valid value for it."""
    prefix = LABEL_SETS[label_set]
    labels: dict[str, Any] = {}
    for dimension in DIMENSIONS:
        final = group_labels(raw, prefix, dimension.group)
        value = final.get(dimension.key) if final is not None else None
        labels[dimension.key] = value if valid_value(dimension, value) else None
    return labels

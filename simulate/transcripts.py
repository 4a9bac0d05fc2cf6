"""A simulation's turns kept so far, arranged for reading while it runs: conversation by conversation (its status
page) and as a sample grid, one row per persona and round with the methods side by side (its samples page)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from simulate.plan import USER, Conversation, Plan

Kept = Mapping[tuple[int, int, str], dict]  # {(conversation, round, speaker): turn}


@dataclass
class Cell:
    """One method at one round of a persona: the user message it answered and its reply (None: not kept yet)."""

    user: dict | None
    reply: dict | None


@dataclass
class Row:
    """A persona at a round: the user message (shared protocol: the one every method answers) and each method's
    cell."""

    persona_index: int
    persona_id: str
    round: int
    user: dict | None
    cells: dict[str, Cell] = field(default_factory=dict)

    def failed(self) -> bool:
        """Whether a turn of the row failed."""
        turns = [self.user] + [t for c in self.cells.values() for t in (c.user, c.reply)]
        return any(t is not None and t["status"] == "failed" for t in turns)

    def matches(self, pattern: re.Pattern) -> bool:
        """Whether a message or a reply of the row contains the pattern."""
        turns = [self.user] + [t for c in self.cells.values() for t in (c.user, c.reply)]
        return any(t is not None and pattern.search(t["text"] or "") for t in turns)


def conversation_rounds(plan: Plan, conversation: Conversation, kept: Kept) -> list[dict]:
    """The rounds of a conversation that have begun (their user message is kept), each with every method's reply."""
    c = conversation.index
    return [{"round": k, "user": kept.get((c, k, USER)),
             "replies": [(m, kept.get((c, k, m))) for m in conversation.methods]}
            for k in range(1, plan.rounds + 1) if (c, k, USER) in kept]


def sample_rows(plan: Plan, kept: Kept) -> list[Row]:
    """One row per persona and round that has begun, in persona order, with a cell for every method; under the
    independent protocol each cell holds the user message of that method's own conversation."""
    by_persona: dict[int, list[Conversation]] = {}
    for conversation in plan.conversations():
        by_persona.setdefault(conversation.persona_index, []).append(conversation)
    rows = []
    for index, conversations in by_persona.items():
        for k in range(1, plan.rounds + 1):
            users = [kept.get((c.index, k, USER)) for c in conversations]
            if all(user is None for user in users):
                continue
            row = Row(index, conversations[0].persona.persona_id, k, users[0] if plan.protocol == "shared" else None)
            for c, user in zip(conversations, users):
                row.cells.update((m, Cell(user, kept.get((c.index, k, m)))) for m in c.methods)
            rows.append(row)
    return rows

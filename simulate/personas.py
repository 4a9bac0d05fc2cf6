"""Personas: who the simulated user is. Read from a personas file (validated at upload by the personas kind), from
the built-in set, or from the sessions of a dialogue file."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

BUILTIN = Path(__file__).with_name("builtin_personas.jsonl")


@dataclass(frozen=True)
class Persona:
    """One simulated user: the profile and personality it reveals, an optional scenario and first message."""

    persona_id: str
    user_profile: str
    user_personality: str
    scenario: str = ""
    opening: str = ""

    def to_dict(self) -> dict:
        """The persona as a personas-file line."""
        return {k: v for k, v in asdict(self).items() if v or k in ("persona_id", "user_profile", "user_personality")}


def from_lines(lines: Iterable[str]) -> Iterator[Persona]:
    """Personas from the lines of a personas file that passed validation (blank lines skipped)."""
    for line in lines:
        if line.strip():
            item = json.loads(line)
            yield Persona(str(item["persona_id"]), item["user_profile"], item.get("user_personality") or "",
                          item.get("scenario") or "", item.get("opening") or "")


def from_dialogue_lines(lines: Iterable[str]) -> Iterator[Persona]:
    """The personas of a dialogue file that passed validation: each session's id, profile and personality."""
    for line in lines:
        if line.strip():
            session = json.loads(line)
            yield Persona(str(session["session_id"]), session.get("user_profile") or "",
                          session.get("user_personality") or "")


def builtin() -> list[Persona]:
    """The built-in personas (simulate/builtin_personas.jsonl)."""
    with BUILTIN.open(encoding="utf-8") as f:
        return list(from_lines(f))

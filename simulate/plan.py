"""What a simulation asks, read from its stored settings: the speakers, the conversations of its protocol, how many
turns it takes, and which turns are ready to be asked given those already kept."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from simulate.personas import Persona

USER = "user"  # the speaker name of the simulated user's turns (no method may take it)
PROTOCOLS = ("shared", "independent")


@dataclass(frozen=True)
class Speaker:
    """The simulator or one method: who answers, where, and how."""

    name: str
    model: str
    endpoint: str
    temperature: float
    max_tokens: int
    system_prompt: str = ""


@dataclass(frozen=True)
class Conversation:
    """One simulated conversation: its persona, the methods that answer in it and the one the simulator hears."""

    index: int
    persona: Persona
    methods: tuple[str, ...]
    partner: str
    persona_index: int = 0  # the persona's place in the simulation (Celery blocks are ranges of these)


@dataclass(frozen=True)
class Step:
    """One turn to ask: the user's message (speaker USER) or a method's reply, at a round of a conversation."""

    conversation: int
    round: int
    speaker: str


@dataclass(frozen=True)
class Plan:
    """A simulation's settings as the engine uses them."""

    personas: tuple[Persona, ...]
    simulator: Speaker
    methods: tuple[Speaker, ...]
    rounds: int
    protocol: str
    reference: str
    language: str
    user_retries: int
    sample: int = 0

    @classmethod
    def from_settings(cls, settings: Mapping) -> Plan:
        """The plan of a simulation's stored settings (simulate/request.py wrote them)."""
        sim = settings["simulator"]
        return cls(tuple(Persona(**p) for p in settings["personas"]),
                   Speaker(USER, sim["model"], sim["endpoint"], sim["temperature"], sim["max_tokens"]),
                   tuple(Speaker(m["name"], m["model"], m["endpoint"], m["temperature"], m["max_tokens"],
                                 m.get("system_prompt") or "") for m in settings["methods"]),
                   settings["rounds"], settings["protocol"], settings["reference"], sim["language"],
                   settings["user_retries"], settings.get("sample", 0))

    def speaker(self, name: str) -> Speaker:
        """The simulator (USER) or the method of that name."""
        return self.simulator if name == USER else next(m for m in self.methods if m.name == name)

    def conversations(self) -> list[Conversation]:
        """shared: one per persona, every method answering, the simulator hearing the reference; independent: one
        per persona and method, in that order (persona by persona)."""
        names = [m.name for m in self.methods]
        if self.protocol == "shared":
            return [Conversation(i, p, tuple(names), self.reference, i) for i, p in enumerate(self.personas)]
        return [Conversation(i * len(names) + j, p, (name,), name, i)
                for i, p in enumerate(self.personas) for j, name in enumerate(names)]

    def total(self) -> int:
        """Turns to ask: every user message (but the openings a persona gives) and every reply, of every round."""
        return sum(self.rounds * (1 + len(c.methods)) - (1 if c.persona.opening else 0) for c in self.conversations())


def ready(conversation: Conversation, rounds: int, kept: Mapping[tuple[int, int, str], dict]) -> list[Step]:
    """The turns of a conversation that can be asked now, given the turns kept ({(conversation, round, speaker):
    turn}): user message k once the partner answered k-1; a method's reply k once user message k is there and the
    method answered k-1. (A conversation with a failed turn asks nothing more: the engine skips it.)"""
    c = conversation.index

    def ok(k: int, speaker: str) -> bool:
        turn = kept.get((c, k, speaker))
        return turn is not None and turn["status"] == "ok"

    steps = []
    for k in range(1, rounds + 1):
        if (c, k, USER) not in kept:
            if k == 1 or ok(k - 1, conversation.partner):
                steps.append(Step(c, k, USER))
            continue
        steps += [Step(c, k, m) for m in conversation.methods
                  if (c, k, m) not in kept and (k == 1 or ok(k - 1, m))]
    return steps

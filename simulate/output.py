"""The dialogue files a simulation writes from its kept turns: one for the shared protocol, one per method for the
independent one, each holding the rounds every one of its methods completed. The files are of the kind that records
dialogues (`RecordsDialogues`, chosen by that capability): it writes them (`dialogue_file`) and reads them back as
uploads."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kinds import registry
from kinds.kind import Dialogue, DialogueRound, RecordsDialogues
from simulate.plan import USER, Conversation, Plan


def dialogue_kind() -> RecordsDialogues:
    """The kind whose files a simulation writes (and whose uploads they become): the first registered one that
    records dialogues; LookupError when none does."""
    found: list[RecordsDialogues] = registry.having(RecordsDialogues)
    if not found:
        raise LookupError("no registered kind records dialogues (kinds.kind.RecordsDialogues)")
    return found[0]


@dataclass
class Output:
    """One dialogue file: its name, its conversations (a session each), and the personas left out for want of one
    complete round."""

    filename: str
    method: str | None  # the independent protocol's method; None for the shared file
    sessions: list[Dialogue] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)

    def content(self) -> bytes:
        """The file, as the kind that records dialogues writes it."""
        return dialogue_kind().dialogue_file(self.sessions)


def file_part(name: str) -> str:
    """A method name as it may stand in a file name (other characters as '_')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "method"


def session(conversation: Conversation, kept: Mapping[tuple[int, int, str], dict], rounds: int) -> Dialogue | None:
    """The dialogue of a conversation: its persona and its rounds up to the first one some method did not complete;
    None when the first is incomplete."""
    persona, c = conversation.persona, conversation.index
    complete = []
    for k in range(1, rounds + 1):
        turns = [kept.get((c, k, speaker)) for speaker in (USER, *conversation.methods)]
        if not all(t is not None and t["status"] == "ok" for t in turns):
            break
        texts = [t["text"] for t in turns if t is not None]
        complete.append(DialogueRound(k, texts[0], dict(zip(conversation.methods, texts[1:]))))
    if not complete:
        return None
    return Dialogue(persona.persona_id, persona.user_profile, persona.user_personality, tuple(complete))


def outputs(simulation_id: str, plan: Plan, kept: Mapping[tuple[int, int, str], dict]) -> list[Output]:
    """The files of a simulation: simulation-<id>.jsonl (shared), or simulation-<id>-<method>.jsonl per method (the
    extension the dialogue kind's)."""
    files: dict[str | None, Output]
    extension = dialogue_kind().extension
    if plan.protocol == "shared":
        files = {None: Output(f"simulation-{simulation_id}{extension}", None)}
    else:
        files = {m.name: Output(f"simulation-{simulation_id}-{file_part(m.name)}{extension}", m.name)
                 for m in plan.methods}
    for conversation in plan.conversations():
        out = files[None if plan.protocol == "shared" else conversation.methods[0]]
        found = session(conversation, kept, plan.rounds)
        if found is None:
            out.left_out.append(conversation.persona.persona_id)
        else:
            out.sessions.append(found)
    return list(files.values())

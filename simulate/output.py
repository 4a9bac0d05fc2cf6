"""The dialogue files a simulation writes from its kept turns: one for the shared protocol, one per method for the
independent one, each session holding the rounds every one of its methods completed."""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from simulate.plan import USER, Conversation, Plan

KIND = "dialogue"  # the kind of the files a simulation writes (and of the uploads they become)


@dataclass
class Output:
    """One dialogue file: its name, its sessions, and the personas left out for want of one complete round."""

    filename: str
    method: str | None  # the independent protocol's method; None for the shared file
    sessions: list[dict] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)

    def jsonl(self) -> bytes:
        """The sessions as JSON Lines."""
        return "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in self.sessions).encode("utf-8")


def file_part(name: str) -> str:
    """A method name as it may stand in a file name (other characters as '_')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "method"


def session(conversation: Conversation, kept: Mapping[tuple[int, int, str], dict], rounds: int) -> dict | None:
    """The dialogue session of a conversation (session_id = persona_id): its rounds up to the first one some method
    did not complete; None when the first is incomplete."""
    persona, c = conversation.persona, conversation.index
    complete = []
    for k in range(1, rounds + 1):
        turns = [kept.get((c, k, speaker)) for speaker in (USER, *conversation.methods)]
        if not all(t is not None and t["status"] == "ok" for t in turns):
            break
        texts = [t["text"] for t in turns if t is not None]
        complete.append({"round": k, "user_message": texts[0], "responses": dict(zip(conversation.methods, texts[1:]))})
    if not complete:
        return None
    return {"session_id": persona.persona_id, "user_profile": persona.user_profile,
            "user_personality": persona.user_personality, "rounds": complete}


def outputs(simulation_id: str, plan: Plan, kept: Mapping[tuple[int, int, str], dict]) -> list[Output]:
    """The files of a simulation: simulation-<id>.jsonl (shared), or simulation-<id>-<method>.jsonl per method."""
    files: dict[str | None, Output]
    if plan.protocol == "shared":
        files = {None: Output(f"simulation-{simulation_id}.jsonl", None)}
    else:
        files = {m.name: Output(f"simulation-{simulation_id}-{file_part(m.name)}.jsonl", m.name) for m in plan.methods}
    for conversation in plan.conversations():
        out = files[None if plan.protocol == "shared" else conversation.methods[0]]
        found = session(conversation, kept, plan.rounds)
        if found is None:
            out.left_out.append(conversation.persona.persona_id)
        else:
            out.sessions.append(found)
    return list(files.values())

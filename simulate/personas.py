"""Personas: who the simulated user is. Read from an upload of a kind that holds personas (`HoldsPersonas`: a
personas file, or the sessions of a dialogue file), or from the built-in set, always through that kind's own reader
(`personas`, over kinds/readers/), so that a file reads here exactly as it was validated."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

from kinds import registry
from kinds.kind import HoldsPersonas
from pipeline.ingest import HEAD
from translations import _

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


def read(kind: HoldsPersonas, stream: BinaryIO) -> list[Persona]:
    """The personas of a validated file of a kind that holds personas, as that kind reads them (ValueError at a line
    that does not read)."""
    return [Persona(**fields) for fields in kind.personas(stream)]


def builtin() -> list[Persona]:
    """The built-in personas (simulate/builtin_personas.jsonl), read as an upload of the file is: by the kind detected
    from it, which holds personas (ValueError when it does not)."""
    with BUILTIN.open("rb") as stream:
        kind = registry.get(registry.detect(stream.read(HEAD), BUILTIN.name, BUILTIN))
        if not isinstance(kind, HoldsPersonas):
            raise ValueError(_("%(file)s reads as a file of the kind %(kind)s, which holds no personas.",
                               file=BUILTIN.name, kind=kind.label))
        stream.seek(0)
        return read(kind, stream)

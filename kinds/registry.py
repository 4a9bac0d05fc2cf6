"""The one place that registers benchmark kinds: the five built in, and any added with `register`."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Mapping

import jinja2

from kinds.agentbench.kind import AgentBenchKind
from kinds.conversation.kind import ConversationKind
from kinds.dialogue.kind import DialogueKind
from kinds.host import Table
from kinds.kind import Kind
from kinds.mobility.kind import MobilityKind
from kinds.personas.kind import PersonasKind

_KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add a kind (or replace one of the same name); returns it."""
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a kind (tests that add their own take it away again)."""
    _KINDS.pop(name, None)


def get(name: str) -> Kind:
    """The kind of this name; KeyError when there is none."""
    return _KINDS[name]


def kinds() -> list[Kind]:
    """Every registered kind, in registration order."""
    return list(_KINDS.values())


def names() -> list[str]:
    """The names of the registered kinds."""
    return list(_KINDS)


def tables() -> list[Table]:
    """The tables the registered kinds keep (the store creates them and deletes their rows with evaluations)."""
    return [table for kind in _KINDS.values() for table in kind.tables]


def detect(head: bytes, filename: str = "", path: str | Path | None = None) -> str:
    """The kind of a file, from its start (and the whole file at `path`): the first kind that claims it, else
    the fallback kind (whose validation then says what is wrong)."""
    text = head.removeprefix(b"\xef\xbb\xbf")
    ordered = sorted(_KINDS.values(), key=lambda kind: kind.fallback)
    for kind in ordered:
        if kind.fallback or kind.sniff(text, filename, Path(path) if path is not None else None):
            return kind.name
    raise LookupError("no kind registered")


class _TemplateFolders(Mapping):
    """Each kind's templates under its name ("dialogue/result.html"), looked up live so late kinds count."""

    def __getitem__(self, name: str) -> jinja2.BaseLoader:
        return _KINDS[name].templates()

    def __iter__(self) -> Iterator[str]:
        return iter(list(_KINDS))

    def __len__(self) -> int:
        return len(_KINDS)


def template_loader() -> jinja2.BaseLoader:
    """A Jinja loader for every kind's templates, each under its kind's name."""
    return jinja2.PrefixLoader(_TemplateFolders())


# personas before conversation: its sniff is the stricter (a first line with persona_id and user_profile)
for _kind in (MobilityKind(), AgentBenchKind(), PersonasKind(), ConversationKind(), DialogueKind()):
    register(_kind)

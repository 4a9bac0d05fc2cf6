"""The benchmark kinds: each module validates its uploads and builds its result document."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Kind:
    """A benchmark kind: the module that validates its files and the extension its uploads are stored under."""

    module_name: str
    extension: str

    @property
    def module(self) -> ModuleType:
        """The kind's module (imported on first use)."""
        return importlib.import_module(self.module_name)


KINDS: dict[str, Kind] = {
    "dialogue": Kind("benchmarks.dialogue", ".jsonl"),
    "mobility": Kind("benchmarks.mobility", ".json"),
    "conversation": Kind("benchmarks.conversation", ""),  # JSON, JSONL or a ZIP of the dataset's folders
}


def detect_kind(head: bytes, filename: str = "") -> str:
    """Guess the benchmark kind from the start of a file: DailyMobility outputs are one JSON object with the
    four mobility arrays; Human-vs-Agent conversations have a `history` (or come as a ZIP of the dataset's
    folders); everything else is read as dialogue JSONL (whose validation says what is wrong)."""
    if b'"gyration_radius"' in head or b'"intention_sequences"' in head:
        return "mobility"
    if head.startswith(b"PK\x03\x04") or (b'"history"' in head and b'"rounds"' not in head):
        return "conversation"
    return "dialogue"

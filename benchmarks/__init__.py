"""The benchmark kinds: each module validates its uploads and builds its result document."""
from __future__ import annotations

import importlib
import zipfile
from dataclasses import dataclass
from pathlib import Path
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
    "agentbench": Kind("benchmarks.agentbench", ""),  # overall.json, a ZIP of outputs/, result.json, summary.csv
}


def detect_kind(head: bytes, filename: str = "", path: str | Path | None = None) -> str:
    """Guess the benchmark kind from the start of a file (and, for a ZIP at `path`, its member names).

    DailyMobility outputs are one JSON object with the four mobility arrays; AgentBench outputs are an
    overall.json (`total` and `validation`), the analysis' result.json or summary.csv, a runs.jsonl line,
    or a ZIP holding overall.json files; Human-vs-Agent conversations have a `history` (or come as a ZIP of
    the dataset's folders); everything else is read as dialogue JSONL (whose validation says what is wrong).
    """
    text = head.removeprefix(b"\xef\xbb\xbf")
    if b'"gyration_radius"' in text or b'"intention_sequences"' in text:
        return "mobility"
    if text.startswith(b"PK\x03\x04"):
        return "agentbench" if path is not None and _zip_has(path, "overall.json") else "conversation"
    if (b'"validation"' in text and b'"total"' in text) or text.startswith(b"Agent\\Task") \
            or (b'"summary"' in text and b'"details"' in text) \
            or (text.startswith(b'{"index"') and b'"output"' in text):
        return "agentbench"
    if b'"history"' in text and b'"rounds"' not in text:
        return "conversation"
    return "dialogue"


def _zip_has(path: str | Path, name: str) -> bool:
    """Whether a ZIP holds a member with this file name (False when it cannot be read)."""
    from benchmarks import limits  # imported when needed, like the kind modules

    try:
        with limits.open_zip(Path(path).read_bytes(), limits.current()) as archive:
            return any(member.rsplit("/", 1)[-1] == name for member in archive.namelist())
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):  # ValueError includes limits.LimitError
        return False

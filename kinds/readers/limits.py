"""Hard limits on uploaded files: every limit a setting (an environment variable, read when a file is checked).

A file that passes one is refused with a LimitError whose message names the limit, the setting that raises it and
where it was hit (line, JSON path or ZIP member); nothing of it is stored. The readers that enforce them are beside
this module: json_text.py (JSON texts) and zip.py (ZIP archives).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from kinds.problems import LimitProblem
from translations import _

MB = 1024 * 1024
MAX_JSON_DEPTH = 500  # json.loads itself cannot go much deeper; a higher LIMIT_JSON_DEPTH counts as this

SETTINGS = {"json_depth": "LIMIT_JSON_DEPTH", "string_chars": "LIMIT_STRING_CHARS", "sessions": "LIMIT_SESSIONS",
            "rounds": "LIMIT_ROUNDS", "methods": "LIMIT_METHODS", "zip_members": "LIMIT_ZIP_MEMBERS",
            "zip_expanded_mb": "LIMIT_ZIP_EXPANDED_MB", "zip_member_mb": "LIMIT_ZIP_MEMBER_MB",
            "zip_ratio": "LIMIT_ZIP_RATIO"}


@dataclass(frozen=True)
class Limits:
    """The hard limits on one upload (defaults fit the real data with a wide margin)."""

    json_depth: int = 64  # nesting of lists and objects in any JSON value
    string_chars: int = 1_000_000  # characters in one JSON string
    sessions: int = 100_000  # dialogue sessions, or conversations, in one upload
    rounds: int = 1_000  # rounds of one dialogue session, or turns of one conversation
    methods: int = 100  # methods of a dialogue file, or agents of an AgentBench upload
    zip_members: int = 20_000  # entries of a ZIP (folders included)
    # A zip bomb is stopped by what each member expands to (the ratio below, and the size of one member), not by
    # the whole archive's size: that only guards the disk and time, far above real outputs folders and datasets.
    zip_expanded_mb: float = 10_240  # bytes decompressed from one ZIP, all members together
    zip_member_mb: float = 100  # bytes decompressed from one ZIP member
    zip_ratio: float = 200  # times its compressed size one member may expand to (beyond RATIO_FLOOR)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Limits:
        """The limits with each LIMIT_* variable set in `environ` applied; ValueError names a bad one."""
        values: dict = {}
        for item in fields(cls):
            variable = SETTINGS[item.name]
            text = environ.get(variable, "").strip()
            if not text:
                continue
            try:
                value = float(text) if item.type == "float" else int(text)
            except ValueError:
                value = 0
            if not 0 < value < float("inf"):
                raise ValueError(_("%(name)s must be a positive number, found %(value)s.", name=variable,
                                   value=repr(text)))
            values[item.name] = min(value, MAX_JSON_DEPTH) if item.name == "json_depth" else value
        return cls(**values)

    @property
    def zip_expanded_bytes(self) -> int:
        """LIMIT_ZIP_EXPANDED_MB in bytes."""
        return int(self.zip_expanded_mb * MB)

    @property
    def zip_member_bytes(self) -> int:
        """LIMIT_ZIP_MEMBER_MB in bytes."""
        return int(self.zip_member_mb * MB)


def current() -> Limits:
    """The limits in force now (from the environment)."""
    return Limits.from_env(os.environ)


class LimitError(ValueError):
    """A file refused by a hard limit or for JSON that cannot be kept (a duplicate key, a lone surrogate, NUL);
    `.message`, `.line` and `.path` say what and where, `problem()` makes it a validation problem."""

    def __init__(self, message: str, line: int | None = None, path: str = ""):
        super().__init__(message)
        self.message, self.line, self.path = message, line, path

    def problem(self) -> LimitProblem:
        """The refusal as a validation problem."""
        return LimitProblem(self.line, self.path, self.message)


def format_size(size: int) -> str:
    """Human-readable size: '12.3 MB', '4.0 KB' or '512 bytes'."""
    if size >= MB:
        return _("%(size)s MB", size=f"{size / MB:.1f}")
    if size >= 1024:
        return _("%(size)s KB", size=f"{size / 1024:.1f}")
    return _("%(size)s bytes", size=size)


def where(label: str | None, line: int) -> str:
    """'Line 3' or 'a.json line 3': how a message names the place of a problem."""
    if label:
        return _("%(file)s line %(line)s", file=label, line=line)
    return _("Line %(line)s", line=line)

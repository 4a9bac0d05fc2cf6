"""Problems and reports produced by validating an uploaded file."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from translations import _

MAX_PROBLEMS = 100


@dataclass(frozen=True)
class Problem:
    """One thing wrong (or suspicious) in an upload, located by line and JSON path."""

    line: int | None  # 1-based line in the file; None when about the whole file
    path: str  # JSON path inside the line, e.g. "rounds[2].responses.Base"; "" for the whole line
    message: str  # translated sentence saying what is wrong and what to do

    def to_dict(self) -> dict:
        """Return the problem as a JSON-ready dict."""
        return {"line": self.line, "path": self.path, "message": self.message}


@dataclass(frozen=True)
class LimitProblem(Problem):
    """A file refused by a hard limit (kinds/readers/limits.py): the message to give, whatever else the file looks
    like (a ZIP with too many members cannot be looked into to tell whose it is)."""


@dataclass
class Report:
    """The outcome of validating one file: errors, warnings and a summary."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """True when the file has no errors (warnings are allowed)."""
        return not self.problems

    def add(self, problem: Problem) -> None:
        """Record an error, or mark the report truncated once MAX_PROBLEMS are held."""
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        else:
            self.truncated = True

    def warn(self, problem: Problem) -> None:
        """Record a warning (capped like errors, without marking truncation)."""
        if len(self.warnings) < MAX_PROBLEMS:
            self.warnings.append(problem)

    def to_dict(self) -> dict:
        """Return the report as a JSON-ready dict."""
        return {
            "ok": self.ok,
            "problems": [p.to_dict() for p in self.problems],
            "warnings": [w.to_dict() for w in self.warnings],
            "summary": self.summary,
            "truncated": self.truncated,
        }


def describe(value: object) -> str:
    """Describe a JSON value's type for a message, e.g. 'a number (3)' or 'a string ("12")'."""
    if value is None:
        return _("null")
    if type(value) is bool:
        return _("a boolean (%(value)s)", value=short_json(value))
    if type(value) in (int, float):
        return _("a number (%(value)s)", value=short_json(value))
    if type(value) is str:
        return _("a string (%(value)s)", value=short_json(value))
    if type(value) is list:
        return _("a list")
    return _("an object")


def short_json(value: object, limit: int = 40) -> str:
    """The JSON text of a value, cut to a readable length."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"

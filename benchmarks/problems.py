"""Problems and reports produced by validating an uploaded file."""
from __future__ import annotations

from dataclasses import dataclass, field

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

"""A rubric as the code uses it: its dimensions and scales, how they make the 0-100 headline, its optional yes/no
question, its prompt templates and answer formats, and the canonical form its SHA-256 is taken of.

A Rubric is made from a document that reading.py has checked against rubric.schema.json and the rules beside it;
nothing here checks again.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, TypedDict

LANGUAGES = ("en", "zh", "ko")  # of labels and titles; prompts are written for the judging languages (en, zh)
QUESTIONS = ("fine", "binary")  # the dimensions' scores, and the yes/no question
HEADLINE = (0.0, 100.0)


def text_of(value: str | Mapping[str, str] | None, language: str = "en") -> str:
    """A text of the rubric in a language: itself when it is one string, else its `language` version or English."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return value.get(language) or value["en"]


@dataclass(frozen=True)
class Dimension:
    """One scored dimension: its key, labels, scale and what its levels mean."""

    key: str
    label: str | Mapping[str, str]
    low: float
    high: float
    integer: bool
    levels: Mapping[str, str]
    answer_label: str

    def label_in(self, language: str) -> str:
        """The dimension's label in a language (English when the rubric gives no other)."""
        return text_of(self.label, language)

    def scale_text(self) -> str:
        """"0-20", "1-5", "0.0-1.0": the scale as people read it."""
        return f"{_plain(self.low)}-{_plain(self.high)}"


class RubricReference(TypedDict):
    """How an evaluation and its result name a rubric."""

    id: str
    version: str
    sha256: str  # of its canonical form


@dataclass(frozen=True, eq=False)
class Rubric:
    """A judging protocol. `document` is its canonical content and `sha256` that content's hash; `builtin` rubrics
    keep their own `version` as the judge cache's version (a test pins their hash to it), others a version made of
    the hash, so that changing a rubric's text never reuses an answer given to the old one."""

    document: Mapping[str, Any]
    sha256: str
    builtin: bool = False
    dimensions: tuple[Dimension, ...] = field(init=False)

    def __post_init__(self) -> None:
        dims = tuple(Dimension(d["key"], d["label"], float(d["scale"]["min"]), float(d["scale"]["max"]),
                               d["scale"].get("integer", True), d.get("levels") or {},
                               d.get("answer_label") or text_of(d["label"], "en"))
                     for d in self.document["dimensions"])
        object.__setattr__(self, "dimensions", dims)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rubric) and (other.sha256, other.builtin) == (self.sha256, self.builtin)

    def __hash__(self) -> int:
        return hash(self.sha256)

    @property
    def id(self) -> str:
        """The rubric's name."""
        return self.document["id"]

    @property
    def version(self) -> str:
        """The version the rubric's file declares."""
        return self.document["version"]

    @property
    def keys(self) -> tuple[str, ...]:
        """The dimensions' keys, in the rubric's order."""
        return tuple(d.key for d in self.dimensions)

    @property
    def cache_version(self) -> str:
        """The version of its judge requests (part of each cache key)."""
        return self.version if self.builtin else f"{self.id}@{self.version}#{self.sha256[:16]}"

    @property
    def has_binary(self) -> bool:
        """Whether the rubric asks a yes/no question of every reply."""
        return self.document.get("binary") is not None

    @property
    def context(self) -> tuple[str, ...]:
        """What the judge sees (the templates' variables besides round, dimensions and quote)."""
        return tuple(self.document["context"])

    @property
    def languages(self) -> tuple[str, ...]:
        """The judging languages it has prompts in (and, with a yes/no question, that question's prompts too)."""
        found = set(self.document["prompts"])
        if self.has_binary:
            found &= set(self.document["binary"]["prompts"])
        return tuple(language for language in LANGUAGES if language in found)

    def title(self, language: str = "en") -> str:
        """Its title in a language."""
        return text_of(self.document["title"], language)

    def description(self, language: str = "en") -> str:
        """Its description in a language ("" when it has none)."""
        return text_of(self.document.get("description"), language)

    def binary_label(self, language: str = "en") -> str:
        """Its yes/no question in a language ("" when it has none)."""
        return text_of(self.document["binary"]["label"], language) if self.has_binary else ""

    def templates(self, question: str, language: str) -> Mapping[str, str]:
        """The {system?, user} templates of a question ("fine" or "binary") in a judging language."""
        prompts = self.document["prompts"] if question == "fine" else self.document["binary"]["prompts"]
        return prompts[language]

    def answer_format(self, question: str) -> str:
        """How the judge answers a question: lines, number or json (fine); boxed or json (binary)."""
        answer = self.document["answer"] if question == "fine" else self.document["binary"]["answer"]
        return answer["format"]

    @property
    def boxed_total(self) -> bool:
        """Whether a 'lines' answer also gives the headline as \\boxed{N}, used when it is there."""
        return self.document["answer"].get("total") == "boxed"

    def combined_range(self) -> tuple[float, float]:
        """The lowest and highest value the dimensions' combination can take."""
        return self._range

    @cached_property
    def _range(self) -> tuple[float, float]:  # asked for every judgment's headline: computed once
        return self.combine([d.low for d in self.dimensions]), self.combine([d.high for d in self.dimensions])

    def combine(self, values: list[float]) -> float:
        """The dimensions' values (in the rubric's order) combined as its headline declares: sum, mean or weighted
        mean."""
        headline = self.document["headline"]
        if headline["combine"] == "sum":
            return float(sum(values))
        if headline["combine"] == "mean":
            return float(sum(values)) / len(values)
        weights = [float(headline["weights"][d.key]) for d in self.dimensions]
        return sum(w * v for w, v in zip(weights, values)) / sum(weights)

    def headline(self, scores: Mapping[str, float]) -> float:
        """The 0-100 headline of one judgment's scores: their combination rescaled from its possible range."""
        low, high = self.combined_range()
        value = self.combine([float(scores[d.key]) for d in self.dimensions])
        if (low, high) == HEADLINE:
            return value
        return HEADLINE[0] + (value - low) * (HEADLINE[1] - HEADLINE[0]) / (high - low)

    def headline_text(self) -> str:
        """How the headline is made, as a formula people read (shown on the result page): e.g. "100 x (mean - 1) / 4"."""
        low, high = self.combined_range()
        headline = self.document["headline"]
        names = {"sum": "sum", "mean": "mean", "weighted": "weighted mean"}
        combined = f"{names[headline['combine']]}({', '.join(self.keys)})"
        if headline["combine"] == "weighted":
            combined = "weighted mean(" + ", ".join(f"{_plain(headline['weights'][k])} x {k}" for k in self.keys) + ")"
        if (low, high) == HEADLINE:
            return combined
        shifted = combined if low == 0 else f"({combined} - {_plain(low)})"
        return f"100 x {shifted} / {_plain(high - low)}"

    def reference(self) -> RubricReference:
        """What an evaluation records of its rubric: id, version and the SHA-256 of its canonical form."""
        return {"id": self.id, "version": self.version, "sha256": self.sha256}


def canonical(document: Mapping[str, Any]) -> str:
    """A rubric document's canonical JSON (keys sorted, no spaces): what its SHA-256 is taken of and what is stored."""
    return json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def make(document: Mapping[str, Any], builtin: bool = False) -> Rubric:
    """A Rubric of a checked document, with the hash of its canonical form."""
    text = canonical(document)
    return Rubric(json.loads(text), hashlib.sha256(text.encode("utf-8")).hexdigest(), builtin)


def plain(number: float) -> int | float:
    """A number as an int when it is whole (so that 20.0 reads 20)."""
    return int(number) if float(number).is_integer() else number


def _plain(number: float) -> str:
    """A number without a needless ".0"."""
    return str(plain(number))

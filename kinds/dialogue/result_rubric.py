"""What a dialogue result says of its rubric, as its pages, figures and tables read it.

A result names its rubric in its "rubric" block (result.py writes it with `block`): the reference (id, version,
SHA-256), title, how the headline is made, each dimension's key, labels and scale, and the labels of its yes/no
question (None when it asks none). A result kept before rubrics has no block: it was judged under the default
rubric (personasteer), whose block stands in for it. The pages show the dimensions' labels in the page's language
and each dimension on its own scale; the default rubric's yes/no question keeps the dashboard's own words (the
keep-chatting rate), any other's is named by its label.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, NotRequired, TypedDict

from flask_babel import get_locale

from kinds.dialogue import rubric_store
from kinds.dialogue.prompts import DEFAULT
from kinds.host import Store
from kinds.rubrics import Rubric
from kinds.rubrics.model import LANGUAGES, RubricReference, plain
from translations import _

SHORT_SHA = 12  # characters of a rubric's SHA-256 shown on the pages


class DimensionBlock(TypedDict):
    """One dimension of a rubric block."""

    key: str
    label: dict[str, str]  # by language: "en", "zh", "ko"
    min: float  # its scale (a whole number as an int)
    max: float
    integer: bool  # whether its scores are whole numbers


class RubricBlock(RubricReference):
    """The `rubric` block of a dialogue result: what its pages, figures and tables know of the rubric."""

    title: dict[str, str]  # by language
    headline: str  # how the 0-100 headline is made, as people read it; "total" for bare totals
    dimensions: list[DimensionBlock]
    binary: dict[str, str] | None  # the yes/no question's label by language; None when the rubric asks none


class HasRubric(TypedDict):
    """A result as this module reads it: its rubric block, absent from results kept before rubrics."""

    rubric: NotRequired[RubricBlock]


def block(rubric: Rubric) -> RubricBlock:
    """What a result says of its rubric: its reference (id, version, SHA-256), title, how the headline is made, each
    dimension's key, labels and scale, and its yes/no question's labels (None without one)."""
    dimensions: list[DimensionBlock] = [{"key": d.key, "label": {lang: d.label_in(lang) for lang in LANGUAGES}, "min": plain(d.low),
                   "max": plain(d.high), "integer": d.integer} for d in rubric.dimensions]
    binary = {lang: rubric.binary_label(lang) for lang in LANGUAGES} if rubric.has_binary else None
    return {**rubric.reference(), "title": {lang: rubric.title(lang) for lang in LANGUAGES},
            "headline": rubric.headline_text() if rubric.dimensions else "total", "dimensions": dimensions,
            "binary": binary}


@cache
def default_block() -> RubricBlock:
    """The default rubric's block: what a result kept before rubrics was judged under."""
    return block(DEFAULT)


def of(result: HasRubric) -> RubricBlock:
    """A result's rubric block (the default's for a result kept before rubrics)."""
    return result.get("rubric") or default_block()


def of_record(record: dict, store: Store | None) -> RubricBlock:
    """An evaluation's rubric block: its result's, else (not scored yet) that of the rubric its settings name."""
    if record.get("result"):
        return of(record["result"])
    return block(rubric_store.of_evaluation(store, record))


def keys(rubric: RubricBlock) -> tuple[str, ...]:
    """The keys of a rubric block's dimensions, in its order."""
    return tuple(d["key"] for d in rubric["dimensions"])


def has_binary(rubric: RubricBlock) -> bool:
    """Whether a rubric block asks a yes/no question of every reply."""
    return rubric["binary"] is not None


def is_default(rubric: RubricBlock) -> bool:
    """Whether a rubric block is the default rubric's (no rubric people add may take a built-in's id)."""
    return rubric["id"] == DEFAULT.id


def same_rubric(results: Sequence[HasRubric]) -> bool:
    """Whether every result was judged under one rubric (the same SHA-256)."""
    return len({of(result)["sha256"] for result in results}) <= 1


def language() -> str:
    """The page's language ("en" outside a request)."""
    locale = get_locale()
    return locale.language if locale is not None and locale.language in LANGUAGES else "en"


def _text(texts: dict[str, str], lang: str) -> str:
    return texts.get(lang) or texts["en"]


def title(rubric: RubricBlock, lang: str | None = None) -> str:
    """A rubric block's title in a language (the page's by default)."""
    return _text(rubric["title"], lang or language())


def dimension_labels(rubric: RubricBlock, lang: str | None = None) -> dict[str, str]:
    """Each dimension's label by key, in a language (the page's by default)."""
    lang = lang or language()
    return {d["key"]: _text(d["label"], lang) for d in rubric["dimensions"]}


def scale_text(dimension: DimensionBlock) -> str:
    """A dimension's scale as people read it: "1-7"."""
    return f"{dimension['min']}-{dimension['max']}"


def scales(rubric: RubricBlock) -> dict[str, str]:
    """Each dimension's scale by key, as people read it ("0-20")."""
    return {d["key"]: scale_text(d) for d in rubric["dimensions"]}


def normalised(value: float | None, dimension: DimensionBlock) -> float | None:
    """A dimension's value on 0-100: its place between the scale's min (0) and max (100)."""
    if value is None:
        return None
    return (value - dimension["min"]) * (100 / (dimension["max"] - dimension["min"]))


def described(rubric: RubricBlock, lang: str | None = None) -> str:
    """A rubric as one line: its title, version and the start of its SHA-256."""
    return f"{title(rubric, lang)} {rubric['version']} ({rubric['sha256'][:SHORT_SHA]})"


def yes_no(rubric: RubricBlock, lang: str | None = None) -> dict[str, Any] | None:
    """The words the pages use for a rubric block's yes/no question and its figures (the question, its rate, the
    rate's axis, interval and difference, the BAR(k) curve, the yes and no answers), None when it asks none."""
    if rubric["binary"] is None:
        return None
    if is_default(rubric):
        return {"question": _("Keep chatting"), "rate": _("Keep-chatting rate"),
                "axis": _("Keep-chatting rate (%)"), "rate_ci": _("Keep-chatting rate: confidence interval"),
                "curve": _("BAR(k): share who want to keep chatting"), "difference": _("Keep-chatting rate difference"),
                "yes": _("keep chatting"), "no": _("stop"), "short": _("keep"), "link": _("keep chatting")}
    label = _text(rubric["binary"], lang or language())
    return {"question": label, "rate": _("Share of yes: %(question)s", question=label),
            "axis": _("Share of yes (%)"), "rate_ci": _("Share of yes: confidence interval"),
            "curve": _("BAR(k): share of yes to %(question)s", question=label),
            "difference": _("Share of yes: difference"), "yes": _("yes"), "no": _("no"), "short": _("yes"),
            "link": label}


def page_values(rubric: RubricBlock) -> dict:
    """What a page of a dialogue evaluation is rendered with of its rubric block: the block, its one-line
    description, the dimensions' labels (in the page's language) and scales by key, and the words of its yes/no
    question ("yesno", None without one)."""
    return {"rubric": rubric, "rubric_title": title(rubric), "rubric_text": described(rubric),
            "default_rubric": is_default(rubric),
            "dimension_labels": dimension_labels(rubric), "dimension_scales": scales(rubric), "yesno": yes_no(rubric)}

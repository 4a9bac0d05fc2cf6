"""Rubrics: judging protocols as data (docs/rubrics.md). A rubric file declares what the judge sees, the dimensions
it scores and their scales, how they make the 0-100 headline, an optional yes/no question, the prompt templates
(Jinja2 in a sandbox) and the answer format, from which its parser is generated. The built-ins (builtin/*.yaml) are
files of the same kind (their templates, shipped with the dashboard, rendered outside the sandbox); `personasteer` is
the default."""
from __future__ import annotations

from functools import cache
from pathlib import Path

from kinds.rubrics.judging import messages, parser, prompt, template_text
from kinds.rubrics.model import Dimension, Rubric, canonical, make, text_of
from kinds.rubrics.reading import RubricError, read, schema
from kinds.rubrics.templates import Context

BUILTIN_FOLDER = Path(__file__).with_name("builtin")
DEFAULT = "personasteer"

__all__ = ["BUILTIN_FOLDER", "DEFAULT", "Context", "Dimension", "Rubric", "RubricError", "builtin", "builtins",
           "canonical", "make", "messages", "parser", "prompt", "read", "schema", "template_text", "text_of"]


@cache
def builtins() -> dict[str, Rubric]:
    """The rubrics that come with the dashboard, by id (the default first)."""
    found = {rubric.id: rubric for rubric in (read((BUILTIN_FOLDER / f"{name}.yaml").read_bytes(), builtin=True)
                                              for name in (DEFAULT, "aloe"))}
    return found


def builtin(rubric_id: str = DEFAULT) -> Rubric:
    """A built-in rubric by id (KeyError when there is none)."""
    return builtins()[rubric_id]

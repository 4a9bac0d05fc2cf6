"""The dialogue kind's judge questions, asked under a rubric (kinds/rubrics/, docs/rubrics.md).

Each reply of each method at each round gets a judgment of each question its rubric asks: "fine", the rubric's
dimensions (the built-in `personasteer` rubric: five dimensions scored 0-20 and a \\boxed{} total 0-100) and, when the
rubric has one, "binary", its yes/no question (personasteer's: would this user keep chatting, \\boxed{1} or
\\boxed{0}). `prompt(mode, ctx, language, rubric)` is what the judge engine (judge.Judge) is asked; the rubric's cache
version is part of its cache key. MODES are the values of the judgments table's `mode` column for this kind, and
DIMENSIONS the default rubric's keys of a fine judgment's stored `scores`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from judge import Prompt
from kinds import rubrics
from kinds.rubrics import Rubric

MODES = ("fine", "binary")
DEFAULT = rubrics.builtin()
PROMPT_VERSION = DEFAULT.version
DIMENSIONS = DEFAULT.keys


@dataclass
class DialogueContext:
    """What the judge sees for one method's reply at one round."""

    profile: str
    personality: str
    history: list[tuple[str, str]]  # earlier rounds: (user message, this method's reply)
    user_message: str
    reply: str

    @cached_property  # one for every question about the reply: its quoting id is computed once
    def for_rubric(self) -> rubrics.Context:
        """The same, as a rubric's templates read it."""
        return rubrics.Context(self.profile, self.personality, self.history, self.user_message, self.reply)


def modes(rubric: Rubric) -> tuple[str, ...]:
    """The questions a rubric asks of every reply: its dimensions, and its yes/no question when it has one."""
    return MODES if rubric.has_binary else MODES[:1]


def build_messages(mode: str, ctx: DialogueContext, language: str, rubric: Rubric = DEFAULT) -> list[dict]:
    """The chat messages for one judgment under a rubric (the default's: instructions as system, quoted dialogue as
    user); ValueError for a question or language the rubric has no prompt for."""
    return rubrics.messages(rubric, mode, ctx.for_rubric, language)


def template(mode: str, language: str, rubric: Rubric = DEFAULT) -> str:
    """The template of a question's prompt in a language, the text each judgment fills in: its system and user
    templates, as JSON (the result's provenance keeps its SHA-256)."""
    return rubrics.template_text(rubric, mode, language)


def prompt(mode: str, ctx: DialogueContext, language: str, rubric: Rubric = DEFAULT) -> Prompt:
    """The judge request of one reply for a question ("fine" or "binary") under a rubric."""
    return rubrics.prompt(rubric, mode, ctx.for_rubric, language)


def _parse_fine(text: str) -> tuple[tuple[float, dict] | None, str | None]:
    """(total, dims) or None under the default rubric, with the reason when None."""
    fields, problem = rubrics.parser(DEFAULT, "fine")(text)
    return ((fields["total"], fields["dims"]), None) if fields else (None, problem)


def parse_fine(text: str) -> tuple[float, dict] | None:
    """(total 0-100, five 0-20 scores) from a default-rubric answer, or None when it does not parse."""
    return _parse_fine(text)[0]


def parse_binary(text: str) -> int | None:
    """1 (keep chatting) or 0 from a default-rubric yes/no answer, or None when it does not parse."""
    fields, _problem = rubrics.parser(DEFAULT, "binary")(text)
    return fields["verdict"] if fields else None

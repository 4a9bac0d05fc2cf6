"""A rubric's judge requests: its templates rendered for one reply into chat messages, its generated parser and, for
a JSON answer, the structured-output `response_format`, as one judge.Prompt."""
from __future__ import annotations

import json
from functools import lru_cache

from jinja2 import Template

from judge import Prompt
from kinds.rubrics import answers, templates
from kinds.rubrics.model import QUESTIONS, Rubric
from kinds.rubrics.reading import dimension_values

Part = Template | str | None  # a compiled template, or a text the same for every reply (sent as it is)


def _part(source: str | None, dimensions: list[dict], trusted: bool) -> Part:
    if source is None or not any(mark in source for mark in ("{{", "{%", "{#")):
        return source
    template = templates.compile_template(source, trusted)
    if templates.constant(source):  # rendered once (its answer lines made by a loop over the dimensions, say)
        return templates.render(template, {"dimensions": dimensions})
    return template


@lru_cache(maxsize=64)
def _compiled(rubric: Rubric, question: str, language: str) -> tuple[Part, Part, list[dict], tuple[str, ...]]:
    """A question's system and user templates in a language, its dimensions and the rubric's declared context, made
    once; ValueError (each time: an error is not cached) for a question or language the rubric has none of."""
    _check(rubric, question, language)
    parts = rubric.templates(question, language)
    dimensions = dimension_values(rubric, language)
    trusted = rubric.builtin  # shipped with the dashboard: rendered outside the sandbox (templates.TRUSTED)
    return (_part(parts.get("system"), dimensions, trusted), _part(parts["user"], dimensions, trusted),
            dimensions, rubric.context)


def _text(part: Part, values: dict) -> str | None:
    return part if part is None or isinstance(part, str) else templates.render(part, values)


@lru_cache(maxsize=64)
def parser(rubric: Rubric, question: str) -> answers.Parser:
    """The parser of a rubric's answers to a question (made once)."""
    return answers.parser(rubric, question)


def _check(rubric: Rubric, question: str, language: str) -> None:
    if question not in QUESTIONS or (question == "binary" and not rubric.has_binary):
        raise ValueError(f"the rubric {rubric.id} asks no question (mode) {question!r}")
    if language not in rubric.languages:
        raise ValueError(f"the rubric {rubric.id} has no prompt in the language {language!r}")


def template_text(rubric: Rubric, question: str, language: str) -> str:
    """A question's templates in a language as one JSON text, {"system", "user"}: what a provenance hashes."""
    _check(rubric, question, language)
    return json.dumps(dict(rubric.templates(question, language)), ensure_ascii=False, sort_keys=True)


def messages(rubric: Rubric, question: str, ctx: templates.Context, language: str) -> list[dict]:
    """The chat messages of one judgment: the system template (when the rubric has one) and the user template."""
    system, user, dimensions, declared = _compiled(rubric, question, language)
    values = templates.variables(ctx, declared, dimensions)
    found = [{"role": "system", "content": _text(system, values)}] if system else []
    return found + [{"role": "user", "content": _text(user, values)}]


def prompt(rubric: Rubric, question: str, ctx: templates.Context, language: str) -> Prompt:
    """The judge request of one reply for a question ("fine": the dimensions; "binary": the yes/no question)."""
    return Prompt(messages(rubric, question, ctx, language), parser(rubric, question), rubric.cache_version,
                  answers.response_format(rubric, question))

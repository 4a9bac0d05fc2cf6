"""What people see of a rubric (docs/rubrics.md): its summary, as the API, the CLI and the pages list it; its file, as
the canonical JSON its SHA-256 is taken of or as YAML; and a problem of a rubric file as one line, "line N, field:
message"."""
from __future__ import annotations

from typing import Any

import yaml

from kinds.dialogue.result_rubric import block as rubric_block
from kinds.problems import Problem
from kinds.rubrics import Rubric, canonical, schema
from kinds.rubrics.model import LANGUAGES
from translations import _


def summary(rubric: Rubric) -> dict:
    """A rubric as it is listed: the result's `rubric` block (id, version, SHA-256, title, headline formula,
    dimensions with their scales, yes/no question), each dimension's levels, its description, whether it is built
    in, what the judge sees, its judging languages and answer formats."""
    block = rubric_block(rubric)
    levels = {d.key: dict(d.levels) for d in rubric.dimensions}
    return {**block, "dimensions": [{**d, "levels": levels[d["key"]]} for d in block["dimensions"]],
            "description": {lang: rubric.description(lang) for lang in LANGUAGES}, "builtin": rubric.builtin,
            "context": list(rubric.context), "languages": list(rubric.languages),
            "answer": rubric.answer_format("fine"),
            "binary_answer": rubric.answer_format("binary") if rubric.has_binary else None}


def detail(rubric: Rubric) -> dict:
    """A rubric's summary with its whole document (its canonical content)."""
    return {**summary(rubric), "document": rubric.document}


def json_text(rubric: Rubric) -> str:
    """The rubric's file as its canonical JSON: the text whose SHA-256 is the rubric's."""
    return canonical(rubric.document)


class _Dumper(yaml.SafeDumper):
    """YAML's safe dumper writing a text of several lines as a block (when YAML can keep it exact that way)."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


def yaml_text(rubric: Rubric) -> str:
    """The rubric's file as YAML, its fields in the schema's order: read back, it is the same rubric (the same
    SHA-256)."""
    order = list(schema()["properties"])
    document: dict[str, Any] = {key: rubric.document[key] for key in order if key in rubric.document}
    head = f"# {rubric.id} {rubric.version} (SHA-256 of its canonical JSON: {rubric.sha256})\n"
    return head + yaml.dump(document, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=120)


def problem_line(problem: Problem) -> str:
    """A problem of a rubric file as one line: "line N, field: message" (the line or the field left out when the
    problem has none)."""
    if problem.line and problem.path:
        return _("line %(line)s, %(field)s: %(message)s", line=problem.line, field=problem.path,
                 message=problem.message)
    if problem.line:
        return _("line %(line)s: %(message)s", line=problem.line, message=problem.message)
    return f"{problem.path}: {problem.message}" if problem.path else problem.message

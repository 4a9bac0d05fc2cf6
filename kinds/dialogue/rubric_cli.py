"""`flask --app app rubrics list|show|add|check`: the rubrics from the command line (docs/rubrics.md#commands).

`check FILE` reads a rubric file as the settings page and the API do, and stores nothing; `add FILE` also keeps it.
A refused file exits with status 1, each problem on a line of its own: "FILE: line N, field: message".
"""
from __future__ import annotations

import sys
from pathlib import Path

import click
from flask.cli import with_appcontext

from kinds import host, rubrics
from kinds.dialogue import rubric_files, rubric_store
from kinds.rubrics import Rubric, RubricError
from kinds.rubrics.reading import MAX_BYTES
from translations import _

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group("rubrics")
def rubrics_group() -> None:
    """The rubrics dialogue evaluations are judged under (docs/rubrics.md): list, show, check and add them."""


def _read(path: Path) -> Rubric:
    """The rubric of a file; exit status 1 with each of its problems on stderr."""
    with path.open("rb") as stream:
        data = stream.read(MAX_BYTES + 1)
    try:
        return rubrics.read(data)
    except RubricError as exc:
        for problem in exc.problems:
            click.echo(f"{path}: {rubric_files.problem_line(problem)}", err=True)
        click.echo(_("%(path)s is not a usable rubric; nothing was stored.", path=path), err=True)
        sys.exit(1)


def _dimensions(rubric: Rubric) -> str:
    return ", ".join(f"{d.key} {d.scale_text()}" for d in rubric.dimensions)


@rubrics_group.command("list")
@with_appcontext
def list_command() -> None:
    """Every rubric, the built-ins first, then those added (newest first), one per line, tab-separated: id, version,
    SHA-256 (its first 12 characters), built-in or added, dimensions with their scales, the yes/no question."""
    click.echo("\t".join(("id", "version", "sha256", "origin", "dimensions", "yes/no")))
    for rubric in rubric_store.listed(host.store()):
        click.echo("\t".join((rubric.id, rubric.version, rubric.sha256[:12],
                              "built-in" if rubric.builtin else "added", _dimensions(rubric),
                              rubric.binary_label() or "-")))


@rubrics_group.command("show")
@click.argument("name")
@click.option("--format", "form", type=click.Choice(["text", "yaml", "json"]), default="text", show_default=True,
              help="text: the rubric described; yaml or json: its file (json: the canonical form its SHA-256 is of).")
@with_appcontext
def show_command(name: str, form: str) -> None:
    """One rubric, by id (a built-in, else the newest added under it) or by SHA-256."""
    rubric = rubric_store.find(host.store(), name)
    if rubric is None:
        known = ", ".join(r.id for r in rubric_store.listed(host.store()))
        raise click.ClickException(_("Unknown rubric %(name)s; the rubrics are: %(names)s.", name=repr(name),
                                     names=known))
    if form == "json":
        click.echo(rubric_files.json_text(rubric))
    elif form == "yaml":
        click.echo(rubric_files.yaml_text(rubric), nl=False)
    else:
        click.echo(describe(rubric))


def describe(rubric: Rubric) -> str:
    """A rubric described in a few lines: what it is, what the judge sees, its dimensions and levels, how the
    headline is made, its yes/no question, answer formats and judging languages."""
    lines = [f"{rubric.id} {rubric.version} ({_('built-in') if rubric.builtin else _('added')})",
             f"SHA-256: {rubric.sha256}", f"{_('Title')}: {rubric.title()}"]
    if rubric.description():
        lines.append(f"{_('Description')}: {rubric.description()}")
    lines.append(f"{_('The judge sees')}: {', '.join(rubric.context)}")
    lines.append(f"{_('Dimensions')}:")
    for d in rubric.dimensions:
        scale = _("whole numbers") if d.integer else _("any number")
        lines.append(f"  {d.key} ({d.label_in('en')}): {d.scale_text()}, {scale}")
        lines += [f"    {level}: {meaning}" for level, meaning in d.levels.items()]
    lines.append(f"{_('Headline (0-100)')}: {rubric.headline_text()}")
    lines.append(f"{_('Yes/no question')}: {rubric.binary_label() or '-'}")
    answer = rubric.answer_format("fine") + (f", {_('yes/no')}: {rubric.answer_format('binary')}"
                                             if rubric.has_binary else "")
    lines.append(f"{_('Answer format')}: {answer}")
    lines.append(f"{_('Prompts in')}: {', '.join(rubric.languages)}")
    return "\n".join(lines)


@rubrics_group.command("check")
@click.argument("file", type=FILE)
def check_command(file: Path) -> None:
    """Check a rubric file (YAML or JSON) without storing it: exit status 1 with each problem, "FILE: line N,
    field: message"."""
    rubric = _read(file)
    click.echo(_("%(path)s: the rubric %(id)s %(version)s is valid: %(dimensions)s; SHA-256 %(sha)s.", path=file,
                 id=rubric.id, version=rubric.version, dimensions=_dimensions(rubric), sha=rubric.sha256))


@rubrics_group.command("add")
@click.argument("file", type=FILE)
@with_appcontext
def add_command(file: Path) -> None:
    """Check a rubric file and keep it: evaluations can then be judged under it (`score --rubric ID`); exit status
    1 when it has problems, or when its id is a built-in's or its id and version are kept with other content."""
    rubric = _read(file)
    try:
        rubric_store.add(host.store(), rubric)
    except rubric_store.RubricProblem as exc:
        click.echo(_("error: %(message)s", message=exc), err=True)
        sys.exit(1)
    click.echo(_("Added the rubric %(id)s %(version)s (SHA-256 %(sha)s).", id=rubric.id, version=rubric.version,
                 sha=rubric.sha256))


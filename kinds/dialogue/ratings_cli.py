"""`flask --app app ratings add|export`: people's ratings of a finished dialogue evaluation's replies from the command
line (docs/ratings.md#commands).

`add EVAL FILE` checks a ratings file (CSV or JSONL) as the result page and the API do, keeps its ratings in place of
those of the raters it names and scores the evaluation again; a refused file exits with status 1, each problem on a
line of its own ("FILE: line N column: message"), an evaluation that is unknown, not a dialogue one or still running
with status 2. `export EVAL` writes every rater's ratings as a ratings file.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click
from flask.cli import with_appcontext

from kinds import host
from kinds.dialogue import rating_store, ratings_files, result_rubric
from kinds.dialogue.ratings_files import NotAttached
from kinds.problems import Report
from translations import _

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group("ratings")
def ratings_group() -> None:
    """People's ratings of a dialogue evaluation's replies (docs/ratings.md): add a file of them, export them."""


def _refused(file: Path, report: Report) -> NoReturn:
    """Print every problem of a refused ratings file with its line and column, and exit 1."""
    for p in report.problems:
        where = _("line %(line)s", line=p.line) if p.line else _("file")
        click.echo(f"{file}: {where}{' ' + p.path if p.path else ''}: {p.message}", err=True)
    if report.truncated:
        click.echo(_("(more problems were found; fix these first)"), err=True)
    click.echo(_("The ratings file has problems; nothing was attached."), err=True)
    sys.exit(1)


def _bad_request(exc: NotAttached) -> NoReturn:
    click.echo(_("error: %(message)s", message=exc.args[1]), err=True)
    sys.exit(2 if exc.args[0] in (400, 404, 409) else 1)


def _interval(figure: dict) -> str:
    """An agreement figure with its 95% interval, as the result page shows it."""
    def number(x: float | None) -> str:
        return "—" if x is None else f"{x:.2f}"

    bounds = f" [{number(figure['low'])}, {number(figure['high'])}]" if figure.get("low") is not None else ""
    return number(figure["value"]) + bounds


def headline(human: dict) -> list[str]:
    """The agreement block's headline (`agreement.human`): per judge (and the panel), Spearman's rho of the total and
    Cohen's kappa of the verdict, each with its interval."""
    lines = [_("Agreement with people, over %(n)s replies in %(sessions)s sessions:", n=human["ratings"],
               sessions=human["sessions"])]
    for label, figures in human["by_rater"].items():
        parts = []
        if figures.get("total"):
            parts.append(_("total: Spearman's rho %(value)s", value=_interval(figures["total"]["spearman"])))
        if figures.get("binary"):
            parts.append(_("yes/no: Cohen's kappa %(value)s", value=_interval(figures["binary"]["kappa"])))
        lines.append(f"  {label}: {'; '.join(parts) or '—'}")
    return lines


@ratings_group.command("add")
@click.argument("evaluation_id", metavar="EVAL")
@click.argument("file", type=FILE)
@click.option("--rater", help="Whose ratings the rows without a rater column are (default: the file's name).")
@with_appcontext
def add_command(evaluation_id: str, file: Path, rater: str | None) -> None:
    """Attach a ratings file (CSV or JSONL) to a finished dialogue evaluation, in place of the ratings of the raters
    it names, and score it again; prints what was attached and the agreement with people."""
    store = host.store()
    try:
        with file.open("rb") as stream:
            report, _rows = ratings_files.attach(store, evaluation_id, stream, file.name, rater)
    except NotAttached as exc:
        if exc.args[2] is not None:
            _refused(file, exc.args[2])
        _bad_request(exc)
    for warning in report.warnings:
        click.echo(_("warning: %(message)s", message=warning.message), err=True)
    try:
        document = ratings_files.rescore(evaluation_id)
    except NotAttached as exc:
        _bad_request(exc)
    every = rating_store.people_ratings(store, evaluation_id)
    click.echo(_("Attached %(ratings)s ratings by %(raters)s to evaluation %(id)s; it has %(total)s ratings of "
                 "%(replies)s replies now.", ratings=report.summary["ratings"],
                 raters=", ".join(report.summary["raters"]), id=evaluation_id, total=len(every),
                 replies=len(rating_store.by_reply(every))))
    human = (document.get("agreement") or {}).get("human")
    for line in headline(human) if human else []:
        click.echo(line)


@ratings_group.command("export")
@click.argument("evaluation_id", metavar="EVAL")
@click.option("--format", "form", type=click.Choice(ratings_files.FORMATS), default="csv", show_default=True,
              help="The ratings file's format.")
@click.option("--rater", help="Only this rater's ratings (default: every rater's).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the file here (default: standard output).")
@with_appcontext
def export_command(evaluation_id: str, form: str, rater: str | None, output: Path | None) -> None:
    """Every rater's ratings of a dialogue evaluation as a ratings file (a column `rater`), which `ratings add` takes
    back."""
    store = host.store()
    try:
        evaluation = ratings_files.dialogue_evaluation(store, evaluation_id)
    except NotAttached as exc:
        _bad_request(exc)
    rows = rating_store.people_ratings(store, evaluation_id, rater)
    text = ratings_files.as_file(rows, result_rubric.of_record(evaluation, store), form)
    if output is None:
        click.echo(text, nl=False)
        return
    output.write_text(text, encoding="utf-8")
    click.echo(_("%(rows)s ratings written to %(path)s", rows=len(rows), path=output), err=True)

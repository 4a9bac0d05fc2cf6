"""The deployment's own commands: `flask --app app jobs requeue`, `storage check` and `bundle`."""
from __future__ import annotations

import sys
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from translations import _
from web import get_results, get_runner, get_uploads


@click.group("jobs")
def jobs() -> None:
    """Evaluations run by Celery workers (CELERY_BROKER_URL)."""


@jobs.command("requeue")
@with_appcontext
def requeue() -> None:
    """Enqueue again every queued or running evaluation (and simulation, and evaluation being scored again), after
    the whole deployment (broker included) restarted.

    Safe to repeat and to run while workers work: a block being judged holds its lease, and only judgments still
    pending are asked.
    """
    if "celery" not in current_app.extensions:
        # operators' messages, in English like the worker's logs
        click.echo("error: no broker is configured (CELERY_BROKER_URL); without one the server itself resumes "
                   "unfinished evaluations when it starts.", err=True)
        sys.exit(2)
    ids = get_runner().requeue()
    click.echo(f"{len(ids)} unfinished evaluation(s) enqueued again.", err=True)
    for evaluation_id in ids:
        click.echo(evaluation_id)
    simulations = current_app.extensions["simulations"].requeue()  # the simulations' backend, on the same broker
    if simulations:
        click.echo(f"{len(simulations)} unfinished simulation(s) enqueued again.", err=True)
    for simulation_id in simulations:
        click.echo(simulation_id)
    rescores = current_app.extensions["rescores"].backend.requeue()  # evaluations being scored again
    if rescores:
        click.echo(f"{len(rescores)} unfinished rescore(s) enqueued again.", err=True)
    for evaluation_id in rescores:
        click.echo(evaluation_id)


@click.group("storage")
def storage() -> None:
    """Where uploads, result documents and reference sets are kept (folders, or STORAGE_URL)."""


@storage.command("check")
@click.option("--create", is_flag=True, help="Make the bucket (or folders) when missing.")
@with_appcontext
def storage_check(create: bool) -> None:
    """Write, read and delete a small object where uploads and results go; exit status 1 naming what failed."""
    for place in (get_uploads(), get_results()):
        try:
            place.check(create)
        except Exception as exc:  # the store's own error says what is wrong (no bucket, refused key, no route)
            raise click.ClickException(_("%(place)s cannot be used: %(error)s", place=place, error=exc)) from None
        click.echo(_("%(place)s: writing, reading and deleting work", place=place))


@click.command("bundle")
@click.argument("ids", nargs=-1, required=True)
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("bundle.zip"), show_default=True,
              help="A .zip file, or a folder, to write the bundle to.")
@with_appcontext
def bundle_command(ids: tuple[str, ...], out: Path) -> None:
    """Write a static bundle of finished evaluations (index.html, and per evaluation its offline report and JSON)."""
    from web import bundle

    with current_app.test_request_context("/"):
        try:
            records = bundle.finished(list(ids))
        except bundle.BundleError as exc:
            raise click.ClickException(str(exc)) from exc
        if out.suffix.lower() == ".zip":
            out.parent.mkdir(parents=True, exist_ok=True)
            with out.open("wb") as target:
                bundle.write_zip(records, target)
        else:
            bundle.write_folder(records, out)
    click.echo(_("Bundle of %(count)s evaluations written to %(path)s; open index.html.", count=len(records),
                 path=out))

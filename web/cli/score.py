"""The `flask --app app score FILE` command: the same pipeline as the dashboard, in the foreground."""
from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import NoReturn

import click
from flask.cli import with_appcontext

from client import opened
from common import collector
from kinds import registry
from kinds.kind import JobFailed, Kind, Scored, StartError, TakesAttachments, TakesRatings
from kinds.problems import Report
from pipeline.evaluations import create_evaluation
from pipeline.ingest import InvalidUpload, attach, ingest
from pipeline.judge_requests import RequestError
from translations import _
from web import get_judge_settings, get_rescores, get_runner, get_site, get_store, get_uploads
from web.cli import gate, remote
from web.cli.shared import ProgressBar, check_kind_options, panel


def _score(file: Path, kind: str | None, methods: str | None, out: Path | None, judge_endpoint: str | None,
           batch: bool, judge_model: tuple[str, ...] = (), judges_file: Path | None = None,
           baseline: str | None = None, fail_on_regression: bool = False, metric: str | None = None,
           max_drop: float | None = None, fail_below: tuple[str, ...] = (), ratings: Path | None = None,
           rater: str | None = None, calibrated: bool = False, server: str | None = None, token: str | None = None,
           **kind_values) -> None:
    """Validate and score FILE (or a folder: AgentBench outputs/, a conversation dataset, a mobility groundtruth/
    folder), then print the result document as JSON; with --baseline, the paired differences against that
    evaluation, and exit 1 on a regression (--fail-on-regression) or a headline value below --fail-below (with
    --ratings and --calibrated, a figure calibrated to people's ratings).
    With --server, the same evaluation runs on that deployment (its token: --token or PSB_TOKEN)."""
    thresholds = gate.parse_thresholds(fail_below)
    gate.check_ratings_options(ratings, rater, calibrated, thresholds, baseline, fail_on_regression)
    if server or token:
        remote.score(server, token or os.environ.get("PSB_TOKEN"), file, kind, methods, out, judge_endpoint,
                     batch, judge_model, judges_file, baseline, fail_on_regression, metric, max_drop, fail_below,
                     kind_values, ratings, rater, calibrated)
        return
    if baseline is not None:
        gate.check_baseline(baseline)
    upload_options = {f: kind_values[f] for k in registry.kinds() for f in k.upload_fields if kind_values.get(f)}
    try:
        with opened(file) as (stream, name):
            # the path as given, so that <run>/<agent>/<task>/overall.json names its agent and task
            upload = ingest(stream, name, get_store(), get_uploads(), kind, upload_options)
    except InvalidUpload as exc:
        _refused(file, exc)
    for w in upload["warnings"]:
        click.echo(_("warning: %(message)s", message=w["message"]), err=True)
    chosen = [m.strip() for m in methods.split(",") if m.strip()] if methods else None
    detected = registry.get(upload["kind"])
    try:
        gate.check_kind(detected, baseline, metric, {"--fail-on-regression": fail_on_regression, "--metric": metric,
                                                     "--max-drop": max_drop})
        gate.check_takes_ratings(detected, ratings)
        check_kind_options(detected, kind_values)
        # a kind that is not scored gets no options: create_evaluation says why it is not
        options = detected.cli_start(_attached(detected, upload, kind_values), get_site()) if isinstance(
            detected, Scored) else {}
        judge = {**({"endpoint": judge_endpoint} if judge_endpoint else {}), **({"batch": True} if batch else {})}
        evaluation = create_evaluation(get_store(), upload["id"], chosen, judge, get_judge_settings().environ(),
                                       options, panel(judge_model, judges_file))
    except (RequestError, StartError) as exc:
        click.echo(_("error: %(message)s", message=exc), err=True)
        sys.exit(2)
    click.echo(_("evaluation %(id)s", id=evaluation["id"]), err=True)  # for `bundle`, the API and the pages
    collector.settle_for_judging()
    get_runner().run(evaluation["id"], on_progress=ProgressBar())
    gc.freeze()  # what the run loaded (pandas, ...): not gone through again by the interpreter on its way out
    click.echo("", err=True)
    record = get_store().get_evaluation(evaluation["id"])
    if record is None:  # deleted by another process once it stopped
        click.echo(_("error: %(message)s", message=_("No evaluation has the id %(ids)s.", ids=evaluation["id"])),
                   err=True)
        sys.exit(1)
    if record["status"] not in ("done", "incomplete"):
        click.echo(_("error: the evaluation ended %(status)s: %(message)s", status=record["status"],
                     message=record["error"] or ""), err=True)
        sys.exit(1)
    if ratings is not None:
        record = _rated(detected, record, ratings, rater)
    text = json.dumps(record["result"], ensure_ascii=False, indent=1)
    if out:
        out.write_text(text + "\n", encoding="utf-8")
        click.echo(_("result written to %(path)s", path=out), err=True)
    else:
        click.echo(text)
    failed = gate.run_gate(detected, record, baseline, fail_on_regression, metric, max_drop, thresholds, calibrated)
    if record["status"] == "incomplete":  # the result is written, but a script must not take it for a whole one
        click.echo(_("error: the evaluation ended %(status)s: %(message)s", status=record["status"],
                     message=record["error"] or ""), err=True)
        sys.exit(1)
    if failed:
        sys.exit(1)


def _refused(file: Path, exc: InvalidUpload) -> NoReturn:
    """Print every problem of a refused file with its line, and exit 1."""
    _print_problems(file, exc.report)
    sys.exit(1)


def _print_problems(file: Path, report: Report) -> None:
    """Every problem of a refused file, with its line and field."""
    for p in report.problems:
        where = _("line %(line)s", line=p.line) if p.line else _("file")
        click.echo(f"{file}: {where}{' ' + p.path if p.path else ''}: {p.message}", err=True)
    if report.truncated:
        click.echo(_("(more problems were found; fix these first)"), err=True)


def _rated(kind: Kind, record: dict, ratings: Path, rater: str | None) -> dict:
    """The evaluation with people's ratings from `ratings` attached (TakesRatings) and scored again, in the
    foreground (the rescore job, run here); exit 1, printing every problem, when the file is refused."""
    assert isinstance(kind, TakesRatings)  # check_takes_ratings() refused any other before judging
    try:
        with ratings.open("rb") as stream:
            report = kind.attach_ratings(record["id"], stream, ratings.name, rater, get_site())
    except StartError as exc:
        click.echo(_("error: %(message)s", message=exc), err=True)
        sys.exit(1)
    if not report.ok:
        _print_problems(ratings, report)
        click.echo(_("The ratings file has problems; nothing was attached."), err=True)
        sys.exit(1)
    for w in report.warnings:
        click.echo(_("warning: %(message)s", message=w.message), err=True)
    try:
        get_rescores().now(record["id"])
    except JobFailed as exc:
        click.echo(_("error: %(message)s", message=exc), err=True)
        sys.exit(1)
    click.echo(_("People's ratings of %(file)s attached; the evaluation was scored again.", file=ratings.name),
               err=True)
    return get_store().get_evaluation(record["id"]) or record


def _attached(kind: Scored, upload: dict, values: dict) -> dict:
    """The kind's option values with each file its attachment options name (dialogue's --scores) attached to the
    upload and named by its attachment's id; exit 1, printing its problems, when one is refused."""
    values = dict(values)
    if not isinstance(kind, TakesAttachments):
        return values
    options = {f: values[f] for f in kind.attachment_fields if values.get(f)}
    for name in kind.attachments:
        if values.get(name):
            path = Path(values[name])
            try:
                with path.open("rb") as stream:
                    attachment = attach(stream, path.name, upload, name, get_store(), get_uploads(), options)
            except InvalidUpload as exc:
                _refused(path, exc)
            values[name] = attachment["id"]
            for w in attachment["warnings"]:
                click.echo(_("warning: %(message)s", message=w["message"]), err=True)
    return values


def score_command() -> click.Command:
    """`flask score FILE`, with the options of every kind registered now."""
    params = [click.Argument(["file"], type=click.Path(exists=True, path_type=Path)),
              click.Option(["--kind"], help="Benchmark kind (detected from the file when omitted)."),
              click.Option(["--methods"], help="Comma-separated method names to score (default: all)."),
              click.Option(["--out"], type=click.Path(dir_okay=False, path_type=Path),
                           help="Write the result here instead of stdout."),
              click.Option(["--judge-endpoint"],
                           help="Name of the judge endpoint to use (JUDGE_ENDPOINTS or the settings page)."),
              click.Option(["--judge-model"], multiple=True,
                           help="A judge model; give it twice or more for a panel of judges (dialogue)."),
              click.Option(["--judges-file"], type=click.Path(exists=True, dir_okay=False, path_type=Path),
                           help="A JSON list of judge settings, one object per judge of a panel (dialogue)."),
              click.Option(["--batch"], is_flag=True,
                           help="Send the judgments through the OpenAI Batch API (half price, within 24 hours)."),
              *gate.OPTIONS,
              click.Option(["--server"], metavar="URL",
                           help="Run the evaluation on this deployment (its JSON API) instead of locally."),
              click.Option(["--token"], metavar="TOKEN",
                           help="With --server: an API token (psb_...); default: the PSB_TOKEN variable.")]
    seen = {p.name for p in params}
    scored: list[Scored] = registry.having(Scored)
    for kind in scored:
        params += [option for option in kind.cli_options if option.name not in seen]
        seen |= {option.name for option in kind.cli_options}
    return click.Command("score", callback=with_appcontext(_score), params=params, help=_score.__doc__)

"""`flask --app app score FILE --server URL`: the same evaluation run on a deployment through its JSON API
(client.py), with the local mode's output, result document, gate and exit codes (docs/cli.md)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

import click

from client import ApiError, Client
from kinds import registry
from kinds.kind import Kind, Scored, StartError, TakesAttachments
from pipeline.judge_requests import RequestError
from translations import _
from web.cli import gate
from web.cli.shared import ProgressBar, check_kind_options, panel
from web.compare import COMPARABLE


def _fail(message: str, code: int = 2) -> NoReturn:
    click.echo(_("error: %(message)s", message=message), err=True)
    sys.exit(code)


def _ended(record: dict) -> NoReturn:
    click.echo(_("error: the evaluation ended %(status)s: %(message)s", status=record["status"],
                 message=record["error"] or ""), err=True)
    sys.exit(1)


def _check_baseline(client: Client, baseline: str) -> dict:
    """The baseline's record (its kind and result); exit 2 before any upload when it does not exist or has not
    finished."""
    try:
        record = client.status(baseline)
    except ApiError as exc:
        if exc.status == 404:
            _fail(_("No evaluation has the id %(ids)s.", ids=baseline))
        raise
    if record["status"] not in COMPARABLE:
        _fail(_("The baseline %(id)s has not finished (%(status)s).", id=baseline, status=record["status"]))
    return record


def _start_options(kind: Kind, values: dict, client: Client, upload_id: str) -> dict:
    """The kind's start fields as the API takes them, each file an attachment option names (dialogue's --scores)
    attached to the upload on the server first; StartError for a value that names a local file."""
    if not isinstance(kind, Scored):  # no options: the server says why it is not scored
        return {}
    options = {k: values[k] for k in kind.start_fields if values.get(k) not in (None, False)}
    reference = options.get("reference")
    if isinstance(reference, str) and Path(reference).exists():
        raise StartError(_("--reference with a path works locally only: add the reference set on the server (its "
                           "Reference sets page, or POST /api/references), then give its name."))
    if not isinstance(kind, TakesAttachments):
        return options
    fields = {f: values[f] for f in kind.attachment_fields if values.get(f)}
    for name in kind.attachments:
        if options.get(name):
            path = Path(options[name])
            try:
                attached = client.attach(upload_id, path, name, **fields)
            except ApiError as exc:
                if exc.problems:
                    _print_problems(path, exc)
                    sys.exit(1)
                raise
            for w in attached["warnings"]:
                click.echo(_("warning: %(message)s", message=w["message"]), err=True)
            options[name] = attached["id"]
    return options


def _rated(client: Client, evaluation_id: str, ratings: Path, rater: str | None) -> None:
    """People's ratings of `ratings` attached on the server, once it has scored the evaluation again; exit 1,
    printing every problem, when the file is refused."""
    try:
        client.add_ratings(evaluation_id, ratings, rater)
    except ApiError as exc:
        if not exc.problems:
            raise
        _print_problems(ratings, exc)
        click.echo(_("The ratings file has problems; nothing was attached."), err=True)
        sys.exit(1)
    click.echo(_("People's ratings of %(file)s attached; the evaluation was scored again.", file=ratings.name),
               err=True)


def _print_problems(file: Path, exc: ApiError) -> None:
    for p in exc.problems:
        where = _("line %(line)s", line=p["line"]) if p.get("line") else _("file")
        click.echo(f"{file}: {where}{' ' + p['path'] if p.get('path') else ''}: {p.get('message', '')}", err=True)
    if exc.truncated:
        click.echo(_("(more problems were found; fix these first)"), err=True)


def score(server: str | None, token: str | None, file: Path, kind: str | None, methods: str | None,
          out: Path | None, judge_endpoint: str | None, batch: bool, judge_model: tuple[str, ...],
          judges_file: Path | None, baseline: str | None, fail_on_regression: bool, metric: str | None,
          max_drop: float | None, fail_below: tuple[str, ...], kind_values: dict, ratings: Path | None = None,
          rater: str | None = None, calibrated: bool = False) -> None:
    """Score FILE on the deployment at `server` as `flask score` does locally (people's ratings of --ratings
    attached once it is judged, and it scored again): exit 1 for a rejected file, a failed or incomplete evaluation
    or a failed gate, 2 for a bad request or a server that cannot be used."""
    if not server:
        _fail(_("--token needs --server (the deployment to run the evaluation on)."))
    thresholds = gate.parse_thresholds(fail_below)
    try:
        client = Client(server, token)
    except ValueError as exc:
        _fail(str(exc))
    upload_fields = {f: kind_values[f] for k in registry.kinds() for f in k.upload_fields if kind_values.get(f)}
    try:
        baseline_record = _check_baseline(client, baseline) if baseline is not None else None
        judges = panel(judge_model, judges_file)
        upload = client.upload(file, kind, **upload_fields)
    except ApiError as exc:
        if exc.problems:
            _print_problems(file, exc)
            sys.exit(1)
        _fail(str(exc))
    except RequestError as exc:
        _fail(str(exc))
    for w in upload["warnings"]:
        click.echo(_("warning: %(message)s", message=w["message"]), err=True)
    detected = registry.get(upload["kind"])
    try:
        gate.check_kind(detected, baseline, metric, {"--fail-on-regression": fail_on_regression, "--metric": metric,
                                                     "--max-drop": max_drop},
                        baseline_record["kind"] if baseline_record else None,
                        baseline_record.get("result") if baseline_record else None)
        gate.check_takes_ratings(detected, ratings)
        check_kind_options(detected, kind_values)
        options = _start_options(detected, kind_values, client, upload["id"])
        judge = {**({"endpoint": judge_endpoint} if judge_endpoint else {}), **({"batch": True} if batch else {})}
        chosen = [m.strip() for m in methods.split(",") if m.strip()] if methods else None
        started = client.evaluate(upload["id"], **({"methods": chosen} if chosen else {}),
                                  **({"judge": judge} if judge else {}), **({"judges": judges} if judges else {}),
                                  **options)
    except (ApiError, StartError) as exc:
        _fail(str(exc))
    click.echo(_("evaluation %(id)s", id=started["id"]), err=True)  # for the API and the pages
    try:
        record = client.wait(started["id"], on_progress=ProgressBar())
        click.echo("", err=True)
        if record["status"] not in ("done", "incomplete"):
            _ended(record)
        if ratings is not None:
            _rated(client, started["id"], ratings, rater)
        result = client.result(started["id"])
        rows = client.compare([baseline, started["id"]], baseline=baseline)["paired"] if baseline else None
    except ApiError as exc:
        _fail(str(exc), 1)
    text = json.dumps(result, ensure_ascii=False, indent=1)
    if out:
        out.write_text(text + "\n", encoding="utf-8")
        click.echo(_("result written to %(path)s", path=out), err=True)
    else:
        click.echo(text)
    failed = False
    if baseline is not None and rows is not None:
        results = [baseline_record["result"], result] if baseline_record and baseline_record.get("result") else None
        failed = gate.report_paired(detected, rows, baseline, fail_on_regression, metric, max_drop, results)
    gated = gate.check_calibrated(result, thresholds) if calibrated else gate.check_thresholds(result, thresholds)
    failed = gated or failed
    if record["status"] == "incomplete":  # the result is written, but a script must not take it for a whole one
        _ended(record)
    if failed:
        sys.exit(1)

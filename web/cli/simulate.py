"""The `flask --app app simulate PERSONAS ...` command: a simulation in the foreground, its dialogue file(s) written
where asked, and with --score their evaluations."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click
from flask.cli import with_appcontext

from pipeline.ingest import InvalidUpload, ingest
from pipeline.judge_requests import RequestError
from pipeline.thread_backend import ThreadBackend
from simulate.costs import report
from simulate.output import file_part, outputs
from simulate.plan import Plan
from simulate.simulations import Simulations
from translations import _, duration
from web import get_judge_settings, get_runner, get_store, get_uploads
from web.cli.shared import ProgressBar


class TurnsBar:
    """A one-line progress line on stderr: turns done of the total, failures, pace and time left."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.started = time.monotonic()
        self.first: int | None = None

    def __call__(self, progress: dict) -> None:
        done = progress["done"]
        self.first = done if self.first is None else self.first
        elapsed = time.monotonic() - self.started
        rate = (done - self.first) / elapsed if elapsed > 0 else 0
        eta = duration((self.total - done) / rate) if rate else "—"
        click.echo("\r" + _("%(done)s/%(total)s turns, %(failed)s failed · %(rate)s turns/s · about %(eta)s left",
                            done=done, total=self.total, failed=progress["failed"], rate=f"{rate:.1f}", eta=eta)
                   + "  ", nl=False, err=True)


def _speaker(value: str) -> dict:
    """MODEL[@ENDPOINT] as a speaker's model and endpoint."""
    model, _at, endpoint = value.rpartition("@") if "@" in value else (value, "", "")
    return {"model": model, **({"endpoint": endpoint} if endpoint else {})}


def _named(values: tuple[str, ...], what: str) -> list[tuple[str, str]]:
    """NAME=VALUE options as pairs; a usage error for any other form."""
    pairs = []
    for value in values:
        name, equals, rest = value.partition("=")
        if not equals or not name.strip() or not rest.strip():
            raise click.UsageError(_("%(option)s takes NAME=VALUE, got %(value)s", option=what, value=repr(value)))
        pairs.append((name.strip(), rest.strip()))
    return pairs


def _personas(personas: str) -> dict:
    """The request's personas: the built-in set, or the file at that path, uploaded first (exit 1 when invalid)."""
    if personas == "builtin":
        return {"personas": "builtin"}
    path = Path(personas)
    if not path.is_file():
        raise click.UsageError(_("PERSONAS is 'builtin' or the path of a personas or dialogue file; %(path)s is "
                                 "neither.", path=personas))
    try:
        with path.open("rb") as stream:
            upload = ingest(stream, path.name, get_store(), get_uploads())
    except InvalidUpload as exc:
        for p in exc.report.problems:
            where = _("line %(line)s", line=p.line) if p.line else _("file")
            click.echo(f"{path}: {where}{' ' + p.path if p.path else ''}: {p.message}", err=True)
        sys.exit(1)
    return {"personas_upload_id": upload["id"]}


def print_costs(simulation: dict) -> None:
    """Per speaker (the simulator, each method, each judge) and in all: the calls, tokens and cost spent, each beside
    the simulation's estimate, on stderr."""
    costs = report(get_store(), simulation, get_judge_settings().environ())
    total = {"role": "total", "estimate": costs["total"]["estimate"], "actual": costs["total"]["actual"]}
    for row in [*costs["rows"], total]:
        who = _("All speakers") if row["role"] == "total" else "%s (%s@%s)" % (
            _("Simulated user") if row["role"] == "simulator" else _("Judge: %(name)s", name=row["name"])
            if row["role"] == "judge" else row["name"], row["model"], row["endpoint"])
        spent, estimated = row["actual"], row["estimate"] or {}
        click.echo(_("%(who)s: %(calls)s calls (estimated %(calls_estimated)s), %(prompt)s prompt tokens (at most "
                     "%(prompt_estimated)s), %(completion)s completion tokens (at most %(completion_estimated)s), cost "
                     "%(cost)s (at most %(cost_estimated)s)", who=who, calls=_count(spent.get("calls")),
                     calls_estimated=_count(estimated.get("calls")), prompt=_count(spent.get("prompt_tokens")),
                     prompt_estimated=_count(estimated.get("prompt_tokens")),
                     completion=_count(spent.get("completion_tokens")),
                     completion_estimated=_count(estimated.get("completion_tokens")), cost=_money(spent.get("cost")),
                     cost_estimated=_money(estimated.get("cost"))), err=True)


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def out_path(out: Path, method: str | None) -> Path:
    """Where a file is written: --out itself, or (independent protocol) --out's name with '-<method>' added."""
    return out if method is None else out.with_name(f"{out.stem}-{file_part(method)}{out.suffix}")


@click.command("simulate")
@click.argument("personas")
@click.option("--simulator", required=True, metavar="MODEL[@ENDPOINT]", help="The model that plays the user.")
@click.option("--method", "methods", multiple=True, required=True, metavar="NAME=MODEL[@ENDPOINT]",
              help="A method to talk to; give it once per method (1 to 8).")
@click.option("--rounds", type=int, required=True, help="Rounds of each conversation (1 to 20).")
@click.option("--protocol", type=click.Choice(["shared", "independent"]), default="shared", show_default=True,
              help="shared: one conversation per persona, every method answering; independent: one per method.")
@click.option("--reference", help="The method the simulator talks with (shared protocol; default the first).")
@click.option("--system-prompt", "system_prompts", multiple=True, metavar="NAME=FILE",
              help="A method's system prompt, read from FILE.")
@click.option("--language", type=click.Choice(["en", "zh"]), default="en", show_default=True,
              help="The simulated user's language.")
@click.option("--simulator-temperature", type=float, help="The simulator's temperature (default 0.7).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The dialogue file to write (independent protocol: one per method, named FILE-<method>.jsonl).")
@click.option("--score", is_flag=True, help="Score the file(s) with the judge when the simulation is done.")
@click.option("--judge-endpoint", help="The judge endpoint that scores (with --score).")
@click.option("--rubric", metavar="ID", help="The rubric the files are scored under, by id or SHA-256 (with --score; "
                                             "default: personasteer).")
@with_appcontext
def simulate_command(personas: str, simulator: str, methods: tuple[str, ...], rounds: int, protocol: str,
                     reference: str | None, system_prompts: tuple[str, ...], language: str,
                     simulator_temperature: float | None, out: Path, score: bool, judge_endpoint: str | None,
                     rubric: str | None) -> None:
    """Simulated users (PERSONAS: a personas or dialogue file, or 'builtin') talk with the methods for --rounds
    rounds; the dialogue file is written to --out, and scored with --score."""
    prompts = {}
    for name, file in _named(system_prompts, "--system-prompt"):
        try:
            prompts[name] = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(_("%(path)s cannot be read: %(problem)s", path=file, problem=exc)) from exc
    named = _named(methods, "--method")
    unknown = sorted(set(prompts) - {name for name, _model in named})
    if unknown:
        raise click.UsageError(_("--system-prompt names no method given with --method: %(names)s",
                                 names=", ".join(unknown)))
    request = {**_personas(personas), "rounds": rounds, "protocol": protocol, "score": score,
               "simulator": {**_speaker(simulator), "language": language,
                             **({"temperature": simulator_temperature} if simulator_temperature is not None else {})},
               "methods": [{"name": name, **_speaker(model), **({"system_prompt": prompts[name]}
                                                                 if name in prompts else {})} for name, model in named],
               **({"reference": reference} if reference else {}),
               **({"judge": {"endpoint": judge_endpoint}} if judge_endpoint else {}),
               **({"rubric": rubric} if rubric else {})}
    runner = ThreadBackend(Simulations(get_store(), get_uploads(), None, get_judge_settings().environ))
    try:
        simulation = runner.job.create(request)
    except RequestError as exc:
        click.echo(_("error: %(message)s", message=exc), err=True)
        sys.exit(2)
    click.echo(_("simulation %(id)s", id=simulation["id"]), err=True)
    runner.run(simulation["id"], on_progress=TurnsBar(simulation["total"]))
    click.echo("", err=True)
    record = get_store().get_simulation(simulation["id"])
    if record is None or record["status"] == "failed":
        if record is not None:
            print_costs(record)
        click.echo(_("error: the simulation ended %(status)s: %(message)s", status="failed",
                     message=(record or {}).get("error") or ""), err=True)
        sys.exit(1)
    plan = Plan.from_settings(record["settings"])
    kept = {(t["conversation"], t["round"], t["speaker"]): t for t in get_store().simulation_turns(record["id"])}
    for output in outputs(record["id"], plan, kept):
        if output.sessions:
            path = out_path(out, output.method)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(output.content())
            click.echo(_("%(count)s sessions written to %(path)s", count=len(output.sessions), path=path), err=True)
    for evaluation_id in record["evaluation_ids"]:
        click.echo(_("evaluation %(id)s", id=evaluation_id), err=True)
        get_runner().run(evaluation_id, on_progress=ProgressBar())
        click.echo("", err=True)
    print_costs(record)
    if record["status"] != "done":
        click.echo(_("error: the simulation ended %(status)s: %(message)s", status=record["status"],
                     message=record["error"] or ""), err=True)
        sys.exit(1)

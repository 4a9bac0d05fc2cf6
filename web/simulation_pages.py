"""The simulations' pages: the Run page (/simulations/new: personas, simulator, methods, rounds, protocol, judge, and
the estimated calls and cost before starting; the rubric the files are scored under) and a simulation's status page (/simulations/<id>: progress, the
transcripts so far, its uploads and evaluations)."""
from __future__ import annotations

from collections.abc import Mapping

from flask import Blueprint, abort, redirect, render_template, request, url_for

from kinds import registry
from kinds.figures import method_colours
from kinds.host import csv_response
from kinds.kind import HoldsPersonas
from kinds.search import BadQuery, compile_pattern
from pipeline.judge_requests import RequestError
from simulate.estimate import estimate
from simulate.output import dialogue_kind, outputs
from simulate.plan import Plan
from simulate.request import DEFAULTS, settings_of
from simulate.transcripts import conversation_rounds, sample_rows
from web import get_judge_settings, get_site, get_store, get_uploads
from web.pages import judge_endpoint_list
from web.simulations_api import get_simulations, progress, simulation_status

bp = Blueprint("simulation_pages", __name__)
METHOD_ROWS = 4  # method rows on the Run page (a request may have up to 8)
TRANSCRIPTS_PER_PAGE = 20
SAMPLES_PER_PAGE = 50


def _number(value: str | None) -> float | int | str | None:
    """A form's number as a number (None when blank; the text itself when it is not one, for the checks to name)."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _speaker(form: Mapping, prefix: str) -> dict:
    """A speaker's fields from the form, blank ones left out."""
    fields = {"model": (form.get(f"{prefix}model") or "").strip(), "endpoint": form.get(f"{prefix}endpoint") or None,
              "temperature": _number(form.get(f"{prefix}temperature")),
              "max_tokens": _number(form.get(f"{prefix}max_tokens"))}
    return {k: v for k, v in fields.items() if v not in (None, "")}


def request_of(form: Mapping) -> dict:
    """The API request the Run page's form makes (rows without a name and a model are left out)."""
    methods = []
    for row in range(METHOD_ROWS):
        name = (form.get(f"method-{row}-name") or "").strip()
        method = _speaker(form, f"method-{row}-")
        if name or method.get("model"):
            prompt = (form.get(f"method-{row}-system_prompt") or "").strip()
            methods.append({"name": name, **method, **({"system_prompt": prompt} if prompt else {})})
    source = form.get("personas") or ""
    body: dict = {"personas": "builtin"} if source == "builtin" else {"personas_upload_id": source}
    body.update(simulator={**_speaker(form, "simulator-"), "language": form.get("language") or "en"},
                methods=methods, rounds=_number(form.get("rounds")), protocol=form.get("protocol") or "shared",
                score=bool(form.get("score")))
    if form.get("reference"):
        body["reference"] = form["reference"].strip()
    if form.get("score") and form.get("judge_endpoint"):
        body["judge"] = {"endpoint": form["judge_endpoint"]}
    if form.get("score") and form.get("rubric"):
        body["rubric"] = form["rubric"]
    return body


def _run_page(status: int = 200, **context):
    """The Run page with what its form needs."""
    return render_template("simulation_new.html", endpoints=judge_endpoint_list(), rows=range(METHOD_ROWS),
                           uploads=get_store().uploads_of_kinds(
                               [kind.name for kind in registry.having(HoldsPersonas)]), form=request.form,
                           defaults=DEFAULTS, rubrics=dialogue_kind().start_choices(get_site()).get("rubric", []),
                           **context), status


@bp.get("/simulations/new")
def new():
    """The Run page."""
    return _run_page()


@bp.post("/simulations/new")
def start():
    """Estimate the calls and cost of the form's simulation, or start it and go to its page."""
    body = request_of(request.form)
    environ = get_judge_settings().environ()
    if request.form.get("action") == "estimate":
        try:
            found = estimate(settings_of(get_store(), get_uploads(), body, environ), environ, get_store())
        except ValueError as exc:  # a RequestError, or a price that is not a number
            return _run_page(400, error=str(exc))
        return _run_page(estimate=found)
    try:
        simulation = get_simulations().job.create(body)
    except RequestError as exc:
        return _run_page(400, error=str(exc))
    get_simulations().start(simulation["id"])
    return redirect(url_for("simulation_pages.status", simulation_id=simulation["id"]))


@bp.get("/simulations")
def index():
    """The simulations, newest first."""
    simulations = get_store().list_simulations()
    return render_template("simulations.html", simulations=simulations,
                           progress={s["id"]: progress(s) for s in simulations})


@bp.get("/simulations/<simulation_id>")
def status(simulation_id: str):
    """A simulation's progress, transcripts so far, and the uploads and evaluations it made."""
    simulation = get_store().get_simulation(simulation_id) or abort(404)
    plan = Plan.from_settings(simulation["settings"])
    kept = _kept(simulation_id)
    page = max(1, request.args.get("page", 1, type=int) or 1)
    conversations = plan.conversations()
    shown = conversations[(page - 1) * TRANSCRIPTS_PER_PAGE: page * TRANSCRIPTS_PER_PAGE]
    transcripts = [{"conversation": c, "rounds": conversation_rounds(plan, c, kept)} for c in shown]
    uploads = [get_store().get_upload(u) for u in simulation["upload_ids"]]
    return render_template("simulation.html", simulation=simulation, plan=plan, info=simulation_status(simulation),
                           transcripts=transcripts, page=page,
                           pages=max(1, -(-len(conversations) // TRANSCRIPTS_PER_PAGE)),
                           uploads=[u for u in uploads if u], left_out=sorted({
                               p for out in outputs(simulation_id, plan, kept) for p in out.left_out})
                           if simulation["status"] in ("done", "incomplete") else [])


@bp.get("/simulations/<simulation_id>/samples")
def samples(simulation_id: str):
    """The sample grid of a simulation, readable while it runs: a row per persona and round, the methods side by
    side; filtered by text (`q`, a regular expression) or failed turns (`status=failed`), methods chosen with
    `methods=A,B`, 50 rows a page."""
    simulation = get_store().get_simulation(simulation_id) or abort(404)
    plan = Plan.from_settings(simulation["settings"])
    names = [m.name for m in plan.methods]
    rows, error = sample_rows(plan, _kept(simulation_id)), None
    try:
        pattern = compile_pattern(request.args.get("q", ""))
    except BadQuery as exc:
        pattern, error = None, str(exc)
    if pattern is not None:
        rows = [r for r in rows if r.matches(pattern)]
    failed_only = request.args.get("status") == "failed"
    if failed_only:
        rows = [r for r in rows if r.failed()]
    chosen = [m for m in request.args.get("methods", "").split(",") if m in names] or names
    pages = max(1, -(-len(rows) // SAMPLES_PER_PAGE))
    page = min(max(1, request.args.get("page", 1, type=int) or 1), pages)
    toggles = [{"name": m, "shown": m in chosen, "param": ",".join(
        n for n in names if (n in chosen) != (n == m)) or m} for m in names]
    return render_template("simulation_samples.html", simulation=simulation, plan=plan,
                           shown=chosen, toggles=toggles, colours=method_colours(names), count=len(rows), page=page,
                           pages=pages, error=error, filtered=pattern is not None or failed_only,
                           rows=rows[(page - 1) * SAMPLES_PER_PAGE: page * SAMPLES_PER_PAGE])


def _kept(simulation_id: str) -> dict:
    """The turns kept so far, by (conversation, round, speaker)."""
    return {(t["conversation"], t["round"], t["speaker"]): t for t in get_store().simulation_turns(simulation_id)}


USAGE_COLUMNS = ("speaker", "model", "endpoint", "turns", "attempts", "cache_hits", "failed", "prompt_tokens",
                 "completion_tokens", "cost")
TURN_COLUMNS = ("persona_id", "method", "round", "speaker", "status", "text", "problem", "attempts", "cached",
                "prompt_tokens", "completion_tokens", "model", "endpoint")


@bp.get("/simulations/<simulation_id>/usage.csv")
def usage_csv(simulation_id: str):
    """Calls, tokens and cost of the simulator and of each method, one row per speaker and model."""
    simulation = get_store().get_simulation(simulation_id) or abort(404)
    rows = simulation_status(simulation)["usage"]
    return csv_response(USAGE_COLUMNS, ([row[c] for c in USAGE_COLUMNS] for row in rows),
                        f"simulation-{simulation_id}-usage.csv")


@bp.get("/simulations/<simulation_id>/turns.csv")
def turns_csv(simulation_id: str):
    """Every turn kept so far: its persona, conversation's method (independent protocol), round, speaker, text,
    problem, calls and tokens."""
    simulation = get_store().get_simulation(simulation_id) or abort(404)
    conversations = {c.index: c for c in Plan.from_settings(simulation["settings"]).conversations()}
    independent = simulation["settings"]["protocol"] == "independent"

    def rows():
        for turn in get_store().simulation_turns(simulation_id):
            c = conversations[turn["conversation"]]
            yield [c.persona.persona_id, c.methods[0] if independent else "", turn["round"], turn["speaker"],
                   turn["status"], turn["text"], turn["problem"] or "", turn["attempts"], turn["cached"],
                   turn["prompt_tokens"], turn["completion_tokens"], turn["model"], turn["endpoint"]]

    return csv_response(TURN_COLUMNS, rows(), f"simulation-{simulation_id}-turns.csv")


@bp.post("/simulations/<simulation_id>/<any(cancel, resume, 'rerun-failed'):action>")
def control(simulation_id: str, action: str):
    """Cancel, resume or ask the failed turns again, from the status page."""
    get_store().get_simulation(simulation_id) or abort(404)
    if action == "cancel":
        get_simulations().cancel(simulation_id)
    else:
        get_simulations().resume_one(simulation_id, rerun_failed=action == "rerun-failed")
    return redirect(url_for("simulation_pages.status", simulation_id=simulation_id))


"""The simulations' JSON API (docs/simulation.md): start one, follow it, cancel and resume it."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import Blueprint, abort, current_app, jsonify, url_for

from common.contract import Error, operation
from judge import cost
from pipeline.job import Backend
from pipeline.judge_requests import RequestError
from simulate.costs import COST_DIGITS, report, speaker_prices
from simulate.simulations import Simulations
from translations import _
from web import get_judge_settings, get_store
from web import schemas as S

bp = Blueprint("simulations_api", __name__, url_prefix="/api/simulations")


def get_simulations() -> Backend[Simulations]:
    """The application's simulations' backend (pipeline/job.py)."""
    return current_app.extensions["simulations"]


def progress(simulation: dict) -> dict:
    """Turns asked of the total, failed and answered by the cache; while running, turns per second and the seconds
    left at that pace."""
    counts = get_store().simulation_progress(simulation["id"])
    out = {"done": counts["done"], "total": simulation["total"], "failed": counts["failed"],
           "cached": counts["cached"], "rate": None, "eta_s": None}
    if simulation["status"] == "running" and simulation.get("run_started_at"):
        elapsed = (datetime.now(timezone.utc) - datetime.fromisoformat(simulation["run_started_at"])).total_seconds()
        done = counts["done"] - (simulation.get("run_done_at_start") or 0)
        if elapsed > 0 and done > 0:
            out["rate"] = round(done / elapsed, 3)
            out["eta_s"] = round(max(0, simulation["total"] - counts["done"]) / out["rate"], 1)
    return out


def simulation_status(simulation: dict) -> dict:
    """What the API says of a simulation: status, progress, the uploads it wrote and the evaluations scoring them,
    the calls, tokens and cost of each speaker's model (each at its endpoint's prices, when they are set), and its
    costs: per speaker (the simulator, each method, each judge), the estimate made before it started beside what it
    has spent so far."""
    environ = get_judge_settings().environ()
    price = speaker_prices(simulation, environ)
    usage = [{**{k: row[k] for k in ("speaker", "model", "endpoint", "turns", "attempts", "cache_hits", "failed",
                                     "prompt_tokens", "completion_tokens")},
              "cost": _rounded(cost({"prompt_tokens": row["prompt_tokens"] or 0,
                                     "completion_tokens": row["completion_tokens"] or 0}, price.get(row["speaker"])))}
             for row in get_store().simulation_usage(simulation["id"])]
    settings = simulation["settings"]
    return {"id": simulation["id"], "status": simulation["status"], "error": simulation["error"],
            "created_at": simulation["created_at"], "finished_at": simulation["finished_at"],
            "progress": progress(simulation), "upload_ids": simulation["upload_ids"],
            "evaluation_ids": simulation["evaluation_ids"], "protocol": settings["protocol"],
            "rounds": settings["rounds"], "methods": [m["name"] for m in settings["methods"]],
            "personas": len(settings["personas"]), "rubric": settings.get("rubric"), "usage": usage,
            "costs": report(get_store(), simulation, environ),
            "url": url_for("simulation_pages.status", simulation_id=simulation["id"], _external=True)}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, COST_DIGITS)


@bp.post("")
@operation("Start a simulation: simulated users talk with the methods", {202: S.Started, 400: Error},
           body=S.SimulationRequest)
def create(body: dict):
    """Start a simulation: `{personas | personas_upload_id, simulator, methods, rounds, protocol, reference, score,
    judge}`; 202 with its id and page."""
    try:
        simulation = get_simulations().job.create(body)
    except RequestError as exc:
        return jsonify({"error": str(exc)}), 400
    get_simulations().start(simulation["id"])
    return jsonify({"id": simulation["id"], "status": simulation["status"],
                    "url": url_for("simulation_pages.status", simulation_id=simulation["id"], _external=True)}), 202


@bp.get("")
@operation("Simulations, newest first", {200: S.SimulationList})
def list_simulations():
    """Simulations, newest first."""
    return jsonify([simulation_status(s) for s in get_store().list_simulations()])


@bp.get("/<simulation_id>")
@operation("A simulation's status, progress, files, evaluations and usage", {200: S.Simulation})
def get_simulation(simulation_id: str):
    """A simulation's status, progress, uploads and evaluations."""
    simulation = get_store().get_simulation(simulation_id) or abort(404)
    return jsonify(simulation_status(simulation))


@bp.post("/<simulation_id>/cancel")
@operation("Stop a queued or running simulation", {202: S.Simulation, 409: Error})
def cancel(simulation_id: str):
    """Stop a queued or running simulation; the turns kept so far stay for a resume."""
    get_store().get_simulation(simulation_id) or abort(404)
    if not get_simulations().cancel(simulation_id):
        return jsonify({"error": _("This simulation is not running.")}), 409
    return jsonify(simulation_status(get_store().get_simulation(simulation_id) or abort(404))), 202


@bp.post("/<simulation_id>/resume")
@operation("Go on with a cancelled or failed simulation", {202: S.Simulation, 409: Error})
def resume(simulation_id: str):
    """Go on with a cancelled or failed simulation from the turns kept."""
    return _restart(simulation_id, rerun_failed=False)


@bp.post("/<simulation_id>/rerun-failed")
@operation("Ask a simulation's failed turns again, and go on", {202: S.Simulation, 409: Error})
def rerun_failed(simulation_id: str):
    """Ask the failed turns of an incomplete (or cancelled, failed) simulation again, and go on."""
    return _restart(simulation_id, rerun_failed=True)


def _restart(simulation_id: str, rerun_failed: bool):
    simulation = get_store().get_simulation(simulation_id) or abort(404)
    if not get_simulations().resume_one(simulation_id, rerun_failed=rerun_failed):
        if simulation["status"] in ("done", "incomplete"):
            return jsonify({"error": _("This simulation has finished: there is nothing left to resume.")}), 409
        return jsonify({"error": _("This simulation is still running.")}), 409
    return jsonify(simulation_status(get_store().get_simulation(simulation_id) or abort(404))), 202

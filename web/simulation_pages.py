"""The simulations' pages: the Run page (/simulations/new) and a simulation's status page (/simulations/<id>)."""
from __future__ import annotations

from flask import Blueprint, abort, render_template

from web import get_store

bp = Blueprint("simulation_pages", __name__)


@bp.get("/simulations/<simulation_id>")
def status(simulation_id: str):
    """A simulation's progress, transcripts so far, and the uploads and evaluations it made."""
    simulation = get_store().get_simulation(simulation_id) or abort(404)
    return render_template("simulation.html", simulation=simulation)

"""The conversation kind's own route: each analysis figure's table as JSON (the `.csv` downloads' rows as records)."""
from __future__ import annotations

from flask import Blueprint, abort, jsonify

from common.downloads import attachment
from kinds import host
from kinds.conversation.analysis_tables import TABLES, records

bp = Blueprint("conversation_figures", __name__)


@bp.get("/evaluations/<evaluation_id>/figures/<name>.json")
def figure_json(evaluation_id: str, name: str):
    """One analysis figure's data ({"figure", "rows"}, every label set, model and rule); 404 without it."""
    record = host.store().get_evaluation(evaluation_id) or abort(404)
    block = (record.get("result") or {}).get("analysis") if record.get("kind") == "conversation" else None
    make = TABLES.get(name)
    if block is None or make is None:
        abort(404)
    response = jsonify({"figure": name, "rows": records(make(block))})
    response.headers["Content-Disposition"] = attachment(f"{evaluation_id}-{name}.json")
    return response

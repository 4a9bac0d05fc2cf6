"""The conversation kind's own route: each analysis figure's table as JSON (the `.csv` downloads' rows as records)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, jsonify

from common.contract import Answer, Error, operation
from common.downloads import attachment
from kinds import host
from kinds.conversation.analysis_tables import TABLES, records

bp = Blueprint("conversation_figures", __name__)


class FigureTable(Answer):
    """An analysis figure's numbers: its name and its table's rows as records (column: value)."""

    figure: str
    rows: list[dict[str, Any]]


@bp.get("/evaluations/<evaluation_id>/figures/<name>.json")
@operation("One analysis figure's numbers of a conversation evaluation (behaviour, label_checks, hallucination or "
           "quality), for every label set, assistant model and rule", {200: FigureTable, 404: Error},
           tags=("evaluations",))
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

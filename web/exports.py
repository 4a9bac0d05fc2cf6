"""Downloads of a result: the JSON document, its tables as CSV (cells neutralised by web/safe_csv.py), the report."""
from __future__ import annotations

import io
import json

from pathlib import Path

from flask import Blueprint, Response, abort, render_template

import charts
from benchmarks.agentbench import STATUS_GROUPS
from benchmarks.conversation_annotation import QUESTIONNAIRE_FIELDS
from benchmarks.mobility import KEYS as MOBILITY_KEYS
from evaluator import ANNOTATION_SCALES, DIMENSIONS
from web import get_store, security_headers
from web.safe_csv import SafeWriter, csv_line
from web.payloads import result_tables

bp = Blueprint("exports", __name__)
CSV_COLUMNS = ("avg", "ci95_avg_low", "ci95_avg_high", "slope", "intercept", "r2", "n_ir", "n_r2", "binary_rate",
               "ci95_binary_rate_low", "ci95_binary_rate_high", "binary_avg", "binary_n_ir", "binary_n_r2",
               "style", "content", "naturalness", "personalization", "conversation", "sessions", "judged",
               "unparsed", "failed")
JUDGMENT_COLUMNS = ("session_id", "round", "method", "mode", "status", "total", *DIMENSIONS, "verdict", "scores", "error",
                    "prompt_tokens", "completion_tokens", "cached", "attempts")
STATIC = Path(__file__).resolve().parent.parent / "static"


def _result_or_404(evaluation_id: str) -> dict:
    record = get_store().get_evaluation(evaluation_id) or abort(404)
    return record.get("result") or abort(404)


@bp.get("/evaluations/<evaluation_id>.json")
def export_json(evaluation_id: str):
    """The result document as a JSON download."""
    body = json.dumps(_result_or_404(evaluation_id), ensure_ascii=False, indent=1)
    return Response(body, mimetype="application/json",
                    headers={"Content-Disposition": f"attachment; filename={evaluation_id}.json"})


@bp.get("/evaluations/<evaluation_id>.csv")
def export_csv(evaluation_id: str):
    """Per-method metrics as CSV (UTF-8 with BOM so spreadsheet programs read Chinese correctly)."""
    result = _result_or_404(evaluation_id)
    out = io.StringIO()
    writer = SafeWriter(out)
    if result["kind"] == "conversation":
        writer.writerow(("task", "turns", "user_message_length", "intents"))
        for task, f in {"all": result["fidelity"], **result["fidelity"]["by_task"]}.items():
            writer.writerow((task, *(f[k] for k in ("turns", "user_message_length", "intents"))))
        return _csv_response(out.getvalue(), f"{evaluation_id}.csv")
    if result["kind"] == "agentbench":
        writer.writerow(("agent", "task", "config_name", "split", "score", "normalised", "in_oa", "total",
                         *STATUS_GROUPS, "average_history_length", "oa"))
        for agent, a in result["agents"].items():
            for key, t in a["tasks"].items():
                status, history = t["status"] or {}, t["history_length"] or {}
                writer.writerow((agent, key, t["config_name"], t["split"], t["score"], t["normalised"], t["in_oa"],
                                 t["total"], *(status.get(g) for g in STATUS_GROUPS), history.get("average"), a["oa"]))
        return _csv_response(out.getvalue(), f"{evaluation_id}.csv")
    if result["kind"] == "mobility":
        writer.writerow(("variant", *MOBILITY_KEYS, "final_score"))
        for variant in ("official", "strict"):
            writer.writerow((variant, *(result[variant]["jsd"][k] for k in MOBILITY_KEYS), result[variant]["final_score"]))
        return _csv_response(out.getvalue(), f"{evaluation_id}.csv")
    writer.writerow(("method", *CSV_COLUMNS))
    for name, m in result["methods"].items():
        ci_avg = m["ci95"]["avg"] or [None, None]
        ci_bin = m["ci95"]["binary_rate"] or [None, None]
        flat = {**m, **m["dimensions"], "ci95_avg_low": ci_avg[0], "ci95_avg_high": ci_avg[1],
                "ci95_binary_rate_low": ci_bin[0], "ci95_binary_rate_high": ci_bin[1]}
        writer.writerow((name, *(flat.get(c) for c in CSV_COLUMNS)))
    return _csv_response(out.getvalue(), f"{evaluation_id}.csv")


@bp.get("/evaluations/<evaluation_id>/annotations.csv")
def export_annotations(evaluation_id: str):
    """The judge's annotation of each conversation beside the people's own answers, as CSV."""
    result = _result_or_404(evaluation_id)
    annotation = result.get("annotation") or abort(404)
    out = io.StringIO()
    writer = SafeWriter(out)
    writer.writerow(("conversation", "source", "task", "status", *ANNOTATION_SCALES, "hallucination",
                     *(f"questionnaire_{field}" for field in QUESTIONNAIRE_FIELDS.values()),
                     "labelled_hallucination", "error"))
    for r in annotation["conversations"]:
        scores = r["scores"] or {}
        writer.writerow((r["path"], r["source"], r["task"], r["status"],
                         *(scores.get(k) for k in (*ANNOTATION_SCALES, "hallucination")),
                         *(r["questionnaire"][k] for k in QUESTIONNAIRE_FIELDS), r["labelled_hallucination"],
                         r["error"]))
    return _csv_response(out.getvalue(), f"{evaluation_id}-annotations.csv")


def _csv_response(text: str, filename: str) -> Response:
    """A CSV download, UTF-8 with BOM so spreadsheet programs read Chinese correctly."""
    return Response("\ufeff" + text, mimetype="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f"attachment; filename={filename}"})


@bp.get("/evaluations/<evaluation_id>/judgments.csv")
def export_judgments(evaluation_id: str):
    """Every judgment as a CSV row (UTF-8 with BOM), streamed."""
    get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    rows = get_store().judgments(evaluation_id)

    def lines():
        yield "\ufeff" + csv_line(JUDGMENT_COLUMNS)
        for row in rows:
            yield csv_line(row[c] for c in JUDGMENT_COLUMNS)
    return Response(lines(), mimetype="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f"attachment; filename={evaluation_id}-judgments.csv"})


@bp.get("/evaluations/<evaluation_id>/report.html")
def export_report(evaluation_id: str):
    """A self-contained HTML report (styles, Plotly and data inline) that opens offline."""
    record = get_store().get_evaluation(evaluation_id) or abort(404)
    result = record.get("result") or abort(404)
    scripts = {"plotly_js": charts.PLOTLY_JS_FILE.read_text(encoding="utf-8"),
               "result_js": (STATIC / "js" / "result.js").read_text(encoding="utf-8")}
    meta_policy, header_policy = security_headers.report_policy(*scripts.values())  # its inline scripts only
    body = render_template("report.html", evaluation=record, result=result, figures=charts.dialogue_figures(result),
                           colours=charts.method_colours(record["methods"]),
                           css=(STATIC / "css" / "style.css").read_text(encoding="utf-8"), csp=meta_policy,
                           **scripts, **result_tables(result))
    return Response(body, mimetype="text/html; charset=utf-8",
                    headers={"Content-Disposition": f"attachment; filename={evaluation_id}-report.html",
                             "Content-Security-Policy": header_policy})

"""Downloads of a result: the JSON document, its tables as CSV (cells neutralised by common/safe_csv.py), the report."""
from __future__ import annotations

import base64
import json
from pathlib import Path

from flask import Blueprint, Response, abort, render_template

from common.contract import operation
from common.downloads import attachment, download_stem
from common.safe_csv import csv_line
from kinds import registry
from kinds.host import csv_response
from kinds.kind import Judged, OfflineReport
from web import get_store, pages, security_headers
from web import schemas as S

bp = Blueprint("exports", __name__)
# judgments.csv: these columns, with the evaluation's score columns (Kind.score_columns_of: the dialogue rubric's
# dimension keys; spread out of `scores`) after "total"; the `scores` column holds the other scores as JSON.
JUDGMENT_HEAD = ("session_id", "round", "method", "mode", "status", "total")
JUDGMENT_TAIL = ("verdict", "scores", "error", "prompt_tokens", "completion_tokens", "cached", "attempts",
                 "latency_ms", "answer")
STATIC = Path(__file__).resolve().parent.parent / "static"


def _result_or_404(evaluation_id: str) -> dict:
    record = get_store().get_evaluation(evaluation_id) or abort(404)
    return record.get("result") or abort(404)


def download_name(evaluation_id: str, suffix: str) -> str:
    """A download's file name: the evaluation's title (else its file's name stem), a dash and its id, then `suffix`
    (`<title or file stem>-<id>.<ext>`)."""
    record = get_store().get_evaluation(evaluation_id, with_result=False) or {}
    upload = get_store().get_upload(record["upload_id"]) if record.get("upload_id") else None
    stem = download_stem(record.get("title") or (Path(upload["filename"]).stem if upload else ""))
    return f"{stem}-{evaluation_id}{suffix}" if stem else f"{evaluation_id}{suffix}"


@bp.get("/evaluations/<evaluation_id>.json")
@operation("The result document (docs/result-documents.md) as a download", {200: S.ResultDocument},
           tags=("evaluations",))
def export_json(evaluation_id: str):
    """The result document as a JSON download."""
    body = json.dumps(_result_or_404(evaluation_id), ensure_ascii=False, indent=1)
    return Response(body, mimetype="application/json",
                    headers={"Content-Disposition": attachment(download_name(evaluation_id, ".json"))})


@bp.get("/evaluations/<evaluation_id>.csv")
def export_csv(evaluation_id: str):
    """The result's main table as CSV (UTF-8 with BOM so spreadsheet programs read Chinese correctly)."""
    result = _result_or_404(evaluation_id)
    return csv_response(*registry.scored(result["kind"]).csv(result), download_name(evaluation_id, ".csv"))


@bp.get("/evaluations/<evaluation_id>/<name>.csv")
def export_download(evaluation_id: str, name: str):
    """One of the kind's other tables of a result as CSV (a conversation upload's annotations, say)."""
    result = _result_or_404(evaluation_id)
    table = registry.scored(result["kind"]).downloads(result).get(name) or abort(404)
    return csv_response(*table(), download_name(evaluation_id, f"-{name}.csv"))


@bp.get("/evaluations/<evaluation_id>/judgments.csv")
def export_judgments(evaluation_id: str):
    """Every judgment as a CSV row (UTF-8 with BOM), streamed; the kind's score columns spread out of `scores`."""
    record = get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    kind = registry.get(record["kind"])
    spread = kind.score_columns_of(record, get_store()) if isinstance(kind, Judged) else ()
    rows = get_store().iter_judgments(evaluation_id)

    def lines():
        yield "\ufeff" + csv_line((*JUDGMENT_HEAD, *spread, *JUDGMENT_TAIL))
        for row in rows:
            scores = row["scores"] or {}
            rest = {k: v for k, v in scores.items() if k not in spread}
            cells = {**row, "scores": json.dumps(rest) if rest else None}
            yield csv_line((*(cells[c] for c in JUDGMENT_HEAD), *(scores.get(c) for c in spread),
                            *(cells[c] for c in JUDGMENT_TAIL)))
    return Response(lines(), mimetype="text/csv",
                    headers={"Content-Disposition": attachment(download_name(evaluation_id, "-judgments.csv"))})


@bp.get("/evaluations/<evaluation_id>/report.html")
def export_report(evaluation_id: str):
    """A self-contained HTML report (styles, Plotly and data inline) that opens offline."""
    record = get_store().get_evaluation(evaluation_id) or abort(404)
    record.get("result") or abort(404)
    body, policy = report_html(record)
    return Response(body, mimetype="text/html",
                    headers={"Content-Disposition": attachment(download_name(evaluation_id, "-report.html")),
                             "Content-Security-Policy": policy})


def offline_css() -> str:
    """The stylesheet with its font inline (a report's policy allows data: fonts only)."""
    font = base64.b64encode((STATIC / "fonts" / "language-names.woff2").read_bytes()).decode("ascii")
    return (STATIC / "css" / "style.css").read_text(encoding="utf-8").replace(
        'url("../fonts/language-names.woff2")', f'url("data:font/woff2;base64,{font}")')


def report_html(record: dict) -> tuple[str, str]:
    """The offline report of a finished evaluation and the policy to serve it with: the kind's own report template
    when it has one, else its result page as a share link shows it, with every link into the app left out."""
    kind = registry.scored(record["kind"])
    scripts = {"plotly_js": pages.plotly_file().read_text(encoding="utf-8"),
               "result_js": (STATIC / "js" / "result.js").read_text(encoding="utf-8")}
    meta_policy, header_policy = security_headers.report_policy(*scripts.values())  # its inline scripts only
    inline = {"css": offline_css(), "csp": meta_policy, **scripts}
    if isinstance(kind, OfflineReport):
        body = render_template(kind.template("report"), evaluation=record, result=record["result"], **inline,
                               **kind.report_context(record))
    else:
        body = render_template(kind.template("result"), **pages.result_context(record), **inline, offline=True,
                               shared=True, url_for=_offline_url)
    return body, header_policy


def _offline_url(endpoint: str, **values) -> str:
    """url_for in an offline report: it has nothing to link to."""
    return "#"

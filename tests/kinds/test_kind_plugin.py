"""A fifth benchmark kind defined entirely here, driven through every part of the product.

"counts": a JSON list of numbers, scored by their mean and a histogram with `bins` bins. Nothing in the product
names it: naming it in the setting PSB_KINDS (module:Class, as a kind that is not installed is named) is all it takes
for upload, validation, evaluation, the result page, its own view, the exports, share links, compare, the API and the
CLI to handle it. tests/kinds/test_installed_kind.py does the same for a judged kind installed as a package.
"""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import click
import jinja2
import pytest

from kinds import registry
from kinds.kind import Job, Plan, Scored, StartError, StartRequest, upload_stem
from kinds.problems import Problem, Report
from tests.conftest import jsonl, session_line, wait_for

TEMPLATES = {
    "upload.html": """{% extends "base.html" %}{% block content %}
<h1>counts: {{ upload.summary.n }} numbers</h1>
<form method="post" action="{{ url_for('pages.evaluate', upload_id=upload.id) }}">
<input type="hidden" name="csrf_token" value="{{ csrf_token() }}"><input name="bins" value="{{ default_bins }}">
<button type="submit">go</button></form>{% if error %}<p class="error">{{ error }}</p>{% endif %}{% endblock %}""",
    "result.html": """{% extends "base.html" %}{% block content %}
<p id="status">{{ evaluation.status }}</p>{% if result %}<p id="mean">mean={{ result.mean }}</p>
<div data-figure="histogram" id="chart-histogram"></div>
<a id="big" href="{{ url_for('pages.kind_view', evaluation_id=evaluation.id, name='above', min=2) }}">big</a>
{% include "_downloads.html" %}{% endif %}{% endblock %}
{% block scripts %}{% include "_figure_scripts.html" %}{% endblock %}""",
    "above.html": "<ul>{% for v in values %}<li>{{ v }}</li>{% endfor %}</ul>",
    "compare.html": "<table>{% for run in cmp.runs %}<tr><td>{{ run.label }}</td><td class=mean>"
                    "{{ run.result.mean }}</td></tr>{% endfor %}</table><p id=best>{{ cmp.best }}</p>",
}


class CountsKind(Scored):
    """A JSON list of numbers: mean and histogram."""

    name = "counts"
    label = "Counts"
    extension = ".json"
    start_fields = ("bins",)
    cli_options = (click.Option(["--bins"], type=int, help="Counts: histogram bins."),)

    def sniff(self, head, filename, path):
        return re.fullmatch(rb"\s*\[[\d\s.,eE+\-\"a-z]*\]?\s*", head) is not None

    def validate(self, stream, filename, options):
        try:
            values = json.loads(stream.read())
        except ValueError as exc:
            return Report([Problem(1, "", f"not JSON: {exc}")], [], {})
        if not isinstance(values, list) or not values:
            return Report([Problem(1, "", "expected a non-empty list of numbers")], [], {})
        problems = [Problem(1, f"[{i}]", f"{v!r} is not a number") for i, v in enumerate(values)
                    if isinstance(v, bool) or not isinstance(v, (int, float))]
        return Report(problems, [], {"n": len(values)})

    def start(self, upload: dict, request: StartRequest) -> Plan:
        bins = request.options.get("bins", 2)
        try:
            bins = int(bins)
        except (TypeError, ValueError):
            raise StartError("'bins' must be a whole number") from None
        if not 1 <= bins <= 10:
            raise StartError("'bins' must be between 1 and 10")
        return Plan([upload_stem(upload)], {"bins": bins})

    def score(self, job: Job) -> dict:
        values = json.loads(Path(job.path).read_text())
        bins, low, high = job.evaluation["settings"]["bins"], min(values), max(values)
        width = (high - low) / bins or 1
        counts = [0] * bins
        for v in values:
            counts[min(int((v - low) / width), bins - 1)] += 1
        return {"kind": "counts", "evaluation_id": job.evaluation["id"], "n": len(values),
                "mean": sum(values) / len(values), "histogram": {"low": low, "width": width, "counts": counts},
                "values": values}

    def templates(self):
        return jinja2.DictLoader(TEMPLATES)

    def upload_context(self, upload, site):
        return {"default_bins": 2}

    def figures(self, result, record, args):
        return {"histogram": {"data": [{"type": "bar", "y": result["histogram"]["counts"]}], "layout": {}}}

    def csv(self, result):
        return ("bin", "count"), list(enumerate(result["histogram"]["counts"]))

    def downloads(self, result):
        return {"values": lambda: (("value",), [(v,) for v in result["values"]])}

    def views(self):
        def above(record, args, site):
            limit = float(args.get("min", 0))
            return "counts/above.html", {"values": [v for v in record["result"]["values"] if v >= limit]}
        return {"above": above}

    def run_label(self, result):
        return f"n={result['n']}"

    def compare(self, runs):
        return {"runs": runs, "best": max(runs, key=lambda run: run["result"]["mean"])["id"]}

    def cli_start(self, values, site):
        return {"bins": values["bins"]} if values.get("bins") is not None else {}


@pytest.fixture
def counts_app(make_app, judge_env):
    assert "counts" not in registry.names()
    try:
        app = make_app(judge_env, PSB_KINDS=f"{__name__}:CountsKind")
        assert registry.source("counts") == f"PSB_KINDS: {__name__}:CountsKind"
        yield app
    finally:
        registry.unregister("counts")


def upload(client, data: bytes, name: str = "numbers.json"):
    return client.post("/api/uploads", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")


def evaluate(client, upload_id: str, **options) -> dict:
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, **options})
    assert resp.status_code == 202, resp.get_data(as_text=True)
    body = wait_for(client, resp.get_json()["id"])
    assert body["status"] == "done", body
    return body


def test_upload_detects_validates_and_rejects_with_located_problems(counts_app):
    client = counts_app.test_client()
    bad = upload(client, b'[1, "x", 3, true]')
    assert bad.status_code == 400
    assert [(p["line"], p["path"]) for p in bad.get_json()["problems"]] == [(1, "[1]"), (1, "[3]")]
    page = client.post("/uploads", data={"file": (io.BytesIO(b'[1, "x"]'), "n.json")},
                       content_type="multipart/form-data")
    assert page.status_code == 400 and "&#39;x&#39; is not a number" in page.get_data(as_text=True)
    assert not list((Path(counts_app.config["UPLOAD_FOLDER"])).glob("*.json"))  # nothing stored for a 400
    good = upload(client, b"[1, 2, 3, 4]")
    assert good.status_code == 201 and good.get_json()["kind"] == "counts" and good.get_json()["summary"] == {"n": 4}
    detail = client.get(f"/uploads/{good.get_json()['id']}").get_data(as_text=True)
    assert "counts: 4 numbers" in detail
    assert upload(client, jsonl(session_line())).get_json()["kind"] == "dialogue"  # other kinds are unaffected


def test_evaluation_result_page_view_exports_and_api(counts_app):
    client = counts_app.test_client()
    upload_id = upload(client, b"[1, 2, 3, 4]").get_json()["id"]
    assert client.post("/api/evaluations", json={"upload_id": upload_id, "bins": 0}).get_json()["error"] == \
        "'bins' must be between 1 and 10"
    body = evaluate(client, upload_id, bins=3)
    # mean 2.5; bins of width 1 from 1: [1], [2], [3, 4]
    assert body["result"]["mean"] == 2.5 and body["result"]["histogram"]["counts"] == [1, 1, 2]
    html = client.get(f"/evaluations/{body['id']}").get_data(as_text=True)
    assert "mean=2.5" in html and 'id="chart-histogram"' in html
    figures = json.loads(re.search(r'<script id="figures" type="application/json">(.*?)</script>', html).group(1))
    assert figures["histogram"]["data"][0]["y"] == [1, 1, 2]
    view = client.get(f"/evaluations/{body['id']}/view/above?min=2").get_data(as_text=True)
    assert re.findall(r"<li>(.*?)</li>", view) == ["2", "3", "4"]
    assert client.get(f"/evaluations/{body['id']}/view/nothing").status_code == 404
    assert json.loads(client.get(f"/evaluations/{body['id']}.json").get_data(as_text=True))["mean"] == 2.5
    rows = list(csv.reader(io.StringIO(client.get(f"/evaluations/{body['id']}.csv").get_data(as_text=True)
                                       .lstrip("\ufeff"))))
    assert rows == [["bin", "count"], ["0", "1"], ["1", "1"], ["2", "2"]]
    values = client.get(f"/evaluations/{body['id']}/values.csv").get_data(as_text=True).lstrip("\ufeff")
    assert values.split() == ["value", "1", "2", "3", "4"]
    report = client.get(f"/evaluations/{body['id']}/report.html")  # no report template: the result page, offline
    assert report.status_code == 200 and "mean=2.5" in report.get_data(as_text=True)
    assert client.get(f"/api/evaluations/{body['id']}/sessions").status_code == 404  # no samples declared


def test_upload_page_form_starts_an_evaluation_and_shows_start_errors(counts_app):
    client = counts_app.test_client()
    upload_id = upload(client, b"[5, 7]").get_json()["id"]
    refused = client.post(f"/uploads/{upload_id}/evaluate", data={"bins": "many"})
    assert refused.status_code == 400 and "&#39;bins&#39; must be a whole number" in refused.get_data(as_text=True)
    started = client.post(f"/uploads/{upload_id}/evaluate", data={"bins": "1"})
    evaluation_id = started.headers["Location"].rsplit("/", 1)[-1]
    assert wait_for(client, evaluation_id)["result"]["histogram"]["counts"] == [2]


def test_share_and_compare(counts_app):
    client = counts_app.test_client()
    first = evaluate(client, upload(client, b"[1, 2]").get_json()["id"])
    second = evaluate(client, upload(client, b"[10, 20, 30]").get_json()["id"])
    share = client.post(f"/api/evaluations/{first['id']}/shares").get_json()
    token = share["token"]
    page = client.get(f"/share/{token}").get_data(as_text=True)
    assert "mean=1.5" in page and f"/share/{token}/view/above?min=2" in page and f"/share/{token}.csv" in page
    assert re.findall(r"<li>(.*?)</li>", client.get(f"/share/{token}/view/above?min=2").get_data(as_text=True)) == ["2"]
    assert client.get(f"/share/{token}/values.csv").status_code == 200
    compare = client.get(f"/compare?ids={first['id']},{second['id']}").get_data(as_text=True)
    assert re.findall(r"<td class=mean>(.*?)</td>", compare) == ["1.5", "20.0"]
    assert f"<p id=best>{second['id']}</p>" in compare and "n=3" in compare


def test_cli_scores_with_the_kinds_own_option(counts_app, tmp_path):
    path = tmp_path / "numbers.json"
    path.write_text("[2, 4, 6, 8]")
    result = counts_app.test_cli_runner().invoke(args=["score", str(path), "--bins", "2"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["mean"] == 5.0 and document["histogram"]["counts"] == [2, 2]
    reference = counts_app.test_cli_runner().invoke(args=["score", str(path), "--reference", "beijing"])
    assert reference.exit_code == 2 and "--reference applies to mobility uploads only" in reference.output

"""AgentBench outputs through the app: upload (ZIP tree, lone overall.json with names), result page, samples
view, exports, compare, share, CLI and API."""
from __future__ import annotations

import csv
import io
import json
import re

import pytest

from kinds.registry import detect as detect_kind
from tests.conftest import SHARED_DATA, wait_for
from tests.kinds.agentbench.test_agentbench import (
    AGENT_A,
    AGENT_B,
    OA_A,
    OA_B,
    dumps,
    error_line,
    make_zip,
    overall,
    runs_line,
    tree,
)

REAL = SHARED_DATA / "agentbench"
needs_data = pytest.mark.skipif(not REAL.is_dir(), reason=f"the real AgentBench files are not at {REAL}")
RUN = "outputs/2024-01-01-00-00-00"


def outputs_zip() -> bytes:
    """Two agents on all eight standard tasks; agent-b also ran a fork task with samples and errors."""
    members = tree({"agent-a": AGENT_A, "agent-b": AGENT_B}, run=RUN)
    members[f"{RUN}/agent-b/os-std/runs.jsonl"] = (
        runs_line(0) + runs_line(1, "agent invalid action",
                                 history=[{"role": "user", "content": "<script>alert('x')</script>"},
                                          {"role": "agent", "content": "rm -rf /"}]) + b"not json\n")
    members[f"{RUN}/agent-b/os-std/error.jsonl"] = error_line(7, "AGENT_FAILED") + error_line(8, "AGENT_FAILED")
    members[f"{RUN}/agent-b/medagentbench-std/overall.json"] = dumps(overall({"accuracy": 0.61}))
    return make_zip(members).getvalue()


def upload(client, data: bytes, name: str, **form) -> dict:
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(data), name), **form},
                       content_type="multipart/form-data")
    return resp


def evaluate(client, upload_id: str) -> dict:
    created = client.post("/api/evaluations", json={"upload_id": upload_id})
    assert created.status_code == 202, created.get_json()
    body = wait_for(client, created.get_json()["id"])
    assert body["status"] == "done", body
    return body


def test_outputs_zip_through_the_api_page_and_exports(client):
    resp = upload(client, outputs_zip(), "outputs.zip")
    assert resp.status_code == 201, resp.get_json()
    up = resp.get_json()
    assert up["kind"] == "agentbench" and up["summary"]["agent_names"] == ["agent-a", "agent-b"]
    body = evaluate(client, up["id"])
    result = body["result"]
    assert result["agents"]["agent-a"]["oa"] == pytest.approx(OA_A, abs=1e-9)
    assert result["agents"]["agent-b"]["oa"] == pytest.approx(OA_B, abs=1e-9)
    assert result["agents"]["agent-b"]["tasks"]["wb"]["score"] == pytest.approx(12.5)
    fork = result["agents"]["agent-b"]["tasks"]["medagentbench-std"]
    assert fork["score"] is None and (fork["fork_score"], fork["fork_metric"]) == (pytest.approx(61.0), "accuracy")

    page = client.get(f"/evaluations/{body['id']}").get_data(as_text=True)
    assert f"{OA_A:.2f}" in page and f"{OA_B:.2f}" in page
    assert 'data-figure="status"' in page and 'data-figure="radar"' in page
    assert "Other tasks (not part of the overall score)" in page and "accuracy" in page
    scores = page[page.index('id="scores"'):page.index("</table>", page.index('id="scores"'))]
    assert re.search(r"<td>61\.0 <span class=\"hint\"[^>]*>accuracy</span></td>", scores)  # x100, beside the others
    assert "gpt-4" in page and "Liu et al." in page  # the default leaderboard models, with the source

    picked = client.get(f"/evaluations/{body['id']}?models=claude-2").get_data(as_text=True)
    assert "41.3" in picked and "2.49" in picked  # claude-2's KG score and published OA
    leaderboard = picked.split('aria-labelledby="provenance-title"')[0]  # (the provenance names Python 3.11)
    assert "3.11" not in leaderboard  # claude-3's OA only when picked

    samples = client.get(f"/evaluations/{body['id']}/view/samples?agent=agent-b&task=os")
    assert samples.status_code == 200
    html = samples.get_data(as_text=True)
    # the history rendered as Markdown: its script is text (a quote needs no escaping in element content)
    assert "<p>&lt;script&gt;alert('x')&lt;/script&gt;</p>" in html and "<script>alert('x')" not in html
    assert "AGENT_FAILED" in html and "agent invalid action" in html
    only = client.get(f"/evaluations/{body['id']}/view/samples?agent=agent-b&task=os&status=completed").get_data(as_text=True)
    assert "rm -rf /" not in only
    assert client.get(f"/evaluations/{body['id']}/view/samples?agent=nobody&task=os").status_code == 404

    rows = list(csv.DictReader(io.StringIO(client.get(f"/evaluations/{body['id']}.csv").data.decode("utf-8-sig"))))
    wb = next(r for r in rows if r["agent"] == "agent-a" and r["task"] == "wb")
    assert float(wb["score"]) == pytest.approx(29.0) and float(wb["normalised"]) == pytest.approx(29.0 / 11.6)
    assert float(wb["oa"]) == pytest.approx(OA_A)


def test_partial_run_names_the_missing_tasks(client):
    partial = {k: v for k, v in AGENT_A.items() if k not in ("kg-std", "m2w-std")}
    up = upload(client, make_zip(tree({"agent-a": partial})).getvalue(), "partial.zip").get_json()
    body = evaluate(client, up["id"])
    agent = body["result"]["agents"]["agent-a"]
    assert agent["oa"] is None and agent["missing"] == ["kg", "wb"]
    page = client.get(f"/evaluations/{body['id']}").get_data(as_text=True)
    assert "not computed, missing: Knowledge Graph, Web Browsing" in page


def test_lone_overall_json_needs_names_then_keeps_them(client):
    data = dumps(overall({"overall": {"acc": 0.25}}))
    refused = upload(client, data, "overall.json")
    assert refused.status_code == 400
    fields = {p["path"] for p in refused.get_json()["problems"]}
    assert fields == {"agent", "task"}
    ok = upload(client, data, "overall.json", agent="my-agent", task="os-std")
    assert ok.status_code == 201, ok.get_json()
    body = evaluate(client, ok.get_json()["id"])
    agent = body["result"]["agents"]["my-agent"]
    assert agent["tasks"]["os"]["score"] == pytest.approx(25.0) and agent["oa"] is None
    assert len(agent["missing"]) == 7


def test_upload_form_takes_the_names(client):
    data = dumps(overall({"overall": {"acc": 0.5}}))
    page = client.post("/uploads", data={"file": (io.BytesIO(data), "overall.json")},
                       content_type="multipart/form-data")
    assert page.status_code == 400 and "The agent name is needed" in page.get_data(as_text=True)
    resp = client.post("/uploads", data={"file": (io.BytesIO(data), "overall.json"), "agent": "a1",
                                         "task": "os-std"}, content_type="multipart/form-data")
    assert resp.status_code == 302
    detail = client.get(resp.headers["Location"]).get_data(as_text=True)
    assert "AgentBench outputs" in detail and "a1" in detail and "Operating System" in detail


def test_malformed_overall_json_is_a_400_with_the_field(client):
    bad = dumps({"total": 10, "validation": {"completed": "all"}, "custom": {}})
    resp = upload(client, bad, "overall.json", agent="a", task="os-std")
    assert resp.status_code == 400
    problems = resp.get_json()["problems"]
    assert any("validation.completed" in (p["path"] or "") + p["message"] for p in problems), problems


def test_kind_detection():
    assert detect_kind(dumps(overall())) == "agentbench"
    assert detect_kind(b"Agent\\Task,os-std\nx,0.1\n") == "agentbench"
    assert detect_kind(b'{"summary": {}, "details": {}}') == "agentbench"
    assert detect_kind(b'{"history": [], "task": "travel planning"}') == "conversation"


def test_compare_two_agentbench_results(client):
    first = evaluate(client, upload(client, outputs_zip(), "a.zip").get_json()["id"])
    second = evaluate(client, upload(client, make_zip(tree({"agent-c": AGENT_B})).getvalue(), "b.zip")
                      .get_json()["id"])
    html = client.get(f"/compare?ids={first['id']},{second['id']}").get_data(as_text=True)
    assert "Compare AgentBench results" in html and "agent-c" in html and f"{OA_B:.2f}" in html


def test_share_link_reaches_the_samples(client):
    body = evaluate(client, upload(client, outputs_zip(), "outputs.zip").get_json()["id"])
    token = client.post(f"/api/evaluations/{body['id']}/shares").get_json()["token"]
    page = client.get(f"/share/{token}").get_data(as_text=True)
    assert f"/share/{token}/view/samples?agent=agent-b" in page
    assert client.get(f"/share/{token}/view/samples?agent=agent-b&task=os").status_code == 200


def test_cli_scores_a_tree_and_a_named_overall(runner, tmp_path):
    path = tmp_path / "outputs.zip"
    path.write_bytes(outputs_zip())
    result = runner.invoke(args=["score", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["agents"]["agent-a"]["oa"] == pytest.approx(OA_A)
    lone = tmp_path / "gpt-x" / "dbbench-std" / "overall.json"
    lone.parent.mkdir(parents=True)
    lone.write_bytes(dumps(overall({"overall_cat_accuracy": 0.4})))
    by_path = runner.invoke(args=["score", str(lone)])
    assert by_path.exit_code == 0, by_path.output
    assert json.loads(by_path.stdout)["agents"]["gpt-x"]["tasks"]["db"]["score"] == pytest.approx(40.0)
    named = tmp_path / "overall.json"
    named.write_bytes(dumps(overall({"overall_cat_accuracy": 0.4})))
    refused = runner.invoke(args=["score", str(named)])
    assert refused.exit_code == 1 and "agent name is needed" in refused.output
    given = runner.invoke(args=["score", str(named), "--agent", "me", "--task", "dbbench-std"])
    assert given.exit_code == 0 and "me" in json.loads(given.stdout)["agents"]


@needs_data
def test_real_overall_json_of_a_fork_task(client):
    data = (REAL / "medagentbench_gpt-4o_overall.json").read_bytes()
    up = upload(client, data, "overall.json", agent="gpt-4o", task="medagentbench-std")
    assert up.status_code == 201, up.get_json()
    body = evaluate(client, up.get_json()["id"])
    task = body["result"]["agents"]["gpt-4o"]["tasks"]["medagentbench-std"]
    assert task["custom"]["accuracy"] == 0.61 and task["status"]["completed"] == 1.0
    assert task["fork_score"] == pytest.approx(61.0) and task["fork_metric"] == "accuracy"
    assert task["history_length"] == {"average": 4.34, "max": 6, "min": 4}
    page = client.get(f"/evaluations/{body['id']}").get_data(as_text=True)
    assert "medagentbench-std" in page and "0.61" in page


def test_errors_without_runs_are_reachable_from_the_page(client):
    members = tree({"agent-a": AGENT_A}, run=RUN)
    members[f"{RUN}/agent-a/os-std/error.jsonl"] = error_line(7, "AGENT_FAILED") + error_line(8, "TASK_ERROR")
    body = evaluate(client, upload(client, make_zip(members).getvalue(), "outputs.zip").get_json()["id"])
    page = client.get(f"/evaluations/{body['id']}").get_data(as_text=True)
    link = f'/evaluations/{body["id"]}/view/samples?agent=agent-a&amp;task=os#errors'
    assert f'<a href="{link}">2 errors</a>' in page
    view = client.get(link.replace("&amp;", "&").split("#")[0]).get_data(as_text=True)
    assert 'id="errors"' in view and "TASK_ERROR" in view and "no runs.jsonl" in view


def test_the_radar_draws_and_lists_only_agents_with_a_standard_task(client):
    """An agent that ran only a fork task has no point on the radar of the standard tasks: the chart leaves it out
    (its legend listed it with no line), and the others' points are their scores over the tasks' weights."""
    members = tree({"agent-a": AGENT_A}, run=RUN)
    members[f"{RUN}/agent-c/medagentbench-std/overall.json"] = dumps(overall({"accuracy": 0.61}))
    up = upload(client, make_zip(members).getvalue(), "outputs.zip").get_json()
    assert up["summary"]["agent_names"] == ["agent-a", "agent-c"]
    evaluation_id = evaluate(client, up["id"])["id"]
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    figures = json.loads(re.search(r'<script id="figures" type="application/json"[^>]*>(.*?)</script>', page,
                                   re.S).group(1))
    radar = figures["radar"]
    agents = [t for t in radar["data"] if t["line"]["dash"] == "solid"]
    assert [t["name"] for t in agents] == ["agent-a"]
    assert agents[0]["r"][0] == pytest.approx(42.4 / 10.8)  # the operating system task: 42.4 over W = 10.8
    assert radar["layout"]["showlegend"] is True and radar["layout"]["legend"]["title"]["text"] == \
        "Click a name to hide or show it"
    assert "agent-c" in [t for trace in figures["status"]["data"] for t in trace["y"]]  # still in how samples ended

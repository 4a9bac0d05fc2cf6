"""The offline report of every kind (issue 16, item 4): `report.html` (and its share twin) is one self-contained file:
styles, Plotly and the data inline under a hash policy, no link or resource into the app, the result's numbers in it."""
from __future__ import annotations

import io
import json
import re

import pytest

from tests.conftest import wait_for
from tests.kinds.agentbench.test_agentbench import OA_A
from tests.kinds.agentbench.test_agentbench_pipeline import outputs_zip
from tests.kinds.conversation.test_conversation_pipeline import own_conversation
from tests.kinds.mobility.test_mobility_pipeline import add_reference, synthetic


def finished(client, data: bytes, name: str, **start) -> dict:
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"], **start}).get_json()
    body = wait_for(client, created["id"])
    assert body["status"] == "done", body
    return body


def mobility(client) -> tuple[dict, str]:
    add_reference(client, json.dumps(synthetic(seed=1)).encode(), "ref.json", "synthetic")
    body = finished(client, json.dumps(synthetic(seed=2, shift=500)).encode(), "agent.json", reference="synthetic")
    return body, f"{body['result']['official']['final_score']:.1f}"


def conversation(client) -> tuple[dict, str]:
    items = [own_conversation("agent", 2), own_conversation("human", 3), own_conversation("agent", 3, "travel planning")]
    body = finished(client, json.dumps(items).encode(), "conversations.json")
    return body, "Fidelity of simulated users"


def agentbench(client) -> tuple[dict, str]:
    body = finished(client, outputs_zip(), "outputs.zip")
    return body, f"{OA_A:.2f}"


@pytest.mark.parametrize("make", [mobility, conversation, agentbench])
def test_every_kind_has_a_self_contained_report(client, make):
    body, shown = make(client)
    evaluation_id = body["id"]
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert f'href="/evaluations/{evaluation_id}/report.html"' in page  # offered on the page
    share = client.post(f"/api/evaluations/{evaluation_id}/shares").get_json()["url"].split("localhost", 1)[1]
    for path in (f"/evaluations/{evaluation_id}/report.html", share + "/report.html"):
        resp = client.get(path)
        assert resp.status_code == 200, path
        assert re.fullmatch(f'attachment; filename="[^"/]+-{evaluation_id}-report.html"',
                            resp.headers["Content-Disposition"]), resp.headers["Content-Disposition"]
        html = resp.get_data(as_text=True)
        assert shown in html
        # Nothing is loaded from anywhere and nothing leads into the app: styles and scripts are inline.
        assert not re.search(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=', html), path
        assert not re.findall(r'href="/[^"]*"', html) and "<form" not in html, path
        assert "<style>" in html and "Plotly" in html and '<script id="figures" type="application/json" data-draw-all>' in html
        policy = resp.headers["Content-Security-Policy"]
        assert policy.count("'sha256-") == 2 and "default-src 'none'" in policy


def test_a_static_bundle_holds_an_index_and_each_report_and_result(client, app, runner, tmp_path):
    import zipfile

    from tests.conftest import jsonl, session_line

    first, _shown = mobility(client)
    second = finished(client, jsonl(session_line("b1", 2)), "log.jsonl")
    client.patch(f"/api/evaluations/{second['id']}", json={"title": "Dialogue <pilot>", "tags": ["pilot"]})
    resp = client.get(f"/bundle.zip?ids={first['id']}&ids={second['id']}")
    assert resp.status_code == 200 and resp.headers["Content-Disposition"].endswith("personasteer-bundle.zip")
    archive = zipfile.ZipFile(io.BytesIO(resp.data))
    names = sorted(archive.namelist())
    assert names == sorted(f"bundle/{n}" for n in ("index.html", f"{first['id']}.html", f"{first['id']}.json",
                                                   f"{second['id']}.html", f"{second['id']}.json"))
    index = archive.read("bundle/index.html").decode()
    assert f'href="{first["id"]}.html"' in index and f'href="{second["id"]}.json"' in index
    assert "Dialogue &lt;pilot&gt;" in index and "default-src &#39;none&#39;" in index and "<script" not in index
    assert json.loads(archive.read(f"bundle/{first['id']}.json")) == first["result"]
    assert f"{first['result']['official']['final_score']:.1f}" in archive.read(f"bundle/{first['id']}.html").decode()
    missing = client.get(f"/bundle.zip?ids={first['id']}&ids=nope")
    assert missing.status_code == 400 and "nope" in missing.get_data(as_text=True)

    result = runner.invoke(args=["bundle", first["id"], second["id"], "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == sorted(n.split("/")[1] for n in names)
    result = runner.invoke(args=["bundle", first["id"], "--out", str(tmp_path / "one.zip")])
    assert result.exit_code == 0 and len(zipfile.ZipFile(tmp_path / "one.zip").namelist()) == 3
    result = runner.invoke(args=["bundle", "nope"])
    assert result.exit_code != 0 and "nope" in result.output

"""Run management (issue 16, item 3): rename and tag evaluations and uploads, delete an evaluation, an upload with its
evaluations (after naming them) and a reference set not in use; the list of evaluations with kind, judge model,
headline scores and filters."""
from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import jsonl, session_line, wait_for
from tests.kinds.mobility.test_mobility_pipeline import add_reference, synthetic, upload_generated
from tests.web.test_api import upload


def evaluated(client, *sessions) -> tuple[str, str]:
    """(upload id, id of a finished evaluation of it)."""
    upload_id = upload(client, jsonl(*(sessions or (session_line("s1", 2), session_line("s2", 2))))).get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    assert wait_for(client, created["id"])["status"] == "done"
    return upload_id, created["id"]


def test_an_evaluation_is_renamed_and_tagged_and_listed_with_its_kind_model_and_headline(client):
    _upload_id, evaluation_id = evaluated(client)
    resp = client.patch(f"/api/evaluations/{evaluation_id}", json={"title": "  Baseline, run 2 ", "tags": ["v2", " ", "v2", "gpt"]})
    assert resp.status_code == 200
    assert resp.get_json() == {"id": evaluation_id, "title": "Baseline, run 2", "tags": ["v2", "gpt"]}
    # A field left out keeps its value.
    assert client.patch(f"/api/evaluations/{evaluation_id}", json={"tags": ["final"]}).get_json()["title"] == "Baseline, run 2"
    body = client.get(f"/api/evaluations/{evaluation_id}").get_json()
    listed = {e["id"]: e for e in client.get("/api/evaluations").get_json()}[evaluation_id]
    assert listed["title"] == "Baseline, run 2" and listed["tags"] == ["final"] and listed["kind"] == "dialogue"
    assert listed["measured_with"] == body["result"]["judge"]["model"]
    # The headline is each method's average AL, as in the result.
    assert listed["headline"] == [[m, doc["avg"]] for m, doc in body["result"]["methods"].items()]
    assert [e["id"] for e in client.get("/api/evaluations?tag=final").get_json()] == [evaluation_id]
    assert client.get("/api/evaluations?tag=other").get_json() == []
    assert client.get("/api/evaluations?kind=mobility").get_json() == []
    html = client.get("/evaluations?tag=final").get_data(as_text=True)
    assert "Baseline, run 2" in html and "Dialogue (persona alignment)" in html and "Average AL" in html
    assert 'class="tag"' in html and "<code>" + listed["measured_with"] + "</code>" in html


def test_labels_are_checked(client):
    _upload_id, evaluation_id = evaluated(client)
    for body, words in (({"title": 5}, "The field 'title' is wrong"), ({"tags": [1]}, "The field 'tags[0]' is wrong"),
                        ({"title": "x" * 201}, "longer than"),
                        ({"tags": [f"t{i}" for i in range(21)]}, "at most 20 tags")):
        resp = client.patch(f"/api/evaluations/{evaluation_id}", json=body)
        assert resp.status_code == 400 and words in resp.get_json()["error"], body
    assert client.patch("/api/evaluations/nope", json={"title": "x"}).status_code == 404
    assert client.patch(f"/api/evaluations/{evaluation_id}", data="x").status_code == 400


def test_deleting_an_evaluation_removes_it_everywhere_and_keeps_its_upload(client, app):
    upload_id, evaluation_id = evaluated(client)
    store, results = app.extensions["store"], Path(app.config["RESULTS_FOLDER"])
    share = client.post(f"/api/evaluations/{evaluation_id}/shares").get_json()
    assert (results / f"{evaluation_id}.json").is_file() and store.progress(evaluation_id)["total"] > 0
    assert client.delete(f"/api/evaluations/{evaluation_id}").status_code == 204
    assert client.get(f"/api/evaluations/{evaluation_id}").status_code == 404
    assert client.get(f"/evaluations/{evaluation_id}").status_code == 404
    assert client.delete(f"/api/evaluations/{evaluation_id}").status_code == 404
    assert not (results / f"{evaluation_id}.json").exists()
    assert store.progress(evaluation_id)["total"] == 0 and store.judgments(evaluation_id) == []
    assert client.get(share["url"].split("localhost", 1)[-1]).status_code == 404
    assert client.get(f"/api/uploads/{upload_id}").status_code == 200  # the upload stays


def test_a_running_evaluation_is_not_deleted(client, app):
    _upload_id, evaluation_id = evaluated(client)
    app.extensions["store"].set_status(evaluation_id, "running")
    resp = client.delete(f"/api/evaluations/{evaluation_id}")
    assert resp.status_code == 409 and "cancel it first" in resp.get_json()["error"]
    assert client.get(f"/api/evaluations/{evaluation_id}").status_code == 200


def test_deleting_an_upload_names_its_evaluations_first(client, app):
    upload_id, first = evaluated(client)
    second = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"]
    wait_for(client, second)
    uploaded = next(Path(app.config["UPLOAD_FOLDER"]).glob("*.jsonl"))
    resp = client.delete(f"/api/uploads/{upload_id}")
    assert resp.status_code == 409 and sorted(resp.get_json()["evaluations"]) == sorted([first, second])
    assert first in resp.get_json()["error"] and uploaded.exists()
    resp = client.delete(f"/api/uploads/{upload_id}?evaluations=delete")
    assert resp.status_code == 200 and sorted(resp.get_json()["deleted_evaluations"]) == sorted([first, second])
    for path in (f"/api/uploads/{upload_id}", f"/api/evaluations/{first}", f"/api/evaluations/{second}"):
        assert client.get(path).status_code == 404, path
    assert not uploaded.exists() and not list(Path(app.config["RESULTS_FOLDER"]).glob("*.json"))
    assert client.delete(f"/api/uploads/{upload_id}").status_code == 404


def test_the_pages_rename_delete_and_confirm_by_name(client, app):
    upload_id, evaluation_id = evaluated(client)
    resp = client.post(f"/evaluations/{evaluation_id}/labels", data={"title": "Run <b>A</b>", "tags": "x, y"})
    assert resp.status_code == 302
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "<h1>Run &lt;b&gt;A&lt;/b&gt;</h1>" in page and 'data-confirm="Delete this evaluation' in page
    client.post(f"/uploads/{upload_id}/labels", data={"title": "Logs of May", "tags": ""})
    assert "<h1>Logs of May</h1>" in client.get(f"/uploads/{upload_id}").get_data(as_text=True)
    confirm = client.get(f"/uploads/{upload_id}/delete").get_data(as_text=True)
    assert "Delete Logs of May?" in confirm and evaluation_id in confirm and "Run &lt;b&gt;A&lt;/b&gt;" in confirm
    assert client.post(f"/evaluations/{evaluation_id}/delete").status_code == 302
    assert client.get(f"/api/evaluations/{evaluation_id}").status_code == 404
    assert "It has no evaluations." in client.get(f"/uploads/{upload_id}/delete").get_data(as_text=True)
    assert client.post(f"/uploads/{upload_id}/delete").headers["Location"].endswith("/evaluations")
    assert client.get(f"/uploads/{upload_id}").status_code == 404


def test_a_reference_set_in_use_is_kept_and_one_not_in_use_is_deleted(client, app):
    assert add_reference(client, json.dumps(synthetic(seed=1)).encode(), "ref.json", "synthetic").status_code == 201
    reference = client.get("/api/references/synthetic").get_json()
    stored = Path(app.config["UPLOAD_FOLDER"]) / "references" / f"{reference['sha256']}.npz"
    generated = upload_generated(client, synthetic(seed=2, shift=500))
    evaluation = client.post("/api/evaluations", json={"upload_id": generated["id"], "reference": "synthetic"}).get_json()
    body = wait_for(client, evaluation["id"])
    listed = {e["id"]: e for e in client.get("/api/evaluations?kind=mobility").get_json()}[evaluation["id"]]
    assert listed["measured_with"] == "synthetic"
    assert listed["headline"] == [["my_agent", body["result"]["official"]["final_score"]]]
    resp = client.delete(f"/api/references/{reference['id']}")
    assert resp.status_code == 409 and evaluation["id"] in resp.get_json()["error"] and stored.exists()
    page = client.post(f"/references/{reference['id']}/delete")
    assert page.status_code == 409 and evaluation["id"] in page.get_data(as_text=True)
    assert client.delete(f"/api/evaluations/{evaluation['id']}").status_code == 204
    assert client.delete(f"/api/references/{reference['id']}").status_code == 204
    assert client.get("/api/references/synthetic").status_code == 404 and not stored.exists()
    assert client.delete(f"/api/references/{reference['id']}").status_code == 404


def test_compare_is_offered_for_every_kind(client):
    generated = upload_generated(client, synthetic(seed=2, shift=500))
    add_reference(client, json.dumps(synthetic(seed=1)).encode(), "ref.json", "synthetic")
    mobility = client.post("/api/evaluations", json={"upload_id": generated["id"], "reference": "synthetic"}).get_json()
    wait_for(client, mobility["id"])
    html = client.get("/evaluations").get_data(as_text=True)
    assert re.search(rf'<input type="checkbox" name="ids" value="{mobility["id"]}"', html)
    assert "Mobility (DailyMobility)" in client.get("/evaluations?kind=mobility").get_data(as_text=True)
    assert mobility["id"] not in client.get("/evaluations?kind=dialogue").get_data(as_text=True)

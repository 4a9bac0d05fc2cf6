"""The JSON API, from upload to finished result, through the real judge client and the local judge server."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.conftest import jsonl, session_line, wait_for


def scored_session(session_id: str, a_scores, b_score: int) -> dict:
    """A session where method A gets the given fine totals per round and always keeps the user chatting,
    and method B gets a flat score and never does."""
    s = session_line(session_id, rounds=len(a_scores), user_profile=f"profile of {session_id}")
    for rnd, a in zip(s["rounds"], a_scores):
        rnd["responses"] = {"A": f"A says hi [[score={a}]] [[keep=1]]", "B": f"B says hi [[score={b_score}]] [[keep=0]]"}
    return s


def upload(client, data: bytes, name: str = "log.jsonl", **form):
    return client.post("/api/uploads", data={"file": (io.BytesIO(data), name), **form},
                       content_type="multipart/form-data")


def test_upload_returns_summary(client, app):
    resp = upload(client, jsonl(session_line("a", 3), session_line("b", 2)))
    assert resp.status_code == 201
    body = resp.get_json()
    assert body["kind"] == "dialogue"
    assert body["summary"]["sessions"] == 2
    assert body["summary"]["rounds"] == 5
    assert body["summary"]["methods"] == ["A", "B"]
    stored = list(Path(app.config["UPLOAD_FOLDER"]).iterdir())
    assert [p.name for p in stored] == [f"{app.extensions['store'].get_upload(body['id'])['sha256']}.jsonl"]
    assert client.get(f"/api/uploads/{body['id']}").get_json()["summary"] == body["summary"]


def test_upload_never_uses_the_file_name_on_disk(client, app):
    resp = upload(client, jsonl(session_line()), name="../../etc/evil name.jsonl")
    assert resp.status_code == 201
    names = [p.name for p in Path(app.config["UPLOAD_FOLDER"]).iterdir()]
    assert len(names) == 1 and "evil" not in names[0] and len(names[0]) == 64 + len(".jsonl")


def test_same_content_reuses_the_upload(client):
    data = jsonl(session_line())
    first = upload(client, data).get_json()
    second = upload(client, data, name="other.jsonl").get_json()
    assert first["id"] == second["id"]


def test_bad_upload_is_400_with_problems_and_stores_nothing(client, app):
    bad = jsonl(session_line("a")) + b"{not json\n" + jsonl(session_line("a"))
    resp = upload(client, bad)
    assert resp.status_code == 400
    body = resp.get_json()
    lines = sorted(p["line"] for p in body["problems"])
    assert lines == [2, 3]
    assert "problem" in body["error"]
    assert list(Path(app.config["UPLOAD_FOLDER"]).glob("*.jsonl")) == []
    assert app.extensions["store"].list_evaluations() == []


def test_upload_without_file_field(client):
    resp = client.post("/api/uploads", data={}, content_type="multipart/form-data")
    assert resp.status_code == 400
    assert "'file'" in resp.get_json()["error"]


def test_unknown_kind_is_rejected(client):
    resp = upload(client, jsonl(session_line()), kind="chess")
    assert resp.status_code == 400
    assert "chess" in resp.get_json()["problems"][0]["message"]


def test_upload_over_the_size_limit_is_413_with_message(make_app, judge_env):
    app = make_app(judge_env, MAX_CONTENT_LENGTH=1024)
    resp = upload(app.test_client(), b" " * 4096)
    assert resp.status_code == 413
    error = resp.get_json()["error"]
    assert "larger than the upload limit" in error and "MAX_UPLOAD_MB" in error


def test_end_to_end_scores_match_hand_computation(client, app, judge_server):
    data = jsonl(scored_session("s1", [50, 60, 70], 40), scored_session("s2", [50, 60, 70], 40))
    upload_id = upload(client, data).get_json()["id"]
    resp = client.post("/api/evaluations", json={"upload_id": upload_id})
    assert resp.status_code == 202
    created = resp.get_json()
    assert created["status"] == "queued" and created["url"].endswith(f"/evaluations/{created['id']}")

    body = wait_for(client, created["id"])
    assert body["status"] == "done", body
    assert body["progress"] == {"done": 24, "total": 24, "failed": 0, "unparsed": 0, "cached": 0,
                                "rate_per_s": None, "eta_s": None, "waiting": None}
    result = body["result"]
    a, b = result["methods"]["A"], result["methods"]["B"]
    # A: AL = 50, 60, 70 -> AVG 60, slope 10, intercept 40, R2 1; N-AL = 0, .5, 1 -> N-IR .5
    assert [p["value"] for p in a["al_curve"]] == [50, 60, 70]
    assert a["avg"] == pytest.approx(60)
    assert a["slope"] == pytest.approx(10) and a["intercept"] == pytest.approx(40) and a["r2"] == pytest.approx(1)
    assert a["n_ir"] == pytest.approx(0.5)
    assert a["binary_rate"] == 100 and b["binary_rate"] == 0
    # B is flat: slope 0 and R2 undefined
    assert b["avg"] == pytest.approx(40) and b["slope"] == pytest.approx(0) and b["r2"] is None
    fine = next(c for c in result["comparisons"] if c["metric"] == "fine")
    assert (fine["a"], fine["b"], fine["diff"], fine["significant"]) == ("A", "B", pytest.approx(20), True)
    assert result["judge"]["calls"] == 24 and result["judge"]["model"] == "judge-test"
    assert result["judge"]["prompt_version"]
    assert judge_server.requests == 24
    saved = json.loads((Path(app.config["RESULTS_FOLDER"]) / f"{created['id']}.json").read_text("utf-8"))
    assert saved == result


def test_second_run_of_same_file_is_served_from_cache(client, judge_server):
    upload_id = upload(client, jsonl(session_line("c", 2))).get_json()["id"]
    first = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    assert wait_for(client, first["id"])["status"] == "done"
    calls = judge_server.requests
    second = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    body = wait_for(client, second["id"])
    assert body["status"] == "done"
    assert judge_server.requests == calls
    assert body["result"]["judge"]["calls"] == 0 and body["result"]["judge"]["cache_hits"] == 8


def test_method_subset(client):
    upload_id = upload(client, jsonl(session_line("d", 2, methods=("A", "B", "C")))).get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id, "methods": ["C", "A"]}).get_json()
    body = wait_for(client, created["id"])
    assert list(body["result"]["methods"]) == ["C", "A"]
    assert body["progress"]["total"] == 2 * 2 * 2


@pytest.mark.parametrize("payload, message", [
    ({"upload_id": "nope"}, "does not exist"),
    ({"upload_id": "UPLOAD", "methods": ["Z"]}, "Unknown methods: Z"),
    ({"upload_id": "UPLOAD", "methods": "A"}, "The field 'methods' is wrong: Input should be a valid list"),
    ({"upload_id": "UPLOAD", "judge": {"api_key": "x"}}, "JUDGE_API_KEY"),
    ({"upload_id": "UPLOAD", "judge": {"colour": "red"}}, "Unknown judge settings: colour"),
    ({"upload_id": "UPLOAD", "judge": {"concurrency": "many"}}, "concurrency"),
])
def test_bad_evaluation_requests(client, payload, message):
    upload_id = upload(client, jsonl(session_line())).get_json()["id"]
    if payload.get("upload_id") == "UPLOAD":
        payload = {**payload, "upload_id": upload_id}
    resp = client.post("/api/evaluations", json=payload)
    assert resp.status_code == 400
    assert message in resp.get_json()["error"]


def test_evaluation_body_must_be_json(client):
    resp = client.post("/api/evaluations", data="upload_id=1", content_type="application/x-www-form-urlencoded")
    assert resp.status_code == 400
    assert "JSON object" in resp.get_json()["error"]


def test_without_a_judge_uploads_work_and_evaluations_say_what_to_set(make_app):
    client = make_app({}).test_client()
    resp = upload(client, jsonl(session_line()))
    assert resp.status_code == 201
    resp = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"]})
    assert resp.status_code == 400
    assert "JUDGE_API_KEY" in resp.get_json()["error"] and "JUDGE_BASE_URL" in resp.get_json()["error"]


def test_api_key_never_appears_in_results_or_pages(client, app):
    upload_id = upload(client, jsonl(session_line())).get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    wait_for(client, created["id"])
    for url in (f"/api/evaluations/{created['id']}", f"/evaluations/{created['id']}",
                f"/evaluations/{created['id']}.json", f"/evaluations/{created['id']}.csv", "/api/evaluations"):
        assert b"sk-test-secret-key" not in client.get(url).data, url
    assert "sk-test-secret-key" not in Path(app.config["DATABASE"]).read_bytes().decode("latin-1")


def test_cancel(client, judge_server):
    judge_server.latency_s = 0.3
    upload_id = upload(client, jsonl(*(session_line(f"s{i}", 5) for i in range(6)))).get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    resp = client.post(f"/api/evaluations/{created['id']}/cancel")
    assert resp.status_code == 202
    body = wait_for(client, created["id"])
    assert body["status"] == "cancelled"
    assert body["progress"]["done"] < body["progress"]["total"] == 6 * 5 * 2 * 2
    assert client.post(f"/api/evaluations/{created['id']}/cancel").status_code == 409


def test_session_detail_pages(client):
    data = jsonl(*(session_line(f"sess-{i:02d}", 2) for i in range(25)))
    upload_id = upload(client, data).get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    wait_for(client, created["id"])
    first = client.get(f"/api/evaluations/{created['id']}/sessions").get_json()
    assert (first["page"], first["pages"], first["total"], len(first["sessions"])) == (1, 2, 25, 20)
    second = client.get(f"/api/evaluations/{created['id']}/sessions?page=2").get_json()
    assert [s["session_id"] for s in second["sessions"]] == [f"sess-{i:02d}" for i in range(20, 25)]
    rnd = second["sessions"][0]["rounds"][0]
    assert rnd["methods"]["A"]["reply"] == "reply 1 from A"
    assert rnd["methods"]["A"]["fine"]["status"] == "ok" and "Total" in rnd["methods"]["A"]["fine"]["answer"]
    found = client.get(f"/api/evaluations/{created['id']}/sessions?q=sess-07").get_json()
    assert [s["session_id"] for s in found["sessions"]] == ["sess-07"]


def test_unknown_evaluation_is_404_json(client):
    resp = client.get("/api/evaluations/nope")
    assert resp.status_code == 404
    assert "Not found" in resp.get_json()["error"]


def test_list_evaluations(client):
    upload_id = upload(client, jsonl(session_line())).get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    wait_for(client, created["id"])
    listed = client.get("/api/evaluations").get_json()
    assert [e["id"] for e in listed] == [created["id"]] and listed[0]["status"] == "done"

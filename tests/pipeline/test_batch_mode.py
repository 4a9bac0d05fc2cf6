"""Batch mode end to end: an evaluation judged through the Batch API from the API, the page and the CLI; the
same scores as call-by-call judging; a restart keeps polling the same batches instead of paying twice."""
from __future__ import annotations

import io
import json
import threading
import time

import pytest

from pipeline import evaluation_steps
from tests.batch_server import BatchServer, batch_server  # noqa: F401  (fixture)
from tests.conftest import jsonl, session_line, wait_for

# 4 sessions x 3 rounds x 2 methods x 2 modes = 48 distinct requests (each session has its own profile)
FILE = jsonl(*(session_line(f"s{i}", 3, user_profile=f"Runner number {i}.") for i in range(4)))


def env_for(server: BatchServer) -> dict:
    return {"JUDGE_BASE_URL": server.url, "JUDGE_API_KEY": "sk-batch-secret", "JUDGE_MODEL": "judge-test",
            "JUDGE_CONCURRENCY": "4", "JUDGE_BATCH_POLL_S": "0.05"}


def start(client, judge: dict) -> str:
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(FILE), "log.jsonl")},
                         content_type="multipart/form-data").get_json()
    resp = client.post("/api/evaluations", json={"upload_id": upload["id"], "judge": judge})
    assert resp.status_code == 202, resp.get_data(as_text=True)
    return resp.get_json()["id"]


def test_batch_evaluation_matches_call_by_call_and_makes_no_chat_call(make_app, batch_server):
    app = make_app(env_for(batch_server))
    client = app.test_client()
    batch_id = start(client, {"batch": True})
    batched = wait_for(client, batch_id)
    assert batched["status"] == "done", batched
    stats = batch_server.batch_stats()
    assert stats["chat_requests"] == 0 and stats["uploads"] == 1 and stats["batch_lines"] == 48
    assert app.extensions["store"].get_evaluation(batch_id)["settings"]["batch"] is True
    synced = wait_for(client, start(client, {"use_cache": False}))
    assert batch_server.batch_stats()["chat_requests"] == 48  # the comparison run really called the judge
    assert batched["result"]["methods"] == synced["result"]["methods"]
    state = app.extensions["store"].get_setting(f"batch:{batch_id}")
    assert "sk-batch-secret" not in json.dumps(state)


def test_failed_lines_are_recorded_as_failed_and_asked_again_in_a_new_batch(make_app, batch_server):
    app = make_app(env_for(batch_server))
    client = app.test_client()
    batch_server.fault_every(8, "500")
    evaluation_id = start(client, {"batch": True})
    body = wait_for(client, evaluation_id)
    # a batch's failed lines are not asked again by themselves: the evaluation ends incomplete, saying so
    assert body["status"] == "incomplete" and body["progress"]["failed"] == 6
    assert body["error"].startswith("6 judgments failed after every retry")
    batch_server.line_fault = None
    assert client.post(f"/api/evaluations/{evaluation_id}/rerun-failed").status_code == 202
    body = wait_for(client, evaluation_id)
    assert body["progress"]["failed"] == 0 and body["progress"]["done"] == 48
    assert batch_server.batch_stats()["uploads"] == 2 and batch_server.batch_stats()["batch_lines"] == 48 + 6


def test_a_restart_polls_the_same_batch_instead_of_paying_twice(make_app, batch_server, monkeypatch):
    batch_server.batch_delay_s = 0.5
    frozen = threading.Event()
    real_wait = evaluation_steps.pause
    # The first server submits the batch, stores its state, then stops for good before its first pause between
    # two polls returns, like a process that died while the batch was pending.
    monkeypatch.setattr(evaluation_steps, "pause", lambda seconds, should_stop: frozen.wait())
    app = make_app(env_for(batch_server))
    evaluation_id = start(app.test_client(), {"batch": True})
    store = app.extensions["store"]
    deadline = time.monotonic() + 10
    while not store.get_setting(f"batch:{evaluation_id}") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert store.get_setting(f"batch:{evaluation_id}"), "the batch was never submitted"
    monkeypatch.setattr(evaluation_steps, "pause", real_wait)
    restarted = make_app(env_for(batch_server))
    restarted.extensions["runner"].resume()  # what a restarted server does with unfinished evaluations
    try:
        body = wait_for(restarted.test_client(), evaluation_id)
        assert body["status"] == "done" and body["progress"]["done"] == 48 and body["progress"]["failed"] == 0
        assert batch_server.batch_stats()["uploads"] == 1 and batch_server.batch_stats()["batch_lines"] == 48
    finally:
        frozen.set()


def test_batch_is_a_flag_on_the_form_and_in_the_cli(make_app, batch_server, tmp_path):
    app = make_app(env_for(batch_server))
    client = app.test_client()
    assert 'name="batch"' in client.get("/uploads/" + client.post(
        "/api/uploads", data={"file": (io.BytesIO(FILE), "log.jsonl")},
        content_type="multipart/form-data").get_json()["id"]).get_data(as_text=True)
    refused = client.post("/api/evaluations", json={"upload_id": "x", "judge": {"batch": "maybe"}})
    assert refused.status_code == 400
    path = tmp_path / "log.jsonl"
    path.write_bytes(FILE)
    result = app.test_cli_runner().invoke(args=["score", str(path), "--batch"])
    assert result.exit_code == 0, result.output
    assert batch_server.batch_stats()["chat_requests"] == 0 and batch_server.batch_stats()["batch_lines"] == 48


@pytest.mark.parametrize("judge", [{"batch": "yes"}, {"batch": 2}])
def test_batch_must_be_a_flag(make_app, batch_server, judge):
    client = make_app(env_for(batch_server)).test_client()
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(FILE), "log.jsonl")},
                         content_type="multipart/form-data").get_json()
    resp = client.post("/api/evaluations", json={"upload_id": upload["id"], "judge": judge})
    assert resp.status_code == 400 and "The field 'judge.batch' is wrong" in resp.get_json()["error"]


@pytest.mark.parametrize("factor, expected", [(None, 0.5), ("0.25", 0.25)])
def test_batch_cost_is_the_batch_price(make_app, batch_server, factor, expected):
    prices = {"JUDGE_PRICE_PROMPT_PER_M": "2", "JUDGE_PRICE_COMPLETION_PER_M": "8",
              **({"JUDGE_BATCH_PRICE_FACTOR": factor} if factor else {})}
    app = make_app({**env_for(batch_server), **prices})
    client = app.test_client()
    batched = wait_for(client, start(client, {"batch": True}))
    synced = wait_for(client, start(client, {"use_cache": False}))
    for body, share in ((batched, expected), (synced, 1.0)):
        judge = body["result"]["judge"]
        assert judge["prompt_tokens"] > 0 and judge["completion_tokens"] > 0
        full = (judge["prompt_tokens"] * 2 + judge["completion_tokens"] * 8) / 1e6
        assert judge["cost"] == pytest.approx(full * share)
    assert batched["result"]["judge"]["prices_per_million"] == {"prompt": 2 * expected, "completion": 8 * expected,
                                                                "batch_factor": expected}
    page = client.get(f"/evaluations/{batched['id']}").get_data(as_text=True)
    assert f"Batch API: {expected:.2f} × the per-call prices" in page
    assert "Batch API:" not in client.get(f"/evaluations/{synced['id']}").get_data(as_text=True)


def test_a_bad_batch_price_factor_is_refused_with_its_name(make_app, batch_server):
    app = make_app({**env_for(batch_server), "JUDGE_BATCH_PRICE_FACTOR": "half"})
    client = app.test_client()
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(FILE), "log.jsonl")},
                         content_type="multipart/form-data").get_json()
    resp = client.post("/api/evaluations", json={"upload_id": upload["id"], "judge": {"batch": True}})
    assert resp.status_code == 400 and "JUDGE_BATCH_PRICE_FACTOR" in resp.get_json()["error"]


def test_a_panel_in_batch_mode_sends_one_batch_per_judge(make_app, batch_server):
    app = make_app(env_for(batch_server))
    client = app.test_client()
    batch_server.models = {"judge-b": (-10, False)}  # scores are 40-95 without markers: no clamping
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(FILE), "log.jsonl")},
                         content_type="multipart/form-data").get_json()
    resp = client.post("/api/evaluations", json={"upload_id": upload["id"], "judge": {"batch": True},
                                                 "judges": [{"model": "judge-a"}, {"model": "judge-b"}]})
    body = wait_for(client, resp.get_json()["id"])
    assert body["status"] == "done", body
    stats = batch_server.batch_stats()
    # A batch holds one model's requests: one upload per judge, 48 lines each, no chat call.
    assert stats["chat_requests"] == 0 and stats["uploads"] == 2 and stats["batch_lines"] == 96
    store = app.extensions["store"]
    assert store.get_setting(f"batch:{body['id']}") and store.get_setting(f"batch:{body['id']}@1")
    by_judge = body["result"]["by_judge"]
    for method in ("A", "B"):
        assert by_judge["judge-b"]["methods"][method]["avg"] == pytest.approx(
            by_judge["judge-a"]["methods"][method]["avg"] - 10)

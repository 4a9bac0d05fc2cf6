"""Whole evaluations against a flaky judge: retries, failures, re-runs, cancel and resume, shared budget, cost."""
from __future__ import annotations

import io
import json
import threading
import time

import pytest

from tests.conftest import jsonl, session_line, wait_for

MARK = "[[target]]"


@pytest.fixture
def judge_env(judge_server):  # noqa: F811 - overrides conftest's with fast retries
    # A timeout far above a loaded machine's pauses: these tests count requests on both sides, and a call that timed
    # out before the server read it (or after) would be counted by one side only. The timeout test sets its own.
    return {"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
            "JUDGE_CONCURRENCY": "4", "JUDGE_MAX_RETRIES": "3", "JUDGE_TIMEOUT_S": "5",
            "JUDGE_RETRY_BASE_S": "0.01", "JUDGE_RETRY_MAX_S": "0.05", "JUDGE_FAILED_RETRY_S": "0.3"}


def start(client, sessions: list[dict], **body) -> str:
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(*sessions)), "log.jsonl")},
                       content_type="multipart/form-data")
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"], **body})
    assert created.status_code == 202, created.get_json()
    return created.get_json()["id"]


def targeted(session_id: str = "t1") -> dict:
    """Two rounds of methods A and B; only B's last reply carries the marker, so exactly two judgments
    (its fine and binary one) see it."""
    s = session_line(session_id, 2, user_profile=f"profile {session_id}")
    s["rounds"][-1]["responses"]["B"] += " " + MARK
    return s


def fault_on_marker(kind: str):
    """A server hook that answers every judgment of the marked reply with a fault."""
    def hook(request: dict):
        return kind if MARK in json.dumps(request["body"]) else None
    return hook


@pytest.mark.parametrize("kind", ["429", "500", "503", "timeout", "drop"])
def test_transient_faults_end_in_a_finished_evaluation(make_app, judge_env, judge_server, kind):
    # a hang of 6 s is then a timeout; 2 s, not less: a loaded machine's pauses timed out ordinary calls at 0.5 s
    timeout = {"JUDGE_TIMEOUT_S": "2"} if kind == "timeout" else {}
    client = make_app({**judge_env, **timeout}).test_client()
    judge_server.retry_after_s = 0.05
    judge_server.hang_s = 6.0
    judge_server.fail_next(2, kind)
    evaluation_id = start(client, [session_line("f1", 2)])
    body = wait_for(client, evaluation_id)
    assert body["status"] == "done"
    assert (body["progress"]["done"], body["progress"]["failed"], body["progress"]["unparsed"]) == (8, 0, 0)
    judge = body["result"]["judge"]
    assert judge["calls"] == 8 and judge["failed"] == 0
    assert judge["attempts"] == 8 + 2
    assert judge_server.requests == 10


@pytest.mark.parametrize("kind, status", [("500", "failed"), ("malformed", "unparsed"),
                                          ("out_of_range", "unparsed"), ("empty", "unparsed")])
def test_lasting_faults_are_counted_then_rerun(client, judge_server, kind, status):
    judge_server.hook = fault_on_marker(kind)
    evaluation_id = start(client, [targeted("t1"), session_line("ok1", 2, user_profile="other")])
    body = wait_for(client, evaluation_id)
    assert body["status"] == ("incomplete" if status == "failed" else "done")  # unparsed ones were answered
    assert body["progress"][status] == 2 and body["progress"]["done"] == 16
    b = body["result"]["methods"]["B"]
    assert b["judged"] == 6 and b[status] == 2
    assert body["result"]["methods"]["A"]["judged"] == 8
    failures = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "Failed and unparsed judgments" in failures and "Re-run 2 failed and unparsed" in failures

    judge_server.hook = None
    before = judge_server.requests
    assert client.post(f"/api/evaluations/{evaluation_id}/rerun-failed").status_code == 202
    body = wait_for(client, evaluation_id)
    assert body["status"] == "done"
    assert (body["progress"]["failed"], body["progress"]["unparsed"]) == (0, 0)
    assert body["result"]["methods"]["B"]["judged"] == 8
    assert judge_server.requests - before == 2  # only the two that had failed were asked again
    # every request made is accounted for, including the ones that failed or could not be parsed
    assert body["result"]["judge"]["attempts"] == judge_server.requests


def test_failed_judgment_shows_its_reason(client, judge_server):
    judge_server.hook = fault_on_marker("500")
    evaluation_id = start(client, [targeted()])
    wait_for(client, evaluation_id)
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "HTTP 500" in page and "4 attempts" in page


def test_client_error_is_not_retried(client, judge_server):
    judge_server.hook = fault_on_marker("400")
    evaluation_id = start(client, [targeted()])
    body = wait_for(client, evaluation_id)
    assert body["progress"]["failed"] == 2
    assert judge_server.requests == 8  # 6 good + 2 bad, each asked once


def test_cancel_then_resume_finishes_without_asking_twice(client, judge_server):
    judge_server.latency_s = 0.1
    seen: dict = {}
    lock = threading.Lock()

    def count(request):
        with lock:
            key = json.dumps(request["body"], sort_keys=True)
            seen[key] = seen.get(key, 0) + 1

    judge_server.hook = count
    evaluation_id = start(client, [session_line(f"c{i}", 3, user_profile=f"p{i}") for i in range(5)])
    deadline = time.monotonic() + 20
    while client.get(f"/api/evaluations/{evaluation_id}").get_json()["progress"]["done"] < 8:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert client.post(f"/api/evaluations/{evaluation_id}/cancel").status_code == 202
    body = wait_for(client, evaluation_id)
    assert body["status"] == "cancelled" and 8 <= body["progress"]["done"] < 60
    assert body["result"]["methods"]["A"]["judged"] > 0  # partial results are visible
    assert "Resume" in client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)

    judge_server.latency_s = 0
    assert client.post(f"/api/evaluations/{evaluation_id}/resume").status_code == 202
    body = wait_for(client, evaluation_id)
    assert body["status"] == "done" and body["progress"]["done"] == 60
    assert len(seen) == 60 and max(seen.values()) == 1


def test_resume_of_running_evaluation_is_409(client, judge_server):
    judge_server.latency_s = 0.3
    evaluation_id = start(client, [session_line("r", 3)])
    assert client.post(f"/api/evaluations/{evaluation_id}/resume").status_code == 409
    client.post(f"/api/evaluations/{evaluation_id}/cancel")
    wait_for(client, evaluation_id)


def test_two_evaluations_share_the_endpoint_budget(client, judge_server):
    judge_server.latency_s = 0.05
    first = start(client, [session_line(f"a{i}", 3, user_profile=f"a{i}") for i in range(4)])
    second = start(client, [session_line(f"b{i}", 3, user_profile=f"b{i}") for i in range(4)])
    assert wait_for(client, first)["status"] == "done" and wait_for(client, second)["status"] == "done"
    assert judge_server.max_in_flight == 4  # JUDGE_CONCURRENCY, for both together


def test_cache_bypass_asks_again(client, judge_server):
    first = start(client, [session_line("cb", 2)])
    wait_for(client, first)
    upload_id = client.get(f"/api/evaluations/{first}").get_json()["upload_id"]
    again = client.post("/api/evaluations", json={"upload_id": upload_id, "judge": {"use_cache": False}})
    body = wait_for(client, again.get_json()["id"])
    assert body["result"]["judge"]["calls"] == 8 and body["result"]["judge"]["cache_hits"] == 0
    assert judge_server.requests == 16


def test_tokens_and_cost(make_app, judge_env, judge_server):
    client = make_app({**judge_env, "JUDGE_PRICE_PROMPT_PER_M": "2.5", "JUDGE_PRICE_COMPLETION_PER_M": "10"}).test_client()
    evaluation_id = start(client, [session_line("cost", 2)])
    judge = wait_for(client, evaluation_id)["result"]["judge"]
    assert judge["prompt_tokens"] > 0 and judge["completion_tokens"] > 0
    assert judge["cost"] == pytest.approx((judge["prompt_tokens"] * 2.5 + judge["completion_tokens"] * 10) / 1e6)
    by_method = judge["by_method"]
    assert list(by_method) == ["A", "B"]
    assert sum(m["prompt_tokens"] for m in by_method.values()) == judge["prompt_tokens"]
    assert sum(m["cost"] for m in by_method.values()) == pytest.approx(judge["cost"])


def test_no_cost_without_prices(client):
    evaluation_id = start(client, [session_line("nocost", 2)])
    assert wait_for(client, evaluation_id)["result"]["judge"]["cost"] is None


def test_bad_price_is_refused(make_app, judge_env):
    client = make_app({**judge_env, "JUDGE_PRICE_PROMPT_PER_M": "cheap"}).test_client()
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "x.jsonl")},
                       content_type="multipart/form-data")
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"]})
    assert created.status_code == 400 and "JUDGE_PRICE_PROMPT_PER_M" in created.get_json()["error"]


def test_progress_reports_pace_while_running(client, judge_server):
    judge_server.latency_s = 0.2  # 60 judgments at 4 in flight: about 3 s, several progress updates
    evaluation_id = start(client, [session_line(f"pace{i}", 5, user_profile=f"p{i}") for i in range(3)])
    progress = {}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        body = client.get(f"/api/evaluations/{evaluation_id}").get_json()
        progress = body["progress"]
        if progress["rate_per_s"] or body["status"] not in ("queued", "running"):
            break
        time.sleep(0.02)
    assert progress["rate_per_s"] > 0 and progress["eta_s"] >= 0
    client.post(f"/api/evaluations/{evaluation_id}/cancel")
    wait_for(client, evaluation_id)


def test_a_judge_outage_shorter_than_the_bound_leaves_no_hole(make_app, judge_env, judge_server):
    # JUDGE_FAILED_RETRY_S 5: pauses of 0.5, 1, 2 and 1.5 s. The first round (at 0 s) and the first retry (at about
    # 0.6 s) fall in the 1.3 s outage; the second retry (at about 1.7 s) is answered.
    client = make_app({**judge_env, "JUDGE_FAILED_RETRY_S": "5"}).test_client()
    # a first evaluation loads the modules, so that the judge is asked at once
    wait_for(client, start(client, [session_line("warm", 1, user_profile="warm")]))
    judge_server.reset()
    judge_server.fail_for(1.3, "503")
    evaluation_id = start(client, [session_line("out1", 2)])
    seen = []
    deadline = time.monotonic() + 30
    while (body := client.get(f"/api/evaluations/{evaluation_id}").get_json())["status"] in ("queued", "running"):
        seen.append(body["progress"])
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert body["status"] == "done" and body["error"] is None and body["failure"] is None
    assert (body["progress"]["done"], body["progress"]["failed"], body["progress"]["unparsed"]) == (8, 0, 0)
    # while it paused, the progress said so instead of a pace
    assert any(p["waiting"] == "retry" and p["rate_per_s"] is None and p["eta_s"] is None for p in seen), \
        [(p["waiting"], p["done"]) for p in seen]
    # each of the 8 judgments answered exactly once, after at least one refused attempt each (the first round falls
    # in the outage; how many attempts of a later round still do depends on the machine's load)
    assert len(judge_server.answered) == 8 and set(judge_server.answered.values()) == {1}
    assert judge_server.requests >= 16, judge_server.requests
    assert body["result"]["judge"]["attempts"] == judge_server.requests


def test_a_judge_outage_longer_than_the_bound_ends_incomplete_then_rerun(make_app, judge_env, judge_server):
    # JUDGE_FAILED_RETRY_S 0.6: pauses of 0.06, 0.12, 0.24 and 0.18 s, so 5 rounds of 8 judgments x 4 attempts.
    client = make_app({**judge_env, "JUDGE_FAILED_RETRY_S": "0.6"}).test_client()
    judge_server.fail_always("503")
    evaluation_id = start(client, [session_line("out2", 2)])
    body = wait_for(client, evaluation_id)
    assert body["status"] == "incomplete"
    assert (body["progress"]["done"], body["progress"]["failed"]) == (8, 8)
    assert judge_server.requests == 5 * 8 * 4
    reason = "InternalServerError: HTTP 503: Simulated server error 503. (gave up after 4 attempts)"
    assert body["failure"] == {"failed": 8, "reason": reason}
    assert body["error"] == f"8 judgments failed after every retry; the commonest reason: {reason}"
    assert body["result"]["judge"]["failed"] == 8
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "Incomplete: 8 judgments failed after every retry. The commonest reason: " in page
    assert "HTTP 503: Simulated server error 503." in page and "Re-run 8 failed and unparsed" in page
    assert 'status-incomplete" id="status">incomplete<' in page
    listed = client.get("/api/evaluations").get_json()
    assert [e["status"] for e in listed] == ["incomplete"]
    assert client.post(f"/api/evaluations/{evaluation_id}/resume").status_code == 409

    judge_server.fail_always(None)
    assert client.post(f"/api/evaluations/{evaluation_id}/rerun-failed").status_code == 202
    body = wait_for(client, evaluation_id)
    assert body["status"] == "done" and body["error"] is None and body["progress"]["failed"] == 0
    assert judge_server.requests == 5 * 8 * 4 + 8
    assert len(judge_server.answered) == 8 and set(judge_server.answered.values()) == {1}


def test_flask_score_exits_non_zero_for_an_incomplete_evaluation(make_app, judge_env, judge_server, tmp_path):
    app = make_app({**judge_env, "JUDGE_FAILED_RETRY_S": "0"})
    judge_server.fail_always("503")
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(session_line("cli1", 2)))
    result = app.test_cli_runner().invoke(args=["score", str(path)])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["judge"]["failed"] == 8  # the result is still written
    assert "error: the evaluation ended incomplete: 8 judgments failed after every retry" in result.stderr
    assert judge_server.requests == 8 * 4  # JUDGE_FAILED_RETRY_S 0: no retry after the client's own


@pytest.mark.parametrize("value", ["soon", "-1", "inf"])
def test_a_bad_failed_retry_setting_is_refused_when_the_evaluation_is_created(make_app, judge_env, value):
    client = make_app({**judge_env, "JUDGE_FAILED_RETRY_S": value}).test_client()
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "x.jsonl")},
                       content_type="multipart/form-data")
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"]})
    assert created.status_code == 400
    assert created.get_json()["error"] == f"JUDGE_FAILED_RETRY_S must be a number of seconds >= 0, got '{value}'."

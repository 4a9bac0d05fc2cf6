"""A dead judge is named within seconds and costs a handful of calls: a closed port, a refused key (401), a wrong
model or URL (404) and a server that drops every connection, each through `flask --app app score` as typed, the JSON
API and the result page; a resumed run then finishes; and the progress never runs backwards while failed judgments
are asked again."""
from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import time

import pytest
from markupsafe import escape

from judge import CONNECTION_FAILURES
from tests.conftest import ROOT, jsonl, session_line, wait_for

SESSIONS, ROUNDS = 50, 3
JUDGMENTS = SESSIONS * ROUNDS * 2 * 2  # two methods, a fine and a binary judgment each: 600, as in the report
LIMIT_S = 30.0  # the reason is given within this long of the start (in practice well under a second here)

# What each dead endpoint is named by, in the evaluation's error (API, page) and on the CLI's stderr.
REASONS = {
    "closed": f"Stopped asking the judge: {CONNECTION_FAILURES} calls in a row could not reach it (connection refused "
              "at http://127.0.0.1:",
    "drop": f"Stopped asking the judge: {CONNECTION_FAILURES} calls in a row could not reach it (APIConnectionError: "
            "connection to http://127.0.0.1:",
    "401": "Stopped asking the judge: the API key was rejected (HTTP 401: Invalid API key: ***); check JUDGE_API_KEY "
           "(or OPENAI_API_KEY) — check the endpoint's URL, model and key, then resume the evaluation.",
    "404": "Stopped asking the judge: NotFoundError: HTTP 404: Simulated client error 404. — check the endpoint's URL, "
           "model and key, then resume the evaluation.",
}
# Calls the local server receives before the run stops: the probe alone for an answer no retry changes; for a
# connection dropped every time, the failures in a row the breaker waits for (one at a time: none answered yet).
CALLS = {"drop": CONNECTION_FAILURES, "401": 1, "404": 1}


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sessions() -> bytes:
    return jsonl(*(session_line(f"d{i}", ROUNDS, user_profile=f"profile {i}") for i in range(SESSIONS)))


def dead_env(case: str, judge_server) -> dict:
    """The judge settings of a case: the product's own retries and concurrency, only the endpoint is given."""
    url = f"http://127.0.0.1:{closed_port()}/v1" if case == "closed" else judge_server.url
    if case != "closed":
        judge_server.fail_always(case)
    return {"JUDGE_BASE_URL": url, "JUDGE_API_KEY": "sk-dead-judge-key", "JUDGE_MODEL": "judge-test"}


@pytest.mark.parametrize("case", ["closed", "401", "404", "drop"])
def test_flask_score_names_a_dead_judge_within_seconds(judge_server, tmp_path, case):
    path = tmp_path / "replies.jsonl"
    path.write_bytes(sessions())
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "DATABASE", "CELERY_", "OPENAI_"))},
           "INSTANCE_PATH": str(tmp_path / "instance"), "DATABASE": str(tmp_path / "db.sqlite"),
           "UPLOAD_FOLDER": str(tmp_path / "uploads"), "RESULTS_FOLDER": str(tmp_path / "results"),
           **dead_env(case, judge_server)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "flask", "--app", "app", "score", str(path)], cwd=ROOT, env=env,
                          text=True, capture_output=True, timeout=300)
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert f"error: the evaluation ended failed: {REASONS[case]}" in done.stderr, done.stderr
    assert "sk-dead-judge-key" not in done.stderr and done.stdout == ""
    assert elapsed < LIMIT_S, elapsed  # the whole command, its start included
    assert judge_server.requests == CALLS.get(case, 0), judge_server.stats()


def start(client, body: bytes) -> str:
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(body), "replies.jsonl")},
                         content_type="multipart/form-data")
    created = client.post("/api/evaluations", json={"upload_id": upload.get_json()["id"]})
    assert created.status_code == 202, created.get_json()
    return created.get_json()["id"]


@pytest.mark.parametrize("case", ["closed", "401", "404", "drop"])
def test_the_api_and_the_page_name_a_dead_judge_and_a_resume_finishes(make_app, judge_server, case):
    env = dead_env(case, judge_server)
    client = make_app(env).test_client()
    started = time.monotonic()
    evaluation_id = start(client, sessions())
    body = wait_for(client, evaluation_id, timeout=60)
    elapsed = time.monotonic() - started
    assert body["status"] == "failed" and body["error"].startswith(REASONS[case]), body
    assert "sk-dead-judge-key" not in body["error"]
    assert elapsed < LIMIT_S, elapsed
    assert judge_server.requests == CALLS.get(case, 0), judge_server.stats()
    # the calls that failed for the endpoint's reason are not held against the judgments: every one is left to do
    assert (body["progress"]["done"], body["progress"]["failed"], body["progress"]["total"]) == (0, 0, JUDGMENTS)
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert str(escape(body["error"])) in page and 'action="/evaluations/%s/resume"' % evaluation_id in page

    # the judge is fixed (the closed case: its settings now name the local server), and Resume finishes the run with
    # each judgment asked once
    if case == "closed":
        client = make_app({**env, "JUDGE_BASE_URL": judge_server.url}).test_client()
    judge_server.fail_always(None)
    asked = judge_server.requests
    assert client.post(f"/api/evaluations/{evaluation_id}/resume").status_code == 202
    body = wait_for(client, evaluation_id, timeout=60)
    assert body["status"] == "done" and body["error"] is None, body
    assert body["progress"]["done"] == JUDGMENTS and body["progress"]["failed"] == 0
    assert judge_server.requests - asked == JUDGMENTS and set(judge_server.answered.values()) == {1}


def test_a_key_refused_in_the_middle_of_a_run_stops_it(make_app, judge_server):
    # the probe is answered, then the key is revoked: the calls in flight come back 401, and no more start
    judge_server.latency_s = 0.02
    client = make_app({"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-dead-judge-key",
                       "JUDGE_MODEL": "judge-test", "JUDGE_CONCURRENCY": "4"}).test_client()
    evaluation_id = start(client, sessions())
    deadline = time.monotonic() + 30
    while client.get(f"/api/evaluations/{evaluation_id}").get_json()["progress"]["done"] < 40:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    judge_server.fail_always("401")
    refused_from = judge_server.requests
    body = wait_for(client, evaluation_id)
    assert body["status"] == "failed" and body["error"].startswith(REASONS["401"]), body
    # at most the calls in flight when the first 401 came back, and those that had started meanwhile
    assert judge_server.requests - refused_from <= 2 * 4, judge_server.stats()
    assert body["progress"]["failed"] == 0 and 40 <= body["progress"]["done"] < JUDGMENTS


@pytest.mark.parametrize("kind", ["429", "503", "timeout", "drop"])
def test_passing_faults_at_the_start_do_not_stop_the_run(make_app, judge_server, kind):
    # the probe and the next calls meet a passing fault (fewer drops in a row than the breaker waits for): retried
    judge_server.retry_after_s = 0.05
    judge_server.hang_s = 6.0
    judge_server.fail_next(CONNECTION_FAILURES - 1, kind)
    client = make_app({"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
                       "JUDGE_MAX_RETRIES": "5", "JUDGE_RETRY_BASE_S": "0.01", "JUDGE_RETRY_MAX_S": "0.05",
                       # a hang of 6 s is a timeout (2 s: at 0.5 s a loaded machine's pauses timed out ordinary
                       # calls too); the other faults get 5 s, since the requests are counted on both sides
                       "JUDGE_TIMEOUT_S": "2" if kind == "timeout" else "5"}).test_client()
    body = wait_for(client, start(client, jsonl(session_line("p1", 2))))
    assert body["status"] == "done", body
    assert (body["progress"]["done"], body["progress"]["failed"]) == (8, 0)
    assert judge_server.requests == 8 + CONNECTION_FAILURES - 1


def test_progress_never_runs_backwards_while_failed_judgments_are_asked_again(make_app, judge_server):
    # An outage of 1.3 s: the first round fails, its judgments are put back to pending and asked again after pauses
    # of 0.5, 1, 2 s (JUDGE_FAILED_RETRY_S 5); the page and the API saw "8 of 8" turn into "0 of 8" then.
    client = make_app({"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
                       "JUDGE_CONCURRENCY": "4", "JUDGE_MAX_RETRIES": "1", "JUDGE_RETRY_BASE_S": "0.01",
                       "JUDGE_RETRY_MAX_S": "0.05", "JUDGE_FAILED_RETRY_S": "5"}).test_client()
    wait_for(client, start(client, jsonl(session_line("warm", 1, user_profile="warm"))))  # modules loaded
    judge_server.reset()
    judge_server.fail_for(1.3, "503")
    evaluation_id = start(client, jsonl(session_line("out1", 2)))
    seen = []
    deadline = time.monotonic() + 30
    while (body := client.get(f"/api/evaluations/{evaluation_id}").get_json())["status"] in ("queued", "running"):
        seen.append((body["progress"]["done"], body["progress"]["waiting"]))
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert body["status"] == "done" and judge_server.faults["503"] >= 8
    assert ("retry" in {w for _d, w in seen}) and (8, "retry") in seen, seen  # the pause was seen, at 8 of 8
    done = [d for d, _w in seen] + [body["progress"]["done"]]
    assert all(a <= b for a, b in zip(done, done[1:])), done



def test_progress_never_runs_backwards_while_a_rerun_asks_failed_judgments_again(make_app, judge_server):
    client = make_app({"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
                       "JUDGE_CONCURRENCY": "2"}).test_client()
    marked = session_line("m1", 2, user_profile="marked")
    marked["rounds"][-1]["responses"]["B"] += " [[refuse]]"
    judge_server.hook = lambda request: "400" if "[[refuse]]" in str(request["body"]) else None
    evaluation_id = start(client, jsonl(marked, session_line("m2", 2, user_profile="other")))
    body = wait_for(client, evaluation_id)
    assert body["status"] == "incomplete" and (body["progress"]["done"], body["progress"]["failed"]) == (16, 2)
    judge_server.hook = None
    judge_server.latency_s = 0.3  # the two asked again take a while: the progress is read meanwhile
    assert client.post(f"/api/evaluations/{evaluation_id}/rerun-failed").status_code == 202
    seen = []
    while (body := client.get(f"/api/evaluations/{evaluation_id}").get_json())["status"] in ("queued", "running"):
        seen.append(body["progress"]["done"])
        time.sleep(0.02)
    assert body["status"] == "done" and body["progress"]["failed"] == 0
    assert seen and set(seen) == {16}, seen  # never "14 of 16"


def test_a_process_goes_on_with_a_runs_breakers_from_block_to_block_until_one_opens(judge_server, tmp_path):
    # A Celery worker opens the evaluation again for each block it takes. Within PROBED_S of the endpoint's last
    # answer the next block goes on with the run's breakers, its calls together at once (the thread runner's blocks
    # share their run's too); once a breaker opened, the next opening probes again (a resumed run, the key fixed).
    from kinds import registry
    from kinds.kind import JobFailed
    from pipeline.evaluation_steps import Pipeline
    from pipeline.evaluations import create_evaluation
    from pipeline.ingest import ingest
    from storage.store import Store

    env = {"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-probe-key", "JUDGE_MODEL": "judge-test",
           "JUDGE_CONCURRENCY": "8"}
    store = Store(tmp_path / "db.sqlite", registry.tables())
    upload = ingest(io.BytesIO(sessions()), "log.jsonl", store, tmp_path / "uploads")
    evaluation_id = create_evaluation(store, upload["id"], environ=env)["id"]
    pipeline = Pipeline(store, tmp_path / "uploads", tmp_path / "results", lambda: env)
    pipeline.plan(*pipeline.load(evaluation_id))

    def block(first: int, last: int) -> None:
        kind, job = pipeline.load(evaluation_id)
        pipeline.judge(kind, job, store.pending_keys(evaluation_id, first, last), lambda: False, None)

    block(0, 9)  # the run's first block: answered
    judge_server.reset()
    judge_server.fail_always("401")
    with pytest.raises(JobFailed, match="HTTP 401"):
        block(10, 19)
    assert judge_server.requests > 1  # no probe: the block's calls went out together
    judge_server.reset()
    judge_server.fail_always("401")
    with pytest.raises(JobFailed, match="HTTP 401"):
        block(20, 29)
    assert judge_server.requests == 1  # the breaker had opened: the probe alone

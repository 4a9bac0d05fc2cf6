"""Scoring a finished evaluation again as a job (pipeline/rescores.py), on the thread backend through the API and the
pages a user uses: the result page shows the figures being updated while the job runs and follows it; ratings changed
while it runs are not lost (it scores once more and keeps the document of the last change); a job that cannot score
says why on the API and the page; one left queued by a process that stopped is resumed. Both backends run it in
tests/pipeline/test_job_backends.py."""
from __future__ import annotations

import html
import io
import threading

from tests.conftest import jsonl, session_line, wait_for, wait_rescored
from tests.web.test_api import upload


def finished(client) -> str:
    upload_id = upload(client, jsonl(*(session_line(f"s{i}", 2) for i in range(3)))).get_json()["id"]
    done = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    assert done["status"] == "done", done
    return done["id"]


def attach(client, evaluation_id: str, rows: str):
    return client.post(f"/api/evaluations/{evaluation_id}/human-ratings",
                       data={"file": (io.BytesIO(("session_id,round,method,total\n" + rows).encode()), "p.csv")},
                       content_type="multipart/form-data")


class Held:
    """The app's rescore job held inside its scoring until released: each call of Pipeline.rescored counted, the
    first ones waiting for `release`."""

    def __init__(self, app, hold: int = 1):
        self.pipeline = app.extensions["rescores"].job.pipeline
        self.original = self.pipeline.rescored
        self.entered, self.release, self.calls, self.hold = threading.Event(), threading.Event(), 0, hold
        self.pipeline.rescored = self._rescored

    def _rescored(self, evaluation_id: str):
        self.calls += 1
        made = self.original(evaluation_id)  # the ratings as they are when scoring starts
        if self.calls <= self.hold:
            self.entered.set()
            assert self.release.wait(30)
        return made


def human_ratings(client, evaluation_id: str) -> int | None:
    result = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    return (result.get("agreement") or {}).get("human", {}).get("ratings")


def test_the_page_shows_the_figures_being_updated_and_follows_the_job(app, client):
    evaluation_id = finished(client)
    held = Held(app)
    answer = attach(client, evaluation_id, "s0,1,A,50\ns0,1,B,70\n")
    assert answer.status_code == 202 and answer.get_json()["rescore"]["status"] in ("queued", "running")
    assert held.entered.wait(30)
    state = client.get(answer.headers["Location"]).get_json()
    assert state["status"] == "running" and state["finished_at"] is None
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert 'id="rescoring"' in page and f'data-url="/api/evaluations/{evaluation_id}/rescore"' in page
    assert "The figures are being updated with people's ratings as they are now" in html.unescape(page)
    assert human_ratings(client, evaluation_id) is None  # the document kept before, until the job keeps its own
    held.release.set()
    assert wait_rescored(client, evaluation_id)["status"] == "done"
    assert human_ratings(client, evaluation_id) == 2
    assert 'id="rescoring"' not in client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)


def test_ratings_changed_while_the_job_runs_are_not_lost(app, client):
    evaluation_id = finished(client)
    held = Held(app)
    assert attach(client, evaluation_id, "s0,1,A,50\n").status_code == 202
    assert held.entered.wait(30)  # scoring with one rating...
    assert attach(client, evaluation_id, "s0,1,A,50\ns1,1,B,30\ns2,2,A,90\n").status_code == 202  # ...now three
    held.release.set()
    assert wait_rescored(client, evaluation_id)["status"] == "done"
    # the first run's document (one rating) was not kept: the job scored once more, for the second request
    assert held.calls == 2 and human_ratings(client, evaluation_id) == 3


def test_a_rescore_that_cannot_score_says_why(app, client):
    evaluation_id = finished(client)
    store = app.extensions["store"]
    upload_id = store.get_evaluation(evaluation_id, with_result=False)["upload_id"]
    path = app.extensions["site"].file_of(store.get_upload(upload_id))
    path.unlink()  # the uploaded file is gone: nothing to score from
    assert attach(client, evaluation_id, "s0,1,A,50\n").status_code == 202
    state = wait_rescored(client, evaluation_id)
    assert state["status"] == "failed"
    assert state["error"] == "The uploaded file is missing from the uploads folder; upload it again."
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "Updating the figures failed: The uploaded file is missing from the uploads folder" in page
    assert store.get_evaluation(evaluation_id)["status"] == "done"  # the evaluation itself is as it was


def test_a_rescore_left_queued_is_resumed(make_app, judge_env, judge_server):
    app = make_app(judge_env)
    client = app.test_client()
    evaluation_id = finished(client)
    rescoring = app.extensions["rescores"]
    rescoring.job.request(evaluation_id)  # asked, and the process stopped before it started
    assert rescoring.state(evaluation_id)["status"] == "queued"
    again = make_app(judge_env, RESUME_ON_START=True)  # the next server process, on the same database
    assert again.extensions["rescores"].job.unfinished() == [evaluation_id]
    later = again.test_client()
    later.get("/")  # its first request resumes what was left
    assert wait_rescored(later, evaluation_id)["status"] == "done"
    assert again.extensions["rescores"].job.unfinished() == []


def test_the_openapi_document_declares_the_answers_of_a_rescore(client):
    document = client.get("/api/openapi.json").get_json()
    schemas = document["components"]["schemas"]

    def answer(path: str, method: str, status: str) -> dict:
        ref = document["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]["$ref"]
        return schemas[ref.rsplit("/", 1)[1]]

    ratings = "/api/evaluations/{evaluation_id}/human-ratings"
    assert "200" not in document["paths"][ratings]["post"]["responses"]
    attached = answer(ratings, "post", "202")
    assert {"ratings", "replies", "attached", "raters", "rescore"} <= set(attached["required"])
    removed = answer(ratings, "delete", "202")
    assert set(removed["required"]) == {"ratings", "rescore"}
    state = answer("/api/evaluations/{evaluation_id}/rescore", "get", "200")
    assert set(state["required"]) == {"status", "error", "requested_at", "finished_at"}
    assert state["properties"]["status"]["enum"] == ["queued", "running", "done", "failed", "cancelled"]
    assert "404" in document["paths"]["/api/evaluations/{evaluation_id}/rescore"]["get"]["responses"]

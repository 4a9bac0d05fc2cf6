"""A simulation's `rubric`: the files it writes are scored under it (the API, the Run page, `flask --app app
simulate --rubric`), its estimate counts the calls that rubric asks, and it is kept by its SHA-256; a rubric without
scoring, or one the dashboard does not have, is refused before any call."""
from __future__ import annotations

import json
import threading

import pytest

from kinds import rubrics
from tests.judge_server import JudgeServer
from tests.kinds.dialogue.test_rubric_pages import LAB, lab
from tests.simulate.support import SIMULATOR, Recorder
from tests.simulate.test_estimate import BODY, env, until_finished

SCHEMA_KEYS = ["reasoning", "profile_fit", "tone_fit", "coherence"]


def answered_means(store, evaluation_id: str, method: str) -> dict[str, float]:
    """Each dimension's mean over the JSON answers the judge gave a method's replies (one judgment each)."""
    answers = [json.loads(j["answer"]) for j in store.judgments(evaluation_id) if j["method"] == method]
    assert answers
    return {key: sum(a[key] for a in answers) / len(answers) for key in SCHEMA_KEYS[1:]}


class JudgeCalls:
    """The judge requests a server answers: each one's model and its structured-output schema's keys."""

    def __init__(self, server) -> None:
        self.asked: list[tuple[str, list | None]] = []
        self._lock = threading.Lock()
        server.hook = self._note

    def _note(self, request: dict) -> None:
        form = request["body"].get("response_format")
        with self._lock:
            self.asked.append((request["body"]["model"], form["json_schema"]["schema"]["required"] if form else None))


@pytest.fixture
def judge_side():
    """The judge's own server (the simulator and the methods are played by `judge_server`)."""
    with JudgeServer() as server:
        yield server


@pytest.fixture
def rubric_app(make_app, judge_server, judge_side, builtin_two):
    """test_estimate.py's app (the methods on "local", the judge on "judging"), with the manual's example rubric."""
    Recorder(judge_server)
    app = make_app(env(judge_server.url, judge_side.url))
    assert app.test_client().post("/api/rubrics", data=lab(), content_type="application/yaml").status_code == 201
    return app


def test_the_files_are_scored_under_the_simulations_rubric(rubric_app, judge_side):
    calls = JudgeCalls(judge_side)
    client = rubric_app.test_client()
    started = client.post("/api/simulations", json={**BODY, "judge": {"endpoint": "judging"}, "rubric": LAB})
    assert started.status_code == 202, started.get_json()
    done = until_finished(client, started.get_json()["id"])
    rubric = rubrics.read(lab())
    assert done["status"] == "done" and done["rubric"] == rubric.sha256  # kept by its hash when it started
    # two personas x two rounds x two methods, one question each (the rubric has no yes/no question)
    assert calls.asked == [("judge-test", SCHEMA_KEYS)] * 8
    judge = next(row for row in done["costs"]["rows"] if row["role"] == "judge")
    assert judge["estimate"]["calls"] == judge["actual"]["calls"] == 8
    [evaluation_id] = done["evaluation_ids"]
    scored = client.get(f"/api/evaluations/{evaluation_id}").get_json()
    assert scored["status"] == "done" and scored["result"]["rubric"]["sha256"] == rubric.sha256
    assert scored["result"]["methods"]["A"]["dimensions"] == pytest.approx(
        answered_means(rubric_app.extensions["store"], evaluation_id, "A"))


def test_the_run_page_offers_the_rubrics_and_estimates_under_the_one_chosen(rubric_app, judge_side):
    client = rubric_app.test_client()
    page = client.get("/simulations/new").get_data(as_text=True)
    choices = page.split('<select name="rubric">', 1)[1].split("</select>", 1)[0]
    sha = rubrics.read(lab()).sha256
    assert choices.count("<option") == 3 and choices.index('value="personasteer"') < choices.index(f'value="{sha}"')
    assert ("Persona consistency (lab) (lab-consistency 1): Fits the profile 1-7, Fits the personality 1-7, "
            "Coherent with the conversation 1-7") in choices
    form = {"personas": "builtin", "simulator-model": SIMULATOR, "language": "en", "rounds": "2",
            "protocol": "shared", "method-0-name": "A", "method-0-model": "model-a", "method-0-endpoint": "local",
            "method-1-name": "B", "method-1-model": "model-b", "method-1-endpoint": "local", "score": "1",
            "judge_endpoint": "judging", "action": "estimate"}
    # 3 simulator turns, 4 + 4 replies; the judge: 8 under the rubric, 16 under personasteer (fine and yes/no)
    assert "19 calls to the models." in client.post("/simulations/new", data={**form, "rubric": sha}).get_data(
        as_text=True)
    assert "27 calls to the models." in client.post("/simulations/new", data={**form, "rubric": "personasteer"}
                                                    ).get_data(as_text=True)
    # not scored: the rubric is not sent
    assert "11 calls to the models." in client.post("/simulations/new", data={**form, "rubric": sha, "score": ""}
                                                    ).get_data(as_text=True)


def test_a_rubric_without_scoring_or_unknown_is_refused_before_any_call(rubric_app, judge_server, judge_side):
    client = rubric_app.test_client()
    unscored = client.post("/api/simulations", json={**BODY, "score": False, "rubric": LAB})
    assert unscored.status_code == 400
    assert unscored.get_json()["error"] == ("'rubric' names the rubric the files are scored under (its id or "
                                            "SHA-256): a text, with \"score\": true.")
    unknown = client.post("/api/simulations", json={**BODY, "rubric": "no-such-rubric"})
    assert unknown.status_code == 400 and unknown.get_json()["error"].startswith("Unknown rubric 'no-such-rubric'")
    zh = client.post("/api/simulations", json={**BODY, "rubric": LAB, "judge": {"language": "zh"}})
    assert zh.status_code == 400 and "has prompts in en only" in zh.get_json()["error"]
    assert judge_server.requests == judge_side.requests == 0
    assert client.get("/api/simulations").get_json() == []


def test_the_command_line_scores_under_rubric(make_app, judge_server, builtin_two, tmp_path):
    Recorder(judge_server)
    app = make_app(env(judge_server.url))
    runner = app.test_cli_runner()
    (tmp_path / "lab.yaml").write_bytes(lab())
    assert runner.invoke(args=["rubrics", "add", str(tmp_path / "lab.yaml")]).exit_code == 0
    done = runner.invoke(args=["simulate", "builtin", "--simulator", SIMULATOR, "--method", "A=model-a@local",
                               "--rounds", "1", "--out", str(tmp_path / "simulated.jsonl"), "--score", "--rubric",
                               LAB])
    assert done.exit_code == 0, done.stderr
    [evaluation] = [e for e in app.extensions["store"].list_evaluations()]
    recorded = app.extensions["store"].get_evaluation(evaluation["id"])
    assert recorded["settings"]["rubric"] == rubrics.read(lab()).reference()
    assert recorded["result"]["methods"]["A"]["dimensions"] == pytest.approx(
        answered_means(app.extensions["store"], evaluation["id"], "A"))

"""A simulation's estimate and its report: every call the run makes (simulator, methods, and the judge when the files
are scored), each speaker at its own endpoint's prices, then the estimate beside what was spent, per speaker, through
the API, the pages and the CLI; the judge's calls counted at the judge's own server."""
from __future__ import annotations

import json
import re
import threading
import time

import pytest

from kinds.dialogue.prompts import DialogueContext, prompt
from simulate import prompts
from simulate.estimate import estimate
from simulate.personas import Persona
from tests.judge_server import JudgeServer, detect_mode
from tests.simulate.support import P1, P2, SIMULATOR, Recorder, environment

DEFAULT_PRICES = (2.0, 10.0)  # the default endpoint's, per million prompt and completion tokens
LOCAL_PRICES = (1.0, 3.0)  # the methods' endpoint's
JUDGE_PRICES = (4.0, 20.0)  # the judge's endpoint's


def settings(personas=(P1,), rounds=2, protocol="shared", **extra) -> dict:
    """Stored settings as simulate/request.py writes them: the simulator on the default endpoint, A on "local"."""
    return {"personas": [p.to_dict() for p in personas], "rounds": rounds, "reference": "A", "user_retries": 2,
            "protocol": protocol,
            "simulator": {"model": "s", "endpoint": "default", "temperature": 0.7, "max_tokens": 100, "language": "en"},
            "methods": [{"name": "A", "model": "m", "endpoint": "local", "temperature": 0, "max_tokens": 200,
                         "system_prompt": "x" * 40}], **extra}


def env(url: str = "http://127.0.0.1:9/v1", judge_url: str | None = None, **extra) -> dict:
    named = {"local": {"base_url": url, "price_prompt_per_m": LOCAL_PRICES[0],
                       "price_completion_per_m": str(LOCAL_PRICES[1])},
             "unpriced": {"base_url": url},
             "judging": {"base_url": judge_url or url, "price_prompt_per_m": JUDGE_PRICES[0],
                         "price_completion_per_m": JUDGE_PRICES[1]}}
    return environment(url, JUDGE_ENDPOINTS=json.dumps(named), JUDGE_PRICE_PROMPT_PER_M=str(DEFAULT_PRICES[0]),
                       JUDGE_PRICE_COMPLETION_PER_M=str(DEFAULT_PRICES[1]), **extra)


def at(prices: tuple[float, float], prompt_tokens: int, completion_tokens: int) -> float:
    return (prompt_tokens * prices[0] + completion_tokens * prices[1]) / 1e6


def ceil4(chars: int) -> int:
    return -(-chars // 4)


# -- the estimate, against hand-computed numbers ------------------------------------------------------------------

def test_the_simulator_and_each_method_are_counted_at_their_own_endpoints_prices():
    system = ceil4(len(prompts.system_message(P1, "en"))) + ceil4(len(prompts.START["en"]))
    found = estimate(settings(), env())
    simulator, method = found["rows"]
    # simulator: round 1 the system alone, round 2 plus one exchange (a user message of 100 and A's reply of 200)
    assert (simulator["role"], simulator["name"], simulator["endpoint"]) == ("simulator", "user", "default")
    assert (simulator["calls"], simulator["prompt_tokens"], simulator["completion_tokens"]) == (
        2, system + (system + 300), 200)
    assert simulator["cost"] == pytest.approx(at(DEFAULT_PRICES, 2 * system + 300, 200))
    # A: 10 tokens of system prompt; round 1 one user message (100), round 2 two and its first reply (2 x 100 + 200)
    assert (method["role"], method["name"], method["endpoint"]) == ("method", "A", "local")
    assert (method["calls"], method["prompt_tokens"], method["completion_tokens"]) == (2, 110 + 410, 400)
    assert method["cost"] == pytest.approx(at(LOCAL_PRICES, 520, 400))  # local's prices, not the default's
    assert method["prices"] == {"prompt": 1.0, "completion": 3.0}
    assert (found["calls"], found["prompt_tokens"], found["cost"]) == (
        4, 2 * system + 300 + 520, pytest.approx(simulator["cost"] + method["cost"]))


def test_an_opening_is_not_asked_and_counts_at_its_own_length():
    system = ceil4(len(prompts.system_message(P2, "en"))) + ceil4(len(prompts.START["en"]))
    opening = ceil4(len(P2.opening))
    simulator, method = estimate(settings((P2,)), env())["rows"]
    assert (simulator["calls"], simulator["prompt_tokens"]) == (1, system + opening + 200)
    assert (method["calls"], method["prompt_tokens"]) == (2, (10 + opening) + (10 + opening + 100 + 200))


def test_an_endpoint_without_prices_is_not_priced_at_anothers():
    found = estimate(settings(methods=[{"name": "A", "model": "m", "endpoint": "unpriced", "temperature": 0,
                                         "max_tokens": 200}]), env())
    assert found["rows"][1]["cost"] is None and found["rows"][1]["prices"] == {"prompt": None, "completion": None}
    assert found["rows"][0]["cost"] is not None and found["cost"] is None  # no total without every price


def test_the_judges_calls_and_tokens_are_those_of_the_real_prompts_of_the_longest_file():
    # one persona, so the longest file is its own: each user message 400 characters (100 tokens), each reply of A
    # 800 (200 tokens), of B 1200 (300 tokens); the reference builds every prompt of it with the dialogue kind's
    # prompt builder from real texts of those lengths
    methods = [{"name": "A", "model": "m", "endpoint": "local", "temperature": 0, "max_tokens": 200},
               {"name": "B", "model": "m2", "endpoint": "local", "temperature": 0, "max_tokens": 300}]
    given = settings((P1,), rounds=3, methods=methods, score=True, judge={"endpoint": "judging"}, judges=None)
    found = estimate(given, env(JUDGE_MAX_TOKENS="50"))
    judge = found["rows"][-1]
    users, replies = ["u" * 400] * 3, {"A": ["a" * 800] * 3, "B": ["b" * 1200] * 3}
    expected = 0
    for k in range(3):
        for name in ("A", "B"):
            history = list(zip(users[:k], replies[name][:k]))
            context = DialogueContext(P1.user_profile, P1.user_personality, history, users[k], replies[name][k])
            for mode in ("fine", "binary"):
                expected += ceil4(sum(len(m["content"]) for m in prompt(mode, context, "en").messages))
    assert (judge["role"], judge["name"], judge["endpoint"]) == ("judge", "judge-test", "judging")
    assert (judge["calls"], judge["prompt_tokens"], judge["completion_tokens"]) == (3 * 2 * 2, expected, 12 * 50)
    assert judge["cost"] == pytest.approx(at(JUDGE_PRICES, expected, 600))
    assert found["calls"] == 3 + 3 + 3 + 12  # simulator, A, B, judge


def test_a_panel_and_the_independent_protocol_are_counted_as_the_evaluations_plan_them():
    many = [Persona(f"p{n}", "A profile " * n, "Terse.") for n in range(1, 4)]
    methods = [{"name": n, "model": "m", "endpoint": "local", "temperature": 0, "max_tokens": 20} for n in "ABC"]
    panel = [{"model": "judge-a", "endpoint": "judging"}, {"model": "judge-b"}]
    found = estimate(settings(many, rounds=2, protocol="independent", methods=methods, score=True, judge={},
                              judges=panel), env())
    judges = [row for row in found["rows"] if row["role"] == "judge"]
    # three files of one method each: personas x rounds x (fine, binary), for each judge
    assert [(j["name"], j["endpoint"], j["calls"]) for j in judges] == [
        ("judge-a", "judging", 3 * 3 * 2 * 2), ("judge-b", "default", 3 * 3 * 2 * 2)]
    assert judges[0]["prices"] == {"prompt": 4.0, "completion": 20.0}
    assert judges[1]["prices"] == {"prompt": 2.0, "completion": 10.0}
    # the first user message of a persona is one request for its three conversations; the second, one each
    assert found["rows"][0]["calls"] == 3 * (1 + 3)


# -- the run's report, through the entry points -------------------------------------------------------------------

class Counter:
    """Counts the judge prompts a JudgeServer answers, per model, with their prompt tokens as the server bills them."""

    def __init__(self, server: JudgeServer) -> None:
        self.calls: dict[str, int] = {}
        self.prompt_tokens: dict[str, int] = {}
        self._lock = threading.Lock()
        server.hook = self._count

    def _count(self, request: dict) -> None:
        body = request["body"]
        assert detect_mode(body["messages"]) in ("fine", "binary")
        with self._lock:
            self.calls[body["model"]] = self.calls.get(body["model"], 0) + 1
            self.prompt_tokens[body["model"]] = self.prompt_tokens.get(body["model"], 0) + max(
                1, sum(len(m["content"]) for m in body["messages"]) // 4)


@pytest.fixture
def judge_side():
    with JudgeServer() as server:
        yield server


@pytest.fixture
def scored_app(make_app, judge_server, judge_side, builtin_two):
    recorder = Recorder(judge_server)
    app = make_app(env(judge_server.url, judge_side.url))
    app.recorder = recorder
    return app


def until_finished(client, simulation_id: str) -> dict:
    """The simulation's answer once it and its evaluations have finished."""
    deadline = time.monotonic() + 60
    while True:
        answer = client.get(f"/api/simulations/{simulation_id}").get_json()
        evaluations = [client.get(f"/api/evaluations/{e}").get_json()["status"] for e in answer["evaluation_ids"]]
        if answer["status"] not in ("queued", "running") and answer["evaluation_ids"] and all(
                status not in ("queued", "running") for status in evaluations):
            return answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)


BODY = {"personas": "builtin", "simulator": {"model": SIMULATOR}, "rounds": 2,
        "methods": [{"name": "A", "model": "model-a", "endpoint": "local"},
                    {"name": "B", "model": "model-b", "endpoint": "local"}], "score": True}


@pytest.mark.parametrize("protocol, judging", [
    ("shared", {"judge": {"endpoint": "judging"}}),
    ("independent", {"judges": [{"model": "judge-a", "endpoint": "judging"},
                                {"model": "judge-b", "endpoint": "judging"}]}),
])
def test_the_api_reports_the_estimate_beside_the_calls_each_endpoint_answered(scored_app, judge_side, protocol,
                                                                             judging):
    counter = Counter(judge_side)
    client = scored_app.test_client()
    started = client.post("/api/simulations", json={**BODY, "protocol": protocol, **judging})
    assert started.status_code == 202, started.get_json()
    done = until_finished(client, started.get_json()["id"])
    assert done["status"] == "done", done
    rows = {(r["role"], r["name"]): r for r in done["costs"]["rows"]}
    judges = {name: row for (role, name), row in rows.items() if role == "judge"}
    # two personas x two rounds x two methods x (fine, binary), for each judge
    assert {name: row["estimate"]["calls"] for name, row in judges.items()} == dict.fromkeys(counter.calls, 16)
    assert {name: row["actual"]["calls"] for name, row in judges.items()} == counter.calls
    assert {name: row["actual"]["prompt_tokens"] for name, row in judges.items()} == counter.prompt_tokens
    for row in judges.values():
        assert row["endpoint"] == "judging" and row["actual"]["prompt_tokens"] <= row["estimate"]["prompt_tokens"]
        assert row["actual"]["cost"] == round(at(JUDGE_PRICES, row["actual"]["prompt_tokens"],
                                                 row["actual"]["completion_tokens"]), 6)
    # the simulator and the methods, counted at their server: P2 opens itself; in the independent protocol P1's first
    # message is one request for both conversations
    asked = [model for model, _messages in scored_app.recorder.requests]
    simulator, a, b = rows[("simulator", "user")], rows[("method", "A")], rows[("method", "B")]
    user_calls = 3 if protocol == "shared" else 1 + 2 + 2  # P1 at round 1 and 2 (twice), P2 at round 2 (twice)
    assert (simulator["estimate"]["calls"], simulator["actual"]["calls"]) == (user_calls, asked.count(SIMULATOR))
    assert (a["estimate"]["calls"], a["actual"]["calls"], b["actual"]["calls"]) == (
        4, asked.count("model-a"), asked.count("model-b"))
    assert simulator["actual"]["cost"] == round(at(DEFAULT_PRICES, simulator["actual"]["prompt_tokens"],
                                                   simulator["actual"]["completion_tokens"]), 6)
    assert a["actual"]["cost"] == round(at(LOCAL_PRICES, a["actual"]["prompt_tokens"],
                                           a["actual"]["completion_tokens"]), 6)
    usage = {u["speaker"]: u for u in done["usage"]}
    assert usage["A"]["cost"] == a["actual"]["cost"] and usage["user"]["cost"] == simulator["actual"]["cost"]
    total = done["costs"]["total"]
    assert total["actual"]["calls"] == sum(counter.calls.values()) + len(asked)
    assert total["estimate"]["calls"] == user_calls + 4 + 4 + 16 * len(judges)
    for row in rows.values():
        for field in ("prompt_tokens", "completion_tokens"):
            assert row["actual"][field] <= row["estimate"][field], (row, field)


def test_the_run_page_estimates_the_judge_and_the_status_page_shows_what_was_spent(scored_app, judge_side):
    counter = Counter(judge_side)
    client = scored_app.test_client()
    form = {"personas": "builtin", "simulator-model": SIMULATOR, "language": "en", "rounds": "2",
            "protocol": "shared", "method-0-name": "A", "method-0-model": "model-a", "method-0-endpoint": "local",
            "method-1-name": "B", "method-1-model": "model-b", "method-1-endpoint": "local", "score": "1",
            "judge_endpoint": "judging"}
    page = client.post("/simulations/new", data={**form, "action": "estimate"}).get_data(as_text=True)
    assert "27 calls to the models." in page  # 3 simulator turns, 4 + 4 replies, 16 judgments
    assert re.search(r"<td>Judge: judge-test</td><td>judge-test</td><td>judging</td><td>16</td>", page)
    assert "<td>4.0 / 20.0</td>" in page and "<td>1.0 / 3.0</td>" in page
    started = client.post("/simulations/new", data={**form, "action": "start"})
    simulation_id = started.headers["Location"].rsplit("/", 1)[1]
    until_finished(client, simulation_id)
    status = client.get(f"/simulations/{simulation_id}").get_data(as_text=True)
    spent = counter.calls["judge-test"]
    assert spent == 16
    # calls estimated, then spent, counted at the judge's server
    assert re.search(r"<td>Judge: judge-test</td><td>judge-test</td><td>judging</td>\s*<td>16</td><td>%d</td>" % spent,
                     status)
    assert re.search(r"<td>All speakers</td><td></td><td></td>\s*<td>27</td><td>27</td>", status)


def test_a_bad_price_of_a_named_endpoint_is_refused_naming_it(make_app, judge_server, builtin_two):
    named = {"local": {"base_url": judge_server.url, "price_prompt_per_m": "cheap"}}
    client = make_app(environment(judge_server.url, JUDGE_ENDPOINTS=json.dumps(named))).test_client()
    refused = client.post("/api/simulations", json=BODY)
    assert refused.status_code == 400
    assert "price_prompt_per_m of judge endpoint 'local' must be a number of 0 or more, got 'cheap'" in \
        refused.get_json()["error"]
    assert judge_server.requests == 0


def test_files_the_upload_limits_would_refuse_are_refused_before_any_call(scored_app, judge_server, monkeypatch):
    # the judge's estimate validates the file the simulation would write: past LIMIT_ROUNDS, it could not be uploaded
    monkeypatch.setenv("LIMIT_ROUNDS", "1")
    refused = scored_app.test_client().post("/api/simulations", json={**BODY, "judge": {"endpoint": "judging"}})
    assert refused.status_code == 400 and "LIMIT_ROUNDS" in refused.get_json()["error"], refused.get_json()
    assert judge_server.requests == 0

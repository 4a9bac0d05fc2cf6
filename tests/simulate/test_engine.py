"""The simulation engine against the local server playing the simulator and two methods: the exact messages each
side receives at each round under both protocols, the files written, the cache on a re-run, the simulator's
refused answers asked again, failing endpoints, and endpoints the operator did not name."""
from __future__ import annotations

import io
import json

import pytest

from pipeline.ingest import ingest
from pipeline.judge_requests import RequestError
from simulate import personas, prompts
from simulate.plan import Plan
from tests.judge_server import JudgeServer
from tests.simulate.support import (
    P1,
    P2,
    SIMULATOR,
    Recorder,
    answer,
    canonical,
    environment,
    make_runner,
    personas_file,
)

SYSTEM_A = "You are method A. Be brief."


def request(protocol: str = "shared", rounds: int = 2, **extra) -> dict:
    return {"personas": "builtin", "simulator": {"model": SIMULATOR}, "rounds": rounds, "protocol": protocol,
            "methods": [{"name": "A", "model": "model-a", "system_prompt": SYSTEM_A},
                        {"name": "B", "model": "model-b"}], **extra}


def simulator(persona, exchanges):
    """What the simulator is sent for the next user message of a persona after these (message, reply) rounds."""
    messages = [{"role": "system", "content": prompts.system_message(persona, "en")},
                {"role": "user", "content": prompts.START["en"]}]
    for user_message, reply in exchanges:
        messages += [{"role": "assistant", "content": user_message}, {"role": "user", "content": reply}]
    return messages


def method(system, users, own):
    """What a method is sent at round len(users), written out turn by turn."""
    messages = [{"role": "system", "content": system}] if system else []
    for k, user_message in enumerate(users):
        messages.append({"role": "user", "content": user_message})
        if k < len(own):
            messages.append({"role": "assistant", "content": own[k]})
    return messages


def uploaded_sessions(runner, upload_id):
    upload = runner.job.store.get_upload(upload_id)
    with runner.job.uploads.open(f"{upload['sha256']}.jsonl") as f:
        return [json.loads(line) for line in f.read().decode().splitlines()]


def test_shared_protocol_every_method_answers_the_same_user_messages_with_its_own_history(
        tmp_path, judge_server, builtin_two):
    recorder = Recorder(judge_server)
    runner = make_runner(tmp_path, environment(judge_server.url))
    simulation = runner.job.create(request("shared"))
    assert simulation["total"] == 2 * 2 * 3 - 1  # personas x rounds x (simulator + 2 methods), minus P2's opening
    runner.run(simulation["id"])

    expected, sessions = [], []
    for persona in (P1, P2):
        exchanges, own_a, own_b, users, rounds = [], [], [], [], []
        for k in (1, 2):
            if k == 1 and persona.opening:
                user = persona.opening  # written, not asked
            else:
                asked = simulator(persona, exchanges)
                expected.append((SIMULATOR, asked))
                user = answer(SIMULATOR, asked)
            users.append(user)
            to_a, to_b = method(SYSTEM_A, users, own_a), method(None, users, own_b)
            expected += [("model-a", to_a), ("model-b", to_b)]
            own_a.append(answer("model-a", to_a))
            own_b.append(answer("model-b", to_b))
            exchanges.append((user, own_a[-1]))  # the simulator hears the reference method, A
            rounds.append({"round": k, "user_message": user, "responses": {"A": own_a[-1], "B": own_b[-1]}})
        sessions.append({"session_id": persona.persona_id, "user_profile": persona.user_profile,
                         "user_personality": persona.user_personality, "rounds": rounds})
    assert recorder.keys() == canonical(expected)
    assert len(expected) == 11

    done = runner.job.store.get_simulation(simulation["id"])
    assert done["status"] == "done" and done["error"] is None
    assert runner.job.store.simulation_progress(simulation["id"]) == {"done": 11, "failed": 0, "cached": 0}
    [upload_id] = done["upload_ids"]
    upload = runner.job.store.get_upload(upload_id)
    assert upload["kind"] == "dialogue" and upload["filename"] == f"simulation-{simulation['id']}.jsonl"
    assert uploaded_sessions(runner, upload_id) == sessions

    # The same simulation again: every turn comes from the cache, no call is made, the same file is written.
    before = judge_server.requests
    again = runner.job.create(request("shared"))
    runner.run(again["id"])
    assert judge_server.requests == before
    assert runner.job.store.simulation_progress(again["id"]) == {"done": 11, "failed": 0, "cached": 11}
    [same] = runner.job.store.get_simulation(again["id"])["upload_ids"]
    assert uploaded_sessions(runner, same) == sessions


def test_independent_protocol_gives_each_method_its_own_conversation_and_file(tmp_path, judge_server):
    recorder = Recorder(judge_server)
    runner = make_runner(tmp_path, environment(judge_server.url))
    # the personas of a dialogue upload (session id, profile and personality of each session)
    upload = ingest(io.BytesIO(personas_file(P1)), "people.jsonl", runner.job.store, runner.job.uploads)
    simulation = runner.job.create({**request("independent"), "personas": None, "personas_upload_id": upload["id"]})
    assert simulation["total"] == 1 * 2 * 2 * 2  # personas x methods x rounds x (user + reply)
    runner.run(simulation["id"])

    persona = personas.Persona(P1.persona_id, P1.user_profile, P1.user_personality)
    first = simulator(persona, [])
    expected = [(SIMULATOR, first)]  # the same first request for both conversations: asked once
    files = {}
    for name, model, system in (("A", "model-a", SYSTEM_A), ("B", "model-b", None)):
        u1 = answer(SIMULATOR, first)
        to_1 = method(system, [u1], [])
        r1 = answer(model, to_1)
        second = simulator(persona, [(u1, r1)])  # the simulator hears this method's reply
        u2 = answer(SIMULATOR, second)
        to_2 = method(system, [u1, u2], [r1])
        expected += [(model, to_1), (SIMULATOR, second), (model, to_2)]
        files[name] = [{"session_id": "p1", "user_profile": P1.user_profile,
                        "user_personality": P1.user_personality,
                        "rounds": [{"round": 1, "user_message": u1, "responses": {name: r1}},
                                   {"round": 2, "user_message": u2, "responses": {name: answer(model, to_2)}}]}]
    assert recorder.keys() == canonical(expected)
    done = runner.job.store.get_simulation(simulation["id"])
    assert done["status"] == "done"
    uploads = [runner.job.store.get_upload(u) for u in done["upload_ids"]]
    assert [u["filename"] for u in uploads] == [f"simulation-{simulation['id']}-A.jsonl",
                                               f"simulation-{simulation['id']}-B.jsonl"]
    assert [uploaded_sessions(runner, u) for u in done["upload_ids"]] == [files["A"], files["B"]]
    # 8 turns, of which the second conversation's first user message is the first's (one shared call)
    assert runner.job.store.simulation_progress(simulation["id"])["done"] == 8 and len(recorder.requests) == 7


def test_a_refused_simulator_answer_is_asked_again_with_the_reason(tmp_path, judge_server, builtin_two):
    recorder = Recorder(judge_server)
    refused = simulator(P1, [])
    judge_server.chat = lambda body: ("As an AI, how can I help you?" if body["messages"] == refused
                                      else answer(body["model"], body["messages"]))
    runner = make_runner(tmp_path, environment(judge_server.url))
    simulation = runner.job.create(request("shared", rounds=1))
    runner.run(simulation["id"])
    note = prompts.RETRY["en"].format(problem=prompts.PROBLEMS["en"]["as_assistant"])
    retried = [*refused, {"role": "user", "content": note}]
    assert [m for model, m in recorder.requests if model == SIMULATOR] == [refused, retried]
    turns = {(t["conversation"], t["speaker"]): t for t in runner.job.store.simulation_turns(simulation["id"])}
    assert turns[(0, "user")]["text"] == answer(SIMULATOR, retried) and turns[(0, "user")]["attempts"] == 2
    assert runner.job.store.get_simulation(simulation["id"])["status"] == "done"


def test_a_failing_endpoint_fails_its_turns_and_keeps_the_complete_sessions(tmp_path, judge_server, builtin_two):
    Recorder(judge_server)
    # model-b fails (HTTP 500, every retry) once P2's conversation reaches round 2
    judge_server.hook = lambda r: "500" if r["body"]["model"] == "model-b" and len(r["body"]["messages"]) > 1 \
        and P2.opening in json.dumps(r["body"]["messages"]) else None
    runner = make_runner(tmp_path, environment(judge_server.url))
    simulation = runner.job.create(request("shared", rounds=3))
    runner.run(simulation["id"])
    done = runner.job.store.get_simulation(simulation["id"])
    assert done["status"] == "incomplete"
    assert done["error"].startswith("1 turn failed; the commonest reason: ")
    [failed] = [t for t in runner.job.store.simulation_turns(simulation["id"]) if t["status"] == "failed"]
    assert (failed["conversation"], failed["round"], failed["speaker"], failed["attempts"]) == (1, 2, "B", 2)
    assert "500" in failed["problem"]
    # P2 stopped there: no round 3 was asked for it; its file session keeps round 1, P1's all three
    asked = {(t["conversation"], t["round"]) for t in runner.job.store.simulation_turns(simulation["id"])}
    assert (1, 3) not in asked and (0, 3) in asked
    sessions = uploaded_sessions(runner, done["upload_ids"][0])
    assert [(s["session_id"], len(s["rounds"])) for s in sessions] == [("p1", 3), ("p2", 1)]


def test_an_endpoint_that_is_down_leaves_its_method_out_and_says_so(tmp_path, judge_server, builtin_two):
    Recorder(judge_server)
    with JudgeServer() as down:
        down.fail_always("503")
        named = {"down": {"base_url": down.url, "models": ["model-b"]}}
        runner = make_runner(tmp_path, environment(judge_server.url, JUDGE_ENDPOINTS=json.dumps(named)))
        body = request("independent", rounds=1)
        body["methods"][1]["endpoint"] = "down"
        simulation = runner.job.create(body)
        runner.run(simulation["id"])
        assert down.requests == 2 * 2  # B's two conversations, each asked twice (one retry)
    done = runner.job.store.get_simulation(simulation["id"])
    assert done["status"] == "incomplete"
    assert "2 turns failed" in done["error"] and "Left out for want of one complete round: p1, p2." in done["error"]
    [upload_id] = done["upload_ids"]  # A's file only
    assert runner.job.store.get_upload(upload_id)["filename"].endswith("-A.jsonl")
    assert [s["session_id"] for s in uploaded_sessions(runner, upload_id)] == ["p1", "p2"]


@pytest.mark.parametrize("change, message", [
    (lambda r: r["methods"][0].update(endpoint="elsewhere"), "Unknown judge endpoint 'elsewhere'"),
    (lambda r: r["simulator"].update(endpoint="elsewhere"), "Unknown judge endpoint 'elsewhere'"),
    (lambda r: r["methods"][1].update(base_url="http://evil.example/v1"), "never carries a URL or a key"),
    (lambda r: r["simulator"].update(api_key="sk-x"), "never carries a URL or a key"),
    (lambda r: r["methods"][1].update(name="A"), "Method names must differ"),
    (lambda r: r["methods"][1].update(name="user"), "other than 'user'"),
    (lambda r: r.update(rounds=21), "'rounds' must be a whole number from 1 to 20"),
    (lambda r: r.update(rounds=0), "'rounds' must be a whole number from 1 to 20"),
    (lambda r: r.update(methods=[]), "'methods' must be a list of 1 to 8"),
    (lambda r: r.update(protocol="round-robin"), "'protocol' must be one of shared, independent"),
    (lambda r: r.update(reference="C"), "'reference' must be the name of one of the methods"),
    (lambda r: r.update(personas="everyone"), "Choose the personas"),
    (lambda r: r.update(personas=None, personas_upload_id="nope"), "Upload 'nope' does not exist"),
    (lambda r: r["methods"][0].update(temperature=3), "must be a number from 0 to 2"),
])
def test_a_request_that_cannot_be_honoured_is_refused_before_any_connection(tmp_path, judge_server, builtin_two,
                                                                          change, message):
    named = {"local": {"base_url": judge_server.url, "models": ["model-a"]}}
    runner = make_runner(tmp_path, environment(judge_server.url, JUDGE_ENDPOINTS=json.dumps(named)))
    body = request()
    change(body)
    with pytest.raises(RequestError, match=message.replace("(", r"\(")):
        runner.job.create(body)
    assert judge_server.requests == 0 and runner.job.store.list_simulations() == []


def test_a_model_the_endpoint_does_not_allow_is_refused(tmp_path, judge_server, builtin_two):
    named = {"local": {"base_url": judge_server.url, "models": ["model-a"]}}
    runner = make_runner(tmp_path, environment(judge_server.url, JUDGE_ENDPOINTS=json.dumps(named)))
    body = request()
    body["methods"][1]["endpoint"] = "local"
    with pytest.raises(RequestError, match="does not allow model 'model-b'"):
        runner.job.create(body)
    body["methods"][1]["model"] = "model-a"
    assert runner.job.create(body)["settings"]["methods"][1] == {
        "name": "B", "model": "model-a", "endpoint": "local", "temperature": 0.0, "max_tokens": 512,
        "system_prompt": ""}
    assert judge_server.requests == 0


def test_the_plan_counts_turns_of_both_protocols(builtin_two):
    settings = {"personas": [P1.to_dict(), P2.to_dict()], "rounds": 3, "reference": "A", "user_retries": 2,
                "simulator": {"model": "s", "endpoint": "default", "temperature": 0.7, "max_tokens": 9,
                              "language": "en"},
                "methods": [{"name": n, "model": "m", "endpoint": "default", "temperature": 0, "max_tokens": 9}
                            for n in ("A", "B", "C")]}
    shared = Plan.from_settings({**settings, "protocol": "shared"})
    independent = Plan.from_settings({**settings, "protocol": "independent"})
    assert shared.total() == 2 * 3 * 4 - 1  # P2's opening is not asked
    assert independent.total() == 2 * 3 * 3 * 2 - 3  # nor in each of its three conversations
    assert [(c.index, c.persona.persona_id, c.methods, c.partner) for c in independent.conversations()][:4] == [
        (0, "p1", ("A",), "A"), (1, "p1", ("B",), "B"), (2, "p1", ("C",), "C"), (3, "p2", ("A",), "A")]


def test_built_in_personas_that_cannot_be_read_are_a_refusal(tmp_path, judge_server, monkeypatch):
    monkeypatch.setattr(personas, "BUILTIN", tmp_path / "missing.jsonl")
    runner = make_runner(tmp_path, environment(judge_server.url))
    with pytest.raises(RequestError, match="The built-in personas cannot be read"):
        runner.job.create(request())


def test_a_failed_request_shared_by_two_conversations_fails_both_and_counts_both(tmp_path, judge_server, builtin_two):
    Recorder(judge_server)
    judge_server.hook = lambda r: "400" if r["body"]["model"] == SIMULATOR else None  # refused, never retried
    runner = make_runner(tmp_path, environment(judge_server.url))
    simulation = runner.job.create(request("independent", rounds=1))
    runner.run(simulation["id"])
    done = runner.job.store.get_simulation(simulation["id"])
    # P1's first user message is one request for A's and B's conversations: asked once, failed for both; P2 opens
    # with its own message, so its conversations go on
    assert judge_server.requests == 1 + 2
    failed = [t for t in runner.job.store.simulation_turns(simulation["id"]) if t["status"] == "failed"]
    assert [(t["conversation"], t["speaker"], t["attempts"]) for t in failed] == [(0, "user", 1), (1, "user", 0)]
    assert runner.job.store.simulation_progress(simulation["id"]) == {"done": 4, "failed": 2, "cached": 0}
    assert done["status"] == "incomplete" and done["error"].startswith("2 turns failed; the commonest reason: ")
    assert done["error"].endswith("Left out for want of one complete round: p1.")

"""The simulations' API over HTTP: start one (202), follow it to its uploads and evaluations, refuse what cannot be
honoured (400, before any connection), cancel and resume."""
from __future__ import annotations

import io
import json
import time

import pytest

from tests.simulate.support import (
    SIMULATOR,
    Recorder,
    environment,
)


@pytest.fixture
def sim_app(make_app, judge_server, builtin_two):
    Recorder(judge_server)
    named = {"local": {"base_url": judge_server.url, "models": ["model-a", "model-b"]}}
    return make_app(environment(judge_server.url, JUDGE_ENDPOINTS=json.dumps(named)))


def body(**extra) -> dict:
    return {"personas": "builtin", "simulator": {"model": SIMULATOR}, "rounds": 2,
            "methods": [{"name": "A", "model": "model-a", "endpoint": "local"},
                        {"name": "B", "model": "model-b", "endpoint": "local", "system_prompt": "Be kind."}],
            **extra}


def wait(client, simulation_id: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        answer = client.get(f"/api/simulations/{simulation_id}").get_json()
        if answer["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def test_a_simulation_started_over_the_api_becomes_scored_uploads(sim_app, judge_server):
    client = sim_app.test_client()
    started = client.post("/api/simulations", json=body(protocol="independent", score=True))
    assert started.status_code == 202
    simulation_id = started.get_json()["id"]
    assert started.get_json()["url"] == f"http://localhost/simulations/{simulation_id}"
    done = wait(client, simulation_id)
    assert done["status"] == "done", done
    total = 2 * 2 * 2 * 2 - 2  # personas x methods x rounds x 2, minus P2's opening in each of its conversations
    # P1's first user message is the same request in A's and B's conversations: asked once, the second shares it
    assert done["progress"] == {"done": total, "total": total, "failed": 0, "cached": 1, "rate": None,
                                "eta_s": None}
    assert len(done["upload_ids"]) == 2 and len(done["evaluation_ids"]) == 2
    for upload_id, method in zip(done["upload_ids"], ("A", "B")):
        upload = client.get(f"/api/uploads/{upload_id}").get_json()
        assert upload["kind"] == "dialogue" and upload["filename"] == f"simulation-{simulation_id}-{method}.jsonl"
    for evaluation_id, method in zip(done["evaluation_ids"], ("A", "B")):
        deadline = time.monotonic() + 30
        while (evaluation := client.get(f"/api/evaluations/{evaluation_id}").get_json())["status"] in (
                "queued", "running") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert evaluation["status"] == "done" and evaluation["methods"] == [method]
    # tokens per speaker and model: the simulator's and each method's
    assert sorted((u["speaker"], u["model"], u["turns"]) for u in done["usage"]) == [
        ("A", "model-a", 4), ("B", "model-b", 4), ("user", SIMULATOR, 6)]
    assert all(u["prompt_tokens"] > 0 for u in done["usage"])
    page = client.get(f"/simulations/{simulation_id}").get_data(as_text=True)
    ids = ",".join(done["evaluation_ids"])
    assert f'href="/compare?ids={ids}"' in page  # the methods' evaluations side by side
    listed = client.get("/api/simulations").get_json()
    assert [s["id"] for s in listed] == [simulation_id]


@pytest.mark.parametrize("change, message", [
    ({"methods": [{"name": "A", "model": "model-a", "endpoint": "theirs"}]}, "Unknown judge endpoint 'theirs'"),
    ({"simulator": {"model": SIMULATOR, "base_url": "http://127.0.0.1:9/v1"}}, "never carries a URL or a key"),
    ({"methods": [{"name": "A", "model": "gpt-4o", "endpoint": "local"}]}, "does not allow model 'gpt-4o'"),
    ({"rounds": 30}, "'rounds' must be a whole number from 1 to 20"),
    ({"score": True, "judge": {"endpoint": "theirs"}}, "Unknown judge endpoint 'theirs'"),
    ({"colour": "blue"}, "The field 'colour' is wrong: it is not a field of this request (its fields: personas,"),
])
def test_a_request_that_cannot_be_honoured_is_a_400_before_any_connection(sim_app, judge_server, change, message):
    client = sim_app.test_client()
    answer = client.post("/api/simulations", json=body(**change))
    assert answer.status_code == 400 and message in answer.get_json()["error"]
    assert judge_server.requests == 0 and client.get("/api/simulations").get_json() == []


def test_not_json_unknown_ids_and_finished_runs(sim_app):
    client = sim_app.test_client()
    assert client.post("/api/simulations", data="rounds=2").status_code == 400
    assert client.get("/api/simulations/nope").status_code == 404
    assert client.post("/api/simulations/nope/cancel").status_code == 404
    simulation_id = client.post("/api/simulations", json=body(rounds=1)).get_json()["id"]
    assert wait(client, simulation_id)["status"] == "done"
    assert client.post(f"/api/simulations/{simulation_id}/cancel").status_code == 409
    assert client.post(f"/api/simulations/{simulation_id}/resume").status_code == 409


def test_cancel_and_resume_over_the_api(sim_app, judge_server):
    judge_server.latency_s = 0.1
    client = sim_app.test_client()
    simulation_id = client.post("/api/simulations", json=body(rounds=3)).get_json()["id"]
    deadline = time.monotonic() + 30
    while client.get(f"/api/simulations/{simulation_id}").get_json()["progress"]["done"] < 2 \
            and time.monotonic() < deadline:
        time.sleep(0.02)
    cancelled = client.post(f"/api/simulations/{simulation_id}/cancel")
    # the state at that moment: running while its calls in flight end, or already cancelled when none was (the
    # runner's thread can see the cancel and stop before this request reads the simulation again, on a busy machine)
    assert cancelled.status_code == 202 and cancelled.get_json()["status"] in ("running", "cancelled")
    stopped = wait(client, simulation_id)
    assert stopped["status"] == "cancelled" and stopped["progress"]["done"] < stopped["progress"]["total"]
    resumed = client.post(f"/api/simulations/{simulation_id}/resume")
    assert resumed.status_code == 202
    done = wait(client, simulation_id)
    assert done["status"] == "done" and done["progress"]["done"] == done["progress"]["total"] == 2 * 3 * 3 - 1


@pytest.mark.parametrize("sent", [
    [], "builtin", {"personas": ["builtin"]}, {"personas": "builtin", "methods": [1, 2]},
    {"personas": "builtin", "simulator": ["m"], "methods": [{"name": "A", "model": "a"}], "rounds": 1},
    {"personas": "builtin", "simulator": {"model": SIMULATOR, "language": 5},
     "methods": [{"name": "A", "model": "a"}], "rounds": 1},
    {"personas_upload_id": 7, "simulator": {"model": SIMULATOR}, "methods": [{"name": "A", "model": "a"}],
     "rounds": 1},
    {**body(), "methods": [{"name": 5, "model": "model-a", "endpoint": "local"}]},
    {**body(), "methods": [{"name": "A", "model": "model-a", "endpoint": "local", "system_prompt": ["x"]}]},
    {**body(), "methods": [{"name": "A", "model": "model-a", "endpoint": ["local"]}]},
    {**body(), "reference": ["A"]}, {**body(), "rounds": 2.0}, {**body(), "rounds": True},
    {**body(), "score": "maybe"}, {**body(), "score": True, "judges": "x"}, {**body(), "judge": [1]},
    {**body(), "sample": -1}, {**body(), "protocol": ["shared"]},
])
def test_malformed_bodies_are_a_400_never_a_500(sim_app, judge_server, sent):
    answer = sim_app.test_client().post("/api/simulations", json=sent)
    assert answer.status_code == 400 and answer.get_json()["error"]
    assert judge_server.requests == 0


def test_a_personas_upload_is_the_simulated_users(sim_app):
    """`personas_upload_id` of a personas file (the personas kind): its personas are the sessions written, with their
    profiles, and the opening of one is its first user message."""
    client = sim_app.test_client()
    lines = [{"persona_id": "nurse", "user_profile": "A night-shift nurse in Leeds.", "user_personality": "Terse.",
              "opening": "Any tips for sleeping in the day?"},
             {"persona_id": "chef", "user_profile": "A pastry chef who cycles to work.", "user_personality": "Warm."}]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(data), "people.jsonl")},
                         content_type="multipart/form-data").get_json()
    assert upload["kind"] == "personas"
    started = client.post("/api/simulations", json={**body(), "personas": None, "personas_upload_id": upload["id"]})
    assert started.status_code == 202, started.get_json()
    done = wait(client, started.get_json()["id"])
    assert done["status"] == "done", done
    download = client.get(f"/uploads/{done['upload_ids'][0]}/file")
    assert download.headers["Content-Disposition"].startswith("attachment")
    written = download.get_data(as_text=True)
    sessions = [json.loads(line) for line in written.splitlines()]
    assert [(s["session_id"], s["user_profile"], s["user_personality"]) for s in sessions] == [
        ("nurse", "A night-shift nurse in Leeds.", "Terse."), ("chef", "A pastry chef who cycles to work.", "Warm.")]
    assert sessions[0]["rounds"][0]["user_message"] == "Any tips for sleeping in the day?"
    assert [len(s["rounds"]) for s in sessions] == [2, 2]


PERSONA_LINES = [{"persona_id": "nurse", "user_profile": "A night-shift nurse in Leeds.", "user_personality": "Terse.",
                  "opening": "Any tips for sleeping in the day?"},
                 {"persona_id": "chef", "user_profile": "A pastry chef who cycles to work.",
                  "user_personality": "Warm.", "scenario": "Training for a sportive."}]
DIALOGUE_LINES = [{"session_id": "s-1", "user_profile": "Retired ferry captain.", "user_personality": "Curious.",
                   "rounds": [{"round": 1, "user_message": "hi", "responses": {"X": "hello"}}]},
                  {"session_id": "s-2", "user_profile": "学生，住在南京。",
                   "rounds": [{"round": 1, "user_message": "你好", "responses": {"X": "你好！"}}]}]


@pytest.mark.parametrize("lines, kind", [(PERSONA_LINES, "personas"), (DIALOGUE_LINES, "dialogue")])
def test_a_bom_crlf_and_a_trailing_blank_line_give_what_the_plain_file_gives(sim_app, lines, kind):
    """The simulation reads an uploaded file through its kind, as the upload was validated: the same file with a byte
    order mark, CRLF line ends and a blank line at its end is the same upload and the same simulation, never a 500."""
    client = sim_app.test_client()
    texts = [json.dumps(line, ensure_ascii=False).encode() for line in lines]
    plain = b"\n".join(texts) + b"\n"
    awkward = b"\xef\xbb\xbf" + b"\r\n".join(texts) + b"\r\n\r\n"
    found = []
    for data in (plain, awkward):
        upload = client.post("/api/uploads", data={"file": (io.BytesIO(data), f"{kind}.jsonl")},
                             content_type="multipart/form-data")
        assert upload.status_code == 201, upload.get_json()
        upload = upload.get_json()
        started = client.post("/api/simulations", json={**body(), "personas": None,
                                                        "personas_upload_id": upload["id"]})
        assert started.status_code == 202, started.get_json()
        done = wait(client, started.get_json()["id"])
        assert done["status"] == "done", done
        written = client.get(f"/uploads/{done['upload_ids'][0]}/file").get_data()
        found.append(({k: upload[k] for k in ("kind", "summary", "warnings")}, done["personas"],
                      done["progress"]["total"], written))
    assert found[0] == found[1]
    sessions = [json.loads(line) for line in found[0][3].decode().splitlines()]
    assert [s["session_id"] for s in sessions] == [line.get("persona_id") or line.get("session_id") for line in lines]

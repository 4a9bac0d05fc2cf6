"""The Run page and a simulation's status page: the form's request, the estimate before starting, errors shown
(never a 500), untrusted text escaped, the transcripts, and cancel from the page."""
from __future__ import annotations

import csv
import io
import json
import time

import pytest

from tests.simulate.support import (
    P2,
    SIMULATOR,
    Recorder,
    environment,
)
from web.simulation_pages import request_of


@pytest.fixture
def client(make_app, judge_server, builtin_two):
    Recorder(judge_server)
    named = {"local": {"base_url": judge_server.url, "models": ["model-a", "model-b"], "price_prompt_per_m": 1,
                       "price_completion_per_m": 3}}
    env = environment(judge_server.url, JUDGE_ENDPOINTS=json.dumps(named), JUDGE_PRICE_PROMPT_PER_M="2",
                      JUDGE_PRICE_COMPLETION_PER_M="10")
    return make_app(env).test_client()


FORM = {"personas": "builtin", "simulator-model": SIMULATOR, "simulator-temperature": "0.5", "language": "en",
        "method-0-name": "A", "method-0-model": "model-a", "method-0-endpoint": "local",
        "method-1-name": "B", "method-1-model": "model-b", "method-1-endpoint": "local",
        "method-1-system_prompt": "Be <b>kind</b>.", "method-1-max_tokens": "300", "rounds": "2",
        "protocol": "shared", "method-2-name": "", "method-2-model": ""}


def wait(client, simulation_id: str) -> dict:
    deadline = time.monotonic() + 30
    while (answer := client.get(f"/api/simulations/{simulation_id}").get_json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return answer


def test_the_form_makes_the_api_request():
    assert request_of({**FORM, "score": "1", "judge_endpoint": "default", "reference": "B"}) == {
        "personas": "builtin", "simulator": {"model": SIMULATOR, "temperature": 0.5, "language": "en"},
        "methods": [{"name": "A", "model": "model-a", "endpoint": "local"},
                    {"name": "B", "model": "model-b", "endpoint": "local", "max_tokens": 300,
                     "system_prompt": "Be <b>kind</b>."}],
        "rounds": 2, "protocol": "shared", "score": True, "reference": "B", "judge": {"endpoint": "default"}}
    assert request_of({"personas": "u1", "rounds": "two"})["rounds"] == "two"  # for the checks to name


def test_the_run_page_estimates_then_starts_and_the_status_page_shows_the_transcripts(client, judge_server):
    page = client.get("/simulations/new")
    assert page.status_code == 200 and b'name="method-3-name"' in page.data
    estimated = client.post("/simulations/new", data={**FORM, "action": "estimate"})
    assert estimated.status_code == 200 and judge_server.requests == 0
    text = estimated.get_data(as_text=True)
    assert "11 calls to the models." in text  # 2 personas x 2 rounds x 2 methods + 3 simulator turns (P2's opening)
    assert "each model at its endpoint's prices" in text and "<td>1.0 / 3.0</td>" in text and "<td>2.0 / 10.0</td>" in text

    started = client.post("/simulations/new", data={**FORM, "action": "start"})
    assert started.status_code == 302
    simulation_id = started.headers["Location"].rsplit("/", 1)[1]
    assert wait(client, simulation_id)["status"] == "done"
    status = client.get(f"/simulations/{simulation_id}").get_data(as_text=True)
    assert P2.opening in status and "11 of 11 turns" in status
    usage = client.get(f"/api/simulations/{simulation_id}").get_json()["usage"]
    for row in usage:  # the simulator at the default endpoint's 2 and 10 per million prompt and completion tokens,
        # the methods at their endpoint's 1 and 3
        prompt, completion = (2, 10) if row["speaker"] == "user" else (1, 3)
        assert row["cost"] == round((row["prompt_tokens"] * prompt + row["completion_tokens"] * completion) / 1e6, 6)
    assert sorted(u["speaker"] for u in usage) == ["A", "B", "user"] and all(u["prompt_tokens"] for u in usage)
    usage_csv = client.get(f"/simulations/{simulation_id}/usage.csv")
    assert usage_csv.headers["Content-Disposition"].endswith(f'simulation-{simulation_id}-usage.csv"')
    lines = usage_csv.get_data(as_text=True).lstrip("\ufeff").splitlines()
    assert lines[0] == "speaker,model,endpoint,turns,attempts,cache_hits,failed,prompt_tokens,completion_tokens,cost"
    assert sorted(line.split(",")[:4] for line in lines[1:]) == [
        ["A", "model-a", "local", "4"], ["B", "model-b", "local", "4"], ["user", SIMULATOR, "default", "3"]]
    turns = list(csv.reader(io.StringIO(client.get(f"/simulations/{simulation_id}/turns.csv")
                                        .get_data(as_text=True).lstrip("\ufeff"))))
    assert turns[0][:6] == ["persona_id", "method", "round", "speaker", "status", "text"]
    assert len(turns) == 1 + 12  # 11 turns asked and P2's opening
    assert ["p2", "", "1", "user", "ok", P2.opening] in [row[:6] for row in turns]
    assert "Dialogue file" in status and f"simulation-{simulation_id}.jsonl" in status
    listing = client.get("/simulations").get_data(as_text=True)
    assert simulation_id in listing and "A, B" in listing


def test_untrusted_text_is_escaped_and_bad_input_is_a_400(client, judge_server):
    bad = client.post("/simulations/new", data={**FORM, "method-0-endpoint": "<script>x</script>",
                                                "action": "start"})
    assert bad.status_code == 400 and b"<script>x</script>" not in bad.data and b"&lt;script&gt;" in bad.data
    assert client.post("/simulations/new", data={**FORM, "rounds": "many", "action": "start"}).status_code == 400
    assert client.post("/simulations/new", data={"action": "estimate"}).status_code == 400
    assert judge_server.requests == 0
    judge_server.chat = lambda body: "<img src=x onerror=alert(1)> reply"
    simulation_id = client.post("/simulations/new", data={**FORM, "rounds": "1", "action": "start"}) \
        .headers["Location"].rsplit("/", 1)[1]
    wait(client, simulation_id)
    status = client.get(f"/simulations/{simulation_id}").data
    assert b"<img src=x" not in status and b"&lt;img src=x onerror=alert(1)&gt; reply" in status
    assert client.get("/simulations/nope").status_code == 404


def test_cancel_from_the_page(client, judge_server):
    judge_server.latency_s = 0.2
    simulation_id = client.post("/simulations/new", data={**FORM, "rounds": "5", "action": "start"}) \
        .headers["Location"].rsplit("/", 1)[1]
    page = client.get(f"/simulations/{simulation_id}").get_data(as_text=True)
    assert f'action="/simulations/{simulation_id}/cancel"' in page and 'data-refresh="3000"' in page
    assert client.post(f"/simulations/{simulation_id}/cancel").status_code == 302
    assert wait(client, simulation_id)["status"] == "cancelled"
    page = client.get(f"/simulations/{simulation_id}").get_data(as_text=True)
    assert f'action="/simulations/{simulation_id}/resume"' in page and "data-refresh" not in page

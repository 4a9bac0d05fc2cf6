"""A simulation's sample grid (/simulations/<id>/samples): readable while the run goes on, every kept turn in its
row and column (both protocols), replies still in flight shown as such, failed turns with their problem, the
filters, and untrusted text escaped."""
from __future__ import annotations

import json
import threading
import time
from html.parser import HTMLParser

import pytest

from simulate.plan import USER, Plan
from tests.simulate.support import P1, P2, SIMULATOR, Recorder, answer, environment

PENDING = "no answer yet"  # a turn not kept, while the simulation runs
NOT_ASKED = "not asked"  # once it has ended


@pytest.fixture
def client(make_app, judge_server, builtin_two):
    Recorder(judge_server)
    return make_app(environment(judge_server.url)).test_client()


class _Grid(HTMLParser):
    """The text of every cell of the samples table's body, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._inside = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "table" and ("id", "samples-grid") in attrs:
            self._inside = True
        elif self._inside and tag == "tr":
            self.rows.append([])
        elif self._inside and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag) -> None:
        if tag == "table":
            self._inside = False
        elif self._inside and tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join(" ".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data) -> None:
        if self._cell is not None:
            self._cell.append(data)


def grid(client, simulation_id: str, query: str = "") -> list[list[str]]:
    """The body rows of the simulation's sample grid (the header row left out)."""
    answer_ = client.get(f"/simulations/{simulation_id}/samples{query}")
    assert answer_.status_code == 200
    parser = _Grid()
    parser.feed(answer_.get_data(as_text=True))
    return parser.rows[1:]


def shown(turn: dict | None, running: bool) -> str:
    """What a cell must hold for a turn: its text, its problem when it failed, or that it is still awaited (or, once
    the simulation ended, was never asked)."""
    if turn is None:
        return PENDING if running else NOT_ASKED
    return turn["text"] if turn["status"] == "ok" else f"failed {turn['problem']}"


def check_against_the_store(client, simulation_id: str) -> list[list[str]]:
    """Every kept turn is in its row and column; a row per persona and round begun, and no other."""
    store = client.application.extensions["store"]
    simulation = store.get_simulation(simulation_id)
    plan, running = Plan.from_settings(simulation["settings"]), simulation["status"] in ("queued", "running")
    kept = {(t["conversation"], t["round"], t["speaker"]): t for t in store.simulation_turns(simulation_id)}
    rows = grid(client, simulation_id)
    expected_rows = []
    for c in plan.conversations():
        for k in range(1, plan.rounds + 1):
            if (c.index, k, USER) in kept and (c.persona.persona_id, str(k)) not in expected_rows:
                expected_rows.append((c.persona.persona_id, str(k)))
    assert [tuple(r[:2]) for r in rows] == expected_rows
    names = [m.name for m in plan.methods]
    for c in plan.conversations():
        for k in range(1, plan.rounds + 1):
            if (c.index, k, USER) not in kept:
                continue
            row = rows[expected_rows.index((c.persona.persona_id, str(k)))]
            user = kept[(c.index, k, USER)]
            for m in c.methods:
                if plan.protocol == "shared":
                    assert shown(user, running) in row[2]
                    cell = row[3 + names.index(m)]
                else:
                    cell = row[2 + names.index(m)]
                    assert cell.startswith("Simulated user: ") and shown(user, running) in cell
                reply = kept.get((c.index, k, m))
                assert shown(reply, running) in cell, (cell, reply)
                if reply is None:
                    assert cell.endswith(shown(reply, running))
    return rows


def wait_for(client, simulation_id: str, test, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while not test(body := client.get(f"/api/simulations/{simulation_id}").get_json()):
        assert time.monotonic() < deadline, body
        time.sleep(0.02)
    return body


def start(client, **extra) -> str:
    answer_ = client.post("/api/simulations", json={
        "personas": "builtin", "simulator": {"model": SIMULATOR}, "rounds": 2,
        "methods": [{"name": "A", "model": "model-a"}, {"name": "B", "model": "model-b"}], **extra})
    assert answer_.status_code == 202, answer_.get_json()
    return answer_.get_json()["id"]


def test_the_grid_follows_a_running_simulation(client, judge_server):
    gate = threading.Event()
    record = judge_server.hook

    def hold_b(request: dict):
        record(request)
        if request["body"]["model"] == "model-b":
            gate.wait(20)  # B's replies stay in flight until the test has read the grid
        return None

    judge_server.hook = hold_b
    simulation_id = start(client)
    try:
        # the first wave: P1's first message, and A's and B's replies to P2's opening; B's stays in flight
        body = wait_for(client, simulation_id, lambda b: b["progress"]["done"] >= 2)
        assert body["status"] == "running" and body["progress"]["done"] == 2
        rows = check_against_the_store(client, simulation_id)
        assert [r[:2] for r in rows] == [["p1", "1"], ["p2", "1"]]
        assert rows[0][3:] == [PENDING, PENDING] and rows[1][4] == PENDING
        assert rows[1][2].startswith(P2.opening) and "model-a replies" in rows[1][3]
        page = client.get(f"/simulations/{simulation_id}/samples").get_data(as_text=True)
        assert 'data-refresh="3000"' in page  # the page follows the run
    finally:
        gate.set()
    assert wait_for(client, simulation_id, lambda b: b["status"] not in ("queued", "running"))["status"] == "done"
    rows = check_against_the_store(client, simulation_id)
    assert not any(PENDING in cell for row in rows for cell in row)
    page = client.get(f"/simulations/{simulation_id}/samples").get_data(as_text=True)
    assert "data-refresh" not in page
    assert f'href="/simulations/{simulation_id}/samples"' in client.get(f"/simulations/{simulation_id}").get_data(
        as_text=True)


def test_filters_methods_and_pages(client, judge_server):
    simulation_id = start(client)
    wait_for(client, simulation_id, lambda b: b["status"] == "done")
    rows = grid(client, simulation_id)
    only_p2 = grid(client, simulation_id, "?q=" + "Hi there, I need")
    assert only_p2 == [rows[2]]
    assert grid(client, simulation_id, "?q=model-b+replies") == rows  # replies are searched too
    assert grid(client, simulation_id, "?q=nothing-like-this") == []
    just_a = grid(client, simulation_id, "?methods=A")
    assert [r[:4] for r in just_a] == [r[:4] for r in rows] and all(len(r) == 4 for r in just_a)
    assert grid(client, simulation_id, "?methods=nobody") == rows  # unknown names: every method
    bad = client.get(f"/simulations/{simulation_id}/samples?q=(a%2B)%2B")
    assert bad.status_code == 200 and b"repeats a group that itself repeats" in bad.data
    assert grid(client, simulation_id, "?status=failed") == []
    assert client.get("/simulations/nope/samples").status_code == 404
    korean = client.get(f"/simulations/{simulation_id}/samples?methods=A", headers={"Accept-Language": "ko"})
    assert 'aria-label="A: 표시됨"' in korean.get_data(as_text=True)  # the chips' labels are translated


def test_independent_protocol_failed_turns_and_escaping(client, judge_server):
    def chat(body: dict) -> str:
        system = body["messages"][0]["content"]
        if body["model"] == SIMULATOR and P1.user_profile in system:
            return ""  # refused (empty), asked again, then failed: P1's conversations stop at round 1
        if body["model"] == "model-b":
            return "<script>alert(1)</script> " + answer(body["model"], body["messages"])
        return answer(body["model"], body["messages"])

    judge_server.chat = chat
    simulation_id = start(client, protocol="independent")
    body = wait_for(client, simulation_id, lambda b: b["status"] not in ("queued", "running"))
    assert body["status"] == "incomplete" and body["progress"]["failed"] == 2
    rows = check_against_the_store(client, simulation_id)
    assert [r[:2] for r in rows] == [["p1", "1"], ["p2", "1"], ["p2", "2"]]
    failed = grid(client, simulation_id, "?status=failed")
    assert failed == [rows[0]] and rows[0][2:] == [f"Simulated user: failed empty {NOT_ASKED}"] * 2
    page = client.get(f"/simulations/{simulation_id}/samples").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert json.loads(client.get(f"/api/simulations/{simulation_id}").data)["upload_ids"]

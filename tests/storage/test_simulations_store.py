"""The store's simulations and their turns, on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest

from kinds import registry
from storage.store import Store


@pytest.fixture
def store(store_url):
    store = Store(store_url, registry.tables())
    yield store
    store.close()


def turn(conversation, rnd, speaker, status="ok", **extra):
    return {"conversation": conversation, "round": rnd, "speaker": speaker, "text": f"{speaker} {rnd}",
            "status": status, "attempts": 1, "prompt_tokens": 10, "completion_tokens": 3, "model": "m",
            "endpoint": "default", **extra}


def test_a_simulation_keeps_its_settings_state_and_turns(store):
    store.add_simulation("s1", {"rounds": 2, "personas": [{"persona_id": "p", "user_profile": "是谁"}]}, 6)
    store.add_simulation("s2", {"rounds": 1}, 2)
    simulation = store.get_simulation("s1")
    assert (simulation["status"], simulation["total"], simulation["upload_ids"], simulation["evaluation_ids"]) == (
        "queued", 6, [], [])
    assert simulation["settings"]["personas"][0]["user_profile"] == "是谁"
    assert store.unfinished_simulations() == ["s1", "s2"]

    store.save_turns("s1", [
        turn(0, 1, "user", attempts=0, prompt_tokens=0, completion_tokens=0, model=""),  # an opening: no call
        turn(0, 1, "A"), turn(0, 1, "B", status="failed", text="", problem="HTTP 500", attempts=3),
        turn(0, 2, "user", attempts=0, cached=1, prompt_tokens=0, completion_tokens=0)])
    assert store.simulation_progress("s1") == {"done": 3, "failed": 1, "cached": 1}
    assert [(u["speaker"], u["turns"], u["attempts"], u["failed"], u["prompt_tokens"]) for u in
            store.simulation_usage("s1")] == [("A", 1, 1, 0, 10), ("B", 1, 3, 1, 10), ("user", 1, 0, 0, 0)]

    store.set_simulation_status("s1", "running")
    assert store.get_simulation("s1")["run_done_at_start"] == 3
    assert store.forget_failed_turns("s1") == 1
    store.save_turns("s1", [turn(0, 2, "user", text="asked again")])  # a kept turn is replaced
    turns = store.simulation_turns("s1")
    assert [(t["round"], t["speaker"], t["text"]) for t in turns] == [
        (1, "A", "A 1"), (1, "user", "user 1"), (2, "user", "asked again")]

    store.set_simulation_outputs("s1", upload_ids=["u1", "u2"])
    store.set_simulation_outputs("s1", evaluation_ids=["e1"])
    store.set_simulation_status("s1", "incomplete", "1 turn failed")
    done = store.get_simulation("s1")
    assert (done["status"], done["error"], done["upload_ids"], done["evaluation_ids"]) == (
        "incomplete", "1 turn failed", ["u1", "u2"], ["e1"])
    assert done["finished_at"] is not None and store.unfinished_simulations() == ["s2"]
    assert sorted(s["id"] for s in store.list_simulations()) == ["s1", "s2"]

    store.delete_simulation("s1")
    assert store.get_simulation("s1") is None and store.simulation_turns("s1") == []


def test_uploads_of_kinds_lists_the_newest_first(store):
    for number, kind in enumerate(("dialogue", "mobility", "personas")):
        store.add_upload({"id": f"u{number}", "sha256": f"h{number}", "kind": kind, "filename": f"f{number}.jsonl",
                          "size": 1, "summary": {}, "warnings": [], "created_at": f"2026-01-0{number + 1}T00:00:00"})
    assert [(u["id"], u["kind"]) for u in store.uploads_of_kinds(["personas", "dialogue"])] == [
        ("u2", "personas"), ("u0", "dialogue")]

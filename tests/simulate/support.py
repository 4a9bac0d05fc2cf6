"""What the simulation tests share: the local server playing the simulator and the methods, personas, a runner."""
from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from kinds import registry
from pipeline.thread_backend import ThreadBackend
from simulate import personas as persona_source
from simulate.personas import Persona
from simulate.simulations import Simulations
from storage.store import Store

SIMULATOR = "sim-model"
P1 = Persona("p1", "A 34-year-old night-shift nurse who keeps bees.", "Dry humour, impatient with small talk.")
P2 = Persona("p2", "A retired ferry captain learning Korean.", "Warm and curious.", scenario="Planning a trip.",
             opening="Hi there, I need help with a trip.")


def use_as_builtin(tmp_path: Path, monkeypatch, *chosen: Persona) -> None:
    """The built-in personas replaced by `chosen` for one test."""
    path = tmp_path / "builtin.jsonl"
    path.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in chosen), encoding="utf-8")
    monkeypatch.setattr(persona_source, "BUILTIN", path)


def digest(messages: list[dict]) -> str:
    """A short hash of a request's messages: what the server's answers derive from."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:10]


def answer(model: str, messages: list[dict]) -> str:
    """What the server answers a model given these messages (a different history, a different answer)."""
    if model == SIMULATOR:
        return f"I wonder about {digest(messages)}."
    return f"{model} replies {digest(messages)}"


class Recorder:
    """Plays the simulator and the methods on a JudgeServer and records every chat request (model, messages)."""

    def __init__(self, server) -> None:
        self.server = server
        self.requests: list[tuple[str, list[dict]]] = []
        self._lock = threading.Lock()
        server.chat = lambda body: answer(body["model"], body["messages"])
        server.hook = self._record

    def _record(self, request: dict) -> None:
        with self._lock:
            self.requests.append((request["body"]["model"], request["body"]["messages"]))

    def keys(self) -> list[tuple[str, str]]:
        """The requests as (model, canonical messages), sorted."""
        return sorted((model, json.dumps(messages, sort_keys=True, ensure_ascii=False))
                      for model, messages in self.requests)


def canonical(expected: list[tuple[str, list[dict]]]) -> list[tuple[str, str]]:
    """Expected requests in Recorder.keys() form."""
    return sorted((model, json.dumps(messages, sort_keys=True, ensure_ascii=False)) for model, messages in expected)


def environment(url: str, **extra: str) -> dict:
    """Settings naming the local server as the default endpoint (its models unrestricted)."""
    return {"JUDGE_BASE_URL": url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test", "JUDGE_CONCURRENCY": "4",
            "JUDGE_MAX_RETRIES": "1", "JUDGE_RETRY_BASE_S": "0.01", "JUDGE_RETRY_MAX_S": "0.02",
            "JUDGE_TIMEOUT_S": "5", **extra}


def make_runner(tmp_path: Path, env: dict, evaluations=None) -> ThreadBackend[Simulations]:
    """The simulations' thread backend on a fresh SQLite store and uploads folder."""
    store = Store(str(tmp_path / "store.sqlite"), registry.tables())
    return ThreadBackend(Simulations(store, tmp_path / "uploads", evaluations, lambda: env))


def personas_file(*personas: Persona) -> bytes:
    """Personas as a dialogue file holds them (one session each), the personas source before the personas kind."""
    return "".join(json.dumps({"session_id": p.persona_id, "user_profile": p.user_profile,
                               "user_personality": p.user_personality,
                               "rounds": [{"round": 1, "user_message": "hi", "responses": {"X": "hello"}}]}) + "\n"
                   for p in personas).encode()

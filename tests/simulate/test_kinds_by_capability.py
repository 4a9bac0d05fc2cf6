"""simulate/ reaches kinds by what they declare, never by name: personas come from an upload of any kind that holds
them (a roster kind defined here, added by PSB_KINDS, serves as the personas and dialogue kinds do), the built-in set
from the kind its file is detected as, the files a simulation writes from the kind that records dialogues; and no
module of simulate/ keeps a kind's name or asks the registry for a kind by one."""
from __future__ import annotations

import ast
import io
import json
import time
from pathlib import Path

import pytest

from kinds import registry
from kinds.kind import HoldsPersonas, RecordsDialogues
from kinds.problems import Problem, Report
from simulate import personas as persona_source
from simulate.output import dialogue_kind
from tests.conftest import ROOT
from tests.simulate.support import SIMULATOR, Recorder, environment

SIMULATE = ROOT / "simulate"
BUILTIN_NAMES = ("mobility", "agentbench", "personas", "conversation", "dialogue")


class RosterKind(HoldsPersonas):
    """A roster of simulated users, one a line: `id | profile | personality` (not JSON: read by this kind only)."""

    name, label, formats, extension = "roster", "Roster", ".txt, one user a line: id | profile | personality", ".txt"

    def validate(self, stream, filename, options):
        problems, users = [], 0
        for number, raw in enumerate(stream, 1):
            if raw.strip() and raw.count(b"|") != 2:
                problems.append(Problem(number, "", "write id | profile | personality"))
            users += bool(raw.strip())
        return Report(problems, [], {"personas": users})

    def personas(self, stream):
        for raw in stream:
            if raw.strip():
                persona_id, profile, personality = (part.strip() for part in raw.decode().split("|"))
                yield {"persona_id": persona_id, "user_profile": profile, "user_personality": personality,
                       "scenario": "", "opening": ""}


@pytest.fixture
def roster_app(make_app, judge_server, builtin_two):
    Recorder(judge_server)
    named = {"local": {"base_url": judge_server.url, "models": ["model-a"]}}
    try:
        yield make_app(environment(judge_server.url, JUDGE_ENDPOINTS=json.dumps(named)),
                       PSB_KINDS=f"{__name__}:RosterKind")
    finally:
        registry.unregister("roster")


def test_a_simulation_takes_its_users_from_any_kind_that_holds_personas(roster_app):
    client = roster_app.test_client()
    data = b"nurse | A night-shift nurse in Leeds. | Terse.\nchef | A pastry chef who cycles to work. | Warm.\n"
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(data), "team.txt"), "kind": "roster"},
                         content_type="multipart/form-data")
    assert upload.status_code == 201, upload.get_json()
    upload_id = upload.get_json()["id"]
    assert "team.txt" in client.get("/simulations/new").get_data(as_text=True)  # offered as a personas source
    started = client.post("/api/simulations", json={
        "personas_upload_id": upload_id, "simulator": {"model": SIMULATOR}, "rounds": 1,
        "methods": [{"name": "A", "model": "model-a", "endpoint": "local"}]})
    assert started.status_code == 202, started.get_json()
    simulation_id = started.get_json()["id"]
    deadline = time.monotonic() + 30
    while (done := client.get(f"/api/simulations/{simulation_id}").get_json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, done
        time.sleep(0.05)
    assert done["status"] == "done", done
    written = client.get(f"/uploads/{done['upload_ids'][0]}/file").get_data(as_text=True)
    sessions = [json.loads(line) for line in written.splitlines()]
    assert [(s["session_id"], s["user_profile"], s["user_personality"]) for s in sessions] == [
        ("nurse", "A night-shift nurse in Leeds.", "Terse."), ("chef", "A pastry chef who cycles to work.", "Warm.")]


def test_an_upload_of_a_kind_without_personas_is_refused_naming_those_with_them(roster_app):
    from tests.kinds.agentbench.test_agentbench import custom_for, dumps, overall

    client = roster_app.test_client()
    data = dumps(overall(custom_for("os-std", 0.42)))
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(data), "overall.json"), "agent": "a",
                                               "task": "os-std"}, content_type="multipart/form-data")
    assert upload.status_code == 201, upload.get_json()
    refused = client.post("/api/simulations", json={
        "personas_upload_id": upload.get_json()["id"], "simulator": {"model": SIMULATOR}, "rounds": 1,
        "methods": [{"name": "A", "model": "model-a", "endpoint": "local"}]})
    assert refused.status_code == 400
    assert refused.get_json()["error"].endswith("personas come from an upload of one of these kinds: personas, "
                                                "dialogue, roster.")


def test_the_builtin_set_is_read_by_the_kind_it_is_detected_as(monkeypatch):
    read = []
    kind = registry.get("personas")
    monkeypatch.setattr(type(kind), "personas", lambda self, stream: read.append(self) or iter(()))
    assert persona_source.builtin() == [] and read == [kind]


def test_the_files_a_simulation_writes_are_the_kind_that_records_dialogues():
    assert registry.having(RecordsDialogues) == [registry.get("dialogue")]
    assert dialogue_kind() is registry.get("dialogue")


def _kind_names_held(path: Path) -> list[str]:
    """Where a module keeps a kind's name in a variable, or asks the registry for a kind by a name written in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in BUILTIN_NAMES:
            found.append(f"{path.name}:{node.lineno} keeps {node.value.value!r}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "registry"
                and any(isinstance(arg, ast.Constant) for arg in node.args)):
            found.append(f"{path.name}:{node.lineno} asks the registry for a kind by name")
    return found


def test_no_module_of_simulate_names_a_kind():
    assert sorted(SIMULATE.glob("*.py"))
    assert [where for path in sorted(SIMULATE.glob("*.py")) for where in _kind_names_held(path)] == []


def test_the_check_finds_what_simulate_did_before(tmp_path):
    probe = tmp_path / "probe.py"  # simulate/output.py's and simulate/personas.py's lines before
    probe.write_text('KIND = "dialogue"\nBUILTIN_KIND = "personas"\nkind = registry.get(BUILTIN_KIND)\n'
                     'other = registry.get("mobility")\n', encoding="utf-8")
    assert _kind_names_held(probe) == ["probe.py:1 keeps 'dialogue'", "probe.py:2 keeps 'personas'",
                                       "probe.py:4 asks the registry for a kind by name"]

"""Hard limits on every input: a corpus of bad uploads and reference sets, each refused with a 400 that names
the limit (its setting) and where it was hit, with nothing stored; unit tests of the readers; and a fuzz
test (Hypothesis) of malformed JSONL, JSON and ZIPs for each kind."""
from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kinds.readers import json_text, limits
from kinds.readers import zip as zips
from kinds.readers.limits import LimitError, Limits
from kinds.readers.zip import ZipReader
from tests.conftest import jsonl, session_line

# --- helpers -------------------------------------------------------------------------------------


def deep(levels: int) -> str:
    """JSON text of lists nested `levels` deep."""
    return "[" * levels + "]" * levels


def with_raw(value, raw: str, marker: str = "@RAW@") -> str:
    """The JSON text of `value` with the string `marker` replaced by the raw JSON text `raw`."""
    return json.dumps(value, ensure_ascii=False).replace(json.dumps(marker), raw)


def zip_bytes(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A ZIP of the members, in the order given."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def claim_size(raw: bytes, member: int, size: int) -> bytes:
    """The ZIP with its central directory claiming `size` expanded bytes for member number `member`."""
    data = bytearray(raw)
    at = -1
    for _number in range(member + 1):
        at = data.find(b"PK\x01\x02", at + 1)
    data[at + 24:at + 28] = size.to_bytes(4, "little")
    return bytes(data)


def conversation(exchanges: int = 2, **extra) -> dict:
    """A valid Human-vs-Agent conversation of a simulated user."""
    history = []
    for k in range(exchanges):
        history += [{"role": "user", "content": f"question {k}", "intent": "Planning"},
                    {"role": "assistant", "content": f"answer {k}"}]
    return {"source": "agent", "task": "travel planning", "history": history, "rating": {"Detail Level": 2}, **extra}


def dumps(value) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def overall(**extra) -> dict:
    """A valid AgentBench overall.json of task os-std."""
    return {"total": 10, "validation": {"completed": 1.0, "average_history_length": 3, "max_history_length": 4,
                                        "min_history_length": 2}, "custom": {"overall": {"acc": 0.5}}, **extra}


def runs_line(index: int, history=None) -> dict:
    return {"index": index, "output": {"index": index, "status": "completed", "result": "ok",
                                       "history": history or [{"role": "user", "content": "task"}]}}


RUN = "outputs/run1"
CONV = "LLM_agent_user/travel planning"


def mobility_doc(users: int = 3) -> dict:
    """A valid DailyMobility upload."""
    return {"gyration_radius": [1000.0 + u for u in range(users)], "daily_location_numbers": [2.0] * users,
            "intention_sequences": [[1, 2, 4, 1]] * users, "intention_proportions": [[0.5, 0.5, 0, 0, 0, 0, 0]] * users}


REF_NAMES = {"gyration_radius": "gyration_radius", "daily_location_numbers": "daily_location_numbers",
             "intention_sequences": "daily_intentions_2d", "intention_proportions": "intention_proportions_2d"}


def npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array))
    return buffer.getvalue()


def reference_members() -> dict[str, bytes]:
    """The four .npy members of a small valid reference set in a groundtruth folder."""
    doc = mobility_doc(5)
    return {f"groundtruth/{REF_NAMES[key]}.npy": npy(values) for key, values in doc.items()}


def stored(app) -> tuple:
    """Everything an upload could leave behind: the files under the uploads folder and the rows of the store."""
    folder = Path(app.config["UPLOAD_FOLDER"])
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []
    with sqlite3.connect(app.config["DATABASE"]) as db:
        rows = tuple(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                     for table in ("uploads", "sessions", "evaluations", "reference_sets"))
    return files, rows


def post_upload(client, data: bytes, filename: str, form: dict | None = None):
    return client.post("/api/uploads", data={"file": (io.BytesIO(data), filename), **(form or {})})


@pytest.fixture
def app(make_app):
    """An app without a judge (none is needed to upload)."""
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


# --- the corpus of bad uploads --------------------------------------------------------------------

@dataclass
class Bad:
    """A bad upload: its bytes, name and form, the limits set, and the problem expected: line, path and the
    words its message must hold."""

    data: bytes
    filename: str
    line: int | None
    path: str
    words: tuple[str, ...]
    env: dict = field(default_factory=dict)
    form: dict = field(default_factory=dict)


def _dialogue_cases() -> dict[str, Bad]:
    ok = json.dumps(session_line("s1"))
    deep_profile = with_raw(session_line("s2", user_profile="@RAW@"), deep(50_000))
    return {
        # the first 500: a 50,000-level value in a dialogue line
        "dialogue: 50,000 levels in user_profile (default limit)": Bad(
            (ok + "\n" + deep_profile + "\n").encode(), "log.jsonl", 2, "user_profile" + "[0]" * 63,
            ("Line 2", "64 levels", "LIMIT_JSON_DEPTH")),
        # the second 500: a 100,000-level nested JSON upload (read as dialogue JSONL)
        "json: 100,000 nested lists (default limit)": Bad(
            deep(100_000).encode(), "nested.json", 1, "[0]" * 64, ("Line 1", "LIMIT_JSON_DEPTH")),
        "dialogue: nesting past a small limit in a reply": Bad(
            jsonl(session_line("s1"), session_line("s2")) + with_raw(
                session_line("s3", rounds=2, methods=("A", "my method")) | {"rounds": [
                    {"round": 1, "user_message": "hi", "responses": {"A": "x", "my method": "@RAW@"}}]},
                deep(5)).encode(), "log.jsonl", 3, 'rounds[0].responses["my method"][0]', ("LIMIT_JSON_DEPTH",),
            env={"LIMIT_JSON_DEPTH": "5"}),
        "dialogue: nesting in user_message": Bad(
            with_raw(session_line("s1") | {"rounds": [{"round": 1, "user_message": "@RAW@", "responses": {"A": "x"}}]},
                     deep(10)).encode(), "log.jsonl", 1, "rounds[0].user_message[0][0]", ("LIMIT_JSON_DEPTH",),
            env={"LIMIT_JSON_DEPTH": "5"}),
        "dialogue: nested objects": Bad(
            jsonl(session_line("s1", extra={"a": {"b": {"c": {"d": 1}}}})), "log.jsonl", 1, "extra.a.b.c",
            ("LIMIT_JSON_DEPTH",), env={"LIMIT_JSON_DEPTH": "4"}),
        "dialogue: long user_profile": Bad(
            jsonl(session_line("s1"), session_line("s2", user_profile="p" * 101)), "log.jsonl", 2, "user_profile",
            ("101 characters", "LIMIT_STRING_CHARS"), env={"LIMIT_STRING_CHARS": "100"}),
        "dialogue: long reply of a method with a space": Bad(
            jsonl(session_line("s1", methods=("A", "my method")) | {"rounds": [
                {"round": 1, "user_message": "hi", "responses": {"A": "x", "my method": "r" * 300}}]}),
            "log.jsonl", 1, 'rounds[0].responses["my method"]', ("300 characters", "LIMIT_STRING_CHARS"),
            env={"LIMIT_STRING_CHARS": "100"}),
        "dialogue: long string written with escapes": Bad(
            with_raw(session_line("s1"), json.dumps("\u00e9" * 150, ensure_ascii=True), "A 30-year-old nurse who "
                     "runs marathons.").encode(), "log.jsonl", 1, "user_profile", ("150 characters",),
            env={"LIMIT_STRING_CHARS": "100"}),
        "dialogue: long key": Bad(
            jsonl(session_line("s1", **{"k" * 200: 1})), "log.jsonl", 1, '["' + "k" * 99 + '…"]',
            ("200 characters", "LIMIT_STRING_CHARS"), env={"LIMIT_STRING_CHARS": "100"}),
        "dialogue: too many sessions": Bad(
            jsonl(*(session_line(f"s{i}") for i in range(4))), "log.jsonl", 4, "",
            ("more than 3 sessions", "LIMIT_SESSIONS"), env={"LIMIT_SESSIONS": "3"}),
        "dialogue: too many sessions, blank lines between": Bad(
            b"\n".join(jsonl(session_line(f"s{i}")) for i in range(3)), "log.jsonl", 5, "",
            ("more than 2 sessions", "LIMIT_SESSIONS"), env={"LIMIT_SESSIONS": "2"}),
        "dialogue: too many rounds": Bad(
            jsonl(session_line("s1"), session_line("s2", rounds=4)), "log.jsonl", 2, "rounds",
            ("4 rounds", "LIMIT_ROUNDS"), env={"LIMIT_ROUNDS": "3"}),
        "dialogue: too many methods": Bad(
            jsonl(session_line("s1", methods=("A", "B", "C"))), "log.jsonl", 1, "rounds[0].responses",
            ("3 methods", "LIMIT_METHODS"), env={"LIMIT_METHODS": "2"}),
        "dialogue: too many methods, ALOE preferred/rejected": Bad(
            jsonl({"session_id": "a", "user_profile": "p", "user_personality": "q",
                   "rounds": [{"user": "hi", "assistant": {"preferred": "x", "rejected": "y"}}]}),
            "aloe.jsonl", 1, "rounds[0].assistant", ("2 methods", "LIMIT_METHODS"), env={"LIMIT_METHODS": "1"}),
        "dialogue: a 5,000-digit round number": Bad(
            with_raw(session_line("s1") | {"rounds": [{"round": "@RAW@", "user_message": "m",
                                                       "responses": {"A": "x"}}]},
                     "1" * 5000).encode(), "log.jsonl", 1, "rounds[0].round", ("4300 digits",)),
    }


def _mobility_cases() -> dict[str, Bad]:
    doc = mobility_doc()
    doc["intention_sequences"] = [[1, 2, 4, 1], [1, "@RAW@", 4, 1], [1, 2, 4, 1]]
    pretty = json.dumps(doc, indent=1).replace('"@RAW@"', "[[2]]")
    return {
        "mobility: 100,000 levels in gyration_radius (default limit)": Bad(
            with_raw({"gyration_radius": "@RAW@"}, deep(100_000)).encode(), "gen.json", 1,
            "gyration_radius" + "[0]" * 63, ("LIMIT_JSON_DEPTH",)),
        "mobility: nested codes in a pretty-printed file": Bad(
            pretty.encode(), "gen.json", pretty[:pretty.index("[[2]]")].count("\n") + 1,
            "intention_sequences[1][1]", ("LIMIT_JSON_DEPTH",), env={"LIMIT_JSON_DEPTH": "3"}),
        "mobility: long string in an unknown key": Bad(
            dumps(mobility_doc() | {"note": "n" * 50}), "gen.json", 1, "note", ("LIMIT_STRING_CHARS",),
            env={"LIMIT_STRING_CHARS": "30"}),
        "mobility: long string in place of a number": Bad(
            dumps(mobility_doc() | {"daily_location_numbers": [2.0, "9" * 40, 1.0]}), "gen.json", 1,
            "daily_location_numbers[1]", ("40 characters",), env={"LIMIT_STRING_CHARS": "30"}),
        "mobility: a 5,000-digit radius": Bad(
            with_raw(mobility_doc() | {"gyration_radius": [1.0, "@RAW@", 3.0]}, "7" * 5000).encode(), "gen.json", 1,
            "gyration_radius[1]", ("4300 digits",)),
    }


def _conversation_cases() -> dict[str, Bad]:
    member = f"{CONV}/0.json"
    three = {f"{CONV}/{i}.json": dumps(conversation()) for i in range(3)}
    return {
        "conversation: deep profile in one JSON file": Bad(
            with_raw(conversation(profile="@RAW@"), deep(200)).encode(), "one.json", 1,
            "profile" + "[0]" * 63, ("one.json line 1", "LIMIT_JSON_DEPTH")),
        "conversation: deep value on line 2 of JSON Lines": Bad(
            dumps(conversation()) + b"\n" + with_raw(conversation(extra="@RAW@"), deep(9)).encode(), "all.jsonl", 2,
            "extra[0][0][0][0]", ("all.jsonl line 2", "LIMIT_JSON_DEPTH"), env={"LIMIT_JSON_DEPTH": "5"}),
        "conversation: too many in a JSON array": Bad(
            dumps([conversation() for _ in range(3)]), "all.json", None, "all.json[2]",
            ("more than 2 conversations", "LIMIT_SESSIONS"), env={"LIMIT_SESSIONS": "2"}),
        "conversation: too many turns": Bad(
            dumps(conversation(3)), "one.json", None, "history", ("6 turns", "LIMIT_ROUNDS"),
            env={"LIMIT_ROUNDS": "4"}),
        "conversation: long message": Bad(
            dumps(conversation() | {"history": [{"role": "user", "content": "hi"},
                                                {"role": "assistant", "content": "c" * 80}]}),
            "one.json", 1, "history[1].content", ("80 characters", "LIMIT_STRING_CHARS"),
            env={"LIMIT_STRING_CHARS": "50"}),
        "conversation ZIP: deep member": Bad(
            zip_bytes({f"{CONV}/1.json": dumps(conversation()),
                       member: with_raw(conversation(profile="@RAW@"), deep(10)).encode()}),
            "data.zip", 1, "profile[0][0][0]", (member, "LIMIT_JSON_DEPTH"), env={"LIMIT_JSON_DEPTH": "4"}),
        "conversation ZIP: too many conversations over members": Bad(
            zip_bytes(three), "data.zip", None, f"{CONV}/2.json", ("LIMIT_SESSIONS",), env={"LIMIT_SESSIONS": "2"}),
        "conversation ZIP: too many members": Bad(
            zip_bytes({f"{CONV}/{i}.json": dumps(conversation()) for i in range(5)}), "data.zip", None,
            f"{CONV}/3.json", ("more than 3 files", "LIMIT_ZIP_MEMBERS"), env={"LIMIT_ZIP_MEMBERS": "3"}),
        "conversation ZIP: too many members, folders count": Bad(
            zip_bytes({"LLM_agent_user/": b"", f"{CONV}/": b"", member: dumps(conversation())}), "data.zip", None,
            member, ("LIMIT_ZIP_MEMBERS",), env={"LIMIT_ZIP_MEMBERS": "2"}),
        "conversation ZIP: a member compressed like a bomb, with the default limits": Bad(
            zip_bytes({member: b" " * 5_000_000 + dumps(conversation())}), "bomb.zip", None, member,
            ("times its compressed size", "LIMIT_ZIP_RATIO")),
        "conversation ZIP: zip bomb member": Bad(
            zip_bytes({member: b" " * 2_000_000 + dumps(conversation())}), "bomb.zip", None, member,
            ("the limit for one file", "LIMIT_ZIP_MEMBER_MB"), env={"LIMIT_ZIP_MEMBER_MB": "1"}),
        "conversation ZIP: expands past the total": Bad(
            zip_bytes({f"{CONV}/{i}.json": b" " * 30_000 + dumps(conversation()) for i in range(3)}), "data.zip",
            None, f"{CONV}/1.json", ("The ZIP expands to", "LIMIT_ZIP_EXPANDED_MB"),
            env={"LIMIT_ZIP_EXPANDED_MB": "0.05"}),
        "conversation ZIP: header claims 4 GB": Bad(
            claim_size(zip_bytes(three), 1, 0xFFFFFFF0), "data.zip", None, f"{CONV}/1.json",
            ("LIMIT_ZIP_MEMBER_MB",)),
        "conversation ZIP: header claims 100 bytes for a bomb": Bad(
            claim_size(zip_bytes({member: b" " * 5_000_000 + dumps(conversation())}), 0, 100), "data.zip", None,
            member, ("cannot be read", "CRC")),
        "conversation ZIP: bzip2 member": Bad(
            zip_bytes({member: dumps(conversation())}, zipfile.ZIP_BZIP2), "data.zip", None, member, ("Deflate",)),
    }


def _agentbench_cases() -> dict[str, Bad]:
    names = {"agent": "m", "task": "os-std"}
    folder = f"{RUN}/m/os-std"
    tree = {f"{folder}/overall.json": dumps(overall()),
            f"{folder}/runs.jsonl": b"".join(dumps(runs_line(i)) + b"\n" for i in range(2))}
    runs = dumps(runs_line(0)) + b"\n" + dumps(runs_line(1)) + b"\n" + with_raw(
        runs_line(2) | {"output": {"status": "completed", "history": "@RAW@"}}, deep(8)).encode() + b"\n"
    agents = {f"{RUN}/a{i}/os-std/overall.json": dumps(overall()) for i in range(3)}
    return {
        "agentbench: deep custom in a lone overall.json": Bad(
            with_raw(overall(custom={"overall": {"acc": 0.5}, "deep": "@RAW@"}), deep(100_000)).encode(),
            "overall.json", 1, "custom.deep" + "[0]" * 62, ("overall.json line 1", "LIMIT_JSON_DEPTH"), form=names),
        "agentbench: 5,000-digit total": Bad(
            with_raw(overall(total="@RAW@"), "1" * 5000).encode(), "overall.json", 1, "total", ("4300 digits",),
            form=names),
        "agentbench ZIP: deep overall.json": Bad(
            zip_bytes({f"{folder}/overall.json": with_raw(overall(extra="@RAW@"), deep(6)).encode()}), "outputs.zip",
            1, "extra[0][0][0]", (f"{folder}/overall.json", "LIMIT_JSON_DEPTH"), env={"LIMIT_JSON_DEPTH": "4"}),
        "agentbench ZIP: deep runs.jsonl line 3": Bad(
            zip_bytes({f"{folder}/overall.json": dumps(overall()), f"{folder}/runs.jsonl": runs}), "outputs.zip",
            3, "output.history[0][0]", (f"{folder}/runs.jsonl line 3", "LIMIT_JSON_DEPTH"),
            env={"LIMIT_JSON_DEPTH": "4"}),
        "agentbench ZIP: long history message": Bad(
            zip_bytes({f"{folder}/overall.json": dumps(overall()), f"{folder}/runs.jsonl": dumps(runs_line(0)) + b"\n"
                       + dumps(runs_line(1, [{"role": "agent", "content": "a" * 500}])) + b"\n"}), "outputs.zip", 2,
            "output.history[0].content", ("500 characters", "LIMIT_STRING_CHARS"), env={"LIMIT_STRING_CHARS": "100"}),
        "agentbench ZIP: too many agents": Bad(
            zip_bytes(agents), "outputs.zip", None, f"{RUN}/a2/os-std/overall.json",
            ("more than 2 agents", "LIMIT_METHODS"), env={"LIMIT_METHODS": "2"}),
        "agentbench: too many agents in summary.csv": Bad(
            b"Agent\\Task,os-std\na,0.5\nb,0.4\nc,0.3\n", "summary.csv", None, "summary.csv", ("LIMIT_METHODS",),
            env={"LIMIT_METHODS": "2"}),
        "agentbench: too many agents in result.json": Bad(
            dumps({"summary": {f"a{i}": {"os-std": 0.5} for i in range(3)}, "details": {}}), "result.json", None,
            "result.json", ("LIMIT_METHODS",), env={"LIMIT_METHODS": "2"}),
        "agentbench: a summary.csv cell past the csv module's limit": Bad(
            b"Agent\\Task,os-std\nm," + b"1" * 200_000 + b"\n", "summary.csv", 2, "", ("cannot be read as CSV",)),
        "agentbench ZIP: too many members": Bad(
            zip_bytes({**tree, f"{folder}/error.jsonl": b""}), "outputs.zip", None, f"{folder}/error.jsonl",
            ("LIMIT_ZIP_MEMBERS",), env={"LIMIT_ZIP_MEMBERS": "2"}),
        "agentbench ZIP: too many members, the kind chosen": Bad(
            zip_bytes({**tree, f"{folder}/error.jsonl": b""}), "outputs.zip", None, f"{folder}/error.jsonl",
            ("LIMIT_ZIP_MEMBERS",), env={"LIMIT_ZIP_MEMBERS": "2"}, form={"kind": "agentbench"}),
        "agentbench ZIP: runs.jsonl bomb": Bad(
            zip_bytes({f"{folder}/overall.json": dumps(overall()),
                       f"{folder}/runs.jsonl": (dumps(runs_line(0)) + b"\n") * 20_000}), "outputs.zip", None,
            f"{folder}/runs.jsonl", ("LIMIT_ZIP_MEMBER_MB",), env={"LIMIT_ZIP_MEMBER_MB": "0.5"}),
        "agentbench ZIP: header claims 4 GB": Bad(
            claim_size(zip_bytes(tree), 1, 0xFFFFFFF0), "outputs.zip", None, f"{folder}/runs.jsonl",
            ("LIMIT_ZIP_MEMBER_MB",)),
        "agentbench ZIP: bzip2 members": Bad(
            zip_bytes(tree, zipfile.ZIP_BZIP2), "outputs.zip", None, f"{folder}/overall.json", ("Deflate",)),
    }


BAD_UPLOADS = {**_dialogue_cases(), **_mobility_cases(), **_conversation_cases(), **_agentbench_cases()}


@pytest.mark.parametrize("name", BAD_UPLOADS)
def test_bad_upload_is_refused_where_the_limit_is_hit(name, app, client, monkeypatch):
    case = BAD_UPLOADS[name]
    assert post_upload(client, jsonl(session_line("kept")), "kept.jsonl").status_code == 201  # stored before
    for variable, value in case.env.items():
        monkeypatch.setenv(variable, value)
    before = stored(app)
    resp = post_upload(client, case.data, case.filename, case.form)
    assert resp.status_code == 400, resp.get_json()
    body = resp.get_json()
    assert body["error"] and body["truncated"] is False
    located = [p for p in body["problems"] if (p["line"], p["path"]) == (case.line, case.path)]
    assert located, body["problems"]
    assert any(all(word in p["message"] for word in case.words) for p in located), located
    assert stored(app) == before  # no file, no row
    assert len(client.get("/api/evaluations").get_json()) == 0


def test_the_corpus_covers_every_kind_and_limit():
    assert len(BAD_UPLOADS) + len(BAD_REFERENCES) >= 40
    words = " ".join(" ".join(case.words) for case in BAD_UPLOADS.values())
    for setting in limits.SETTINGS.values():
        assert setting in words, setting
    for kind in ("dialogue", "mobility", "conversation", "agentbench"):
        assert any(name.startswith(kind) for name in BAD_UPLOADS), kind


def test_upload_page_shows_the_limit_and_stores_nothing(app, client):
    before = stored(app)
    resp = client.post("/uploads", data={"file": (io.BytesIO(deep(50_000).encode()), "deep.jsonl")})
    assert resp.status_code == 400
    html = resp.get_data(as_text=True)
    assert "LIMIT_JSON_DEPTH" in html and "[0][0][0]" in html
    assert stored(app) == before


# --- reference sets ---------------------------------------------------------------------------------

def _reference_cases() -> dict[str, tuple[bytes, str, dict, tuple[str, ...]]]:
    members = reference_members()
    first = next(iter(members))
    return {
        "reference JSON: 100,000 levels": (
            with_raw({"gyration_radius": "@RAW@"}, deep(100_000)).encode(), "ref.json", {},
            ("gyration_radius[0][0]", "LIMIT_JSON_DEPTH")),
        "reference JSON: long string": (
            dumps(mobility_doc() | {"note": "n" * 50}), "ref.json", {"LIMIT_STRING_CHARS": "30"},
            ("'note'", "LIMIT_STRING_CHARS")),
        "reference ZIP: too many members": (
            zip_bytes({**members, "groundtruth/readme.txt": b"x"}), "ref.zip", {"LIMIT_ZIP_MEMBERS": "3"},
            (list(members)[3], "LIMIT_ZIP_MEMBERS")),
        "reference ZIP: zip bomb": (
            zip_bytes({**members, "groundtruth/padding.bin": bytes(8 * 1024 * 1024)}), "ref.zip",
            {"LIMIT_ZIP_EXPANDED_MB": "1"}, ("groundtruth/padding.bin", "LIMIT_ZIP_EXPANDED_MB")),
        "reference ZIP: member past its limit": (
            zip_bytes({**members, "groundtruth/notes.txt": b"n" * 4096}), "ref.zip", {"LIMIT_ZIP_MEMBER_MB": "0.002"},
            ("groundtruth/notes.txt", "LIMIT_ZIP_MEMBER_MB")),
        "reference ZIP: header claims 4 GB": (
            claim_size(zip_bytes(members), 0, 0xFFFFFFF0), "ref.zip", {}, (first, "LIMIT_ZIP_MEMBER_MB")),
        "reference ZIP: bzip2 members": (
            zip_bytes(members, zipfile.ZIP_BZIP2), "ref.zip", {}, (first, "Deflate")),
        "reference .npz: bomb member": (
            zip_bytes({f"{key}.npy": npy(value) for key, value in mobility_doc().items()}
                      | {"intention_sequences.npy": npy(np.ones((300, 100), np.int8))}), "ref.npz",
            {"LIMIT_ZIP_MEMBER_MB": "0.01"}, ("intention_sequences.npy", "LIMIT_ZIP_MEMBER_MB")),
    }


BAD_REFERENCES = _reference_cases()


@pytest.mark.parametrize("page", [False, True], ids=["api", "page"])
@pytest.mark.parametrize("name", BAD_REFERENCES)
def test_bad_reference_set_is_refused(name, page, app, client, monkeypatch):
    data, filename, env, words = BAD_REFERENCES[name]
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    before = stored(app)
    resp = client.post("/references" if page else "/api/references",
                       data={"file": (io.BytesIO(data), filename), "name": "ref"})
    assert resp.status_code == 400
    text = resp.get_data(as_text=True).replace("&#39;", "'") if page else resp.get_json()["error"]
    for word in words:
        assert word in text, text[:2000]
    assert stored(app) == before
    assert client.get("/api/references").get_json() == []


# --- the readers ---------------------------------------------------------------------------------

def test_limits_come_from_the_environment_and_bad_values_are_named():
    assert Limits.from_env({}) == Limits()
    custom = Limits.from_env({"LIMIT_JSON_DEPTH": "10", "LIMIT_ZIP_EXPANDED_MB": "0.5", "LIMIT_SESSIONS": " 7 "})
    assert (custom.json_depth, custom.zip_expanded_bytes, custom.sessions) == (10, 512 * 1024, 7)
    assert Limits.from_env({"LIMIT_JSON_DEPTH": "100000"}).json_depth == limits.MAX_JSON_DEPTH
    for bad in ("0", "-3", "ten", "1.5", "inf"):
        with pytest.raises(ValueError, match="LIMIT_ROUNDS"):
            Limits.from_env({"LIMIT_ROUNDS": bad})


def test_server_refuses_to_start_with_a_bad_limit(make_app, monkeypatch):
    monkeypatch.setenv("LIMIT_STRING_CHARS", "lots")
    with pytest.raises(ValueError, match="LIMIT_STRING_CHARS"):
        make_app()


def test_json_within_the_limits_is_read_as_json_loads_reads_it():
    text = json.dumps({"a": [[1, 2], {"b": "x" * 100}], "c": "\u00e9" * 10})
    assert json_text.loads(text, Limits(json_depth=3, string_chars=100)) == json.loads(text)
    escaped = json.dumps("\u00e9" * 50, ensure_ascii=True)  # 300 characters of text, 50 of string
    assert json_text.loads(escaped, Limits(string_chars=50)) == "\u00e9" * 50


def test_json_depth_is_found_after_siblings_and_commas_inside_strings():
    text = '{"x": [1, "a,b", [2, 3], {"y": "]]"}, [[[4]]]]}'
    with pytest.raises(LimitError) as caught:
        json_text.loads(text, Limits(json_depth=4))
    assert (caught.value.line, caught.value.path) == (1, "x[4][0][0]")


def _zip_reader(members: dict[str, bytes], **limit_values) -> tuple[ZipReader, zipfile.ZipFile]:
    archive = zipfile.ZipFile(io.BytesIO(zip_bytes(members)))
    return ZipReader(archive, Limits(**limit_values)), archive


def test_zip_reader_counts_the_bytes_it_decompresses():
    """Without the header check, reading alone stops at the limits: per member, and for the whole ZIP."""
    reader, archive = _zip_reader({"a.json": b" " * 300_000, "b.json": b" " * 300_000}, zip_member_mb=0.25)
    with pytest.raises(LimitError, match="LIMIT_ZIP_MEMBER_MB") as caught:
        reader.read("a.json", archive.getinfo("a.json"))
    assert caught.value.path == "a.json"
    reader, archive = _zip_reader({"a.json": b" " * 300_000, "b.json": b" " * 300_000}, zip_expanded_mb=0.5)
    assert len(reader.read("a.json", archive.getinfo("a.json"))) == 300_000
    with pytest.raises(LimitError, match="LIMIT_ZIP_EXPANDED_MB") as caught:
        list(reader.lines("b.json", archive.getinfo("b.json")))
    assert caught.value.path == "b.json"


def test_zip_with_many_entries_is_refused_before_it_is_parsed():
    raw = zip_bytes({f"f{i}": b"" for i in range(5000)})
    with pytest.raises(LimitError, match="LIMIT_ZIP_MEMBERS") as caught:
        zips.open_zip(raw, Limits(zip_members=1000))
    assert caught.value.path == "f1000"
    assert len(zips.open_zip(raw, Limits(zip_members=5000)).infolist()) == 5000


def test_zip_members_counted_when_the_signature_also_occurs_in_data():
    raw = zip_bytes({"a.bin": b"PK\x01\x02" * 10, "b.bin": b"x"}, zipfile.ZIP_STORED)
    assert len(zips.open_zip(raw, Limits(zip_members=2)).infolist()) == 2


# --- fuzzing ---------------------------------------------------------------------------------------

FUZZ_LIMITS = {"LIMIT_JSON_DEPTH": "8", "LIMIT_STRING_CHARS": "200", "LIMIT_SESSIONS": "5", "LIMIT_ROUNDS": "6",
               "LIMIT_METHODS": "3", "LIMIT_ZIP_MEMBERS": "6", "LIMIT_ZIP_EXPANDED_MB": "0.05",
               "LIMIT_ZIP_MEMBER_MB": "0.02"}
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

leaves = st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.floats(allow_nan=False, width=32),
                   st.text(max_size=12))
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                        max_size=4), max_leaves=12)
# raw JSON text put in place of a value: what the limits are about
hostile = st.one_of(st.integers(1, 3000).map(deep), st.integers(150, 2000).map(lambda n: json.dumps("s" * n)),
                    st.just("9" * 5000), st.integers(0, 12).map(lambda n: "{" * n))


@st.composite
def mutated(draw, value) -> str:
    """The JSON text of `value` with some of: a value replaced by hostile text, junk inserted, the end cut off
    (it always keeps its first character, so it stays an object's or a list's text)."""
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    if draw(st.sampled_from([True, True, False])):
        text = text.replace(json.dumps("@X@"), draw(hostile), 1)
    text = text.replace(json.dumps("@X@"), draw(values.map(json.dumps)))
    if not text:  # hostile text can be empty, and a bare "@X@" value was all there was
        return text
    for _step in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        at = draw(st.integers(1, len(text)))
        text = text[:at] + draw(st.sampled_from(["{", "}", "[", "]", ",", ":", '"', "\\", "\n", "x", "é"])) + text[at:]
    if draw(st.sampled_from([False, False, False, True])):
        text = text[:draw(st.integers(1, len(text)))]
    return text


def fuzzed_session(index: int):
    """A session with a random value, or hostile text, at a random place."""
    return st.sampled_from([
        session_line(f"s{index}", user_profile="@X@"), session_line(f"s{index}", extra="@X@"),
        session_line(f"s{index}", rounds=7), session_line(f"s{index}", methods=("A", "B", "C", "D")),
        session_line(f"s{index}") | {"rounds": [{"round": 1, "user_message": "@X@", "responses": {"A": "@X@"}}]},
        session_line(f"s{index}"), "@X@"]).flatmap(mutated)


dialogue_files = st.lists(st.integers(0, 7).flatmap(fuzzed_session), min_size=1, max_size=8).map(
    lambda lines: "\n".join(lines).encode())
mobility_files = st.sampled_from([
    mobility_doc() | {"gyration_radius": "@X@"}, mobility_doc() | {"intention_sequences": [[1, "@X@"]]},
    mobility_doc() | {"note": "@X@"}, {"gyration_radius": [1.0], "@X@": 1}, mobility_doc()]).flatmap(mutated).map(
    str.encode)
conversation_values = st.sampled_from([
    conversation(profile="@X@"), conversation(4), conversation() | {"history": "@X@"},
    conversation() | {"history": [{"role": "user", "content": "@X@"}]}, conversation(), "@X@"]).flatmap(mutated)


@st.composite
def zip_of(draw, members) -> bytes:
    """A ZIP of the drawn members, maybe bzip2-compressed, maybe with a header that lies about a size."""
    raw = zip_bytes(draw(members), draw(st.sampled_from([zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED,
                                                         zipfile.ZIP_BZIP2])))
    if draw(st.sampled_from([False, False, False, True])):
        raw = claim_size(raw, 0, draw(st.sampled_from([0, 10, 10_000, 0xFFFFFFF0])))
    return raw


conversation_files = st.one_of(
    conversation_values.map(str.encode),
    st.lists(conversation_values, min_size=1, max_size=7).map(lambda items: "\n".join(items).encode()),
    zip_of(st.lists(conversation_values.map(str.encode), min_size=1, max_size=8).map(
        lambda items: {f"{CONV}/{i}.json": item for i, item in enumerate(items)})))
overall_values = st.sampled_from([overall(custom="@X@"), overall(total="@X@"), overall(extra="@X@"), overall(),
                                  overall() | {"validation": "@X@"}]).flatmap(mutated)
runs_files = st.lists(st.sampled_from([runs_line(0, "@X@"), runs_line(1), "@X@"]).flatmap(mutated),
                      max_size=6).map(lambda lines: "\n".join(lines).encode())


@st.composite
def outputs_trees(draw) -> dict[str, bytes]:
    members = {}
    for agent in range(draw(st.integers(1, 4))):
        folder = f"{RUN}/a{agent}/os-std"
        members[f"{folder}/overall.json"] = draw(overall_values).encode()
        if draw(st.booleans()):
            members[f"{folder}/runs.jsonl"] = draw(runs_files)
    return members


KIND_FILES = {"dialogue": (dialogue_files, "fuzz.jsonl", {}),
              "mobility": (mobility_files, "fuzz.json", {}),
              "conversation": (conversation_files, "fuzz.json", {}),
              "agentbench-zip": (zip_of(outputs_trees()), "outputs.zip", {}),
              "agentbench-overall": (overall_values.map(str.encode), "overall.json", {"agent": "m", "task": "os-std"})}


@pytest.mark.parametrize("kind", KIND_FILES)
def test_fuzzed_uploads_end_in_201_or_a_located_400(kind, app, client, monkeypatch):
    files, filename, form = KIND_FILES[kind]
    for variable, value in FUZZ_LIMITS.items():
        monkeypatch.setenv(variable, value)
    form = {"kind": kind.split("-")[0], **form}

    @FUZZ
    @given(data=files)
    def upload(data):
        before = stored(app)
        resp = post_upload(client, data, filename, form)
        assert resp.status_code in (201, 400), resp.get_data(as_text=True)[:500]
        if resp.status_code == 400:
            problems = resp.get_json()["problems"]
            assert any(p["line"] is not None or p["path"] for p in problems), problems
            assert stored(app) == before

    upload()

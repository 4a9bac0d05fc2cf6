"""Uploads whose problems are not their kind's to tell, through POST /api/uploads and the upload form: a binary
file, another kind's file, a file no kind recognises each get one message that fits it; a dialogue or personas
file with errors keeps its own messages, line by line."""
from __future__ import annotations

import io
import json
import re
from html import unescape

import pytest

from kinds import registry
from tests.conftest import ROOT, SHARED_DATA, jsonl, session_line

SCREENSHOT = ROOT / "docs" / "screenshots" / "result.png"
GROUNDTRUTH = SHARED_DATA / "dailymobility" / "groundtruth"
CONVERSATION = SHARED_DATA / "human_vs_agent" / "sample" / "LLM_agent_user" / "new travel planning" / "0.json"
OVERALL = SHARED_DATA / "agentbench" / "medagentbench_gpt-4o_overall.json"
needs_shared_data = pytest.mark.skipif(not SHARED_DATA.is_dir(),
                                       reason=f"uses the real benchmark files at {SHARED_DATA} (absent here)")

EVERY_KIND = ("Dialogue (persona alignment): .jsonl, one session per line",
              "Mobility (DailyMobility): ", "Conversations (Human-vs-Agent): ", "AgentBench outputs: ",
              "Personas (simulated users): .jsonl, one persona per line")


def post(client, data: bytes, filename: str, kind: str | None = None, **fields):
    """POST /api/uploads with a file (and a kind); the response."""
    form = {"file": (io.BytesIO(data), filename), **({"kind": kind} if kind else {}), **fields}
    return client.post("/api/uploads", data=form, content_type="multipart/form-data")


def the_message(response) -> str:
    """The one problem of a refused upload."""
    assert response.status_code == 400, response.get_json()
    problems = response.get_json()["problems"]
    assert len(problems) == 1, [p["message"] for p in problems]
    assert (problems[0]["line"], problems[0]["path"]) == (None, "")
    return problems[0]["message"]


def conversation_with_history_last() -> bytes:
    """A real conversation file as a tool that rewrote it might: 'history' moved to the end, past the first 4 KB."""
    value = json.loads(CONVERSATION.read_bytes())
    value["history"] = value.pop("history")
    data = json.dumps(value, ensure_ascii=False, indent=4).encode("utf-8")
    assert data.find(b'"history"') > 4096
    return data


# --- a binary file ----------------------------------------------------------------------------------------

def test_a_png_renamed_jsonl_is_told_it_is_not_text_and_what_each_kind_takes(client):
    message = the_message(post(client, SCREENSHOT.read_bytes(), "chart.jsonl"))
    assert message.startswith("chart.jsonl is not a text file: it holds binary data")
    assert "no kind reads it" in message
    for kind in EVERY_KIND:
        assert kind in message, kind
    assert "UTF-8" not in message and "Line" not in message


def test_a_png_forced_into_a_kind_is_told_what_that_kind_takes(client):
    message = the_message(post(client, SCREENSHOT.read_bytes(), "chart.png", "dialogue"))
    assert message == ("chart.png is not a text file: it holds binary data, not one of the files of the kind "
                       "Dialogue (persona alignment), which takes .jsonl, one session per line.")
    message = the_message(post(client, SCREENSHOT.read_bytes(), "chart.png", "mobility"))
    assert "not one of the files of the kind Mobility (DailyMobility), which takes " in message
    assert ".npz" in message and ".zip of a groundtruth folder" in message


# --- a file no kind recognises ----------------------------------------------------------------------------

def test_package_json_is_told_no_kind_recognises_it_not_about_sessions_per_line(client):
    message = the_message(post(client, (ROOT / "package.json").read_bytes(), "package.json"))
    assert message.startswith("package.json is not a file of any kind this dashboard reads: nothing in it looks "
                              "like one. The files each kind takes: ")
    for kind in EVERY_KIND:
        assert kind in message, kind
    assert "formatted JSON spread over several lines" not in message


# --- another kind's file ----------------------------------------------------------------------------------

@needs_shared_data
@pytest.mark.parametrize("name,array", [("gyration_radius.csv", "gyration_radius"),
                                        ("daily_intentions_2d.csv", "intention_sequences"),
                                        ("intention_proportions_2d.npy", "intention_proportions")])
def test_an_array_of_the_dailymobility_groundtruth_folder_is_told_how_to_upload_the_set(client, name, array):
    message = the_message(post(client, (GROUNDTRUTH / name).read_bytes(), name))
    assert message.startswith(f"{name} looks like a file of the kind Mobility (DailyMobility). ")
    assert f"one of the four arrays of a DailyMobility groundtruth folder ({array})" in message
    assert "Upload the whole folder as a .zip" in message
    assert "Reference sets page" in message


def test_text_that_is_not_json_is_told_what_each_kind_takes(client):
    for name, data in (("radii.csv", b"3370.089558\n4126.014310\n0.000000\n"), ("README.md", b"# Notes\n\nHello.\n"),
                       ("scores.csv", b"method,score\nBase,3.5\n")):
        message = the_message(post(client, data, name))
        assert message.startswith(f"{name} is not a file of any kind this dashboard reads"), message
        assert EVERY_KIND[1] + "the four arrays in one .json, .npz, .parquet or .csv file" in message


@needs_shared_data
@pytest.mark.parametrize("kind,label", [("dialogue", "Dialogue (persona alignment)"),
                                        ("mobility", "Mobility (DailyMobility)"),
                                        ("agentbench", "AgentBench outputs"),
                                        ("personas", "Personas (simulated users)")])
def test_a_conversation_uploaded_as_another_kind_is_told_to_upload_it_as_a_conversation(client, kind, label):
    message = the_message(post(client, CONVERSATION.read_bytes(), "0.json", kind))
    assert message == (f"0.json is not a file of the kind {label}: it looks like one of the kind Conversations "
                       "(Human-vs-Agent). Upload it again with the kind Conversations (Human-vs-Agent) "
                       "(conversation), or without choosing a kind: it is recognised.")


@needs_shared_data
def test_a_conversation_whose_start_does_not_show_it_is_told_to_choose_the_kind(client):
    data = conversation_with_history_last()
    message = the_message(post(client, data, "0.json"))
    assert message == ("0.json looks like a file of the kind Conversations (Human-vs-Agent). Upload it again with "
                       "the kind Conversations (Human-vs-Agent) (conversation): it is not recognised without one.")
    # and that advice works
    assert post(client, data, "0.json", "conversation").status_code == 201


@needs_shared_data
@pytest.mark.parametrize("kind,label", [("dialogue", "Dialogue (persona alignment)"),
                                        ("mobility", "Mobility (DailyMobility)"),
                                        ("conversation", "Conversations (Human-vs-Agent)"),
                                        ("personas", "Personas (simulated users)")])
def test_an_agentbench_overall_json_forced_into_another_kind_is_told_its_kind(client, kind, label):
    message = the_message(post(client, OVERALL.read_bytes(), "overall.json", kind))
    assert message == (f"overall.json is not a file of the kind {label}: it looks like one of the kind AgentBench "
                       "outputs. Upload it again with the kind AgentBench outputs (agentbench), or without choosing "
                       "a kind: it is recognised. A lone overall.json also needs its agent and task names, unless "
                       "its path (<run>/<agent>/<task>/overall.json) shows them.")
    assert post(client, OVERALL.read_bytes(), "overall.json", agent="gpt-4o",
                task="medagentbench-std").status_code == 201


def test_a_dialogue_file_uploaded_as_another_kind_keeps_that_kinds_messages(client):
    # the fallback kind claims no file by itself, so it never speaks over a chosen kind (the conversation kind reads
    # a dialogue file as simulated users' conversations: see tests/kinds/conversation/test_labeller.py)
    problems = post(client, jsonl(session_line("s1")), "chat.jsonl", "personas").get_json()["problems"]
    assert [(p["line"], p["path"]) for p in problems] == [(1, "persona_id")], problems
    assert "'persona_id' is missing" in problems[0]["message"]


# --- the kinds' own messages stay ---------------------------------------------------------------------------

def test_a_dialogue_file_with_errors_keeps_its_messages_line_by_line(client):
    bad = session_line("s2")
    bad["rounds"][1]["responses"]["B"] = ""
    data = jsonl(session_line("s1"), bad, session_line("s1")) + b"{'session_id': 's4'}\n"
    for kind in (None, "dialogue"):
        problems = post(client, data, "dialogue.jsonl", kind).get_json()["problems"]
        assert [(p["line"], p["path"]) for p in problems] == [
            (2, "rounds[1].responses.B"), (3, "session_id"), (4, "")], problems
        assert "single quotes and trailing commas are not JSON" in problems[2]["message"]


def test_a_file_of_python_dicts_keeps_the_dialogue_message_about_quotes(client):
    data = b"{'session_id': 's1', 'rounds': []}\n{'session_id': 's2', 'rounds': []}\n"
    problems = post(client, data, "sessions.txt").get_json()["problems"]
    assert [p["line"] for p in problems] == [1, 2]
    assert all("single quotes and trailing commas are not JSON" in p["message"] for p in problems)


def test_pretty_printed_sessions_keep_the_dialogue_message(client):
    data = json.dumps(session_line("s1"), indent=2).encode()
    problems = post(client, data, "sessions.json").get_json()["problems"]
    assert len(problems) == 1 and "formatted JSON spread over several lines" in problems[0]["message"]


def test_a_personas_file_with_errors_keeps_its_own_messages(client):
    data = (json.dumps({"persona_id": "p1", "user_profile": "A nurse.", "user_personality": "Warm."}) + "\n"
            + json.dumps({"persona_id": "p2", "user_profile": ""}) + "\n").encode()
    problems = post(client, data, "personas.jsonl").get_json()["problems"]
    assert problems and all(p["line"] == 2 for p in problems), problems
    assert "looks like" not in problems[0]["message"]


# --- the upload form ----------------------------------------------------------------------------------------

def test_the_upload_form_shows_the_one_message_and_takes_a_kind(client):
    page = client.post("/uploads", data={"file": (io.BytesIO(SCREENSHOT.read_bytes()), "chart.jsonl")},
                       content_type="multipart/form-data")
    html = page.get_data(as_text=True)
    assert page.status_code == 400
    assert html.count("<tr><td>—</td>") == 1 and "chart.jsonl is not a text file" in html
    page = client.post("/uploads", data={"file": (io.BytesIO(SCREENSHOT.read_bytes()), "chart.png"),
                                  "kind": "mobility"}, content_type="multipart/form-data")
    assert page.status_code == 400
    assert "not one of the files of the kind Mobility (DailyMobility), which takes" in page.get_data(as_text=True)


def test_the_drop_zone_advertises_each_kinds_files_and_accepts_their_extensions(client):
    html = client.get("/").get_data(as_text=True)
    accept = re.search(r'<input id="file" type="file" name="file" accept="([^"]+)"', html).group(1).split(",")
    for kind in registry.kinds():
        advertised = f"{kind.label}: {kind.formats}"
        assert advertised in unescape(html), advertised
        for extension in re.findall(r"\.[a-z]+\b", str(kind.formats)):
            assert extension in accept, (kind.name, extension)
    assert re.search(r'<select[^>]* name="kind"', html)


@needs_shared_data
def test_the_manual_quotes_the_messages_uploads_get(client):
    manual = " ".join((ROOT / "docs" / "formats.md").read_text("utf-8").split())
    quoted = [the_message(post(client, OVERALL.read_bytes(), "overall.json", "dialogue")),
              the_message(post(client, (GROUNDTRUTH / "gyration_radius.csv").read_bytes(), "gyration_radius.csv")),
              the_message(post(client, SCREENSHOT.read_bytes(), "chart.png", "dialogue")),
              the_message(post(client, SCREENSHOT.read_bytes(), "chart.jsonl")).split("takes: ")[0] + "takes: ...",
              the_message(post(client, (ROOT / "package.json").read_bytes(), "package.json")).split("; ")[0] + "; ..."]
    for message in quoted:
        assert f"`{message}`" in manual, message

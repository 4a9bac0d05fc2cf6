"""Human-vs-Agent conversations through the app: upload, statistics evaluation, result page, exports, CLI."""
from __future__ import annotations

import io
import json
import re
import zipfile

import pytest

from kinds.conversation import format as conversation
from kinds.conversation.result import statistics
from tests.conftest import SHARED_DATA, wait_for

SAMPLE = SHARED_DATA / "human_vs_agent" / "sample"
needs_data = pytest.mark.skipif(not SAMPLE.exists(), reason="../shared/data/human_vs_agent is not present")


def sample_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(SAMPLE.rglob("*.json")):
            archive.write(path, f"RecLLMSim/{path.relative_to(SAMPLE)}")
    return buffer.getvalue()


def own_conversation(source: str, turns: int, task: str = "recipe planning") -> dict:
    history = []
    for k in range(turns):
        history += [{"role": "user", "content": f"question {k}", "intent": "Planning"},
                    {"role": "assistant", "content": f"answer {k}"}]
    item = {"source": source, "task": task, "history": history}
    if source == "agent":
        item["rating"] = {"Detail Level": 2}
    return item


@needs_data
def test_sample_zip_upload_evaluation_and_page(client):
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(sample_zip()), "RecLLMSim.zip")},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    upload = resp.get_json()
    assert upload["kind"] == "conversation"
    assert upload["summary"]["by_source"] == {"agent": 10, "human": 8}
    created = client.post("/api/evaluations", json={"upload_id": upload["id"]}).get_json()
    body = wait_for(client, created["id"])
    assert body["status"] == "done", body
    result = body["result"]
    _, conversations = conversation.read_any(io.BytesIO(sample_zip()), "RecLLMSim.zip")
    assert {k: v for k, v in result.items() if k not in ("kind", "evaluation_id", "input", "provenance", "analysis")} == \
        json.loads(json.dumps(statistics(conversations)))
    html = client.get(f"/evaluations/{created['id']}").get_data(as_text=True)
    assert "Fidelity of simulated users" in html and 'data-figure="intents"' in html and "Preference Alignment" in html
    csv_text = client.get(f"/evaluations/{created['id']}.csv").data.decode("utf-8")
    assert csv_text.startswith("\ufefftask,turns,user_message_length,intents\r\nall,")


def test_own_conversations_as_a_json_array(client):
    items = [own_conversation("agent", 2), own_conversation("human", 2)]
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(json.dumps(items).encode()), "mine.json")},
                       content_type="multipart/form-data")
    assert resp.status_code == 201 and resp.get_json()["kind"] == "conversation"
    page = client.get(f"/uploads/{resp.get_json()['id']}").get_data(as_text=True)
    assert "Human-vs-Agent conversations" in page
    evaluated = client.post(f"/uploads/{resp.get_json()['id']}/evaluate", data={})
    evaluation_id = evaluated.headers["Location"].rsplit("/", 1)[-1]
    result = wait_for(client, evaluation_id)["result"]
    # the same turn counts and intents on both sides: nothing tells them apart
    assert result["fidelity"]["turns"] == 0 and result["fidelity"]["intents"] == 0


def test_not_a_conversation_inside_a_zip_is_named(client):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("LLM_agent_user/travel planning/0.json", json.dumps({"task": "travel planning"}))
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(buffer.getvalue()), "bad.zip")},
                       content_type="multipart/form-data")
    assert resp.status_code == 400
    assert any("LLM_agent_user/travel planning/0.json" in p["message"] + p["path"] for p in resp.get_json()["problems"])


def test_cli_prints_the_statistics(runner, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([own_conversation("agent", 3), own_conversation("human", 2)]))
    result = runner.invoke(args=["score", str(path), "--kind", "conversation"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "conversation" and doc["sources"]["agent"]["conversations"] == 1
    assert doc["fidelity"]["turns"] == 1.0  # 3 turns against 2: nothing in common


def test_each_conversation_reads_as_a_transcript(client):
    items = [own_conversation("agent", 2, "travel planning"), own_conversation("human", 1)]
    items[0]["history"][1]["hallucination"] = "是"
    items[0]["history"][1]["content"] = "<b>answer</b> 0"
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(json.dumps(items).encode()), "mine.json")},
                       content_type="multipart/form-data")
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"]}).get_json()
    assert wait_for(client, created["id"])["status"] == "done"
    listing = client.get(f"/evaluations/{created['id']}/view/conversations").get_data(as_text=True)
    assert "<code>mine.json[0]</code>" in listing and "<code>mine.json[1]</code>" in listing
    assert "mine.json[1]" not in client.get(f"/evaluations/{created['id']}/view/conversations?q=%5B0").get_data(
        as_text=True)
    html = client.get(f"/evaluations/{created['id']}/view/transcript?index=0").get_data(as_text=True)
    assert "question 0" in html and "&lt;b&gt;answer&lt;/b&gt; 0" in html  # the turns, as text
    assert '<span class="tag">Planning</span>' in html and '<span class="tag warn">hallucination</span>' in html
    assert "travel planning" in html and "Detail Level" in html  # the task and the rating fields
    assert client.get(f"/evaluations/{created['id']}/view/transcript?index=7").status_code == 404
    page = client.get(f"/evaluations/{created['id']}").get_data(as_text=True)
    assert "view/conversations" in page


@needs_data
def test_a_zip_conversation_is_read_from_its_member_alone(client):
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(sample_zip()), "RecLLMSim.zip")},
                       content_type="multipart/form-data")
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"]}).get_json()
    wait_for(client, created["id"])
    listing = client.get(f"/evaluations/{created['id']}/view/conversations?q=real_human_user").get_data(as_text=True)
    index = int(re.search(r"view/transcript\?index=(\d+)", listing).group(1))
    html = client.get(f"/evaluations/{created['id']}/view/transcript?index={index}").get_data(as_text=True)
    assert "Real users" in html and 'class="turn turn-user"' in html


def test_a_questionnaire_answer_of_no_known_field_is_left_out(client):
    """A questionnaire item whose `summary` is not a field name (a list, an object) is an unknown field: left out,
    as unknown answers are, and the upload is accepted."""
    item = own_conversation("human", 1)
    item["questionnaire"] = [{"summary": ["Detail"], "option": "简略"}, {"summary": {"a": 1}, "option": "是"},
                             {"summary": "Detail", "option": "简略"}]
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(json.dumps([item]).encode()), "mine.json")},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"]}).get_json()
    result = wait_for(client, created["id"])["result"]
    assert result["questionnaire"]["human"] == {"Detail": 0.0}

"""LLM annotation of Human-vs-Agent conversations: parsing, agreement, and whole runs through the local judge."""
from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from markupsafe import escape

from kinds.agreement import label_agreement as agreement
from kinds.conversation import format as conversation
from kinds.conversation import prompts as conversation_prompts
from kinds.conversation.annotation import summarise
from kinds.conversation.prompts import parse_annotation
from tests.conftest import SHARED_DATA, wait_for

SAMPLE = SHARED_DATA / "human_vs_agent" / "sample"
ANSWERS = {"详细": 2, "一般": 1, "简略": 0}


# --- parsing ------------------------------------------------------------------------------------

def test_parse_annotation_reads_the_four_lines():
    text = "Reasoning.\n**Detail Level:** 2/2\n- Diversity: 1/2\nPractical Utility：0\nHallucination: Yes."
    assert parse_annotation(text) == {"detail": 2, "diversity": 1, "utility": 0, "hallucination": 1}
    assert parse_annotation("Detail Level: 1/2\nDiversity: 1/2\nPractical Utility: 2/2\nHallucination: 否") == \
        {"detail": 1, "diversity": 1, "utility": 2, "hallucination": 0}


@pytest.mark.parametrize("text", [
    "Detail Level: 3/2\nDiversity: 1/2\nPractical Utility: 1/2\nHallucination: no",  # out of range
    "Detail Level: 1/5\nDiversity: 1/2\nPractical Utility: 1/2\nHallucination: no",  # wrong scale
    "Detail Level: 1.5/2\nDiversity: 1/2\nPractical Utility: 1/2\nHallucination: no",  # not an integer
    "Detail Level: 1/2\nPractical Utility: 1/2\nHallucination: no",  # a line missing
    "Detail Level: 1/2\nDiversity: 1/2\nPractical Utility: 1/2\nHallucination: maybe",  # not yes or no
    "Detail Level: 1/2\nDiversity: 1/2\nPractical Utility: 1/2",  # no flag
    "",
])
def test_parse_annotation_refuses_what_is_not_an_answer(text):
    assert parse_annotation(text) is None


def test_annotation_prompt_quotes_the_conversation_and_reads_answers_as_dims():
    cap = conversation_prompts.MAX_TURN_CHARS
    long_turn = "x" * (cap + 10)
    ctx = conversation_prompts.ConversationContext("travel planning", "two days", "",
                                                   [("user", "Plan it"), ("assistant", long_turn)])
    request = conversation_prompts.prompt(ctx, "zh")
    assert request.version == conversation_prompts.ANNOTATION_PROMPT_VERSION
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.messages[0]["content"] == conversation_prompts.SYSTEM["zh"]
    user = request.messages[1]["content"]
    assert "Plan it" in user and "x" * cap in user and long_turn not in user  # cut, with a note of how much
    answer = "Detail Level: 2/2\nDiversity: 1/2\nPractical Utility: 0/2\nHallucination: no"
    assert request.parse(answer) == ({"dims": {"detail": 2, "diversity": 1, "utility": 0, "hallucination": 0}}, None)
    fields, why = request.parse("Detail Level: 2/2")
    assert fields is None and "Diversity" in why
    with pytest.raises(ValueError, match="language"):
        conversation_prompts.prompt(ctx, "fr")


# --- agreement ----------------------------------------------------------------------------------

def test_agreement_against_a_hand_computation():
    # p_o = 3/4; rater a: 2 -> 1/2, 1 -> 1/4, 0 -> 1/4; rater b: 2 -> 1/2, 1 -> 1/2
    # p_e = 1/2*1/2 + 1/4*1/2 = 3/8; kappa = (3/4 - 3/8) / (5/8) = 0.6
    result = agreement([2, 1, 0, 2], [2, 1, 1, 2])
    assert result["pairs"] == 4
    assert result["exact"] == pytest.approx(0.75)
    assert result["kappa"] == pytest.approx(0.6)


def test_agreement_edge_cases():
    assert agreement([], []) == {"pairs": 0, "exact": None, "kappa": None}
    assert agreement([1, 1], [1, 1]) == {"pairs": 2, "exact": 1.0, "kappa": None}  # p_e = 1: undefined
    # complete disagreement on two labels used equally: p_o = 0, p_e = 1/2, kappa = -1
    assert agreement([0, 1], [1, 0])["kappa"] == pytest.approx(-1.0)


# --- the summary --------------------------------------------------------------------------------

def human(detail: str, diversity: str, availability: str, flags=()) -> conversation.Conversation:
    history = []
    for flag in flags or ["无法判断"]:
        history += [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "hallucination": flag}]
    answers = [{"summary": "Detail", "option": detail}, {"summary": "Diversity", "option": diversity},
               {"summary": "Availability", "option": availability}]
    return conversation.Conversation("human", "travel planning", "h.json", history,
                                     questionnaire=conversation._questionnaire(answers))


def row(idx: int, status: str, scores: dict | None = None, error: str | None = None) -> dict:
    return {"session_idx": idx, "status": status, "scores": scores or None, "error": error}


def test_summarise_means_and_agreement_by_hand():
    convs = [human("详细", "一般", "很有用", ["否", "是"]),      # people: 2 1 2, labelled hallucination 1
             human("一般", "一般", "有一定参考", ["否"]),        # people: 1 1 1, labelled 0
             human("简略", "结果单一", "不可用"),                # people: 0 0 0, no labels
             human("详细", "结果多样", "很有用", ["否"])]        # not annotated (failed)
    judgments = [row(0, "ok", {"detail": 2, "diversity": 2, "utility": 2, "hallucination": 1}),
                 row(1, "ok", {"detail": 1, "diversity": 1, "utility": 2, "hallucination": 1}),
                 row(2, "ok", {"detail": 0, "diversity": 0, "utility": 1, "hallucination": 0}),
                 row(3, "failed", error="HTTP 500")]
    doc = summarise(convs, judgments)
    assert doc["counts"] == {"ok": 3, "unparsed": 0, "failed": 1, "pending": 0}
    means = doc["by_source"]["human"]["means"]
    assert means == pytest.approx({"detail": 1.0, "diversity": 1.0, "utility": 5 / 3, "hallucination": 2 / 3})
    assert doc["by_source"]["agent"] == {"annotated": 0, "means": {k: None for k in means}}
    # detail: LLM 2,1,0 vs people 2,1,0 -> exact 1; p_e = 3 * (1/3)^2 = 1/3; kappa 1
    assert doc["agreement"]["detail"] == pytest.approx({"pairs": 3, "exact": 1.0, "kappa": 1.0})
    # diversity: LLM 2,1,0 vs 1,1,0 -> exact 2/3; p_e = (1/3*2/3) + (1/3*1/3) = 1/3; kappa = (2/3-1/3)/(2/3) = 0.5
    assert doc["agreement"]["diversity"] == pytest.approx({"pairs": 3, "exact": 2 / 3, "kappa": 0.5})
    # utility: LLM 2,2,1 vs 2,1,0 -> exact 1/3; p_e = (2/3*1/3) + (1/3*1/3) = 1/3; kappa = 0
    assert doc["agreement"]["utility"] == pytest.approx({"pairs": 3, "exact": 1 / 3, "kappa": 0.0})
    # hallucination: LLM 1,1 vs labels 1,0 (the third has no labels) -> exact 1/2; p_e = 1*1/2 = 1/2; kappa 0
    assert doc["agreement"]["hallucination"] == pytest.approx({"pairs": 2, "exact": 0.5, "kappa": 0.0})
    assert doc["conversations"][3]["error"] == "HTTP 500" and doc["conversations"][3]["scores"] is None


# --- through the app ----------------------------------------------------------------------------

def items() -> list[dict]:
    """Two real users with questionnaires and two simulated users, each with an annotation marker."""
    def conv(source, marker, **extra):
        history = [{"role": "user", "content": "Plan a weekend in Hangzhou", "intent": "Planning"},
                   {"role": "assistant", "content": f"Day 1: West Lake. {marker}", "hallucination": "否"}]
        return {"source": source, "task": "travel planning", "task_context": "two days", "history": history, **extra}
    q = lambda d, v, a: [{"summary": "Detail", "option": d}, {"summary": "Diversity", "option": v},  # noqa: E731
                         {"summary": "Availability", "option": a}]
    return [conv("human", "[[annotate=2,1,2,0]]", questionnaire=q("详细", "一般", "很有用")),
            conv("human", "[[annotate=1,1,1,1]]", questionnaire=q("详细", "结果多样", "有一定参考")),
            conv("agent", "[[annotate=2,2,2,0]]", rating={"Detail Level": 2}),
            conv("agent", "<script>alert(1)</script> [[annotate=0,0,1,0]]", rating={"Detail Level": 1})]


def upload(client, payload: bytes, name: str = "mine.json") -> dict:
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(payload), name)}, content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()


def test_annotation_through_the_api_page_exports_and_rerun(client, judge_server):
    up = upload(client, json.dumps(items()).encode())
    received = []
    judge_server.hook = lambda request: received.append(request["body"])  # no fault of its own
    # the third conversation's first answer is malformed, so it ends unparsed until re-run
    judge_server.fail_next(1, "malformed", match=lambda r: "annotate=2,2,2,0" in json.dumps(r["body"]))
    created = client.post("/api/evaluations", json={"upload_id": up["id"], "annotate": True}).get_json()
    body = wait_for(client, created["id"])
    assert body["status"] == "done", body
    assert body["progress"]["total"] == 4 and body["progress"]["unparsed"] == 1
    a = body["result"]["annotation"]
    assert a["counts"] == {"ok": 3, "unparsed": 1, "failed": 0, "pending": 0}
    assert a["by_source"]["human"]["means"] == pytest.approx(
        {"detail": 1.5, "diversity": 1.0, "utility": 1.5, "hallucination": 0.5})
    assert a["by_source"]["agent"]["annotated"] == 1
    # detail: LLM 2,1 vs people 2,2 -> exact 1/2; p_e = 1/2*1 = 1/2; kappa 0
    assert a["agreement"]["detail"] == pytest.approx({"pairs": 2, "exact": 0.5, "kappa": 0.0})
    # diversity: 1,1 vs 1,2 -> exact 1/2; p_e = 1*1/2 = 1/2; kappa 0
    assert a["agreement"]["diversity"] == pytest.approx({"pairs": 2, "exact": 0.5, "kappa": 0.0})
    # utility: 2,1 vs 2,1 -> exact 1, p_e 1/2, kappa 1
    assert a["agreement"]["utility"] == pytest.approx({"pairs": 2, "exact": 1.0, "kappa": 1.0})
    # hallucination vs labels (all 否 = 0): LLM 0,1,0 -> exact 2/3; labels constant: p_e = 2/3 -> kappa 0
    assert a["agreement"]["hallucination"] == pytest.approx({"pairs": 3, "exact": 2 / 3, "kappa": 0.0})
    assert a["judge"]["calls"] == 4 and a["judge"]["prompt_version"].startswith("psb-annotate")
    assert "sk-test-secret-key" not in json.dumps(body)

    html = client.get(f"/evaluations/{created['id']}").get_data(as_text=True)
    assert "Agreement with people" in html and "Conversations without an annotation" in html
    assert "<script>alert(1)</script>" not in html
    rows = list(csv.reader(io.StringIO(client.get(f"/evaluations/{created['id']}/annotations.csv")
                                       .data.decode("utf-8-sig"))))
    assert rows[0][:8] == ["conversation", "source", "task", "status", "detail", "diversity", "utility",
                           "hallucination"]
    assert rows[1][3:8] == ["ok", "2", "1", "2", "0"] and rows[3][3] == "unparsed"
    # judgments.csv has no dialogue score columns here: the annotation's scores are its `scores` column, as JSON.
    judged = list(csv.reader(io.StringIO(client.get(f"/evaluations/{created['id']}/judgments.csv")
                                         .data.decode("utf-8-sig"))))
    assert judged[0] == ["session_id", "round", "method", "mode", "status", "total", "verdict", "scores", "error",
                         "prompt_tokens", "completion_tokens", "cached", "attempts", "latency_ms", "answer"]
    assert json.loads(judged[1][7]) == {"detail": 2, "diversity": 1, "utility": 2, "hallucination": 0}
    # The unparsed one links to its transcript, which shows why and the judge's answer itself.
    unparsed = next(r for r in a["conversations"] if r["status"] == "unparsed")
    link = f'/evaluations/{created["id"]}/view/transcript?index={unparsed["index"]}'
    assert f'href="{link}"' in html
    transcript = client.get(link).get_data(as_text=True)
    stored = client.application.extensions["store"].judgments(created["id"], [unparsed["index"]])[0]
    assert unparsed["error"] in transcript.replace("&#39;", "'") and stored["answer"]
    assert str(escape(stored["answer"])) in transcript  # the answer that did not parse
    # The prompt exactly as the judge received it, every message; its latency.
    sent = [body for body in received if "annotate=2,2,2,0" in json.dumps(body)][0]
    assert all(str(escape(m["content"])) in transcript for m in sent["messages"]) and " ms</dd>" in transcript

    # re-run the unparsed one: now every conversation is annotated
    page = client.get(f"/evaluations/{created['id']}").get_data(as_text=True)
    assert "Re-run 1 failed and unparsed" in page
    assert client.post(f"/api/evaluations/{created['id']}/rerun-failed").status_code in (200, 202)
    body = wait_for(client, created["id"])
    assert body["result"]["annotation"]["counts"]["ok"] == 4
    assert body["result"]["annotation"]["by_source"]["agent"]["means"]["detail"] == pytest.approx(1.0)


def test_annotation_needs_a_judge_and_a_conversation_upload(make_app, client):
    bare = make_app({}).test_client()
    up = upload(bare, json.dumps(items()).encode())
    resp = bare.post("/api/evaluations", json={"upload_id": up["id"], "annotate": True})
    assert resp.status_code == 400 and "No judge is" in resp.get_json()["error"]
    # without annotation the statistics need no judge
    assert bare.post("/api/evaluations", json={"upload_id": up["id"]}).status_code == 202
    resp = client.post("/api/evaluations", json={"upload_id": up["id"], "annotate": "yes"})
    assert resp.status_code == 400 and "The field 'annotate' is wrong" in resp.get_json()["error"]


def test_annotation_from_the_upload_page_form(client):
    up = upload(client, json.dumps(items()).encode())
    page = client.get(f"/uploads/{up['id']}").get_data(as_text=True)
    assert 'name="annotate"' in page and "4 calls" in page
    resp = client.post(f"/uploads/{up['id']}/evaluate", data={"annotate": "1", "language": "zh"})
    assert resp.status_code == 302
    evaluation_id = resp.headers["Location"].rstrip("/").rsplit("/", 1)[-1]
    body = wait_for(client, evaluation_id)
    assert body["result"]["annotation"]["judge"]["language"] == "zh"
    assert body["result"]["annotation"]["counts"]["ok"] == 4


def test_cli_annotate(runner, tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(items()), encoding="utf-8")
    result = runner.invoke(args=["score", str(path), "--annotate"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["annotation"]["agreement"]["utility"]["kappa"] == pytest.approx(1.0)
    refused = runner.invoke(args=["score", str(path), "--annotate", "--reference", "x"])
    assert refused.exit_code != 0


@pytest.mark.skipif(not SAMPLE.exists(), reason="../shared/data/human_vs_agent is not present")
def test_real_sample_annotation_pairs_match_the_files(client, judge_server):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(SAMPLE.rglob("*.json")):
            archive.write(path, str(path.relative_to(SAMPLE)))
    up = upload(client, buffer.getvalue(), "sample.zip")
    prompts: list[str] = []
    judge_server.hook = lambda request: prompts.append(json.dumps(request["body"], ensure_ascii=False)) or None
    created = client.post("/api/evaluations", json={"upload_id": up["id"], "annotate": True}).get_json()
    body = wait_for(client, created["id"], timeout=60)
    a = body["result"]["annotation"]
    assert a["counts"]["ok"] == 18 and judge_server.requests_by_mode["annotate"] == 18
    # pairs: conversations whose questionnaire answers the Detail question, read straight from the files
    with_detail = 0
    for path in SAMPLE.rglob("*.json"):
        items_ = json.loads(path.read_text(encoding="utf-8")).get("questionnaire") or []
        with_detail += any(i.get("summary") == "Detail" and i.get("option") in ANSWERS for i in items_)
    assert with_detail > 0 and a["agreement"]["detail"]["pairs"] == with_detail
    # each conversation's first user message was quoted in one of the prompts
    for path in SAMPLE.rglob("*.json"):
        first = json.loads(path.read_text(encoding="utf-8"))["history"][0]["content"]
        assert any(json.dumps(first[:40], ensure_ascii=False)[1:-1] in p for p in prompts), path


def test_compare_conversation_results(client):
    first = upload(client, json.dumps(items()).encode(), "sim-a.json")
    second = upload(client, json.dumps(items()[:3]).encode(), "sim-b.json")
    plain = client.post("/api/evaluations", json={"upload_id": first["id"]}).get_json()
    annotated = client.post("/api/evaluations", json={"upload_id": second["id"], "annotate": True}).get_json()
    docs = [wait_for(client, e["id"])["result"] for e in (plain, annotated)]
    resp = client.get(f"/compare?ids={plain['id']},{annotated['id']}")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert "Compare user simulators" in html and "sim-a.json" in html and "sim-b.json" in html
    # the second upload's simulated user was annotated 2,2,2: its means are on the page
    assert docs[1]["annotation"]["by_source"]["agent"]["means"]["detail"] == 2.0
    assert html.count("<td>2.00</td>") >= 3
    mixed = client.get(f"/compare?ids={plain['id']},nonexistent")
    assert mixed.status_code == 400


def test_an_annotation_table_without_rows_says_so(client, judge_server):
    up = upload(client, json.dumps(items()).encode())
    judge_server.fail_always("malformed")  # every answer unparsed: nothing annotated
    created = client.post("/api/evaluations", json={"upload_id": up["id"], "annotate": True}).get_json()
    body = wait_for(client, created["id"])
    judge_server.fail_always(None)
    assert body["result"]["annotation"]["counts"]["ok"] == 0, body
    html = client.get(f"/evaluations/{created['id']}").get_data(as_text=True)
    assert "None annotated yet." in html

"""The dashboard's own behaviour labeller: the paper's prompts, the structured-output schema, the parser, and whole
labelling runs through the local judge server (the schema sent, a malformed answer unparsed, cost, cache, a panel)."""
from __future__ import annotations

import io
import json

import pytest

from kinds.conversation import behaviour_prompts, labeller
from kinds.conversation.behaviour import DIMENSIONS
from kinds.conversation.format import read_any
from tests.conftest import wait_for

# labels the local judge gives a conversation carrying the markers, one per dimension
CHOSEN = [
    {"problem_solving": "StepByStep", "order": "Depth", "question_broadness": 4, "context_dependency": 2,
     "explanation": "Rare", "promise": "NoPromise", "feedback": "Positive", "politeness": "Polite",
     "formality": "Oral", "utility": "High", "operability": "Moderate"},
    {"problem_solving": "AllInOne", "order": "BreadthDepth", "question_broadness": 1, "context_dependency": 5,
     "explanation": "NoExplanation", "promise": "HavePromise", "feedback": "Both", "politeness": "Neutral",
     "formality": "Formal", "utility": "Low", "operability": "High"},
]


def markers(labels: dict) -> str:
    return " ".join(f"[[label:{key}={value}]]" for key, value in labels.items())


def conversations() -> list[dict]:
    """A simulated user writing English and a real person writing Chinese, each marked with its labels."""
    def conv(source, user, labels):
        return {"source": source, "task": "travel planning",
                "history": [{"role": "user", "content": f"{user} {markers(labels)}"},
                            {"role": "assistant", "content": "Day 1: West Lake, then Lingyin Temple."}]}
    return [conv("agent", "Plan a weekend in Hangzhou for me.", CHOSEN[0]),
            conv("human", "帮我规划杭州周末两日游。", CHOSEN[1])]


# --- prompts, schema, parser --------------------------------------------------------------------------------------

def test_each_group_is_asked_with_the_papers_prompt_and_a_schema_of_the_taxonomy():
    [conv] = read_any(io.BytesIO(json.dumps(conversations()[1]).encode()), "one.json")[1]
    for group in (1, 2, 3, 4):
        prompt = labeller.prompt(conv, group)
        system, user = prompt.messages
        assert system == {"role": "system", "content": behaviour_prompts.SYSTEM}
        template = behaviour_prompts.TEMPLATES[0 if group < 4 else 1]
        head = template.split("[Insert Aspects Here]")[0].replace("[Language]", "Chinese")
        assert user["content"].startswith(head)  # the paper's words, the real person's language filled in
        assert behaviour_prompts.ASPECTS[group - 1] in user["content"]
        assert f"User: {conv.history[0]['content']}\n\nSystem: {conv.history[1]['content']}\n\n" in user["content"]
        schema = prompt.response_format["json_schema"]["schema"]
        expected = {d.key: list(d.values) for d in DIMENSIONS if d.group == group}
        assert {k: v["enum"] for k, v in schema["properties"].items() if k != "reasoning"} == expected
        assert schema["required"] == ["reasoning", *expected] and schema["additionalProperties"] is False
    english = read_any(io.BytesIO(json.dumps(conversations()[0]).encode()), "one.json")[1][0]
    assert "a given dialogue in English between" in labeller.prompt(english, 1).messages[1]["content"]


@pytest.mark.parametrize("answer, labels", [
    ('{"reasoning": "r", "problem_solving": "StepByStep", "order": "Breadth"}',
     {"problem_solving": "StepByStep", "order": "Breadth"}),
    # without structured output: the last JSON object of a text answer
    ('The user refines step by step.\n```json\n{"problem_solving": "AllInOne", "order": "DepthBreadth"}\n```',
     {"problem_solving": "AllInOne", "order": "DepthBreadth"}),
])
def test_an_answer_gives_the_groups_labels(answer, labels):
    assert labeller.parser(1)(answer) == ({"dims": labels}, None)


@pytest.mark.parametrize("group, answer, reason", [
    (1, '{"problem_solving": "AllInOne"}', "order label not found"),
    (1, '{"problem_solving": "Mixed", "order": "Depth"}', 'problem_solving label "Mixed" is not one of'),
    (2, '{"question_broadness": 6, "context_dependency": 3}', "question_broadness label 6 is not one of"),
    (2, '{"question_broadness": "3", "context_dependency": 3}', 'question_broadness label "3" is not one of'),
    (2, '{"question_broadness": true, "context_dependency": 3}', "question_broadness label true is not one of"),
    (3, "The user is polite and formal.", "no JSON object found in the answer"),
])
def test_an_answer_outside_the_taxonomy_or_missing_a_dimension_is_unparsed(group, answer, reason):
    fields, problem = labeller.parser(group)(answer)
    assert fields is None and problem.startswith(reason)


# --- through the local judge --------------------------------------------------------------------------------------

def upload(client, payload: bytes, name: str = "mine.json", **form) -> dict:
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(payload), name), **form},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()


def stored_label_sets(app, evaluation_id: str) -> dict:
    from kinds.conversation.label_sets import label_sets
    from kinds.kind import Job, open_file
    from web import get_site

    with app.app_context():
        site = get_site()
        record = site.store.get_evaluation(evaluation_id)
        up = site.store.get_upload(record["upload_id"])
        with open_file(site.file_of(up)) as f:
            convs = read_any(f, up["filename"])[1]
        return label_sets(Job(record, up, site.file_of(up), site), convs)


def test_labelling_through_the_judge_schema_unparsed_cost_and_cache(app, client, judge_server):
    up = upload(client, json.dumps(conversations()).encode())
    bodies = []
    judge_server.hook = lambda request: bodies.append(request["body"])
    # the real person's group 3 gets a value outside the taxonomy: unparsed, never defaulted
    judge_server.fail_next(1, "out_of_range", match=lambda r: "帮我规划" in json.dumps(r["body"], ensure_ascii=False)
                           and "Interaction Style" in json.dumps(r["body"]))
    created = client.post("/api/evaluations", json={"upload_id": up["id"], "label": True}).get_json()
    body = wait_for(client, created["id"])
    assert body["status"] == "done", body
    assert body["progress"]["total"] == 8 and body["progress"]["unparsed"] == 1
    assert len(bodies) == 8 and all(b["response_format"]["type"] == "json_schema" for b in bodies)
    assert judge_server.requests_by_mode.get("label") == 8
    [judged] = body["result"]["labelling"]["by_judge"]
    assert judged["label_set"] == "judge" and judged["counts"]["3"] == {"ok": 1, "unparsed": 1, "failed": 0,
                                                                          "pending": 0}
    store = app.extensions["store"]
    rows = store.judgments(created["id"])
    unparsed = [j for j in rows if j["status"] == "unparsed"]
    assert len(unparsed) == 1 and unparsed[0]["mode"] == "label3" and "NotInTheTaxonomy" in unparsed[0]["error"]
    # cost: every call's tokens at the configured prices (none here), calls and tokens summed from the judgments
    assert judged["judge"]["calls"] == 8 and judged["judge"]["unparsed"] == 1
    assert judged["judge"]["prompt_tokens"] == sum(j["prompt_tokens"] for j in rows) > 0
    assert judged["judge"]["completion_tokens"] == sum(j["completion_tokens"] for j in rows) > 0

    sets = stored_label_sets(app, created["id"])
    assert sets["judge"][0] == CHOSEN[0]
    group3 = {d.key for d in DIMENSIONS if d.group == 3}
    assert sets["judge"][1] == {k: (None if k in group3 else v) for k, v in CHOSEN[1].items()}

    # the same labelling again: every parsed answer from the cache, the unparsed one asked again
    again = client.post("/api/evaluations", json={"upload_id": up["id"], "label": True}).get_json()
    second = wait_for(client, again["id"])
    [judged] = second["result"]["labelling"]["by_judge"]
    assert judged["judge"]["cache_hits"] == 7 and judged["judge"]["calls"] == 1 and len(bodies) == 9
    assert stored_label_sets(app, again["id"])["judge"] == [CHOSEN[0], CHOSEN[1]]


def test_a_panel_labels_once_per_judge_and_gives_a_label_set_each(app, client, judge_server):
    up = upload(client, json.dumps(conversations()).encode())
    created = client.post("/api/evaluations", json={"upload_id": up["id"], "label": True,
                                                    "judges": [{"model": "judge-a"}, {"model": "judge-b"}]})
    assert created.status_code in (200, 201, 202), created.get_json()
    body = wait_for(client, created.get_json()["id"])
    assert body["status"] == "done" and body["progress"]["total"] == 16
    assert [j["label_set"] for j in body["result"]["labelling"]["by_judge"]] == ["judge", "judge@2"]
    assert [j["judge"]["model"] for j in body["result"]["labelling"]["by_judge"]] == ["judge-a", "judge-b"]
    sets = stored_label_sets(app, body["id"])
    assert sets["judge"] == sets["judge@2"] == CHOSEN  # both answer from the markers
    annotated = client.post("/api/evaluations", json={"upload_id": up["id"], "label": True, "annotate": True,
                                                      "judges": [{"model": "judge-a"}, {"model": "judge-b"}]})
    assert annotated.status_code == 400 and "one judge" in annotated.get_json()["error"]
    wrong = client.post("/api/evaluations", json={"upload_id": up["id"], "label": "maybe"})
    assert wrong.status_code == 400 and "'label'" in wrong.get_json()["error"]


def test_a_dialogue_file_uploaded_as_conversations_is_labelled_per_session_and_method(app, client, judge_server):
    session = {"session_id": "p1", "user_profile": "a nurse", "rounds": [
        {"round": 1, "user_message": f"Plan my trip {markers(CHOSEN[0])}", "responses": {"A": "Go to Kyoto.",
                                                                                        "B": "Go to Osaka."}},
        {"round": 2, "user_message": "And food?", "responses": {"A": "Ramen.", "B": "Okonomiyaki."}}]}
    up = upload(client, (json.dumps(session) + "\n").encode(), "sim.jsonl", kind="conversation")
    assert up["kind"] == "conversation" and up["summary"]["by_source"] == {"agent": 2}
    created = client.post("/api/evaluations", json={"upload_id": up["id"], "label": True}).get_json()
    body = wait_for(client, created["id"])
    assert body["status"] == "done" and body["progress"]["total"] == 8
    sets = stored_label_sets(app, created["id"])
    assert sets["judge"] == [CHOSEN[0], CHOSEN[0]]
    paths = sorted({j["session_id"] for j in app.extensions["store"].judgments(created["id"])})
    assert paths == ["sim.jsonl#A", "sim.jsonl#B"]  # one line: read as one JSON document


def test_a_dialogue_session_without_a_methods_reply_is_refused_naming_line_and_field(client):
    session = {"session_id": "p1", "rounds": [{"round": 1, "user_message": "Hi", "responses": {"A": "Hello"}},
                                              {"round": 2, "user_message": "More", "responses": {"B": "x"}}]}
    resp = client.post("/api/uploads", data={"file": (io.BytesIO((json.dumps(session) + "\n").encode()), "sim.jsonl"),
                                             "kind": "conversation"}, content_type="multipart/form-data")
    assert resp.status_code == 400
    text = json.dumps(resp.get_json())
    assert "rounds[1].responses has no reply of A" in text and "sim.jsonl" in text

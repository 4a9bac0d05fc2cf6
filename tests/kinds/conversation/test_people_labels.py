"""People's behaviour labels of a conversation evaluation: the API over HTTP on SQLite and PostgreSQL (kept apart per
person, bad values refused naming the field, never a 500), the consensus that is the "people" label set, the slices,
and the labelling pages with the Flask test client (CSRF, escaping, the guest's name, AUTH on)."""
from __future__ import annotations

import io
import json
import re
import time

import pytest

from kinds.conversation import people_labels
from kinds.conversation.behaviour import BY_KEY, DIMENSIONS
from kinds.conversation.format import read_any
from kinds.conversation.label_sets import label_sets
from kinds.kind import Job

# One complete set of labels, and another that differs on some dimensions.
ALICE = {"problem_solving": "StepByStep", "order": "Depth", "question_broadness": 2, "context_dependency": 4,
         "explanation": "Rare", "promise": "NoPromise", "feedback": "Positive", "politeness": "Polite",
         "formality": "Oral", "utility": "High", "operability": "Moderate"}
BOB = {**ALICE, "order": "Breadth", "question_broadness": 3, "context_dependency": 5, "feedback": "NoFeedback"}


def conversation(source: str, task: str, text: str = "question", **extra) -> dict:
    return {"source": source, "task": task, **extra,
            "history": [{"role": "user", "content": text}, {"role": "assistant", "content": "answer"}]}


def file_labels(labels: dict) -> dict:
    """A conversation's `strategy_human_V1..V4` objects holding `labels`, as the released files keep people's."""
    return {f"strategy_human_V{group}": {"final": {d.key: labels[d.key] for d in DIMENSIONS if d.group == group}}
            for group in (1, 2, 3, 4)}


def items() -> list[dict]:
    """Five conversations: #0 and #3 carry people's labels in the file; #1 holds HTML that must stay text."""
    return [conversation("agent", "travel planning", **file_labels(ALICE)),
            conversation("human", "travel planning", "<script>alert('x')</script><b>bold</b>"),
            conversation("agent", "recipe planning"),
            conversation("human", "recipe planning", **file_labels(BOB)),
            conversation("agent", "preparing gifts")]


def evaluate(client, payload: list[dict], headers: dict | None = None) -> str:
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(json.dumps(payload).encode()), "talks.json")},
                         content_type="multipart/form-data", headers=headers or {})
    assert upload.status_code == 201, upload.get_json()
    created = client.post("/api/evaluations", json={"upload_id": upload.get_json()["id"]}, headers=headers or {})
    assert created.status_code == 202, created.get_json()
    evaluation_id = created.get_json()["id"]
    deadline = time.monotonic() + 30
    while (status := client.get(f"/api/evaluations/{evaluation_id}", headers=headers or {}).get_json()["status"]) \
            in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status == "done"
    return evaluation_id


@pytest.fixture(params=["sqlite", "postgresql"])
def app(request, make_app):
    extra = {"DATABASE_URL": request.getfixturevalue("postgres_server").url()} if request.param == "postgresql" else {}
    return make_app({}, **extra)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def five(client) -> str:
    return evaluate(client, items())


# -- the consensus ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("values, expected", [
    ([3], 3), ([2, 3], 3), ([1, 2], 2), ([1, 4], 3), ([1, 2, 4], 2), ([1, 2, 3, 4], 3), ([2, 2, 3, 3], 3),
    ([5, 5, 1], 5), ([None, 4, None], 4), ([], None), ([None], None)])
def test_the_consensus_of_a_scale_is_the_median_rounded_half_up(values, expected):
    # by hand: [1, 4] has median 2.5, rounded half up 3; [1, 2, 4] has median 2
    assert people_labels.consensus_value(BY_KEY["question_broadness"], values) == expected


@pytest.mark.parametrize("values, expected", [
    (["Polite"], "Polite"), (["Polite", "Neutral", "Polite"], "Polite"), (["Polite", "Neutral"], None),
    (["Polite", "Neutral", "Impolite"], None), (["Neutral", None, None], "Neutral"), ([None, None], None)])
def test_the_consensus_of_categories_is_the_most_frequent_and_none_on_a_tie(values, expected):
    assert people_labels.consensus_value(BY_KEY["politeness"], values) == expected


# -- the API -----------------------------------------------------------------------------------------------------

def post(client, evaluation_id: str, body: dict):
    return client.post(f"/api/evaluations/{evaluation_id}/people-labels", json=body)


def test_two_people_label_through_the_api_and_their_labels_are_kept_apart(client, app, five):
    assert post(client, five, {"person": "alice", "labels": [{"index": 0, "labels": ALICE},
                                                            {"index": 1, "labels": ALICE}]}).status_code == 200
    answer = post(client, five, {"person": "bob", "labels": [{"path": "talks.json[0]", "labels": BOB},
                                                            {"index": 2, "labels": {"politeness": "Neutral"}}]})
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["saved"] == 2 and answer.get_json()["people"] == ["alice", "bob"]
    # alice changes her mind on #1: her row is replaced, bob's untouched
    assert post(client, five, {"person": "alice", "labels": [{"index": 1, "labels": BOB}]}).status_code == 200

    read = client.get(f"/api/evaluations/{five}/people-labels").get_json()
    kept = {(r["index"], r["person"]): r["labels"] for r in read["labels"]}
    assert kept == {(0, "alice"): ALICE, (1, "alice"): BOB, (0, "bob"): BOB,
                    (2, "bob"): {d.key: "Neutral" if d.key == "politeness" else None for d in DIMENSIONS}}
    assert [r["path"] for r in read["labels"]] == ["talks.json[0]", "talks.json[0]", "talks.json[1]", "talks.json[2]"]

    # the "people" label set: #0 labelled by both (categories tie where they differ, scales median half up), #1 and
    # #2 by one person, #3 and #4 by nobody
    store = app.extensions["store"]
    record = store.get_evaluation(five)
    upload = store.get_upload(record["upload_id"])
    site = app.extensions["site"]
    conversations = read_any(io.BytesIO(json.dumps(items()).encode()), "talks.json")[1]
    sets = label_sets(Job(record, upload, site.file_of(upload), site), conversations)
    assert sets["human"] == [ALICE, None, None, BOB, None]  # the file's own
    people = sets["people"]
    assert people[0] == {**ALICE, "order": None, "feedback": None, "question_broadness": 3, "context_dependency": 5}
    assert people[1] == BOB and people[2]["politeness"] == "Neutral" and people[2]["order"] is None
    assert people[3] is None and people[4] is None

    # agreement over #0 only, the one conversation two people labelled. By hand: two different values in one unit
    # give observed = expected disagreement, alpha 0 (nominal: 1 - (n - 1) * 2 / (1 * 1 * 2) with n = 2 values;
    # interval: D_o = D_e = 1); two equal values leave no expected disagreement, alpha undefined
    alphas = {a["key"]: a for a in read["agreement"]}
    assert set(alphas) == set(BY_KEY) and {a["n"] for a in alphas.values()} == {1}
    assert alphas["order"]["value"] == 0.0 and alphas["question_broadness"]["value"] == 0.0
    assert alphas["politeness"]["value"] is None and alphas["order"]["level"] == "nominal"
    assert alphas["question_broadness"]["level"] == "interval"


def test_people_labels_go_with_their_evaluation(client, five):
    assert post(client, five, {"person": "alice", "labels": [{"index": 0, "labels": ALICE}]}).status_code == 200
    assert client.delete(f"/api/evaluations/{five}").status_code == 204
    assert client.get(f"/api/evaluations/{five}/people-labels").status_code == 404


@pytest.mark.parametrize("body, field", [
    ({"person": "a", "labels": [{"index": 0, "labels": {"politeness": "Rude"}}]}, "labels[0].labels.politeness"),
    ({"person": "a", "labels": [{"index": 0, "labels": {"question_broadness": 6}}]},
     "labels[0].labels.question_broadness"),
    ({"person": "a", "labels": [{"index": 0, "labels": ALICE}, {"index": 1, "labels": {"utility": "high"}}]},
     "labels[1].labels.utility"),
    ({"person": "a", "labels": [{"index": 0, "labels": {"question_broadness": True}}]},
     "labels[0].labels.question_broadness"),
    ({"person": "a", "labels": [{"index": 0, "labels": {"question_broadness": 2.0}}]},
     "labels[0].labels.question_broadness"),
    ({"person": "a", "labels": [{"index": 0, "labels": {"mood": "Polite"}}]}, "labels[0].labels.mood"),
    ({"person": "a", "labels": [{"index": 0, "labels": {}}]}, "labels[0].labels"),
    ({"person": "a", "labels": [{"index": 9, "labels": ALICE}]}, "labels[0].index"),
    ({"person": "a", "labels": [{"index": -1, "labels": ALICE}]}, "labels[0].index"),
    ({"person": "a", "labels": [{"path": "elsewhere.json", "labels": ALICE}]}, "labels[0].path"),
    ({"person": "a", "labels": [{"labels": ALICE}]}, "labels[0]"),
    ({"person": "a", "labels": [{"index": 0, "path": "talks.json[0]", "labels": ALICE}]}, "labels[0]"),
    ({"person": "a", "labels": []}, "labels"),
    ({"person": "a", "labels": "all"}, "labels"),
    ({"labels": [{"index": 0, "labels": ALICE}]}, "person"),
    ({"person": "  ", "labels": [{"index": 0, "labels": ALICE}]}, "person"),
    ({"person": "a\x07b", "labels": [{"index": 0, "labels": ALICE}]}, "person"),
    ({"person": "a", "labels": [{"index": 0, "labels": ALICE}], "extra": 1}, "extra"),
])
def test_a_bad_value_is_a_400_naming_the_field_and_nothing_is_kept(client, five, body, field):
    answer = post(client, five, body)
    assert answer.status_code == 400, answer.get_json()
    assert answer.get_json()["problems"][0]["path"] == field
    assert field.split(".")[-1] in answer.get_json()["error"]
    assert client.get(f"/api/evaluations/{five}/people-labels").get_json()["labels"] == []


def test_only_a_conversation_evaluation_takes_labels(make_app, judge_env):
    client = make_app(judge_env).test_client()
    assert post(client, "nope", {"person": "a", "labels": [{"index": 0, "labels": ALICE}]}).status_code == 404
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(
        b'{"session_id": "s1", "user_profile": "p", "user_personality": "q", "rounds": [{"round": 1, '
        b'"user_message": "Hi", "responses": {"A": "Hello"}}]}\n'), "log.jsonl")}, content_type="multipart/form-data")
    dialogue = client.post("/api/evaluations", json={"upload_id": upload.get_json()["id"]}).get_json()["id"]
    answer = post(client, dialogue, {"person": "a", "labels": [{"index": 0, "labels": ALICE}]})
    assert answer.status_code == 400
    assert answer.get_json() == {"error": "People label the behaviour of conversation evaluations only."}
    assert client.get(f"/evaluations/{dialogue}/labelling").status_code == 400


def test_a_body_that_is_no_object_is_a_400(client, five):
    answer = client.post(f"/api/evaluations/{five}/people-labels", json=["alice"])
    assert answer.status_code == 400 and "JSON object" in answer.get_json()["error"]


# -- the pages ---------------------------------------------------------------------------------------------------

def test_the_result_page_leads_to_the_labelling_overview(client, five):
    page = client.get(f"/evaluations/{five}").get_data(as_text=True)
    assert f'href="/evaluations/{five}/labelling"' in page and "Label behaviour" in page


def slice_positions(client, evaluation_id: str, query: str) -> int:
    page = client.get(f"/evaluations/{evaluation_id}/labelling{query}").get_data(as_text=True)
    return int(re.search(r"(\d+) conversations? in this slice", page).group(1))


def test_the_slices(client, five):
    assert slice_positions(client, five, "") == 5
    assert slice_positions(client, five, "?slice=agent") == 3
    assert slice_positions(client, five, "?slice=human") == 2
    assert slice_positions(client, five, "?slice=task&task=recipe+planning") == 2
    assert slice_positions(client, five, "?slice=file") == 2  # #0 and #3 carry strategy_human_V*
    assert slice_positions(client, five, "?slice=sample&n=3&seed=7") == 3
    assert slice_positions(client, five, "?slice=sample&n=99") == 5
    assert slice_positions(client, five, "?slice=nonsense") == 5  # anything else: the whole upload


def test_a_guest_names_themself_then_labels_with_the_form(client, five):
    first = client.get(f"/evaluations/{five}/labelling/0?slice=file")
    assert first.status_code == 302 and "/labelling?slice=file" in first.headers["Location"]  # no name yet
    assert client.post(f"/evaluations/{five}/labelling/person", data={"person": " "}).status_code == 400
    named = client.post(f"/evaluations/{five}/labelling/person", data={"person": "carol", "slice": "file"})
    assert named.status_code == 302 and named.headers["Location"].endswith("/labelling?slice=file")
    page = client.get(f"/evaluations/{five}/labelling/1?slice=file").get_data(as_text=True)  # the file's #3
    assert "talks.json[3]" in page and page.count('type="radio"') == sum(len(d.values) for d in DIMENSIONS)
    form = {k: str(v) for k, v in BOB.items()}
    saved = client.post(f"/evaluations/{five}/labelling/1?slice=file", data=form)
    assert saved.status_code == 302 and saved.headers["Location"].endswith("/labelling?slice=file")  # the last
    kept = client.get(f"/api/evaluations/{five}/people-labels").get_json()["labels"]
    assert [(r["index"], r["person"], r["labels"]) for r in kept] == [(3, "carol", BOB)]
    again = client.get(f"/evaluations/{five}/labelling/1?slice=file").get_data(as_text=True)
    assert 'value="3" required checked' in again and 'value="NoFeedback" required checked' in again
    bad = client.post(f"/evaluations/{five}/labelling/0?slice=file", data={**form, "politeness": "Rude"})
    assert bad.status_code == 400 and "politeness" in bad.get_data(as_text=True)


def test_conversation_text_is_escaped(client, five):
    client.post(f"/evaluations/{five}/labelling/person", data={"person": "carol"})
    page = client.get(f"/evaluations/{five}/labelling/1").get_data(as_text=True)
    assert "<script>alert" not in page and "&lt;script&gt;" in page


def test_the_forms_need_the_csrf_token(make_app):
    app = make_app({}, WTF_CSRF_ENABLED=True)
    client = app.test_client()
    evaluation_id = evaluate(client, items())
    assert client.post(f"/evaluations/{evaluation_id}/labelling/person", data={"person": "eve"}).status_code == 400
    with client.session_transaction() as session:
        session["labeller"] = "eve"
    assert client.post(f"/evaluations/{evaluation_id}/labelling/0", data=ALICE).status_code == 400
    assert client.get(f"/api/evaluations/{evaluation_id}/people-labels").get_json()["labels"] == []


def test_with_accounts_on_only_signed_in_users_label_under_their_own_name(make_app):
    from web import accounts

    app = make_app({}, AUTH="on")
    store = app.extensions["store"]
    tokens = {}
    for name, admin in (("dana", False), ("root", True)):
        user = accounts.create_user(store, name, "correct horse battery staple", is_admin=admin)
        tokens[name] = {"Authorization": f"Bearer {accounts.create_token(store, user['id'], 't')[1]}"}
    client = app.test_client()
    evaluation_id = evaluate(client, items(), tokens["root"])
    url = f"/api/evaluations/{evaluation_id}/people-labels"
    assert client.post(url, json={"labels": [{"index": 0, "labels": ALICE}]}).status_code == 401
    assert client.get(f"/evaluations/{evaluation_id}/labelling").status_code == 302  # to sign in
    assert client.post(url, json={"labels": [{"index": 0, "labels": ALICE}]}, headers=tokens["dana"]).status_code == 200
    other = client.post(url, json={"person": "root", "labels": [{"index": 1, "labels": ALICE}]}, headers=tokens["dana"])
    assert other.status_code == 403
    assert client.post(url, json={"person": "frank", "labels": [{"index": 1, "labels": BOB}]},
                       headers=tokens["root"]).status_code == 200  # an administrator brings someone's labels
    kept = client.get(url, headers=tokens["dana"]).get_json()["labels"]
    assert [(r["index"], r["person"]) for r in kept] == [(0, "dana"), (1, "frank")]

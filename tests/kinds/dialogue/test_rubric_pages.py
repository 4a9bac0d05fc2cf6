"""The rubrics' settings page and API over HTTP: list, view, download, add (a file with problems refused naming line
and field, nothing stored; the same id and version with other content refused), delete (built-ins cannot be);
who may change them with accounts on, and the forms' CSRF tokens; the upload page's rubric picker."""
from __future__ import annotations

import hashlib
import html as html_text
import io
import json
import re

import pytest
import yaml

from kinds import rubrics
from tests.conftest import jsonl, session_line
from tests.test_docs_rubrics import example_yaml
from tests.web.test_auth import PASSWORD, bearer, new_token, signed_in
from web import accounts

LAB = "lab-consistency"


def lab(**changes: str) -> bytes:
    """The manual's example rubric (docs/rubrics.md), with texts replaced: {old: new}."""
    text = example_yaml()
    for old, new in changes.items():
        assert old in text
        text = text.replace(old, new, 1)
    return text.encode("utf-8")


def add_page(client, data: bytes, name: str = "lab.yaml"):
    return client.post("/settings/rubrics", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")


def listed(client) -> list[str]:
    return [r["id"] for r in client.get("/api/rubrics").get_json()]


def problems_table(html: str) -> list[tuple[str, str, str]]:
    """The (line, field, problem) rows of the page's problems table."""
    table = html.split('id="rubric-problems"', 1)[1].split("</table>", 1)[0]
    return [tuple(html_text.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
                  for cell in re.findall(r"<td>(.*?)</td>", row, flags=re.S))
            for row in re.findall(r"<tr><td>.*?</tr>", table, flags=re.S)]


# -- the settings page -------------------------------------------------------------------------------------------

def test_the_settings_page_and_the_header_link_the_rubrics(client):
    page = client.get("/settings").get_data(as_text=True)
    more = page.split('id="more-settings"', 1)[1]
    assert 'href="/settings/rubrics"' in more and "Rubrics: the judging protocols" in more
    assert '<a href="/settings/rubrics">Rubrics</a>' in page.split("</nav>", 1)[0]


def test_the_page_lists_the_builtins_with_their_dimensions_and_scales(client):
    page = client.get("/settings/rubrics").get_data(as_text=True)
    for rubric in rubrics.builtins().values():
        row = page.split(f'id="rubric-{rubric.sha256[:12]}"', 1)[1].split("</tr>", 1)[0]
        assert f"<code>{rubric.id}</code>" in row and rubric.version in row and rubric.sha256[:12] in row
        assert "built-in" in row and "Delete" not in row  # a built-in cannot be deleted
    row = page.split(f'id="rubric-{rubrics.builtin("aloe").sha256[:12]}"', 1)[1].split("</tr>", 1)[0]
    assert 'Tailored to the user <span class="hint">1–5</span>' in row and "<td>—</td>" in row  # no yes/no question
    row = page.split(f'id="rubric-{rubrics.builtin().sha256[:12]}"', 1)[1].split("</tr>", 1)[0]
    assert row.count("0–20") == 5 and "Keep chatting?" in row


def test_a_file_with_problems_is_refused_naming_line_and_field_and_nothing_is_stored(client):
    broken = lab(**{"scale: {min: 1, max: 7}": "scale: {min: 7, max: 1}", "headline:": "colour: blue\nheadline:"})
    resp = add_page(client, broken)
    assert resp.status_code == 400
    html = resp.get_data(as_text=True)
    assert "The rubric file has problems; nothing was stored." in html and "The problems of lab.yaml" in html
    # the schema's problems come first (the rules are checked on a document the schema accepts)
    assert problems_table(html) == [("26", "colour", "Unknown field colour; the fields here are: answer, binary, "
                                                     "context, description, dimensions, headline, id, prompts, "
                                                     "title, version.")]
    resp = add_page(client, lab(**{"scale: {min: 1, max: 7}": "scale: {min: 7, max: 1}"}))
    assert resp.status_code == 400
    assert problems_table(resp.get_data(as_text=True))[0] == (
        "12", "dimensions[0].scale", "The scale's min (7) must be below its max (1).")
    resp = add_page(client, lab(**{"{{ reply|quote(\"reply\") }}": "{{ reply.__class__ }}"}))
    assert resp.status_code == 400
    [(line, field, message)] = problems_table(resp.get_data(as_text=True))
    assert (line, field) == ("47", "prompts.en.user") and "never an attribute or a method" in message
    assert listed(client) == ["personasteer", "aloe"]  # nothing was stored
    resp = client.post("/settings/rubrics", data={}, content_type="multipart/form-data")
    assert resp.status_code == 400 and "Choose a rubric file (YAML or JSON)." in resp.get_data(as_text=True)


def test_a_rubric_is_added_viewed_downloaded_and_deleted_on_the_page(client):
    rubric = rubrics.read(lab())
    resp = add_page(client, lab())
    assert resp.status_code == 302 and f"added={rubric.sha256}" in resp.headers["Location"]
    page = client.get(resp.headers["Location"]).get_data(as_text=True)
    row = page.split(f'id="rubric-{rubric.sha256[:12]}" class="highlight"', 1)[1].split("</tr>", 1)[0]
    assert "Persona consistency (lab)" in row and "<td>1</td>" in row and rubric.sha256[:12] in row
    assert ('Fits the profile <span class="hint">1–7</span>, Fits the personality <span class="hint">1–7</span>, '
            'Coherent with the conversation <span class="hint">1–7</span>') in row
    assert listed(client) == ["personasteer", "aloe", LAB]

    view = client.get(f"/settings/rubrics/{rubric.sha256}").get_data(as_text=True)
    assert f"<code>{rubric.headline_text()}</code>" in view
    assert "<dt>1-2</dt><dd>ignores or contradicts the profile</dd>" in view and "1–7 (whole numbers)" in view
    assert "Answer with one JSON object" in view and "en · user message" in view
    assert client.get(f"/settings/rubrics/{LAB}").status_code == 200  # by id too

    download = client.get(f"/settings/rubrics/{rubric.sha256}/json")
    assert download.mimetype == "application/json"
    assert download.headers["Content-Disposition"] == 'attachment; filename="lab-consistency-1.json"'
    assert hashlib.sha256(download.data).hexdigest() == rubric.sha256  # the canonical form the hash is taken of
    as_yaml = client.get(f"/settings/rubrics/{LAB}/yaml")
    assert as_yaml.mimetype == "application/yaml"
    assert yaml.safe_load(as_yaml.data) == json.loads(download.data)
    assert rubrics.read(as_yaml.data).sha256 == rubric.sha256  # read back, the same rubric

    resp = client.post(f"/settings/rubrics/{rubric.sha256}/delete")
    assert resp.status_code == 302 and listed(client) == ["personasteer", "aloe"]
    assert f'id="rubric-{rubric.sha256[:12]}"' not in client.get("/settings/rubrics").get_data(as_text=True)
    kept = client.get(f"/settings/rubrics/{rubric.sha256}")  # still readable by its hash, marked as deleted
    assert kept.status_code == 200 and "This rubric was deleted from the list" in kept.get_data(as_text=True)
    assert client.get(f"/settings/rubrics/{LAB}").status_code == 404  # its id names none now
    assert add_page(client, lab()).status_code == 302 and listed(client) == ["personasteer", "aloe", LAB]


def test_the_same_id_and_version_with_other_content_is_refused(client):
    assert add_page(client, lab()).status_code == 302
    assert add_page(client, lab()).status_code == 302  # the same content again: kept once
    resp = add_page(client, lab(**{"Persona consistency (lab)": "Persona consistency"}))
    assert resp.status_code == 409
    assert ("A rubric lab-consistency version 1 is kept already, with other content: change its version to add this "
            "one.") in resp.get_data(as_text=True)
    assert add_page(client, lab(**{'version: "1"': 'version: "2"'})).status_code == 302
    assert sorted((r["id"], r["version"]) for r in client.get("/api/rubrics").get_json()[2:]) == [(LAB, "1"),
                                                                                                  (LAB, "2")]


def test_builtins_can_be_neither_deleted_nor_taken(client):
    resp = client.post("/settings/rubrics/aloe/delete")
    assert resp.status_code == 409 and "aloe is a built-in rubric; it cannot be deleted." in resp.get_data(
        as_text=True)
    resp = add_page(client, lab(**{f"id: {LAB}": "id: aloe"}))
    assert resp.status_code == 409 and "aloe is the id of a built-in rubric" in resp.get_data(as_text=True)
    assert client.post("/settings/rubrics/no-such-rubric/delete").status_code == 404
    assert client.get("/settings/rubrics/no-such-rubric").status_code == 404
    assert client.get("/settings/rubrics/aloe/pdf").status_code == 404


# -- the API ---------------------------------------------------------------------------------------------------------

def test_the_api_lists_reads_adds_and_deletes_rubrics(client):
    rubric = rubrics.read(lab())
    every = client.get("/api/rubrics").get_json()
    assert [(r["id"], r["builtin"]) for r in every] == [("personasteer", True), ("aloe", True)]
    aloe = every[1]
    assert aloe["dimensions"] == [{"key": "alignment", "label": {"en": "Tailored to the user", "zh": "对用户的契合度",
                                                                 "ko": "사용자 맞춤 정도"},
                                   "min": 1, "max": 5, "integer": True,
                                   "levels": {"1": "the least tailored to the user", "5": "the most user-aligned"}}]
    assert (aloe["headline"], aloe["binary"], aloe["answer"], aloe["languages"]) == (
        "100 x (mean(alignment) - 1) / 4", None, "number", ["en"])

    created = client.post("/api/rubrics", data=lab(), content_type="application/yaml")
    assert created.status_code == 201 and created.get_json()["sha256"] == rubric.sha256
    for name in (LAB, rubric.sha256):
        one = client.get(f"/api/rubrics/{name}").get_json()
        assert one["document"] == json.loads(rubrics.canonical(rubric.document)) and one["builtin"] is False
    # the same rubric as JSON, as a body or as the multipart field `file`: the same content, kept once
    as_json = json.dumps(yaml.safe_load(lab())).encode()
    assert client.post("/api/rubrics", data=as_json, content_type="application/json").get_json()["sha256"] == \
        rubric.sha256
    sent = client.post("/api/rubrics", data={"file": (io.BytesIO(as_json), "lab.json")},
                       content_type="multipart/form-data")
    assert sent.status_code == 201 and sent.get_json()["sha256"] == rubric.sha256
    assert listed(client) == ["personasteer", "aloe", LAB]

    assert client.delete("/api/rubrics/aloe").get_json() == {"error": "aloe is a built-in rubric; it cannot be "
                                                                      "deleted."}
    assert client.delete("/api/rubrics/aloe").status_code == 409
    assert client.delete(f"/api/rubrics/{LAB}").status_code == 204
    assert client.delete(f"/api/rubrics/{LAB}").status_code == 404
    assert listed(client) == ["personasteer", "aloe"]
    assert client.get(f"/api/rubrics/{LAB}").status_code == 404
    assert client.get(f"/api/rubrics/{rubric.sha256}").status_code == 200  # kept for evaluations judged under it


def test_the_api_refuses_a_file_with_every_problem_and_stores_nothing(client):
    coherence = "ko: 대화와의 일관성}\n    scale: {min: 1, max: 7}"
    resp = client.post("/api/rubrics", data=lab(**{coherence: coherence.replace("min: 1,", "min: 1.5,"),
                                                   "combine: weighted": "combine: mean"}),
                       content_type="application/yaml")
    assert resp.status_code == 400
    assert resp.get_json() == {"error": "The rubric file has problems; nothing was stored.", "truncated": False,
                               "problems": [
                                   {"line": 25, "path": "dimensions[2].scale",
                                    "message": "A whole-number scale needs whole-number ends; set integer: false for "
                                               "a scale of fractions."},
                                   {"line": 28, "path": "headline.weights",
                                    "message": "Weights go with combine: weighted."}]}
    resp = client.post("/api/rubrics", data=b"id: [unclosed\n", content_type="application/yaml")
    assert resp.status_code == 400 and resp.get_json()["problems"][0]["message"].startswith(
        "The rubric file is not valid YAML or JSON")
    resp = client.post("/api/rubrics", data=b"", content_type="application/yaml")
    assert resp.status_code == 400 and "as the multipart field 'file'" in resp.get_json()["error"]
    resp = client.post("/api/rubrics", data={}, content_type="multipart/form-data")
    assert resp.status_code == 400 and "as the multipart field 'file'" in resp.get_json()["error"]
    assert client.post("/api/rubrics", data=lab(**{f"id: {LAB}": "id: personasteer"}),
                       content_type="application/yaml").status_code == 409
    assert listed(client) == ["personasteer", "aloe"]


def test_the_contract_describes_the_rubrics_operations_and_the_evaluations_rubric(client):
    document = client.get("/api/openapi.json").get_json()
    rubric = document["components"]["schemas"]["EvaluationRequest"]["properties"]["rubric"]
    assert {"type": "string", "pattern": "^[^\\x00]*$"} in rubric["anyOf"] and {"type": "null"} in rubric["anyOf"]
    assert set(document["paths"]["/api/rubrics"]) == {"get", "post"}
    assert set(document["paths"]["/api/rubrics/{name}"]) == {"get", "delete"}
    post = document["paths"]["/api/rubrics"]["post"]
    assert set(post["requestBody"]["content"]) == {"multipart/form-data", "application/yaml"}
    assert {"201", "400", "409", "413"} <= set(post["responses"])
    assert {"204", "404", "409"} <= set(document["paths"]["/api/rubrics/{name}"]["delete"]["responses"])
    assert client.post("/api/evaluations", json={"upload_id": "x", "rubric": ["aloe"]}).get_json()["problems"][0][
        "path"] == "rubric"


# -- who may change them -----------------------------------------------------------------------------------------

@pytest.fixture
def auth_app(make_app, judge_env):
    app = make_app(judge_env, AUTH="on")
    accounts.create_user(app.extensions["store"], "ada", PASSWORD, is_admin=True)
    accounts.create_user(app.extensions["store"], "max", PASSWORD)
    return app


def test_members_read_rubrics_and_only_admins_add_or_delete_them(auth_app):
    member = signed_in(auth_app, "max")
    page = member.get("/settings/rubrics").get_data(as_text=True)
    assert "Only an administrator can add or delete a rubric." in page and "<fieldset class=\"bare\" disabled>" in page
    resp = add_page(member, lab())
    assert resp.status_code == 403 and "Only an administrator can change this." in resp.get_data(as_text=True)
    script = bearer(auth_app, new_token(member))
    resp = script.post("/api/rubrics", data=lab(), content_type="application/yaml")
    assert resp.status_code == 403 and resp.get_json() == {"error": "Only an administrator can change this."}
    assert script.get("/api/rubrics").status_code == 200 and len(script.get("/api/rubrics").get_json()) == 2

    admin = signed_in(auth_app, "ada")
    assert " disabled>" not in admin.get("/settings/rubrics").get_data(as_text=True)
    assert add_page(admin, lab()).status_code == 302
    assert script.delete(f"/api/rubrics/{LAB}").status_code == 403
    assert member.post(f"/settings/rubrics/{LAB}/delete").status_code == 403
    assert bearer(auth_app, new_token(admin)).delete(f"/api/rubrics/{LAB}").status_code == 204
    assert auth_app.test_client().get("/api/rubrics").status_code == 401  # signed out: nothing


def test_the_forms_need_their_csrf_token(make_app, judge_env):
    client = make_app(judge_env, WTF_CSRF_ENABLED=True).test_client()
    page = client.get("/settings/rubrics").get_data(as_text=True)
    assert add_page(client, lab()).status_code == 400  # no token
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    resp = client.post("/settings/rubrics", data={"file": (io.BytesIO(lab()), "lab.yaml"), "csrf_token": token},
                       content_type="multipart/form-data")
    assert resp.status_code == 302
    sha = rubrics.read(lab()).sha256
    assert client.post(f"/settings/rubrics/{sha}/delete").status_code == 400
    assert client.post(f"/settings/rubrics/{sha}/delete", data={"csrf_token": token}).status_code == 302


# -- the upload page's picker --------------------------------------------------------------------------------------

def test_the_upload_page_offers_every_rubric_and_starts_under_the_one_picked(client, app):
    assert add_page(client, lab()).status_code == 302
    rubric = rubrics.read(lab())
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "log.jsonl")}).get_json()
    page = client.get(f"/uploads/{upload['id']}").get_data(as_text=True)
    picker = page.split('id="rubric-picker"', 1)[1].split("</fieldset>", 1)[0]
    choices = re.findall(r'<input type="radio" name="rubric" value="([^"]+)" ?(checked)?>', picker)
    assert choices == [("personasteer", "checked"), ("aloe", ""), (rubric.sha256, "")]
    assert "Tailored to the user 1–5" in picker and picker.count("0–20") == 5 and "yes/no</span>" not in picker
    assert ("Fits the profile 1–7, Fits the personality 1–7, Coherent with the conversation 1–7" in picker)
    assert f"(headline: {rubric.headline_text()})" in picker

    resp = client.post(f"/uploads/{upload['id']}/evaluate", data={"rubric": rubric.sha256, "methods": ["A", "B"]})
    assert resp.status_code == 302
    evaluation_id = resp.headers["Location"].rsplit("/", 1)[1]
    recorded = app.extensions["store"].get_evaluation(evaluation_id, with_result=False)["settings"]
    assert recorded["rubric"] == rubric.reference() and recorded["modes"] == ["fine"]
    resp = client.post(f"/uploads/{upload['id']}/evaluate", data={"rubric": "no-such-rubric"})
    assert resp.status_code == 400 and "Unknown rubric &#39;no-such-rubric&#39;" in resp.get_data(as_text=True)

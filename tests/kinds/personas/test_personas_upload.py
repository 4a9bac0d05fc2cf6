"""A personas file through the app: `POST /api/uploads`, the upload form and page, and a refused evaluation."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from simulate import personas as simulate_personas
from tests.conftest import jsonl, session_line


def persona(persona_id: str = "p1", **extra) -> dict:
    return {"persona_id": persona_id, "user_profile": "A 34-year-old nurse.", "user_personality": "Terse.", **extra}


def upload(client, data: bytes, name: str = "people.jsonl", **headers):
    return client.post("/api/uploads", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data",
                       headers=headers)


def test_a_valid_file_is_a_201_personas_upload_with_its_summary(client, app):
    resp = upload(client, jsonl(persona("a", scenario="Night shifts.", opening="hi"), persona("b")))
    assert resp.status_code == 201
    body = resp.get_json()
    assert body["kind"] == "personas"
    assert body["summary"]["personas"] == 2
    assert body["summary"]["fields"] == {"user_personality": 2, "scenario": 1, "opening": 1}
    assert [p["persona_id"] for p in body["summary"]["first"]] == ["a", "b"]
    assert body["warnings"] == []
    stored = [p.name for p in Path(app.config["UPLOAD_FOLDER"]).iterdir()]
    assert stored == [f"{app.extensions['store'].get_upload(body['id'])['sha256']}.jsonl"]


def test_the_builtin_set_uploads_as_24_personas(client):
    resp = upload(client, simulate_personas.BUILTIN.read_bytes(), "builtin_personas.jsonl")
    assert resp.status_code == 201
    assert resp.get_json()["summary"]["personas"] == 24
    assert resp.get_json()["summary"]["languages"] == {"latin": 12, "zh": 12}


@pytest.mark.parametrize(("line", "path"), [
    (b'{"user_profile": "A nurse."}', "persona_id"),
    (b'{"persona_id": 3, "user_profile": "A nurse."}', "persona_id"),
    (b'{"persona_id": "x", "user_profile": ""}', "user_profile"),
    (b'{"persona_id": "x"}', "user_profile"),
    (b'{"persona_id": "x", "user_profile": "A nurse.", "user_personality": ["warm"]}', "user_personality"),
    (b'{"persona_id": "x", "user_profile": "A nurse.", "scenario": 1}', "scenario"),
    (b'{"persona_id": "x", "user_profile": "A nurse.", "opening": {}}', "opening"),
    (b'["x"]', ""),
    (b'{"persona_id": "x", "user_profile": "A nurse.",', ""),
])
def test_each_kind_of_bad_line_is_a_400_naming_its_line_and_field(client, app, line, path):
    resp = upload(client, jsonl(persona("a")) + line + b"\n" + jsonl(persona("b")))
    assert resp.status_code == 400
    body = resp.get_json()
    assert [(p["line"], p["path"]) for p in body["problems"]] == [(2, path)]
    assert body["problems"][0]["message"].startswith("Line 2")
    assert list(Path(app.config["UPLOAD_FOLDER"]).glob("*.jsonl")) == []


def test_a_repeated_id_is_a_400_at_its_second_line(client):
    resp = upload(client, jsonl(persona("a"), persona("b"), persona("a")))
    assert resp.status_code == 400
    assert [(p["line"], p["path"]) for p in resp.get_json()["problems"]] == [(3, "persona_id")]
    assert "first appeared on line 1" in resp.get_json()["problems"][0]["message"]


def test_a_bom_and_blank_lines_are_accepted(client):
    data = b"\xef\xbb\xbf" + jsonl(persona("a")) + b"\n\r\n" + jsonl(persona("b"))
    resp = upload(client, data)
    assert resp.status_code == 201
    assert [(p["line"], p["persona_id"]) for p in resp.get_json()["summary"]["first"]] == [(1, "a"), (4, "b")]


def test_a_missing_personality_is_kept_as_a_warning(client):
    resp = upload(client, jsonl(persona("a"), {"persona_id": "b", "user_profile": "A farmer."}))
    assert resp.status_code == 201
    assert [(w["line"], w["path"]) for w in resp.get_json()["warnings"]] == [(2, "user_personality")]


def test_more_personas_than_the_limit_is_a_400_naming_the_setting(client, monkeypatch):
    monkeypatch.setenv("LIMIT_SESSIONS", "3")
    resp = upload(client, jsonl(*(persona(f"p{n}") for n in range(5))))
    assert resp.status_code == 400
    problem = resp.get_json()["problems"][0]
    assert problem["line"] == 4 and "LIMIT_SESSIONS" in problem["message"]


def test_problems_are_in_the_readers_language(client):
    resp = upload(client, jsonl(persona("a"), {"persona_id": "a", "user_profile": ""}), **{"Accept-Language": "zh"})
    assert resp.status_code == 400
    messages = [p["message"] for p in resp.get_json()["problems"]]
    assert len(messages) == 2 and all(any("\u4e00" <= c <= "\u9fff" for c in m) for m in messages)


def test_a_personas_upload_cannot_be_scored_and_says_where_it_is_used(client):
    upload_id = upload(client, jsonl(persona("a"))).get_json()["id"]
    resp = client.post("/api/evaluations", json={"upload_id": upload_id})
    assert resp.status_code == 400
    assert "/simulations/new" in resp.get_json()["error"] and "not scored" in resp.get_json()["error"]


def test_the_upload_page_shows_the_summary_the_first_personas_escaped_and_the_run_link(client):
    data = jsonl(persona("a", scenario="Night shifts."), persona("<b>x</b>", user_profile="<script>alert(1)</script>"),
                 {"persona_id": "c", "user_profile": "70岁，退休语文老师。", "user_personality": "文雅。"})
    upload_id = upload(client, data).get_json()["id"]
    page = client.get(f"/uploads/{upload_id}").get_data(as_text=True)
    assert "personas for a simulation" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page
    assert "Night shifts." in page and "70岁，退休语文老师。" in page
    assert "Chinese (1)" in page and "English or another Latin-script language (2)" in page
    assert "1 of 3 personas" in page  # one has a scenario
    assert f'href="/simulations/new?personas_upload_id={upload_id}"' in page


def test_the_upload_form_shows_a_bad_personas_file_line_by_line_and_takes_a_good_one(client):
    bad = client.post("/uploads", data={"file": (io.BytesIO(jsonl(persona("a"), {"persona_id": "a"})), "p.jsonl")},
                      content_type="multipart/form-data")
    assert bad.status_code == 400
    page = bad.get_data(as_text=True)
    assert "<td>2</td><td><code>persona_id</code></td>" in page and "<td>2</td><td><code>user_profile</code></td>" in page
    good = client.post("/uploads", data={"file": (io.BytesIO(jsonl(persona("a"))), "p.jsonl")},
                       content_type="multipart/form-data")
    assert good.status_code == 302 and "/uploads/" in good.headers["Location"]


def test_the_upload_page_describes_the_personas_format(client):
    page = client.get("/").get_data(as_text=True)
    assert "Personas for a simulation are accepted too" in page and "Personas (simulated users): .jsonl, one persona per line." in page


def test_a_dialogue_file_sent_as_personas_is_told_what_a_persona_needs(client):
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line("s1"))), "log.jsonl"),
                                             "kind": "personas"}, content_type="multipart/form-data")
    assert resp.status_code == 400
    assert [(p["line"], p["path"]) for p in resp.get_json()["problems"]] == [(1, "persona_id")]


def test_flask_score_of_a_personas_file_says_it_is_not_scored(app, tmp_path):
    path = tmp_path / "people.jsonl"
    path.write_bytes(jsonl(persona("a"), persona("b")))
    result = app.test_cli_runner().invoke(args=["score", str(path)])
    assert result.exit_code == 2
    assert "An upload of the kind Personas (simulated users) is not scored" in result.stderr
    assert "/simulations/new" in result.stderr
    assert result.stdout == ""

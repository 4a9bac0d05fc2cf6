"""The judge settings page: saved settings, the write-only API key, and the connection test."""
from __future__ import annotations

import io
import socket
from pathlib import Path

from tests.conftest import jsonl, session_line, wait_for

SECRET = "sk-saved-on-the-page-123"


def save(client, **fields):
    data = {"base_url": "", "model": "", "concurrency": "", "temperature": "", "language": "", "price_prompt": "",
            "price_completion": "", **fields}
    return client.post("/settings", data=data)


def test_settings_page_shows_environment_defaults(client, judge_server):
    html = client.get("/settings").get_data(as_text=True)
    assert judge_server.url in html and "judge-test" in html and "A key is set" in html


def test_saved_settings_apply_to_new_evaluations(client, judge_server):
    resp = save(client, model="page-model", temperature="0.3", price_prompt="1", price_completion="2")
    assert resp.status_code == 200 and "Settings saved" in resp.get_data(as_text=True)
    upload_id = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "x.jsonl")},
                            content_type="multipart/form-data").get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    result = wait_for(client, created["id"])["result"]
    assert result["judge"]["model"] == "page-model" and result["judge"]["temperature"] == 0.3
    assert result["judge"]["cost"] is not None
    assert judge_server.last_request["model"] == "page-model"


def test_invalid_setting_is_refused_with_its_name(client):
    resp = save(client, concurrency="lots")
    assert resp.status_code == 400 and "JUDGE_CONCURRENCY" in resp.get_data(as_text=True)
    resp = save(client, price_completion="-1")
    assert resp.status_code == 400 and "JUDGE_PRICE_COMPLETION_PER_M" in resp.get_data(as_text=True)


def test_api_key_is_write_only(make_app, judge_server):
    app = make_app({"JUDGE_BASE_URL": judge_server.url})
    client = app.test_client()
    assert "No key set" in client.get("/settings").get_data(as_text=True)
    page = save(client, api_key=SECRET).get_data(as_text=True)
    assert SECRET not in page and "A key is set" in page
    key_file = Path(app.config["JUDGE_KEY_FILE"])
    assert key_file.stat().st_mode & 0o077 == 0  # readable by the server's user only
    upload_id = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "x.jsonl")},
                            content_type="multipart/form-data").get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    wait_for(client, created["id"])
    assert judge_server.last_authorization == f"Bearer {SECRET}"
    for url in ("/settings", f"/evaluations/{created['id']}", f"/api/evaluations/{created['id']}",
                f"/evaluations/{created['id']}.json"):
        assert SECRET.encode() not in client.get(url).data, url
    assert SECRET.encode() not in Path(app.config["DATABASE"]).read_bytes()
    save(client, clear_key="1")
    assert not key_file.exists()
    key_file.write_text("")  # an emptied key counts as no key
    assert "No key set" in client.get("/settings").get_data(as_text=True)


def test_connection_test_shows_the_answer(client):
    html = client.post("/settings/test").get_data(as_text=True)
    assert 'id="test-result"' in html and "The judge answered" in html


def test_connection_test_shows_the_exact_error(make_app, judge_server):
    judge_server.fail_always("401")
    html = make_app({"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-wrong-key"}).test_client() \
        .post("/settings/test").get_data(as_text=True)
    assert "The call failed" in html and "401" in html and "sk-wrong-key" not in html


def test_connection_test_refused_port(make_app):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    html = make_app({"JUDGE_BASE_URL": f"http://127.0.0.1:{port}/v1"}).test_client() \
        .post("/settings/test").get_data(as_text=True)
    assert "The call failed" in html and f"127.0.0.1:{port}" in html

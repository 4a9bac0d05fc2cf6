"""The judge settings page: saved settings, the write-only API key, and the connection test."""
from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

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


def test_the_upload_page_shows_the_judge_settings_in_force(client, judge_server):
    upload_id = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "x.jsonl")},
                            content_type="multipart/form-data").get_json()["id"]
    assert 'name="model" placeholder="judge-test"' in client.get(f"/uploads/{upload_id}").get_data(as_text=True)
    save(client, model="page-model", temperature="0.3")
    page = client.get(f"/uploads/{upload_id}").get_data(as_text=True)
    assert 'name="model" placeholder="page-model"' in page and 'placeholder="0.3"' in page


def endpoint_sources(client) -> dict[str, str]:
    """Each endpoint row of the settings page: its name and its "Defined in" cell."""
    html = client.get("/settings").get_data(as_text=True)
    table = html.split('id="endpoints"', 1)[1].split("</table>", 1)[0]
    rows = [row.split("</tr>", 1)[0] for row in table.split("<tr>")[2:]]
    return {row.split("<td>", 2)[1].split("</td>", 1)[0]: row.split("<td>")[6].split("</td>", 1)[0] for row in rows}


def endpoint_prices(client) -> dict[str, str]:
    """Each endpoint row of the settings page: its name and its prices cell."""
    html = client.get("/settings").get_data(as_text=True)
    table = html.split('id="endpoints"', 1)[1].split("</table>", 1)[0]
    rows = [row.split("</tr>", 1)[0] for row in table.split("<tr>")[2:]]
    return {row.split("<td>", 2)[1].split("</td>", 1)[0]: row.split("<td>")[5].split("</td>", 1)[0] for row in rows}


def test_endpoints_say_where_they_are_defined(client, judge_server):
    assert endpoint_sources(client) == {"default": "environment"}
    save(client, base_url=judge_server.url)  # the default endpoint's URL, now from this page
    assert client.post("/settings/endpoints", data={"name": "other", "base_url": judge_server.url,
                                                    "models": "", "api_key": "k"}).status_code == 302
    assert endpoint_sources(client) == {"default": "settings page", "other": "settings page"}


def test_a_named_endpoint_has_its_own_prices_and_its_judgments_cost_at_them(client, judge_server):
    save(client, price_prompt="2", price_completion="10")  # the default endpoint's
    refused = client.post("/settings/endpoints", data={"name": "cheap", "base_url": judge_server.url,
                                                       "price_prompt": "free", "price_completion": "1"})
    assert refused.status_code == 400
    assert "price_prompt_per_m of judge endpoint &#39;cheap&#39; must be a number of 0 or more, got &#39;free&#39;" in \
        refused.get_data(as_text=True)
    for name, prices in (("cheap", ("0.5", "1.5")), ("unpriced", ("", ""))):
        assert client.post("/settings/endpoints", data={"name": name, "base_url": judge_server.url,
                                                        "price_prompt": prices[0], "price_completion": prices[1]}
                           ).status_code == 302
    assert endpoint_prices(client) == {"default": "2.0 / 10.0", "cheap": "0.5 / 1.5", "unpriced": "none"}
    upload_id = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "x.jsonl")},
                            content_type="multipart/form-data").get_json()["id"]
    judged = {}
    for name in ("default", "cheap", "unpriced"):
        created = client.post("/api/evaluations", json={"upload_id": upload_id, "judge": {"endpoint": name}})
        judged[name] = wait_for(client, created.get_json()["id"])["result"]["judge"]
    for name, (prompt, completion) in (("default", (2, 10)), ("cheap", (0.5, 1.5))):
        assert judged[name]["prices_per_million"] == {"prompt": prompt, "completion": completion}
        assert judged[name]["cost"] == pytest.approx(
            (judged[name]["prompt_tokens"] * prompt + judged[name]["completion_tokens"] * completion) / 1e6)
    assert judged["unpriced"]["cost"] is None  # never at the default endpoint's prices


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
    upload_id = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "x.jsonl")},
                            content_type="multipart/form-data").get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    wait_for(client, created["id"])
    assert judge_server.last_authorization == f"Bearer {SECRET}"
    for url in ("/settings", f"/evaluations/{created['id']}", f"/api/evaluations/{created['id']}",
                f"/evaluations/{created['id']}.json"):
        assert SECRET.encode() not in client.get(url).data, url
    app.extensions["store"].close()  # SQLite's write-ahead log into the file itself
    assert SECRET.encode() not in Path(app.config["DATABASE"]).read_bytes()
    assert not any(Path(app.instance_path).glob("judge*"))  # nothing of it in the instance folder
    save(client, clear_key="1")
    assert app.extensions["store"].get_setting("judge_api_key") is None
    assert "No key set" in client.get("/settings").get_data(as_text=True)


def test_saved_keys_are_encrypted_in_the_database(make_app, judge_env, judge_server):
    app = make_app({"JUDGE_BASE_URL": judge_server.url}, SETTINGS_KEY=Fernet.generate_key().decode())
    client = app.test_client()
    save(client, api_key=SECRET)
    assert client.post("/settings/endpoints", data={"name": "other", "base_url": judge_server.url,
                                                    "api_key": "sk-other-endpoint"}).status_code == 302
    store, fernet = app.extensions["store"], Fernet(app.config["SETTINGS_KEY"])
    sealed = store.get_setting("judge_api_key")
    assert sealed.startswith("gAAAAA") and SECRET not in sealed and fernet.decrypt(sealed.encode()) == SECRET.encode()
    other = store.get_setting("judge_endpoint_keys")["other"]
    assert "sk-other" not in other and fernet.decrypt(other.encode()) == b"sk-other-endpoint"
    assert "sk-other" not in json.dumps(store.get_setting("judge_endpoints"))


def test_a_key_encrypted_with_another_settings_key_asks_to_be_entered_again(make_app, judge_server):
    env = {"JUDGE_BASE_URL": judge_server.url}
    save(make_app(env, SETTINGS_KEY=Fernet.generate_key().decode()).test_client(), api_key=SECRET)
    app = make_app(env, SETTINGS_KEY=Fernet.generate_key().decode())  # the same database, another key
    client = app.test_client()
    response = client.get("/settings")
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and 'id="key-problem"' in page and "Enter the key again" in page
    assert "No key set" in page and "JUDGE_API_KEY" not in app.extensions["judge_settings"].environ()
    page = save(client, api_key="sk-entered-again").get_data(as_text=True)
    assert 'id="key-problem"' not in page and "A key is set" in page
    assert app.extensions["judge_settings"].environ()["JUDGE_API_KEY"] == "sk-entered-again"


def test_a_settings_key_that_is_not_a_fernet_key_stops_the_app_saying_how_to_make_one(make_app):
    with pytest.raises(ValueError, match="SETTINGS_KEY must be a Fernet key.*Fernet.generate_key"):
        make_app(SETTINGS_KEY="not-a-key")


def test_key_files_of_earlier_versions_move_into_the_database_once(make_app, judge_server, tmp_path):
    (tmp_path / "judge_api_key").write_text(SECRET + "\n")
    (tmp_path / "judge_endpoint_keys.json").write_text(json.dumps({"other": "sk-other-endpoint"}))
    app = make_app({"JUDGE_BASE_URL": judge_server.url})
    app.extensions["store"].set_setting("judge_endpoints", {"other": {"base_url": judge_server.url, "models": []}})
    assert not (tmp_path / "judge_api_key").exists() and not (tmp_path / "judge_endpoint_keys.json").exists()
    settings = make_app({"JUDGE_BASE_URL": judge_server.url}).extensions["judge_settings"]  # and again: no files
    assert settings.environ()["JUDGE_API_KEY"] == SECRET
    assert settings.endpoints()["other"].api_key == "sk-other-endpoint"
    assert SECRET not in json.dumps(app.extensions["store"].get_setting("judge_api_key"))


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

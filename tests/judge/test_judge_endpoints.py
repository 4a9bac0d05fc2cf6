"""The judge key stays with its endpoint: requests pick among named endpoints and never bring a URL of their own."""
from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from judge import Judge, JudgeConfig
from judge import endpoints as judge_endpoints
from kinds.dialogue.prompts import DialogueContext, prompt
from tests.conftest import jsonl, session_line, wait_for
from tests.judge_server import JudgeServer

SECRET = "sk-test-secret-key"  # the default endpoint's key in the judge_env fixture
OTHER_KEY = "sk-other-endpoint-key"


@pytest.fixture
def stranger():
    """A second local server that records every header it receives: the key must never reach it."""
    with JudgeServer() as server:
        yield server


def _upload(client, data: bytes = None) -> str:
    response = client.post("/api/uploads", data={"file": (io.BytesIO(data or jsonl(session_line())), "log.jsonl")},
                           content_type="multipart/form-data")
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


def _headers_text(server: JudgeServer) -> str:
    return json.dumps(server.seen_headers)


# -- parsing and choosing ---------------------------------------------------------------------

def test_parse_default_and_named_endpoints():
    env = {"JUDGE_BASE_URL": "http://a:1/v1/", "JUDGE_API_KEY": "k0", "JUDGE_MODELS": "m1, m2",
           "LOCAL_KEY": "k2",
           "JUDGE_ENDPOINTS": json.dumps({"local": {"base_url": "http://b:2/v1", "api_key_env": "LOCAL_KEY",
                                                    "models": ["q"]},
                                          "open": {"base_url": "http://c:3/v1"}})}
    endpoints = judge_endpoints.parse(env)
    assert list(endpoints) == ["default", "local", "open"]
    assert (endpoints["default"].base_url, endpoints["default"].api_key, endpoints["default"].models) == \
        ("http://a:1/v1", "k0", ("m1", "m2"))
    assert (endpoints["local"].base_url, endpoints["local"].api_key, endpoints["local"].models) == \
        ("http://b:2/v1", "k2", ("q",))
    assert endpoints["open"].api_key is None and endpoints["open"].allows("anything")
    assert not endpoints["local"].allows("gpt-4o")
    assert "k2" not in repr(endpoints["local"]) and "api_key" not in endpoints["local"].public()


def test_each_endpoint_has_its_own_prices_never_anothers():
    from judge import prices

    env = {"JUDGE_PRICE_PROMPT_PER_M": "2", "JUDGE_PRICE_COMPLETION_PER_M": "10",
           "JUDGE_ENDPOINTS": json.dumps({"local": {"base_url": "http://b:2/v1", "price_prompt_per_m": 0.5,
                                                    "price_completion_per_m": "1.5"},
                                          "open": {"base_url": "http://c:3/v1"}})}
    assert judge_endpoints.parse(env)["local"].prices == (0.5, 1.5)
    assert prices(env) == prices(env, endpoint="default") == {"prompt": 2.0, "completion": 10.0}
    assert prices(env, endpoint="local") == {"prompt": 0.5, "completion": 1.5}
    assert prices(env, endpoint="open") == {"prompt": None, "completion": None}
    assert prices(env, batch=True, endpoint="local") == {"prompt": 0.25, "completion": 0.75, "batch_factor": 0.5}
    for bad in (-1, "cheap", True, [1]):
        named = {"local": {"base_url": "http://b:2/v1", "price_completion_per_m": bad}}
        with pytest.raises(ValueError, match="price_completion_per_m of judge endpoint 'local' must be a number of 0"):
            judge_endpoints.parse({"JUDGE_ENDPOINTS": json.dumps(named)})


@pytest.mark.parametrize("value, fragment", [
    ("{not json", "JUDGE_ENDPOINTS must be a JSON object"),
    ("[1, 2]", "JUDGE_ENDPOINTS must be a JSON object"),
    ('{"x": {"base_url": "ftp://h/v1"}}', "must be an http:// or https:// URL"),
    ('{"x": {"url": "http://h/v1"}}', "unknown fields: url"),
    ('{"default": {"base_url": "http://h/v1"}}', "defined twice"),
    ('{"bad name": {"base_url": "http://h/v1"}}', "An endpoint name is"),
    ('{"x": {"base_url": "http://h/v1", "models": "a,b", "api_key": 3}}', "must be a string"),
    ('{"x": {"base_url": "http://h/v1", "models": [1]}}', "must be a list of model names"),
])
def test_invalid_endpoints_are_refused_with_the_reason(value, fragment):
    with pytest.raises(ValueError, match=fragment):
        judge_endpoints.parse({"JUDGE_ENDPOINTS": value})


def test_choose_by_name_by_equal_url_and_never_an_unknown_url():
    endpoints = judge_endpoints.parse({"JUDGE_BASE_URL": "http://a:1/v1",
                                       "JUDGE_ENDPOINTS": '{"local": {"base_url": "http://b:2/v1"}}'})
    assert judge_endpoints.choose(endpoints).name == "default"
    assert judge_endpoints.choose(endpoints, "local").name == "local"
    assert judge_endpoints.choose(endpoints, base_url="http://b:2/v1/").name == "local"
    assert judge_endpoints.choose(endpoints, "local", "http://b:2/v1").name == "local"
    with pytest.raises(ValueError, match=r"'http://evil:9/v1' is not one this server allows.*default \(http://a:1/v1\)"):
        judge_endpoints.choose(endpoints, base_url="http://evil:9/v1")
    with pytest.raises(ValueError, match="Unknown judge endpoint 'nope'"):
        judge_endpoints.choose(endpoints, "nope")
    with pytest.raises(ValueError, match="is not the URL of judge endpoint 'local'"):
        judge_endpoints.choose(endpoints, "local", "http://evil:9/v1")


# -- the API never connects to a URL it was not configured with ---------------------------------

def test_api_refuses_an_unknown_base_url_without_connecting(client, judge_server, stranger):
    upload_id = _upload(client)
    response = client.post("/api/evaluations", json={"upload_id": upload_id, "judge": {"base_url": stranger.url}})
    assert response.status_code == 400
    message = response.get_json()["error"]
    assert stranger.url in message and "is not one this server allows" in message and "default" in message
    assert stranger.seen_headers == [] and judge_server.seen_headers == []
    assert client.get("/api/evaluations").get_json() == []


def test_api_refuses_an_unknown_base_url_for_conversation_annotation(client, stranger):
    from tests.kinds.conversation.test_conversation_pipeline import own_conversation
    items = json.dumps([own_conversation("agent", 2), own_conversation("human", 2)]).encode()
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(items), "c.json")},
                         content_type="multipart/form-data").get_json()
    response = client.post("/api/evaluations", json={"upload_id": upload["id"], "annotate": True,
                                                     "judge": {"base_url": stranger.url + "/"}})
    assert response.status_code == 400 and "is not one this server allows" in response.get_json()["error"]
    assert stranger.seen_headers == []


def test_the_default_endpoint_by_its_url_gets_its_own_key(client, judge_server):
    upload_id = _upload(client)
    response = client.post("/api/evaluations", json={"upload_id": upload_id, "judge": {"base_url": judge_server.url}})
    assert response.status_code == 202
    assert wait_for(client, response.get_json()["id"])["status"] == "done"
    assert judge_server.last_authorization == f"Bearer {SECRET}"


def test_a_named_endpoint_gets_its_own_key_and_never_the_default_one(make_app, judge_env, judge_server, stranger):
    env = {**judge_env, "JUDGE_ENDPOINTS": json.dumps({"other": {"base_url": stranger.url, "api_key": OTHER_KEY}})}
    client = make_app(env).test_client()
    upload_id = _upload(client)
    response = client.post("/api/evaluations", json={"upload_id": upload_id, "judge": {"endpoint": "other"}})
    assert response.status_code == 202
    body = wait_for(client, response.get_json()["id"])
    assert body["status"] == "done"
    assert stranger.requests == 12 and judge_server.requests == 0  # 3 rounds x 2 methods x fine/binary
    assert SECRET not in _headers_text(stranger) and OTHER_KEY in _headers_text(stranger)
    stored = client.get(f"/api/evaluations/{body['id']}").get_data(as_text=True)
    assert OTHER_KEY not in stored and SECRET not in stored


def test_an_endpoint_without_a_key_sends_no_key(make_app, judge_env, judge_server, stranger):
    env = {**judge_env, "JUDGE_ENDPOINTS": json.dumps({"keyless": {"base_url": stranger.url}})}
    client = make_app(env).test_client()
    response = client.post("/api/evaluations", json={"upload_id": _upload(client), "judge": {"endpoint": "keyless"}})
    assert wait_for(client, response.get_json()["id"])["status"] == "done"
    assert stranger.requests > 0 and SECRET not in _headers_text(stranger)


def test_models_not_allowed_on_an_endpoint_are_refused(make_app, judge_env):
    client = make_app({**judge_env, "JUDGE_MODELS": "judge-test,judge-big"}).test_client()
    upload_id = _upload(client)
    response = client.post("/api/evaluations", json={"upload_id": upload_id, "judge": {"model": "gpt-4o"}})
    assert response.status_code == 400
    assert response.get_json()["error"] == ("Judge endpoint 'default' does not allow model 'gpt-4o'. "
                                            "Allowed: judge-test, judge-big.")
    assert client.post("/api/evaluations", json={"upload_id": upload_id,
                                                 "judge": {"model": "judge-big"}}).status_code == 202


def test_api_key_and_unknown_fields_are_refused(client):
    upload_id = _upload(client)
    for judge, fragment in (({"api_key": "sk-x"}, "cannot be sent with a request"),
                            ({"endpoint": "nope"}, "Unknown judge endpoint 'nope'"),
                            ({"headers": {}}, "Unknown judge settings: headers")):
        response = client.post("/api/evaluations", json={"upload_id": upload_id, "judge": judge})
        assert response.status_code == 400 and fragment in response.get_json()["error"]


def test_an_evaluation_whose_endpoint_is_gone_fails_without_connecting(make_app, judge_env, stranger):
    """A recorded evaluation resolves its endpoint at run time: once the endpoint is removed nothing is sent."""
    app = make_app(judge_env)
    client = app.test_client()
    settings = app.extensions["judge_settings"]
    settings.add_endpoint("other", stranger.url, "", OTHER_KEY)
    upload_id = _upload(client)
    store = app.extensions["store"]
    from pipeline.evaluations import create_evaluation
    evaluation = create_evaluation(store, upload_id, judge={"endpoint": "other"}, environ=settings.environ())
    settings.remove_endpoint("other")
    app.extensions["runner"].run(evaluation["id"])
    record = store.get_evaluation(evaluation["id"], with_result=False)
    assert record["status"] == "failed" and "Unknown judge endpoint 'other'" in record["error"]
    assert stranger.seen_headers == []


def test_a_legacy_evaluation_recorded_with_a_foreign_url_is_never_sent_the_key(app, client, stranger):
    """Evaluations stored before endpoints existed carry a base_url: it must match a configured endpoint."""
    upload_id = _upload(client)
    store = app.extensions["store"]
    from kinds.host import new_id
    evaluation = {"id": new_id(), "upload_id": upload_id, "kind": "dialogue", "methods": ["A"],
                  "settings": {"base_url": stranger.url, "model": "m", "modes": ["fine", "binary"]}, "total": 6}
    store.add_evaluation(evaluation)
    app.extensions["runner"].run(evaluation["id"])
    record = store.get_evaluation(evaluation["id"], with_result=False)
    assert record["status"] == "failed" and "is not one this server allows" in record["error"]
    assert stranger.seen_headers == []


# -- the settings page ----------------------------------------------------------------------------

def test_settings_page_adds_lists_tests_and_removes_an_endpoint(make_app, judge_env, stranger):
    app = make_app(judge_env)
    client = app.test_client()
    response = client.post("/settings/endpoints", data={"name": "other", "base_url": stranger.url + "/",
                                                        "models": "judge-test, m2", "api_key": OTHER_KEY})
    assert response.status_code == 302
    page = client.get("/settings").get_data(as_text=True)
    assert "other" in page and stranger.url in page and "judge-test, m2" in page
    assert OTHER_KEY not in page and SECRET not in page
    store = app.extensions["store"]
    assert list(store.get_setting("judge_endpoint_keys")) == ["other"]  # encrypted (tests/web/test_settings.py)
    assert OTHER_KEY not in json.dumps(store.get_setting("judge_endpoint_keys"))
    assert OTHER_KEY not in json.dumps(store.get_setting("judge_endpoints", {}))

    tested = client.post("/settings/test", data={"endpoint": "other"}).get_data(as_text=True)
    assert 'id="test-result"' in tested and "The judge answered" in tested
    assert stranger.last_authorization == f"Bearer {OTHER_KEY}" and SECRET not in _headers_text(stranger)

    # the upload page offers the endpoint, and the form picks it
    upload_id = _upload(client)
    assert 'name="endpoint"' in client.get(f"/uploads/{upload_id}").get_data(as_text=True)
    response = client.post(f"/uploads/{upload_id}/evaluate", data={"endpoint": "other", "methods": ["A"]})
    assert response.status_code == 302
    evaluation_id = response.headers["Location"].rsplit("/", 1)[-1]
    assert wait_for(client, evaluation_id)["status"] == "done"
    assert SECRET not in _headers_text(stranger)

    assert client.post("/settings/endpoints/other/remove").status_code == 302
    assert "other" not in store.get_setting("judge_endpoint_keys")
    assert client.post("/settings/endpoints/other/remove").status_code == 404


@pytest.mark.parametrize("form, fragment", [
    ({"name": "default", "base_url": "http://127.0.0.1:9/v1"}, "exists already"),
    ({"name": "x y", "base_url": "http://127.0.0.1:9/v1"}, "An endpoint name is"),
    ({"name": "x", "base_url": "file:///etc/passwd"}, "must be an http:// or https:// URL"),
])
def test_settings_page_refuses_a_bad_endpoint(client, form, fragment):
    response = client.post("/settings/endpoints", data=form)
    assert response.status_code == 400 and fragment in response.get_data(as_text=True)


def test_cli_scores_with_a_named_endpoint(make_app, judge_env, judge_server, stranger, tmp_path):
    env = {**judge_env, "JUDGE_ENDPOINTS": json.dumps({"other": {"base_url": stranger.url}})}
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(session_line(rounds=1, methods=("A",))))
    result = make_app(env).test_cli_runner().invoke(args=["score", str(path), "--judge-endpoint", "other"])
    assert result.exit_code == 0, result.output
    assert stranger.requests == 2 and judge_server.requests == 0
    bad = make_app(env).test_cli_runner().invoke(args=["score", str(path), "--judge-endpoint", "nope"])
    assert bad.exit_code == 2 and "Unknown judge endpoint 'nope'" in bad.output


def test_a_redirecting_endpoint_gets_no_second_request_and_the_key_goes_nowhere(stranger):
    class Redirect(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - stdlib naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(307)
            self.send_header("Location", stranger.url + "/chat/completions")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = JudgeConfig(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key=SECRET, max_retries=2)
        with Judge(config) as judge:
            verdict = judge.judge(prompt("fine", DialogueContext("p", "c", [], "hi", "hello"), "en"))
    finally:
        server.shutdown()
        server.server_close()
    assert verdict.status == "failed" and "HTTP 307" in verdict.error and verdict.attempts == 1
    assert stranger.seen_headers == [] and SECRET not in verdict.error

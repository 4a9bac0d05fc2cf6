"""The API's contract: GET /api/openapi.json describes every /api route and the JSON twins (from the operations' own
models), and Schemathesis fuzzes every operation of it against the app (its coverage cases, then random ones), with
accounts on and a token, once on SQLite and once on PostgreSQL: no 5xx, every answer in the documented schema, every
status documented, every request the document allows accepted, and a method no operation has answered 405 with its
Allow header. The 500s the issue found by hand are regression tests here too."""
from __future__ import annotations

import io
import itertools
import re
import time

import pytest

from common.contract import contract_of
from tests.conftest import ROOT, jsonl
from web.openapi import described

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)
from schemathesis.generation.hypothesis.builder import (  # noqa: E402
    HypothesisTestConfig,
    HypothesisTestMode,
    create_test,
)

# Random cases per operation, after its coverage cases (every operation's boundary values, missing and wrong-typed
# fields, a method it lacks: all of them run on both stores). 25 on SQLite reach every branch of the contract, which
# is the web layer's and the same on either store; on PostgreSQL the coverage cases already bring its own edges (huge
# numbers, NUL, long and odd text), and a few random cases more check that nothing else differs.
EXAMPLES = {"sqlite": 25, "postgresql": 5}
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance, content_type_conformance,
          positive_data_acceptance, unsupported_method]
PASSWORD = "correct horse battery staple"
# Requests the document allows that the server may still refuse with a 400, for what no schema can say: the
# positive_data_acceptance check lets these operations answer 400 too. Every other operation must take every request
# its document allows; that no text of any request may hold NUL, and no id be empty, these declare too
# (test_no_request_the_document_allows_holds_nul_or_an_empty_id).
BEYOND_THE_DOCUMENT = {
    "POST /api/uploads": "the file's content, which its kind validates",
    "POST /api/uploads/{upload_id}/{name}": "the attached file's content, which the upload's kind checks against it",
    "POST /api/evaluations/{evaluation_id}/human-ratings": "the ratings file's content",
    "POST /api/evaluations/{evaluation_id}/people-labels": "whether the evaluation is a conversation one and holds the "
                                                           "conversations named, and the labeller's name",
    "POST /api/references": "the reference set file's content",
    "POST /api/evaluations": "whether the upload exists, and the start fields its kind accepts (its methods, ...)",
    "POST /api/simulations": "the personas' upload, the endpoints the operator named, the methods' names",
    "POST /api/rubrics": "the rubric file's content, which kinds/rubrics/ reads",
    "GET /api/evaluations": "whether `since` and `until` are days of the calendar (2026-02-30 has a day's shape)",
    "GET /api/datasets/{dataset}": "choice=tag without a tag",
    "GET /datasets/{dataset}.json": "choice=tag without a tag",
    "GET /share/datasets/{token}.json": "choice=tag without a tag",
}


def session_line(session_id: str = "s1") -> dict:
    return {"session_id": session_id, "user_profile": "Likes hiking.", "user_personality": "Calm.",
            "rounds": [{"round": 1, "user_message": "Hi", "responses": {"A": "Hello!", "B": "Hey."}}]}


def contract_app(make_app, judge_server, **extra):
    """An app with accounts on, one admin and their token; an upload, a finished evaluation and a share to aim at."""
    from web import accounts

    app = make_app({"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
                    "JUDGE_MAX_RETRIES": "0"}, AUTH="on", HF_BASE_URL="http://127.0.0.1:9/", **extra)
    store = app.extensions["store"]
    user = accounts.create_user(store, "fuzz", PASSWORD, is_admin=True)
    _record, token = accounts.create_token(store, user["id"], "fuzz")
    headers = {"Authorization": f"Bearer {token}"}
    client = app.test_client()
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "log.jsonl")}, headers=headers)
    assert upload.status_code == 201, upload.get_json()
    upload_id = upload.get_json()["id"]
    evaluation_id = client.post("/api/evaluations", json={"upload_id": upload_id}, headers=headers).get_json()["id"]
    deadline = time.monotonic() + 30
    while client.get(f"/api/evaluations/{evaluation_id}", headers=headers).get_json()["status"] in ("queued",
                                                                                                 "running"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    share = client.post(f"/api/evaluations/{evaluation_id}/shares", headers=headers).get_json()
    dataset = client.get(f"/api/evaluations/{evaluation_id}/dataset", headers=headers).get_json()["dataset"]
    ids = {"upload_id": upload_id, "evaluation_id": evaluation_id, "share_id": share["id"], "row_id": evaluation_id,
           "token": share["token"], "name": "aloe", "dataset": dataset}  # name: a rubric's
    return app, headers, ids


def aim(case, ids: dict, turn: int) -> None:
    """Every other case of an operation aims at the real items (but a DELETE's, which would take them away): its
    path's ids are the real ones; the others keep the random ids Schemathesis drew."""
    if turn % 2 == 0 and case.method != "DELETE":
        for name in case.path_parameters or {}:
            if name in ids:
                case.path_parameters[name] = ids[name]
        if (case.path_parameters or {}).get("table") == "uploads":
            case.path_parameters["row_id"] = ids["upload_id"]
        if "name" in (case.path_parameters or {}) and case.path.startswith("/api/uploads/"):
            case.path_parameters["name"] = "scores"  # the attachment a dialogue upload takes


@pytest.fixture(params=["sqlite", "postgresql"])
def fuzzed(request, make_app, judge_server):
    extra = {}
    if request.param == "postgresql":
        extra["DATABASE_URL"] = request.getfixturevalue("postgres_server").url()
    app, headers, ids = contract_app(make_app, judge_server, **extra)
    accepted = schemathesis.Config().projects.default.checks.positive_data_acceptance.expected_statuses
    config = schemathesis.Config.from_dict({"operations": [
        {"include-name": label, "checks": {"positive_data_acceptance": {"expected-statuses": [*accepted, "400"]}}}
        for label in BEYOND_THE_DOCUMENT]})
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", app, config=config)
    return schema, headers, ids, EXAMPLES[request.param]


def test_every_route_of_the_api_is_described(make_app):
    app = make_app({})
    rules = [r for r in app.url_map.iter_rules() if described(r)]
    assert len(rules) >= 30
    missing = [r.rule for r in rules if contract_of(app.view_functions[r.endpoint]) is None]
    assert missing == []
    document = app.test_client().get("/api/openapi.json").get_json()
    assert document["openapi"] == "3.1.0"
    documented = {(path, method) for path, ops in document["paths"].items() for method in ops}
    for rule in rules:
        path = rule.rule
        for name in rule.arguments:
            path = path.replace(f"<{name}>", "{%s}" % name)
        path = path.replace("<any(evaluations, uploads):table>", "{table}")
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            assert (path, method.lower()) in documented, (path, method)
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer",
        "description": "An API token (psb_...) from the account page; needed when accounts are on (AUTH=on)."}
    create = document["paths"]["/api/evaluations"]["post"]
    body = document["components"]["schemas"][create["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                                             .rsplit("/", 1)[1]]
    assert body["required"] == ["upload_id"] and body["additionalProperties"] is False
    assert set(create["responses"]) >= {"202", "400", "401", "403", "413", "503"}


def test_the_document_is_linked_from_the_readme_and_the_api_page():
    assert "/api/openapi.json" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "/api/openapi.json" in (ROOT / "docs" / "api.md").read_text(encoding="utf-8")


def test_the_document_needs_no_sign_in_but_the_api_does(make_app, judge_server):
    app, headers, ids = contract_app(make_app, judge_server)
    client = app.test_client()
    assert client.get("/api/openapi.json").status_code == 200
    assert client.get(f"/api/evaluations/{ids['evaluation_id']}").status_code == 401
    assert client.get(f"/api/evaluations/{ids['evaluation_id']}", headers=headers).status_code == 200


def test_the_api_keeps_its_contract_under_fuzzing(fuzzed):
    schema, headers, ids, examples = fuzzed
    seen: dict[str, set[int]] = {}
    failures = {}
    for result in schema.get_all_operations():
        operation, turns = result.ok(), itertools.count()

        def check(case):
            aim(case, ids, next(turns))
            # identity: the in-process client does not undo the gzip a real client would
            response = case.call_and_validate(headers={**headers, "Accept-Encoding": "identity"}, checks=CHECKS)
            seen.setdefault(operation.label, set()).add(response.status_code)

        test = create_test(operation=operation, test_func=check, config=HypothesisTestConfig(
            project=schema.config, modes=[HypothesisTestMode.COVERAGE, HypothesisTestMode.FUZZING],
            settings=settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])))
        try:
            test()
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - every operation's failure is reported together
            failures[operation.label] = str(exc)[:3000]
    assert failures == {}, "\n\n".join(f"{label}:\n{text}" for label, text in failures.items())
    assert len(seen) >= 35
    # the fuzzing reached past the door: real items were found, changed and refused
    assert 200 in seen["GET /api/evaluations/{evaluation_id}"] and 404 in seen["GET /api/evaluations/{evaluation_id}"]
    assert 202 in seen["POST /api/evaluations"] | seen["POST /api/evaluations/{evaluation_id}/rerun-failed"]
    assert 400 in seen["POST /api/evaluations"] and 200 in seen["PATCH /api/{table}/{row_id}"]
    assert 405 in seen["GET /api/evaluations/{evaluation_id}"]  # the coverage cases tried a method it lacks
    assert 400 in seen["POST /api/uploads/{upload_id}/{name}"] and 200 in seen["GET /api/uploads/{upload_id}/{name}"]


def strings(schema: dict, components: dict, where: str):
    """Every text a request's schema allows, as (where, its schema): through $ref, anyOf, items and properties."""
    if "$ref" in schema:
        yield from strings(components[schema["$ref"].rsplit("/", 1)[1]], components, where)
        return
    if schema.get("type") == "string" and "contentMediaType" not in schema:
        yield where, schema
    for option in schema.get("anyOf", ()):
        yield from strings(option, components, where)
    if "items" in schema:
        yield from strings(schema["items"], components, f"{where}[]")
    for name, field in schema.get("properties", {}).items():
        yield from strings(field, components, f"{where}.{name}")
    for key in ("additionalProperties", "propertyNames"):
        if isinstance(schema.get(key), dict):
            yield from strings({"type": "string", **schema[key]}, components, f"{where}({key})")


def test_no_request_the_document_allows_holds_nul_or_an_empty_id(make_app):
    # the door refuses NUL in any text, and an id cannot be empty: the document says both wherever a request carries
    # text, so that a client (and Schemathesis) is never refused for a request the document allows
    document = make_app({}).test_client().get("/api/openapi.json").get_json()
    components = document["components"]["schemas"]
    texts, ids = [], []
    for path, operations in document["paths"].items():
        for method, spec in operations.items():
            for parameter in spec.get("parameters", ()):
                found = list(strings(parameter["schema"], components, f"{method} {path} {parameter['name']}"))
                texts += found
                ids += found if parameter["in"] == "path" or parameter["name"].endswith("_id") else []
            for media in spec.get("requestBody", {}).get("content", {}).values():
                found = list(strings(media["schema"], components, f"{method} {path} body"))
                texts += found
                ids += [(where, text) for where, text in found if where.endswith("_id")]

    def allows(text: dict, value: str) -> bool:
        return (text.get("const", value) == value and value in text.get("enum", [value])
                and len(value) >= text.get("minLength", 0)
                and ("pattern" not in text or re.search(text["pattern"], value) is not None))

    assert len(texts) > 60 and len(ids) > 30
    assert [where for where, text in texts if allows(text, "a\x00b") or allows(text, "\x00")] == []
    assert [where for where, text in ids if allows(text, "")] == []
    assert all(allows(text, "e7c1a2") for where, text in ids if "enum" not in text)  # and they allow real ids


def test_settings_whose_other_keys_the_server_refuses_list_every_key_it_takes():
    # the document says these objects have no other keys: the server must take every one they list, and no other
    from pipeline.judge_requests import REQUEST_FIELDS
    from simulate.request import FIELDS, METHOD_FIELDS, SIMULATOR_FIELDS
    from web import schemas

    assert set(schemas.JudgeRequest.model_fields) == set(REQUEST_FIELDS)
    assert set(schemas.Speaker.model_fields) == set(SIMULATOR_FIELDS)
    assert set(schemas.SimulatedMethod.model_fields) == set(METHOD_FIELDS)
    assert set(schemas.SimulationRequest.model_fields) == set(FIELDS)
    for model in (schemas.JudgeRequest, schemas.Speaker, schemas.SimulatedMethod):
        assert model.model_json_schema()["additionalProperties"] is False


def test_a_method_an_address_lacks_is_a_405_naming_the_ones_it_has(make_app):
    client = make_app({}).test_client()
    answer = client.put("/api/evaluations")
    assert answer.status_code == 405
    assert set(answer.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS", "POST"}
    assert answer.get_json() == {"error": "This address does not accept that method."}
    page = client.delete("/compare")
    assert page.status_code == 405 and set(page.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS"}
    assert page.mimetype == "text/html"


def test_a_resumable_upload_may_give_its_size_as_a_whole_float(make_app):
    # JSON's 2048.0 is the integer the document asks for (found by the fuzzing: it was refused)
    client = make_app({}).test_client()
    answer = client.post("/api/uploads/chunked", json={"filename": "log.jsonl", "size": 2048.0})
    assert answer.status_code == 201 and answer.get_json()["size"] == 2048
    assert client.post("/api/uploads/chunked", json={"filename": "log.jsonl", "size": 2048.5}).status_code == 400
    blank = client.post("/api/uploads/chunked", json={"filename": " ", "size": 10})
    assert blank.status_code == 400 and blank.get_json()["error"] == "Give the file's name as 'filename'."


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
@pytest.mark.parametrize("body, field", [
    ({"upload_id": [None]}, "upload_id"),
    ({"upload_id": {"a": 1}}, "upload_id"),
    ({"upload_id": "x", "methods": "A"}, "methods"),
    ({"upload_id": "x", "judge": {"temperature": "hot"}}, "judge.temperature"),
    ({"upload_id": "x", "judges": [{}, {"model": 3}]}, "judges[1].model"),
])
def test_a_wrong_type_is_a_400_naming_the_field(request, make_app, judge_server, database, body, field):
    extra = {"DATABASE_URL": request.getfixturevalue("postgres_server").url()} if database == "postgresql" else {}
    client = make_app({"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test"}, **extra).test_client()
    answer = client.post("/api/evaluations", json=body)
    assert answer.status_code == 400
    assert answer.get_json()["error"].startswith(f"The field '{field}' is wrong: ")
    assert answer.get_json()["problems"][0]["path"] == field
    if field == "judge.temperature":  # the example of docs/api.md, word for word
        assert answer.get_json() == {
            "error": "The field 'judge.temperature' is wrong: Input should be a valid number, unable to parse string "
                     "as a number.",
            "problems": [{"path": "judge.temperature",
                          "message": "Input should be a valid number, unable to parse string as a number"}]}


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_text_that_cannot_be_stored_is_refused_at_the_door(request, make_app, database):
    extra = {"DATABASE_URL": request.getfixturevalue("postgres_server").url()} if database == "postgresql" else {}
    client = make_app({}, **extra).test_client()
    nested = "[" * 3000 + "]" * 3000
    for raw, words in (('{"upload_id": "\\ud800"}', "lone surrogate"),
                       ('{"upload_id": "a\\u0000b"}', "NUL"),
                       ('{"upload_id": ' + nested + "}", "deeper than 64 levels"),
                       ('{"upload_id": "a", "upload_id": "b"}', "upload_id")):
        answer = client.post("/api/evaluations", data=raw, content_type="application/json")
        assert answer.status_code == 400, (raw[:40], answer.status_code)
        assert words.lower() in answer.get_json()["error"].lower(), (raw[:40], answer.get_json())
    for address in ("/api/uploads/a%00b", "/api/evaluations/a%00b", "/api/simulations/a%00b"):
        assert client.get(address).status_code == 404
    answer = client.get("/api/evaluations?kind=a%00b")
    assert answer.status_code == 400 and "NUL" in answer.get_json()["error"]
    unreadable = client.get("/api/evaluations?q=%ED%A0%80")  # not UTF-8: read as U+FFFD, no match
    assert unreadable.status_code == 200 and unreadable.get_json() == []
    unknown = client.get("/api/evaluations?kind=%ED%A0%80")  # a kind is one of those the document lists
    assert unknown.status_code == 400 and "Unknown kind" in unknown.get_json()["error"]
    named = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "log\x00.jsonl")})
    assert named.status_code == 400 and "'file' holds a NUL character" in named.get_json()["error"]


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_number_no_column_holds_is_a_400(request, make_app, database):
    # found by the fuzzing: a review of session 10**30 reached the database (OverflowError on SQLite)
    extra = {"DATABASE_URL": request.getfixturevalue("postgres_server").url()} if database == "postgresql" else {}
    client = make_app({}, **extra).test_client()
    answer = client.put("/api/evaluations/e1/reviews", json={"index": 10**30, "round": 1, "method": "A",
                                                            "mode": "fine", "decision": "agreed"})
    assert answer.status_code == 400 and answer.get_json()["problems"][0]["path"] == "index"
    answer = client.delete("/api/evaluations/e1/reviews?index=1&round=99999999999999999999&method=A&mode=fine")
    assert answer.status_code == 400 and answer.get_json()["problems"][0]["path"] == "round"
    answer = client.get("/api/evaluations/e1/sessions?page=-1")
    assert answer.status_code == 400 and answer.get_json()["problems"][0]["path"] == "page"


def test_a_body_that_is_not_utf8_is_a_400(make_app):
    client = make_app({}).test_client()
    for raw in (b'{"upload_id": "\xff"}', '{"upload_id": "\ud800"}'.encode("utf-8", "surrogatepass")):
        answer = client.post("/api/evaluations", data=raw, content_type="application/json")
        assert answer.status_code == 400 and "not UTF-8" in answer.get_json()["error"]

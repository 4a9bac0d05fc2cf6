"""The OpenAPI 3.1 document of the JSON API (GET /api/openapi.json), made from the contracts the operations declare
(common/contract.py) and the app's own routes: every /api route and the JSON twins of the pages."""
from __future__ import annotations

import re
from typing import Any

from flask import Flask
from pydantic import BaseModel
from werkzeug.routing import Rule

from common.contract import Error, Operation, Refused, contract_of, model_of

REF = "#/components/schemas/{model}"
_ARGUMENT = re.compile(r"<(?:(\w+)(?:\(([^)]*)\))?:)?(\w+)>")
COMMON = {  # statuses any operation may answer, besides its own
    401: "Sign-in required (accounts on, AUTH=on): send a token as 'Authorization: Bearer psb_...'",
    403: "Not allowed for this account, or (no accounts) not from the machine the dashboard runs on",
    503: "The database cannot be reached right now; try again after Retry-After seconds",
}


def described(rule: Rule) -> bool:
    """Whether a route belongs in the document: the API and the JSON twins of the pages."""
    return rule.rule.startswith("/api/") or rule.rule.endswith(".json") and rule.endpoint != "static"


def document(app: Flask, version: str) -> dict:
    """The OpenAPI 3.1 document of the app's API."""
    paths: dict[str, dict] = {}
    schemas: dict[str, Any] = {}
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        spec = contract_of(app.view_functions[rule.endpoint])
        if not described(rule) or spec is None:
            continue
        path, parameters = _path(rule)
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            paths.setdefault(path, {})[method.lower()] = _operation(spec, rule, parameters, schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": "PersonaSteer Bench", "version": version,
                 "description": "Upload, validate, score and compare runs of persona-aligned chat agents, user "
                                "simulators and generative agents (docs/api.md)."},
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {"schemas": schemas,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                                      "description": "An API token (psb_...) from the account page; "
                                                                     "needed when accounts are on (AUTH=on)."}}},
        "security": [{"bearer": []}, {}],  # a token, or nothing when accounts are off
    }


def _path(rule: Rule) -> tuple[str, list[dict]]:
    """A Flask rule as an OpenAPI path, and its path parameters."""
    parameters = []

    def parameter(match: re.Match) -> str:
        converter, arguments, name = match.groups()
        schema: dict[str, Any] = {"type": "string"}
        if converter == "any":
            schema["enum"] = [item.strip().strip("'\"") for item in arguments.split(",")]
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
        return "{" + name + "}"

    return _ARGUMENT.sub(parameter, rule.rule), parameters


def _operation(spec: Operation, rule: Rule, parameters: list[dict], schemas: dict) -> dict:
    """One operation of the document."""
    section = rule.rule.removeprefix("/api").split("/")[1].split(".")[0]  # evaluations, uploads, ...
    operation: dict[str, Any] = {"operationId": rule.endpoint.replace(".", "_"), "summary": spec.summary,
                                 "tags": list(spec.tags) or [section]}
    query = _schema(spec.query, schemas, "validation") if spec.query else {}
    if parameters or query:  # a list in the query is the name repeated (OpenAPI's default, style form, explode)
        operation["parameters"] = parameters + [
            {"name": name, "in": "query", "required": name in query.get("required", ()), "schema": field}
            for name, field in query.get("properties", {}).items()]
    body = _request_body(spec, schemas)
    if body:
        operation["requestBody"] = body
    responses: dict[str, Any] = {}
    for status, model in sorted({**_implied(spec, parameters), **spec.responses}.items()):
        responses[str(status)] = _response(status, model, spec, schemas)
    for status, text in COMMON.items():
        responses.setdefault(str(status), {"description": text, "content": {"application/json": {
            "schema": _ref(Error, schemas, "serialization")}}})
    operation["responses"] = responses
    return operation


def _implied(spec: Operation, parameters: list[dict]) -> dict[int, type[BaseModel] | None]:
    """Statuses an operation answers by its shape: 400 when it takes input, 404 with an id in its path, 413 with
    a body."""
    implied: dict[int, type[BaseModel] | None] = {}
    if spec.body or spec.form or spec.query or spec.raw:
        implied[400] = Refused
    if parameters:
        implied[404] = Error
    if spec.body or spec.form or spec.raw:
        implied[413] = Error
    return implied


def _request_body(spec: Operation, schemas: dict) -> dict | None:
    if spec.body is not None:
        model = model_of(spec.body)
        return {"required": True, "content": {"application/json": {"schema": _ref(model, schemas, "validation")}}}
    if spec.form is not None:
        form = _schema(spec.form, schemas, "validation")
        properties = {**form.get("properties", {}), **{name: {"type": "string", "contentMediaType":
                                                              "application/octet-stream"} for name in spec.files}}
        return {"required": True, "content": {"multipart/form-data": {"schema": {
            "type": "object", "properties": properties, "required": [*spec.files, *form.get("required", [])]}}}}
    if spec.raw is not None:
        return {"required": True, "content": {spec.raw: {"schema": {"type": "string",
                                                                    "contentMediaType": spec.raw}}}}
    return None


def _response(status: int, model: type[BaseModel] | None, spec: Operation, schemas: dict) -> dict:
    description = _description(status)
    if model is None:
        return {"description": description}
    media = spec.produces if 200 <= status < 300 else "application/json"
    return {"description": description, "content": {media: {"schema": _ref(model, schemas, "serialization")}}}


def _description(status: int) -> str:
    return {200: "OK", 201: "Created", 202: "Accepted: it runs in the background", 204: "Done; no content",
            400: "The request is wrong: the answer names the field (or the file's line and path) and what to fix",
            404: "No such item", 409: "Not now: the item is in a state that does not allow it",
            413: "The body is larger than the upload limit (MAX_UPLOAD_MB)"}.get(status, str(status))


def _schema(model: type[BaseModel], schemas: dict, mode: str) -> dict:
    """A model's JSON schema, its nested models moved to components."""
    schema = model.model_json_schema(ref_template=REF, mode=mode)  # type: ignore[arg-type]
    schemas.update(schema.pop("$defs", {}))
    return schema


def _ref(model: type[BaseModel], schemas: dict, mode: str) -> dict:
    """A reference to a model's schema in components (added there once)."""
    name = model.__name__
    if name not in schemas:
        schemas[name] = _schema(model, schemas, mode)
    return {"$ref": REF.format(model=name)}


"""The OpenAPI 3.1 document of the JSON API (GET /api/openapi.json), made from the contracts the operations declare
(common/contract.py) and the app's own routes: every /api route and the JSON twins of the pages."""
from __future__ import annotations

import re
from typing import Any

from flask import Flask
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import core_schema
from werkzeug.routing import Rule

from common.contract import NO_NUL, Error, Operation, Refused, built, contract_of, model_of

REF = "#/components/schemas/{model}"
PATH_SEGMENT = r"^[^/\x00]+$"  # what a path's default converter matches, less NUL (a 404 at the door)
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
        schema: dict[str, Any] = {"type": "string", "minLength": 1, "pattern": PATH_SEGMENT}
        if converter == "any":
            schema = {"type": "string", "enum": [item.strip().strip("'\"") for item in arguments.split(",")]}
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
            {"name": name, "in": "query", "required": name in query.get("required", ()), "schema": _text(field)}
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
        properties = {**{name: _text(field) for name, field in form.get("properties", {}).items()},
                      **{name: {"type": "string", "contentMediaType":
                                                              "application/octet-stream"} for name in spec.files}}
        # a form may carry other fields (a CSRF token), which are not read; none may name or hold a NUL character
        content = {"multipart/form-data": {"schema": {
            "type": "object", "properties": properties, "required": [*spec.files, *form.get("required", [])],
            "propertyNames": {"pattern": NO_NUL}, "additionalProperties": {"type": "string", "pattern": NO_NUL}}}}
        return {"required": True, "content": {**content, **_raw(spec)}}  # with `raw`: the file as the body instead
    if spec.raw is not None:
        return {"required": True, "content": _raw(spec)}
    return None


def _raw(spec: Operation) -> dict:
    """The content of a body taken as bytes of the operation's media type, if it takes one."""
    return {spec.raw: {"schema": {"type": "string", "contentMediaType": spec.raw}}} if spec.raw else {}


def _response(status: int, model: type[BaseModel] | None, spec: Operation, schemas: dict) -> dict:
    description = _description(status)
    if model is None:
        return {"description": description}
    media = spec.produces if 200 <= status < 300 else "application/json"
    downloads = {download: {"schema": {"type": "string"}} for download in spec.downloads} if 200 <= status < 300 else {}
    return {"description": description,
            "content": {media: {"schema": _ref(model, schemas, "serialization")}, **downloads}}


def _description(status: int) -> str:
    return {200: "OK", 201: "Created", 202: "Accepted: it runs in the background", 204: "Done; no content",
            400: "The request is wrong: the answer names the field (or the file's line and path) and what to fix",
            404: "No such item", 409: "Not now: the item is in a state that does not allow it",
            413: "The body is larger than the upload limit (MAX_UPLOAD_MB)"}.get(status, str(status))


def _text(field: dict) -> dict:
    """A query parameter's or a form field's schema: never null (leaving the field out is how these say nothing)."""
    field = {key: value for key, value in field.items() if not (key == "default" and value is None)}
    if "enum" in field:
        field["enum"] = [value for value in field["enum"] if value is not None]
    options = [option for option in field.pop("anyOf", ()) if option != {"type": "null"}]
    if len(options) == 1:
        field = {**options[0], **field}  # the field's own constraints (a pattern) over its type's
    elif options:
        field["anyOf"] = options
    return field


class _RequestSchema(GenerateJsonSchema):
    """The JSON schema of what a request carries: no text holds a NUL character."""

    def str_schema(self, schema: core_schema.StringSchema) -> JsonSchemaValue:
        """A text's schema, with the NUL-free pattern unless the field has a pattern of its own."""
        json_schema = super().str_schema(schema)
        json_schema.setdefault("pattern", NO_NUL)
        return json_schema


def _schema(model: type[BaseModel], schemas: dict, mode: JsonSchemaMode) -> dict:
    """A model's JSON schema, its nested models moved to components."""
    generator = _RequestSchema if mode == "validation" else GenerateJsonSchema
    schema = built(model).model_json_schema(ref_template=REF, mode=mode, schema_generator=generator)
    schemas.update(schema.pop("$defs", {}))
    return schema


def _ref(model: type[BaseModel], schemas: dict, mode: JsonSchemaMode) -> dict:
    """A reference to a model's schema in components (added there once)."""
    name = model.__name__
    if name not in schemas:
        schemas[name] = _schema(model, schemas, mode)
    return {"$ref": REF.format(model=name)}


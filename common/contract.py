"""The JSON API's contract: each operation declares its request and response models (pydantic), which both check
the request and make the OpenAPI 3.1 document (web/openapi.py), so that the two cannot drift.

`operation(...)` marks a view: its JSON body (`body=`) or form fields (`form=`) and its query (`query=`) are
validated before the view runs, and a wrong type or shape answers 400 naming the field; the view receives the
body as a dict of the fields sent (`body=` keyword). `responses` maps each status the operation answers to the
model of its JSON (or to None for an empty answer); the statuses every operation may answer (401, 403, 404, 413,
429, 503) are added by the document.
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Literal, TypeVar

from flask import jsonify, request
from pydantic import BaseModel, ConfigDict, Field, RootModel, StrictBool, ValidationError

from translations import _

Flag = StrictBool | Literal["1", "0", "true", "false", "on", "off", ""]  # a yes/no option, as a form or JSON sends it
Count = Annotated[int, Field(ge=0, le=2**31 - 1)]  # a whole number a database column holds (an index, a size)
# Patterns the document states of a request's texts (JSON Schema, as Python's re reads them too). No text may hold
# NUL: web/request_input.py refuses it at the door, web/openapi.py adds NO_NUL to every text of a request. Where
# the server refuses other text with a message of its own, a field states that in the document only
# (`Field(json_schema_extra={"pattern": NOT_BLANK})`), so that its message, not the pattern, is what a client reads.
NO_NUL = r"^[^\x00]*$"
NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"  # something besides spaces


class Request(BaseModel):
    """A request body or query: unknown fields are refused, so that a misspelt field is named, not ignored."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Answer(BaseModel):
    """A response body: the fields listed are always there; a newer server may add others."""

    model_config = ConfigDict(extra="allow", defer_build=True)


Item = TypeVar("Item")


class Answers(RootModel[list[Item]], Generic[Item]):
    """A response body that is a list of answers."""

    model_config = ConfigDict(defer_build=True)


class Error(Answer):
    """An error: what went wrong and what to do."""

    error: str


class Problem(Answer):
    """One problem of a refused request or file: where (line of the file, or path of the field) and what to fix."""

    message: str
    line: int | None = None
    path: str | None = None


class RescoreState(Answer):
    """Scoring a finished evaluation again (a job, after people's ratings of it changed): its last request's state,
    `finished_at` once it is over, `error` when it failed."""

    status: Literal["queued", "running", "done", "failed", "cancelled"]
    error: str | None
    requested_at: str
    finished_at: str | None


class Refused(Error):
    """A refused file or request, with each problem found."""

    problems: list[Problem] = []
    truncated: bool = False


@dataclass(frozen=True)
class Operation:
    """What one API operation takes and answers."""

    summary: str
    responses: Mapping[int, type[BaseModel] | None]
    body: type[BaseModel] | Callable[[], type[BaseModel]] | None = None  # a function: the model made when needed
    form: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    files: tuple[str, ...] = ()  # multipart file fields (with `form`)
    raw: str | None = None  # the media type of a body taken as bytes (a chunk; with `form`, a file sent as the body)
    produces: str = "application/json"  # the media type of a 2xx answer
    downloads: tuple[str, ...] = ()  # other media types of a 2xx answer (a file its query asks for), each a text
    tags: tuple[str, ...] = field(default_factory=tuple)


def operation(summary: str, responses: Mapping[int, type[BaseModel] | None], **details: Any) -> Callable:
    """Declare a view's contract (see Operation) and validate its requests against it."""
    spec = Operation(summary, responses, **details)

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                if spec.query is not None:
                    _check(spec.query, request.args.to_dict())
                if spec.form is not None:  # a form may carry more (a CSRF token): only its own fields are read
                    _check(spec.form, {k: v for k, v in request.form.items() if k in spec.form.model_fields})
                if spec.body is not None:
                    if not request.is_json:
                        raise _Invalid(_("Send a JSON object as the body (Content-Type: application/json)."))
                    kwargs["body"] = _check(model_of(spec.body), request.get_json(silent=False))
            except _Invalid as exc:
                return jsonify({"error": exc.message, "problems": exc.problems}), 400
            return view(*args, **kwargs)

        checked.contract = spec  # type: ignore[attr-defined]  # an attribute of the function itself (contract_of)
        return checked

    return decorate


class _Invalid(Exception):
    def __init__(self, message: str, problems: list[dict] | None = None) -> None:
        super().__init__(message)
        self.message, self.problems = message, problems or []


_BUILDING = threading.Lock()


def built(model: type[BaseModel]) -> type[BaseModel]:
    """`model` with its validator and serializer built. The models defer that to their first use (defer_build: a
    process builds only those it uses), and pydantic 2.13 builds without a lock, so that two threads first using a
    model at once could validate with a half-built one; here one builds while the others wait."""
    if not model.__pydantic_complete__:
        with _BUILDING:
            model.model_rebuild()  # nothing to do once another thread has built it
    return model


def _check(model: type[BaseModel], data: Any) -> Any:
    """`data` as sent, once `model` accepts it; _Invalid naming the first wrong field otherwise."""
    try:
        built(model).model_validate(data)
    except ValidationError as exc:
        problems = [{"path": _path(error["loc"]), "message": _reason(error, model)} for error in exc.errors()]
        first = problems[0]
        if first["path"]:
            message = _("The field '%(field)s' is wrong: %(reason)s.", field=first["path"], reason=first["message"])
        else:
            message = _("The request must be a JSON object: %(reason)s.", reason=first["message"])
        raise _Invalid(message, problems) from None
    return data


def parsed(model: type[BaseModel], data: Any) -> Any:
    """`data` read by `model` (a page's query, checked as its API twin checks it); ValueError with the message the
    API gives, naming the wrong field, otherwise."""
    try:
        _check(model, data)
    except _Invalid as exc:
        raise ValueError(exc.message) from None
    return built(model).model_validate(data)


def _reason(error: Mapping[str, Any], model: type[BaseModel]) -> str:
    """pydantic's message, or for a field the model does not have, which fields it has."""
    if error["type"] != "extra_forbidden":
        return error["msg"]
    return _("it is not a field of this request (its fields: %(fields)s)", fields=", ".join(model.model_fields))


_TYPE_TAGS = frozenset(("str", "int", "float", "bool", "none", "list", "dict"))


def _path(location: tuple) -> str:
    """A pydantic error location as a field path (judge.temperature, methods[0]), without the type tags pydantic
    adds for a union's members (tags.list[str][0] is tags[0])."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.isidentifier() and part not in _TYPE_TAGS:
            text += f".{part}" if text else part
    return text


def model_of(model: type[BaseModel] | Callable[[], type[BaseModel]]) -> type[BaseModel]:
    """A body's model (made now, when the contract gives a function that makes it)."""
    return model if isinstance(model, type) else model()


def contract_of(view: Callable) -> Operation | None:
    """The contract a view declared, if any."""
    return getattr(view, "contract", None)

"""What a request may carry, checked at the door: JSON bodies are read with the uploads' JSON reader (its depth
and string limits, and the text it refuses: kinds/readers/limits.py), and text that cannot be stored or
shown (a NUL character) in an address, a query, a form field or a file name is refused before any view sees it."""
from __future__ import annotations

import json
from typing import Any

from flask import Flask, Request, abort, request
from werkzeug.exceptions import BadRequest

from kinds.readers import json_text, limits
from translations import _
from web import errors

BODY_LIMITS = limits.Limits()  # the defaults: a body is bounded by MAX_UPLOAD_MB, not by a file's LIMIT_* settings


class _StrictJSON:
    """The JSON a request body is read with: like an uploaded JSON file, within the default limits (too deep, a
    string too long, or refused text is a ValueError naming the place, which Flask answers with a 400)."""

    @staticmethod
    def loads(s: str | bytes, **kwargs: Any) -> Any:
        """Parse a request body."""
        try:
            text = s.decode("utf-8") if isinstance(s, bytes) else s
        except UnicodeDecodeError as exc:
            raise ValueError(_("The body is not UTF-8 text (byte %(position)s); send it encoded as UTF-8.",
                               position=exc.start)) from None
        try:
            return json_text.loads(text, BODY_LIMITS, label=_("the request body"))
        except limits.LimitError as exc:
            raise ValueError(exc.message) from None
        except json.JSONDecodeError as exc:
            raise ValueError(_("The body is not valid JSON: %(reason)s (line %(line)s, column %(column)s).",
                               reason=exc.msg, line=exc.lineno, column=exc.colno)) from None


class StrictRequest(Request):
    """A request whose JSON body is read strictly, and refused with a 400 saying why (without Flask's generic
    prefix)."""

    @property
    def json_module(self) -> Any:
        """The strict reader (Flask hands each request the app's JSON provider, which the answers keep using)."""
        return _StrictJSON

    @json_module.setter
    def json_module(self, _provider: Any) -> None:
        pass

    def on_json_loading_failed(self, e: ValueError | None) -> Any:
        """400 with the reason the body was refused."""
        if e is None:
            raise BadRequest(_("Send a JSON object as the body (Content-Type: application/json)."))
        raise BadRequest(str(e))


def _refused_text(values: Any) -> str | None:
    """The name of the first field whose value holds a NUL character, if any."""
    for name, value in values:
        name, value = str(name or ""), str(value or "")
        if "\x00" in name or "\x00" in value:
            return name.replace("\x00", "\\0")
    return None


def register(app: Flask) -> None:
    """Read JSON bodies strictly, and refuse NUL characters in addresses, queries and form fields."""
    app.request_class = StrictRequest

    @app.before_request
    def refuse_nul() -> Any:
        if any("\x00" in str(value) for value in (request.view_args or {}).values()):
            abort(404)  # no id holds one
        field = _refused_text(request.args.items(multi=True))
        if field is None and request.mimetype in ("application/x-www-form-urlencoded", "multipart/form-data"):
            field = _refused_text([*request.form.items(multi=True),
                                   *((name, file.filename) for name, file in request.files.items(multi=True))])
        if field is not None:
            message = _("The field '%(field)s' holds a NUL character, which cannot be stored; remove it.",
                        field=field)
            return errors.respond(400, message)
        return None

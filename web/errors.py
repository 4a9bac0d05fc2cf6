"""Error pages and JSON errors: a clear message for every failure, never a traceback."""
from __future__ import annotations

import logging

from flask import Flask, jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from storage.database import database_unreachable
from translations import _

log = logging.getLogger(__name__)

DATABASE_RETRY_AFTER_S = 5  # what a 503 asks a client to wait while the database cannot be reached


def _wants_json() -> bool:
    return request.path.startswith("/api/") or request.path.endswith(".json")


def respond(status: int, message: str):
    """An error as JSON for the API, as a page for people."""
    if _wants_json():
        return jsonify({"error": message}), status
    return render_template("error.html", status=status, message=message), status


def register(app: Flask) -> None:
    """Install the error handlers."""

    @app.errorhandler(RequestEntityTooLarge)
    def too_large(exc):
        limit = app.config["MAX_CONTENT_LENGTH"] / (1024 * 1024)
        return respond(413, _("The file is larger than the upload limit of %(limit)s MB. Split it into smaller "
                              "files, or start the server with a higher MAX_UPLOAD_MB.", limit=f"{limit:g}"))

    @app.errorhandler(CSRFError)
    def csrf_failed(exc):
        return respond(400, _("The form expired or did not come from this site. Reload the page and try again."))

    @app.errorhandler(HTTPException)
    def http_error(exc):
        messages = {404: _("Not found. The link may be wrong, or the item was deleted."),
                    405: _("This address does not accept that method.")}
        body, status = respond(exc.code or 500, messages.get(exc.code, exc.description or exc.name))
        # the exception's own headers stay (a 405's Allow, which RFC 9110 requires); the body's type is ours
        headers = [(name, value) for name, value in exc.get_headers() if name.lower() != "content-type"]
        return body, status, headers

    @app.errorhandler(Exception)
    def unexpected(exc):
        if database_unreachable(exc):
            # The pool checks each connection before use (storage/store.py), so the next request after the database is
            # back gets a fresh one: no restart of the app is needed.
            log.warning("database unreachable on %s: %s", request.path, exc)
            message = _("The database cannot be reached right now (it may be restarting). Nothing was lost; try "
                        "again in a few seconds.")
            if _wants_json():
                response = jsonify({"error": message})
            else:
                response = render_template("unavailable.html", message=message)
            return response, 503, {"Retry-After": str(DATABASE_RETRY_AFTER_S)}
        log.exception("unhandled error on %s", request.path)
        return respond(500, _("Something went wrong on the server; the details are in its log. Nothing you "
                              "uploaded was lost."))

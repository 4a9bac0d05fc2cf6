"""Responses gzipped when the client accepts it (Flask-Compress), from 1 KB: JSON, CSV, styles, scripts and pages.

A page is compressed only for a request the site itself or the user started (`Sec-Fetch-Site: same-origin` or
`none`, sent by every current browser). Pages carry a CSRF token and share links and reflect what is typed into
them (a session filter), which is what BREACH needs: an attacker's site makes the browser fetch a page many times
with guesses in it and watches the compressed sizes. Requests another site starts, or a browser that does not say
where a request comes from, get the page uncompressed, so there are no sizes to watch.
"""
from __future__ import annotations

from flask import Flask, Response, request
from flask_compress import Compress

MIMETYPES = ["text/html", "application/json", "text/csv", "text/css", "text/javascript", "application/javascript"]
OWN_REQUESTS = ("same-origin", "none")


class FetchMetadataCompress(Compress):
    """Flask-Compress, pages only for the site's own requests."""

    def after_request(self, response: Response) -> Response:
        """Compress the response unless it is a page requested from elsewhere."""
        if response.mimetype == "text/html":
            response.vary.add("Sec-Fetch-Site")
            if request.headers.get("Sec-Fetch-Site") not in OWN_REQUESTS:
                response.vary.add("Accept-Encoding")
                return response
        return super().after_request(response)


compress = FetchMetadataCompress()


def register(app: Flask) -> None:
    """Gzip from 1 KB, for the types above."""
    app.config.setdefault("COMPRESS_ALGORITHM", "gzip")
    app.config.setdefault("COMPRESS_MIN_SIZE", 1024)
    app.config.setdefault("COMPRESS_MIMETYPES", MIMETYPES)
    compress.init_app(app)

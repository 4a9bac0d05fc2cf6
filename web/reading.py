"""How pages show replies: `{{ text|reply }}` renders them (common/rich_text.py), or shows them as written when the
page's address asks for it (`?raw=1`); `raw_toggle_href()` is the address of the same page in the other mode.
Server-side, so a page never carries both copies and the toggle is a plain link that works without scripts."""
from __future__ import annotations

from urllib.parse import urlencode

from flask import Flask, has_request_context, request
from jinja2 import pass_context
from markupsafe import Markup

from common import rich_text
from translations import _


def raw_wanted() -> bool:
    """Whether the current request asks for replies as written (`raw=1`)."""
    return has_request_context() and request.args.get("raw") == "1"


@pass_context
def reply(context, text: object) -> Markup:
    """The `reply` filter: a reply rendered as safe HTML, or escaped as written in raw mode."""
    if context.get("raw_text"):
        return rich_text.raw(text)
    return rich_text.render(text, table_label=_("Table, scrolls sideways"))


def raw_toggle_href(anchor: str = "") -> str:
    """This page's address (query string kept) with raw mode switched (a share page's stays under its link)."""
    args = [(key, value) for key, value in request.args.items(multi=True) if key != "raw"]
    if not raw_wanted():
        args.append(("raw", "1"))
    query = f"?{urlencode(args)}" if args else ""
    return request.script_root + request.path + query + (f"#{anchor}" if anchor else "")


def register(app: Flask) -> None:
    """Add the `reply` filter, `raw_text` and `raw_toggle_href` to every template."""
    app.jinja_env.filters["reply"] = reply
    app.jinja_env.globals["raw_toggle_href"] = raw_toggle_href
    app.context_processor(lambda: {"raw_text": raw_wanted()})

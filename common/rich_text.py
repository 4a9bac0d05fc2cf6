"""Replies as readable, safe HTML: JSON pretty-printed, anything else Markdown (no raw HTML), then sanitised by an
allow-list, so whatever a model wrote can only come out as text, formatting and plain links."""
from __future__ import annotations

import html
import json
from functools import lru_cache

from markupsafe import Markup

from common.lazy_modules import lazy

markdown_it = lazy("markdown_it")
nh3 = lazy("nh3")

TAGS = {"p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li",
        "table", "thead", "tbody", "tr", "th", "td", "a"}
ATTRIBUTES = {"a": {"href"}, "ol": {"start"}}
SCHEMES = {"http", "https", "mailto"}
REL = "nofollow noopener noreferrer"
HEADING = "md-heading"  # a Markdown heading is shown as a bold paragraph: the page's own outline stays as it is
MAX_JSON = 1_000_000  # longer text is not tried as JSON (parsing it would cost more than it helps)
# Longer text is shown as written: some inputs (thousands of "[") take markdown-it-py superlinear time, about 0.5 s
# at this length, and a page shows dozens of replies.
MAX_MARKDOWN = 16_000


@lru_cache(maxsize=1)
def _parser():
    # breaks: a single newline stays a line break, as people and judges mean it ("Style: 16/20\nContent: ...")
    options = {"html": False, "linkify": False, "typographer": False, "breaks": True}
    parser = markdown_it.MarkdownIt("commonmark", options)
    parser.enable(["table", "strikethrough"])
    rules = parser.renderer.rules
    rules["heading_open"] = lambda tokens, i, options, env: f'<p class="{HEADING}"><strong>'
    rules["heading_close"] = lambda tokens, i, options, env: "</strong></p>\n"
    rules["image"] = _image_as_link
    return parser


def _image_as_link(tokens, i, options, env) -> str:
    """An image becomes a link to it named by its alt text: nothing is fetched when the page is shown."""
    token = tokens[i]
    alt = html.escape("".join(child.content for child in token.children or []) or str(token.attrGet("src") or ""))
    return f'<a href="{html.escape(str(token.attrGet("src") or ""))}">{alt}</a>'


def pretty_json(text: str) -> str | None:
    """The text pretty-printed (indent 2) when it is a JSON object or array, else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or len(stripped) > MAX_JSON:
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return json.dumps(value, indent=2, ensure_ascii=False)


def clean(fragment: str) -> str:
    """HTML reduced to the allow-list: listed tags and attributes only, links http(s)/mailto with rel=nofollow."""
    return nh3.clean(fragment, tags=TAGS, attributes=ATTRIBUTES, url_schemes=SCHEMES, link_rel=REL,
                     allowed_classes={"p": {HEADING}}, clean_content_tags={"script", "style"}, strip_comments=True)


def render(text: object, table_label: str = "Table") -> Markup:
    """A reply as safe HTML in a `div.rich`: pretty JSON in <pre><code>, else sanitised Markdown (as written beyond
    MAX_MARKDOWN characters); tables in a focusable region that scrolls sideways (named `table_label`) so they never
    widen the page."""
    text = "" if text is None else str(text)
    pretty = pretty_json(text)
    if pretty is not None:
        body = f'<pre class="json"><code>{html.escape(pretty)}</code></pre>'
    elif len(text) > MAX_MARKDOWN:
        body = f'<pre class="raw-text">{html.escape(text)}</pre>'
    else:
        body = clean(_parser().render(text))
        # After cleaning, "<table>" can only be a real tag (text "<" is escaped) and tables carry no attributes.
        region = f'<div class="scroll md-table" tabindex="0" role="region" aria-label="{html.escape(table_label)}">'
        body = body.replace("<table>", region + "<table>").replace("</table>", "</table></div>")
    return Markup(f'<div class="rich">{body}</div>')  # noqa: S704 -- escaped above, or cleaned by the allow-list


def raw(text: object) -> Markup:
    """A reply as written, escaped, in a wrapping <pre>."""
    return Markup('<pre class="raw-text">{}</pre>').format("" if text is None else str(text))

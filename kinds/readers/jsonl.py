"""Streaming reader for JSON Lines uploads: one JSON value per line, bounded memory."""
from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import BinaryIO

from kinds.problems import Problem
from kinds.readers.json_text import loads as limited_loads
from kinds.readers.limits import LimitError, Limits, current, format_size  # noqa: F401 (others import it here)
from translations import _

UTF8_BOM = b"\xef\xbb\xbf"
_SKIP_CHUNK = 1 << 20  # bytes read at a time while skipping an over-long line


def iter_lines(stream: BinaryIO, max_line_bytes: int,
               limits: Limits | None = None) -> Iterator[tuple[int, object | Problem]]:
    """Yield (line number, parsed JSON value or Problem) for each non-blank line of a binary stream."""
    if isinstance(stream, io.RawIOBase):
        stream = io.BufferedReader(stream)
    readline = stream.readline
    limits = limits or current()
    loads = limited_loads
    # +2 leaves room for "\r\n", so a line of exactly max_line_bytes is still read whole.
    limit = max_line_bytes + 2
    read_size = limit + len(UTF8_BOM)  # the first line may also carry a BOM
    lineno = 0
    seen_content = False
    while True:
        raw = readline(read_size)
        if not raw:
            return
        lineno += 1
        cut = len(raw) == read_size and raw[-1:] != b"\n"  # readline stopped at the limit
        if lineno == 1:
            read_size = limit
            problem = wrong_encoding(raw)
            if problem is not None:
                yield lineno, problem
                return
            if raw.startswith(UTF8_BOM):
                raw = raw[3:]
        if len(raw) > max_line_bytes or cut:
            size = _content_length(raw)
            if cut:
                size += _skip_rest_of_line(readline)
            if size > max_line_bytes:
                seen_content = True
                yield lineno, _too_long(lineno, size, max_line_bytes)
                continue
        if not raw or raw.isspace():
            continue  # blank lines are allowed, as in the original PersonaSteer tool
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            seen_content = True
            yield lineno, _not_utf8(lineno, raw, exc)
            continue
        try:
            value = loads(text, limits, first_line=lineno)
        except LimitError as exc:
            value = exc.problem()
        except json.JSONDecodeError as exc:
            if not seen_content and text.strip() in ("{", "["):
                # A pretty-printed JSON document: every following line would fail too.
                yield lineno, _pretty_printed(lineno, text.strip())
                return
            value = _bad_json(lineno, exc)
        seen_content = True
        yield lineno, value


def decode_file(raw: bytes, name: str, report, undecodable: Callable[[str, str, int], str]) -> str | None:
    """The text of a whole UTF-8 file (a BOM dropped), or None after adding a problem to `report`;
    `undecodable(file, byte, offset)` words the problem for a byte that is not UTF-8."""
    problem = wrong_encoding(raw[:4])
    if problem is not None:
        report.add(Problem(None, "", "%s: %s" % (name, problem.message)))
        return None
    if raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.add(Problem(raw.count(b"\n", 0, exc.start) + 1, "", undecodable(name, f"{raw[exc.start]:02X}",
                                                                             exc.start)))
        return None


def wrong_encoding(first: bytes) -> Problem | None:
    """Recognise UTF-16/UTF-32 files from the start of their first line."""
    if first.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return Problem(None, "", _("The file is UTF-32 encoded; save it as UTF-8 and upload it again."))
    # Without a BOM, UTF-16 text of ASCII characters (such as '{"') has a zero byte in every pair.
    if first.startswith((b"\xff\xfe", b"\xfe\xff")) or first[:2] in (b"{\x00", b"\x00{"):
        return Problem(None, "", _("The file is UTF-16 encoded; save it as UTF-8 and upload it again."))
    return None


def _content_length(raw: bytes) -> int:
    """Length of a line without its line ending."""
    if raw.endswith(b"\r\n"):
        return len(raw) - 2
    if raw.endswith(b"\n"):
        return len(raw) - 1
    return len(raw)


def _skip_rest_of_line(readline) -> int:
    """Read and drop the rest of the current line in bounded chunks; return its length."""
    skipped = 0
    while True:
        chunk = readline(_SKIP_CHUNK)
        if not chunk:
            return skipped
        if chunk.endswith(b"\n"):
            return skipped + _content_length(chunk)
        skipped += len(chunk)


def _too_long(lineno: int, size: int, limit: int) -> Problem:
    return Problem(lineno, "", _(
        "Line %(line)s is %(size)s, longer than the limit of %(limit)s per session. "
        "Split the session into shorter ones or remove the oversized content.",
        line=lineno, size=format_size(size), limit=format_size(limit)))


def _not_utf8(lineno: int, raw: bytes, exc: UnicodeDecodeError) -> Problem:
    return Problem(lineno, "", _(
        "Line %(line)s is not valid UTF-8: byte 0x%(byte)s at byte offset %(offset)s of the line "
        "cannot be decoded. The file must be UTF-8; save it as UTF-8 and upload it again.",
        line=lineno, byte=f"{raw[exc.start]:02X}", offset=exc.start))


def _pretty_printed(lineno: int, char: str) -> Problem:
    return Problem(lineno, "", _(
        "Line %(line)s holds only '%(char)s': the file looks like formatted JSON spread over several "
        "lines. A .jsonl file needs each session as one complete JSON object on a single line.",
        line=lineno, char=char))


def _bad_json(lineno: int, exc: json.JSONDecodeError) -> Problem:
    return Problem(lineno, "", _(
        "Line %(line)s is not valid JSON at character %(column)s: %(reason)s.",
        line=lineno, reason=json_reason(exc), column=exc.colno))


def json_reason(exc: json.JSONDecodeError) -> str:
    """Why a text is not JSON, in the reader's language (the json module's message is fixed English); a text that
    stops inside a string or before its value is complete is said to be cut off."""
    msg = exc.msg
    if msg.startswith("Unterminated string") or (msg != "Extra data" and exc.pos >= len(exc.doc.rstrip())):
        return _("the text ends before the JSON value does: it looks cut off (the file may have been truncated "
                 "while it was written or copied); check its end, or export it again")
    if msg == "Expecting value":
        return _("a value was expected (a string, number, object, list, true, false or null)")
    if msg == "Expecting property name enclosed in double quotes":
        return _("a key in double quotes was expected (single quotes and trailing commas are not JSON)")
    if msg == "Expecting ':' delimiter":
        return _("a ':' was expected after the key")
    if msg == "Expecting ',' delimiter":
        return _("a ',' was expected between items")
    if msg.startswith("Unterminated string"):
        return _("a string is not closed with a double quote")
    if msg.startswith("Invalid control character"):
        return _("a string contains a raw control character such as a tab or line break; escape it as \\t or \\n")
    if msg.startswith("Invalid \\"):
        return _("a string contains an invalid backslash escape")
    if msg == "Extra data":
        return _("there is more text after the first JSON value; put each session on its own line")
    if msg.startswith("Unexpected UTF-8 BOM"):
        return _("the line starts with a byte order mark (BOM), which is only allowed at the start of the file")
    if msg.startswith("Illegal trailing comma"):
        return _("there is a trailing comma before a closing bracket")
    return msg

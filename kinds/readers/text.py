"""What a file is before any kind reads it: binary or text, JSON-like lines, one whole JSON document."""
from __future__ import annotations

from pathlib import Path

from kinds.readers.json_text import loads
from kinds.readers.jsonl import wrong_encoding
from kinds.readers.limits import current

# bytes no text file holds (tab, line feed, form feed, carriage return and escape aside)
_CONTROL = bytes(range(0x00, 0x09)) + b"\x0b" + bytes(range(0x0e, 0x1b)) + bytes(range(0x1c, 0x20)) + b"\x7f"
_MOST_CONTROL = 0.1  # the share of such bytes above which a start without NUL is still binary
DOCUMENT_BYTES = 16 << 20  # the largest file read whole to see whether it is one JSON document


def is_binary(head: bytes) -> bool:
    """Whether a file starting with `head` holds binary data (an image, an archive, a program), not text in any
    encoding: a NUL byte, or many control bytes, in a start that is not UTF-16 or UTF-32 text."""
    if not head or wrong_encoding(head) is not None:
        return False
    if b"\x00" in head:
        return True
    return len(head) - len(head.translate(None, _CONTROL)) > _MOST_CONTROL * len(head)


def has_json_line(head: bytes) -> bool:
    """Whether a line of a file's start begins like a JSON object or list (a JSON Lines record, or a document)."""
    return any(line.lstrip()[:1] in (b"{", b"[") for line in head.splitlines())


def is_json_document(path: Path) -> bool:
    """Whether a UTF-8 file (of at most DOCUMENT_BYTES) is one JSON value, read within the hard limits."""
    try:
        if path.stat().st_size > DOCUMENT_BYTES:
            return False
        loads(path.read_bytes().decode("utf-8-sig"), current())
    except (OSError, ValueError):  # not UTF-8, not JSON, past a limit (LimitError is a ValueError)
        return False
    return True

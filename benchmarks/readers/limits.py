"""Hard limits on uploaded files, and the JSON and ZIP readers that enforce them.

Every limit is a setting (an environment variable, read when a file is checked). A file that passes one
is refused with a LimitError whose message names the limit, the setting that raises it and where it was
hit (line, JSON path or ZIP member); nothing of it is stored. JSON that cannot be kept as it was written is
refused the same way: an object with a key twice (json.loads would silently keep the last), and a string or key
holding a lone surrogate (it cannot be written as UTF-8) or NUL (PostgreSQL cannot store it).

JSON is parsed by json.loads and the value then walked level by level (no recursion); only a value past a
limit has its text scanned token by token to name the place. The other checks are as cheap: the keys of the
parsed objects are counted against the colons of the text (a key written twice leaves a colon whose key was not
kept), and the text is searched for the escape of a lone surrogate or of NUL only when it holds a backslash; only
when one is found are its strings read one by one to name the place. ZIP members are read in chunks and counted as
they are decompressed, whatever their headers claim; only Stored and Deflate members are read (bzip2 and LZMA
cannot be decompressed in bounded steps).
"""
from __future__ import annotations

import io
import json
import os
import re
import struct
import sys
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from itertools import chain, compress
from pathlib import Path

from benchmarks.problems import Problem, short_json
from translations import _

MB = 1024 * 1024
MAX_JSON_DEPTH = 500  # json.loads itself cannot go much deeper; a higher LIMIT_JSON_DEPTH counts as this
READ_CHUNK = 1 << 20  # bytes decompressed at a time from a ZIP member
ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)

SETTINGS = {"json_depth": "LIMIT_JSON_DEPTH", "string_chars": "LIMIT_STRING_CHARS", "sessions": "LIMIT_SESSIONS",
            "rounds": "LIMIT_ROUNDS", "methods": "LIMIT_METHODS", "zip_members": "LIMIT_ZIP_MEMBERS",
            "zip_expanded_mb": "LIMIT_ZIP_EXPANDED_MB", "zip_member_mb": "LIMIT_ZIP_MEMBER_MB",
            "zip_ratio": "LIMIT_ZIP_RATIO"}


@dataclass(frozen=True)
class Limits:
    """The hard limits on one upload (defaults fit the real data with a wide margin)."""

    json_depth: int = 64  # nesting of lists and objects in any JSON value
    string_chars: int = 1_000_000  # characters in one JSON string
    sessions: int = 100_000  # dialogue sessions, or conversations, in one upload
    rounds: int = 1_000  # rounds of one dialogue session, or turns of one conversation
    methods: int = 100  # methods of a dialogue file, or agents of an AgentBench upload
    zip_members: int = 20_000  # entries of a ZIP (folders included)
    # A zip bomb is stopped by what each member expands to (the ratio below, and the size of one member), not by
    # the whole archive's size: that only guards the disk and time, far above real outputs folders and datasets.
    zip_expanded_mb: float = 10_240  # bytes decompressed from one ZIP, all members together
    zip_member_mb: float = 100  # bytes decompressed from one ZIP member
    zip_ratio: float = 200  # times its compressed size one member may expand to (beyond RATIO_FLOOR)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Limits:
        """The limits with each LIMIT_* variable set in `environ` applied; ValueError names a bad one."""
        values: dict = {}
        for item in fields(cls):
            variable = SETTINGS[item.name]
            text = environ.get(variable, "").strip()
            if not text:
                continue
            try:
                value = float(text) if item.type == "float" else int(text)
            except ValueError:
                value = 0
            if not 0 < value < float("inf"):
                raise ValueError(_("%(name)s must be a positive number, found %(value)s.", name=variable,
                                   value=repr(text)))
            values[item.name] = min(value, MAX_JSON_DEPTH) if item.name == "json_depth" else value
        return cls(**values)

    @property
    def zip_expanded_bytes(self) -> int:
        """LIMIT_ZIP_EXPANDED_MB in bytes."""
        return int(self.zip_expanded_mb * MB)

    @property
    def zip_member_bytes(self) -> int:
        """LIMIT_ZIP_MEMBER_MB in bytes."""
        return int(self.zip_member_mb * MB)


def current() -> Limits:
    """The limits in force now (from the environment)."""
    return Limits.from_env(os.environ)


class LimitError(ValueError):
    """A file refused by a hard limit or for JSON that cannot be kept (a duplicate key, a lone surrogate, NUL);
    `.message`, `.line` and `.path` say what and where, `problem()` makes it a validation problem."""

    def __init__(self, message: str, line: int | None = None, path: str = ""):
        super().__init__(message)
        self.message, self.line, self.path = message, line, path

    def problem(self) -> Problem:
        """The refusal as a validation problem."""
        return Problem(self.line, self.path, self.message)


def format_size(size: int) -> str:
    """Human-readable size: '12.3 MB', '4.0 KB' or '512 bytes'."""
    if size >= MB:
        return _("%(size)s MB", size=f"{size / MB:.1f}")
    if size >= 1024:
        return _("%(size)s KB", size=f"{size / 1024:.1f}")
    return _("%(size)s bytes", size=size)


def where(label: str | None, line: int) -> str:
    """'Line 3' or 'a.json line 3': how a message names the place of a problem."""
    if label:
        return _("%(file)s line %(line)s", file=label, line=line)
    return _("Line %(line)s", line=line)


# --- JSON ----------------------------------------------------------------------------------------

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_TOKENS = re.compile(_STRING + r'|[\[\]{}]')  # strings and brackets: what a JSON path is made of
_STRINGS = re.compile(_STRING)
_LONG_NUMBER = re.compile(_STRING + r'|-?\d{%d,}' % (sys.get_int_max_str_digits() + 1))
_KEY_END = re.compile(r'\s*:')
# The escape of a lone surrogate (a high half not followed by a low one, a low half not after a high one) or of NUL;
# also any escape of a surrogate after a backslash (which may be escaped itself: '\\ud800' is text), left to
# _check_characters. One pass, in which the escape of an ordinary character fails at its first digit.
_BAD_ESCAPE = re.compile(r'\\u(?:0000|[dD](?:(?<=\\\\u[dD])[89a-fA-F]|(?<!\\\\u[dD])(?:'
                         r'[89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<![dD][89abAB][0-9a-fA-F]{2}\\u[dD])[c-fC-F])))')
_BAD_CHARACTER = re.compile('[\ud800-\udfff\x00]')  # in a parsed string, a surrogate is always a lone one
_KEY_COLONS = re.compile(r':(?<=["\s]:)')  # each key's colon, and those in strings after a quote or a space


def loads(text: str, limits: Limits, label: str | None = None, first_line: int = 1) -> object:
    """json.loads within the depth and string limits, refusing duplicate keys, lone surrogates and NUL; LimitError
    names the place (JSONDecodeError passes). `text` is decoded strictly (as UTF-8), so only escapes hold these."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(text, limits, label, first_line) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer of more digits than Python converts
        raise _long_number(text, label, first_line) from None
    found, keys, texts = _exceeded(value, limits, strings=len(text) > limits.string_chars + 2)  # (else none too long)
    if found == "depth":
        raise _too_deep(text, limits, label, first_line)
    if found == "string":
        _check_strings(text, limits, label, first_line)
    if "\\" in text and _BAD_ESCAPE.search(text):  # (finding one character first is far faster)
        _check_characters(text, label, first_line)
    # A key written twice was not kept: the text holds more keys than json.loads kept. Each key and each string is
    # written between two quotes (any other quote is escaped), and outside strings a colon follows each key, after a
    # quote or a space. So if there are no more quotes than two per key and string kept, or no more colons (or of
    # those after a quote or a space) than keys kept, no key was written twice; else the keys are read one by one.
    if (text.count('"') != 2 * (keys + texts) and text.count(":") != keys
            and len(_KEY_COLONS.findall(text)) != keys):
        _check_duplicates(text, label, first_line)
    return value


_CONTAINERS = frozenset((list, dict))
_IS_CONTAINER = _CONTAINERS.__contains__
_IS_STRING = frozenset((str,)).__contains__
_IS_OBJECT = frozenset((dict,)).__contains__


def _exceeded(value: object, limits: Limits, strings: bool) -> tuple[str | None, int, int]:
    """('depth' or 'string' when a parsed value passes that limit, else None; the number of keys of its objects;
    the number of its strings). Walked level by level with every item of a level typed in C (no recursion, no
    Python step per item), so long lists of numbers cost little."""
    cap = limits.string_chars
    if type(value) is str:
        return ("string" if strings and len(value) > cap else None), 0, 1
    level: list = [value] if _IS_CONTAINER(type(value)) else []
    depth = keys = texts = 0
    while level:
        depth += 1
        if depth > limits.json_depth:
            return "depth", keys, texts
        parts: list[Iterable] = [node.values() if type(node) is dict else node for node in level]
        objects: Iterable = compress(level, map(_IS_OBJECT, map(type, level)))
        types = set(map(type, chain.from_iterable(parts)))
        if str in types:
            texts += sum(map(_IS_STRING, map(type, chain.from_iterable(parts))))
        if strings:
            objects = list(objects)  # read twice
            found = compress(chain.from_iterable(parts), map(_IS_STRING, map(type, chain.from_iterable(parts))))
            if max(map(len, chain(chain.from_iterable(objects), found)), default=0) > cap:
                return "string", keys, texts
        keys += sum(map(len, objects))
        if _CONTAINERS.isdisjoint(types):
            return None, keys, texts
        level = list(compress(chain.from_iterable(parts), map(_IS_CONTAINER, map(type, chain.from_iterable(parts)))))
    return None, keys, texts


def _locate(text: str, depth: int | None = None, offset: int | None = None) -> tuple[int, str]:
    """(offset, JSON path) of the first list or object opened deeper than `depth`, or of the token at `offset`."""
    stack: list[list] = []  # per open container: [is an object, its current key or index]
    end = 0
    for match in _TOKENS.finditer(text):
        start = match.start()
        if stack and not stack[-1][0]:  # the gap between tokens holds no strings
            stack[-1][1] += text.count(",", end, start if offset is None else min(start, offset))
        if offset is not None and start >= offset:
            if stack and stack[-1][0] and start == offset and _KEY_END.match(text, match.end()):
                stack[-1][1] = match.group()  # the token is a key: its own path
            return offset, _path(stack)
        end = match.end()
        char = text[start]
        if depth is not None and char in "[{" and len(stack) >= depth:
            return start, _path(stack)
        if char == '"':
            if stack and stack[-1][0] and _KEY_END.match(text, end):
                stack[-1][1] = match.group()
        elif char in "[{":
            stack.append([char == "{", "" if char == "{" else 0])
        elif stack:
            stack.pop()
    return len(text) if offset is None else offset, _path(stack)


def _path(stack: list[list]) -> str:
    """The JSON path of the open containers, e.g. 'rounds[2].responses["my method"]'."""
    parts = []
    for is_object, item in stack:
        if not is_object:
            parts.append(f"[{item}]")
            continue
        try:
            key = json.loads(item) if item else ""
        except ValueError:
            key = item.strip('"')
        key = key if len(key) <= 100 else key[:99] + "…"
        # a lone surrogate stays an escape: the path is shown and stored
        written = json.dumps(key, ensure_ascii=_BAD_CHARACTER.search(key) is not None)
        parts.append(f".{key}" if key.isidentifier() else f"[{written}]")
    return "".join(parts).removeprefix(".")


def _short(path: str) -> str:
    """A JSON path cut for a message (the problem keeps it whole)."""
    if len(path) <= 60:
        return path
    head, tail = path[:36], path[-20:]
    return f"{head[:head.rfind('[')] if '[' in head else head}…{tail[tail.find('['):] if '[' in tail else tail}"


def _at(text: str, offset: int, label: str | None, first_line: int) -> tuple[int, str]:
    """The line of an offset and the 'where' that starts a message about it."""
    line = first_line + text.count("\n", 0, offset)
    return line, where(label, line)


def _too_deep(text: str, limits: Limits, label: str | None, first_line: int) -> LimitError:
    offset, path = _locate(text, depth=limits.json_depth)
    line, place = _at(text, offset, label, first_line)
    return LimitError(_(
        "%(where)s: '%(path)s' nests lists and objects deeper than %(limit)s levels, the limit "
        "(%(setting)s). Flatten the data, or raise %(setting)s.",
        where=place, path=_short(path), limit=limits.json_depth, setting=SETTINGS["json_depth"]), line, path)


def _check_strings(text: str, limits: Limits, label: str | None, first_line: int) -> None:
    """Raise LimitError at the first string longer than LIMIT_STRING_CHARS (escapes counted once)."""
    cap = limits.string_chars
    for match in _STRINGS.finditer(text):
        if match.end() - match.start() - 2 <= cap:
            continue
        size = len(json.loads(match.group()))
        if size <= cap:
            continue
        offset, path = _locate(text, offset=match.start())
        line, place = _at(text, offset, label, first_line)
        raise LimitError(_(
            "%(where)s: '%(path)s' is a string of %(count)s characters, more than the limit of %(limit)s "
            "(%(setting)s). Shorten it, or raise %(setting)s.", where=place, path=_short(path) or "$", count=size,
            limit=cap, setting=SETTINGS["string_chars"]), line, path)


def _check_characters(text: str, label: str | None, first_line: int) -> None:
    """Raise LimitError at the first string or key holding a lone surrogate or NUL (both only written as escapes)."""
    for match in _STRINGS.finditer(text):
        token = match.group()
        found = _BAD_CHARACTER.search(json.loads(token)) if "\\u" in token else None
        if found is not None:
            break
    else:
        return
    offset, path = _locate(text, offset=match.start())
    line, place = _at(text, offset, label, first_line)
    if found.group() == "\x00":
        raise LimitError(_(
            "%(where)s: '%(path)s' holds a NUL character (written \\u0000), which cannot be stored (the database "
            "refuses it) or shown. Remove it.", where=place, path=_short(path) or "$"), line, path)
    raise LimitError(_(
        "%(where)s: '%(path)s' holds a lone surrogate %(escape)s (an invalid character: half of a pair written "
        "without its other half), which cannot be stored or shown. Remove it, or write the whole pair (such as "
        "\\ud83d\\ude00).", where=place, path=_short(path) or "$", escape="\\u%04x" % ord(found.group())),
        line, path)


def _check_duplicates(text: str, label: str | None, first_line: int) -> None:
    """Raise LimitError at the first key written twice in one object (the path is the object's)."""
    stack: list[tuple[int, set] | None] = []  # per open container: an object's offset and keys, or None (a list)
    for match in _TOKENS.finditer(text):
        start = match.start()
        char = text[start]
        if char == "{":
            stack.append((start, set()))
        elif char == "[":
            stack.append(None)
        elif char != '"':
            stack.pop()
        elif stack and stack[-1] is not None and _KEY_END.match(text, match.end()):
            token = match.group()
            key = json.loads(token) if "\\" in token else token[1:-1]
            opened, keys = stack[-1]
            if key in keys:
                path = _locate(text, offset=opened)[1]
                line, place = _at(text, start, label, first_line)
                raise LimitError(_(
                    "%(where)s: the key %(key)s appears twice in '%(path)s'; keep one (a JSON reader would "
                    "silently keep only the last).", where=place, key=short_json(key), path=_short(path) or "$"),
                    line, path)
            keys.add(key)


def _long_number(text: str, label: str | None, first_line: int) -> LimitError:
    """The error for an integer longer than Python converts (sys.get_int_max_str_digits())."""
    match = next((m for m in _LONG_NUMBER.finditer(text) if text[m.start()] != '"'), None)
    offset, path = _locate(text, offset=match.start()) if match else (0, "")
    line, place = _at(text, offset, label, first_line)
    return LimitError(_(
        "%(where)s: '%(path)s' is a number of more than %(limit)s digits, which cannot be read. Write it with "
        "fewer digits.", where=place, path=_short(path) or "$", limit=sys.get_int_max_str_digits()), line, path)


# --- ZIP -----------------------------------------------------------------------------------------

_CENTRAL = b"PK\x01\x02"  # every entry of a ZIP's central directory starts with this
_TAIL = 22 + 0xFFFF + 20 + 56  # a ZIP's end record, its longest comment and the ZIP64 end records


def open_zip(raw: bytes, limits: Limits, label: str = "") -> zipfile.ZipFile:
    """A ZipFile over bytes, refused (LimitError) before it is parsed when it has more than LIMIT_ZIP_MEMBERS
    entries; zipfile's own errors (BadZipFile ...) pass."""
    if raw.count(_CENTRAL) > limits.zip_members:  # an upper bound on the entries, counted in C
        archive = None
        name = _entry_name(raw, limits.zip_members)
        if name is None:  # the signature also occurs in member data: count the real entries
            archive = zipfile.ZipFile(io.BytesIO(raw))
            infos = archive.infolist()
            if len(infos) <= limits.zip_members:
                return archive
            name = infos[limits.zip_members].filename
        raise LimitError(_(
            "%(file)s: the ZIP holds more than %(limit)s files and folders, the limit (%(setting)s). Upload fewer "
            "files at a time, or raise %(setting)s.", file=name, limit=limits.zip_members,
            setting=SETTINGS["zip_members"]), None, name)
    return zipfile.ZipFile(io.BytesIO(raw))


def open_zip_file(stream, limits: Limits) -> zipfile.ZipFile:
    """A ZipFile over a seekable file, refused (LimitError) before its directory is parsed when the directory's end
    record counts more than LIMIT_ZIP_MEMBERS entries; only that record is read, not the whole file."""
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(max(0, size - _TAIL))
    tail = stream.read()
    end = tail.rfind(b"PK\x05\x06")
    entries = struct.unpack_from("<H", tail, end + 10)[0] if 0 <= end <= len(tail) - 22 else 0
    zip64 = tail.rfind(b"PK\x06\x06")
    if entries == 0xFFFF and 0 <= zip64 <= len(tail) - 56:
        entries = struct.unpack_from("<Q", tail, zip64 + 32)[0]
    if entries > limits.zip_members:
        # Name the first entry past the limit: walk the directory's bytes (its offset and size are in the record).
        length, offset = struct.unpack_from("<II", tail, end + 12) if end >= 0 else (0, 0)
        stream.seek(offset)
        raise _too_many(_walk_to(stream.read(min(length, size)), 0, limits.zip_members), limits)
    stream.seek(0)
    archive = zipfile.ZipFile(stream)
    infos = archive.infolist()
    if len(infos) > limits.zip_members:  # an end record that lied
        archive.close()
        raise _too_many(infos[limits.zip_members].filename, limits)
    return archive


def _too_many(name: str | None, limits: Limits) -> LimitError:
    return LimitError(_(
        "%(file)s: the ZIP holds more than %(limit)s files and folders, the limit (%(setting)s). Upload fewer "
        "files at a time, or raise %(setting)s.", file=name or _("the archive"), limit=limits.zip_members,
        setting=SETTINGS["zip_members"]), None, name or "")


def _entry_name(raw: bytes, index: int) -> str | None:
    """The name of central-directory entry `index` (0-based), walked from the directory's start; None when the
    directory cannot be followed that far."""
    end = raw.rfind(b"PK\x05\x06")
    position = struct.unpack_from("<I", raw, end + 16)[0] if 0 <= end <= len(raw) - 22 else -1
    return _walk_to(raw, position, index)


def _walk_to(raw: bytes, position: int, index: int) -> str | None:
    """The name of the entry `index` entries after the central-directory entry at `position`, or None."""
    for _number in range(index + 1):
        if raw[position:position + 4] != _CENTRAL or position + 46 > len(raw):
            return None
        name_length, extra, comment = struct.unpack_from("<HHH", raw, position + 28)
        name = raw[position + 46:position + 46 + name_length]
        position += 46 + name_length + extra + comment
    return name.decode("utf-8", "replace")[:200]


RATIO_FLOOR = 1 << 20  # a member that expands to less than this is never refused for its compression ratio


class ZipReader:
    """Reads members of an open ZIP within LIMIT_ZIP_MEMBER_MB each and LIMIT_ZIP_EXPANDED_MB together, counting
    the bytes as they are decompressed (headers may lie) and stopping as soon as a limit is passed."""

    def __init__(self, archive: zipfile.ZipFile, limits: Limits, expanded: int | None = None):
        self.archive, self.limits = archive, limits
        self.expanded = limits.zip_expanded_bytes if expanded is None else expanded
        self.left = self.expanded

    def check_declared(self, members: list[tuple[str, zipfile.ZipInfo]]) -> None:
        """Refuse, before anything is decompressed, members whose headers already claim too much."""
        total = sum(info.file_size for _name, info in members)
        running = 0
        for name, info in members:
            running += info.file_size
            if running > self.expanded:
                raise self._too_big(name, total, self.expanded, "zip_expanded_mb")
            if info.file_size > self.limits.zip_member_bytes:
                raise self._too_big(name, info.file_size, self.limits.zip_member_bytes, "zip_member_mb")
            if info.file_size > self._most(info):
                raise self._too_compressed(name)

    def read(self, name: str, info: zipfile.ZipInfo) -> bytes:
        """A member's bytes; LimitError when it, or the ZIP so far, expands past a limit."""
        chunks = []
        size = 0
        with self._open(name, info) as member:
            while chunk := member.read(READ_CHUNK):
                size += len(chunk)
                self._count(name, size, len(chunk), info)
                chunks.append(chunk)
        return b"".join(chunks)

    def stream(self, name: str, info: zipfile.ZipInfo) -> _CountedMember:
        """A member as a file to read from, counted like read() (for readers that take a file, such as numpy's)."""
        return _CountedMember(self, name, info, self._open(name, info))

    def lines(self, name: str, info: zipfile.ZipInfo) -> Iterator[tuple[int, bytes]]:
        """(line number, bytes) of a member, counted like read()."""
        size = 0
        with self._open(name, info) as member:
            lineno = 0
            while line := member.readline(min(self.left, self.limits.zip_member_bytes - size) + 1):
                lineno += 1
                size += len(line)
                self._count(name, size, len(line), info)
                yield lineno, line

    def _open(self, name: str, info: zipfile.ZipInfo):
        if info.compress_type not in ZIP_METHODS:
            raise LimitError(_(
                "%(file)s in the ZIP is compressed with a method other than Deflate (method %(method)s), which is "
                "not read because it cannot be decompressed in bounded steps. Make the ZIP with the standard "
                "Deflate compression.", file=name, method=info.compress_type), None, name)
        return self.archive.open(info)

    def _count(self, name: str, member_size: int, step: int, info: zipfile.ZipInfo) -> None:
        self.left -= step
        if member_size > self.limits.zip_member_bytes:
            raise self._too_big(name, None, self.limits.zip_member_bytes, "zip_member_mb")
        if member_size > self._most(info):
            raise self._too_compressed(name)
        if self.left < 0:
            raise self._too_big(name, None, self.expanded, "zip_expanded_mb")

    def _most(self, info: zipfile.ZipInfo) -> float:
        """What a member may expand to for its compressed size (LIMIT_ZIP_RATIO)."""
        return max(RATIO_FLOOR, self.limits.zip_ratio * info.compress_size)

    def _too_compressed(self, name: str) -> LimitError:
        return LimitError(_(
            "%(file)s in the ZIP expands to more than %(ratio)s times its compressed size (%(setting)s), as a zip "
            "bomb does; the ZIP is refused. Compress the files the usual way, or raise %(setting)s.", file=name,
            ratio=f"{self.limits.zip_ratio:g}", setting=SETTINGS["zip_ratio"]), None, name)

    @staticmethod
    def _too_big(name: str, size: int | None, limit: int, setting: str) -> LimitError:
        args = dict(file=name, limit=format_size(limit), setting=SETTINGS[setting])
        if setting == "zip_member_mb":
            message = _("%(file)s in the ZIP expands to more than %(limit)s, the limit for one file (%(setting)s). "
                        "Split the file, or raise %(setting)s.", **args)
        elif size is not None:
            message = _("The ZIP expands to %(size)s, more than the limit of %(limit)s (%(setting)s), passed at "
                        "%(file)s. Upload fewer files at a time, or raise %(setting)s.", size=format_size(size),
                        **args)
        else:
            message = _("%(file)s takes the ZIP past the limit of %(limit)s expanded (%(setting)s); the ZIP is "
                        "refused. Upload fewer files at a time, or raise %(setting)s.", **args)
        return LimitError(message, None, name)


def zip_has(path: str | Path, *names: str) -> bool:
    """Whether a ZIP holds a member with one of these file names (False when it cannot be read or breaks a limit);
    only its directory is read."""
    try:
        with open(path, "rb") as stream, open_zip_file(stream, current()) as archive:
            return any(member.rsplit("/", 1)[-1] in names for member in archive.namelist())
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, struct.error):  # ValueError includes LimitError
        return False


class _CountedMember:
    """A ZIP member's decompressed bytes, read through its ZipReader's limits."""

    def __init__(self, reader: ZipReader, name: str, info: zipfile.ZipInfo, member) -> None:
        self.reader, self.name, self.info, self.member, self.size = reader, name, info, member, 0

    def read(self, n: int = -1) -> bytes:
        """Up to n bytes (all that is left with n < 0); LimitError once a limit is passed."""
        data = self.member.read(n)
        self.size += len(data)
        self.reader._count(self.name, self.size, len(data), self.info)
        return data

    def __enter__(self) -> _CountedMember:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.member.close()

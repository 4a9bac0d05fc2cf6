"""ZIP archives: how one starts, a member's path whatever tool wrote it, and its members read within the hard limits
(limits.py): counted as they are decompressed, in chunks, whatever their headers claim; only Stored and Deflate
members are read (bzip2 and LZMA cannot be decompressed in bounded steps)."""
from __future__ import annotations

import io
import os
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path

from kinds.readers.limits import SETTINGS, LimitError, Limits, current, format_size
from translations import _

READ_CHUNK = 1 << 20  # bytes decompressed at a time from a ZIP member
ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header, or the end record of an empty ZIP


def member_name(info: zipfile.ZipInfo) -> str:
    """The member's path; names from ZIP tools that do not flag UTF-8 are re-decoded (UTF-8, else GBK)."""
    name = info.filename
    if not info.flag_bits & 0x800:
        try:
            raw = name.encode("cp437")
        except UnicodeEncodeError:
            return name.replace("\\", "/")
        for encoding in ("utf-8", "gbk"):
            try:
                return raw.decode(encoding).replace("\\", "/")
            except UnicodeDecodeError:
                continue
    return name.replace("\\", "/")


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

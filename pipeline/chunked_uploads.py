"""Resumable uploads in chunks, for files over the single-request upload limit.

A client starts an upload (its file name, size and the kind's upload fields), then sends the file's bytes in
order, each chunk at the offset the server has reached, with the chunk's SHA-256 when it can compute one; after a
network failure it asks for that offset and goes on from there. Finishing hands the assembled file to ingest, like
any upload. Each chunk is stored whole as its own part, `.chunked-<id>/<offset>` among the uploads (a folder or
a bucket: storage/blobs.py), named by the upload's random id (never the user's file name), so no half-written chunk is
ever read and no store needs to append; the offset reached is the end of the parts that follow one another from
0. The upload's description is a setting of the store, so that any web process of a deployment can take the next
chunk. An upload that received nothing for a week is removed when another one starts.
"""
from __future__ import annotations

import hashlib
import io
import re
import secrets
import time
from pathlib import Path
from typing import BinaryIO, cast

from storage import blobs
from translations import _

CHUNK_BYTES = 8 * 1024 * 1024  # the chunk size clients are told to use (at most half the single-request limit)
MAX_TOTAL_BYTES = 20 * 1024 ** 3
ABANDONED_S = 7 * 86400  # an upload that received nothing for this long is removed when another one starts
_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")


class ChunkError(ValueError):
    """A chunked-upload request that cannot be honoured: the HTTP status, the message and the offset reached."""

    def __init__(self, status: int, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.status, self.offset = status, offset


def chunk_bytes(request_limit: int) -> int:
    """The chunk size for a deployment whose single requests may carry `request_limit` bytes."""
    return max(1, min(CHUNK_BYTES, request_limit // 2))


def _prefix(upload_id: str) -> str:
    return f".chunked-{upload_id}/"


def _part(upload_id: str, offset: int) -> str:
    return f"{_prefix(upload_id)}{offset:015d}"


def _chain(files: blobs.Blobs, upload_id: str) -> list[blobs.Entry]:
    """The parts that follow one another from offset 0, in order (a part's name is its offset)."""
    parts = {int(entry.key.rsplit("/", 1)[-1]): entry for entry in files.list(_prefix(upload_id))
             if entry.key.rsplit("/", 1)[-1].isdigit()}
    chain, reached = [], 0
    while reached in parts:
        chain.append(parts[reached])
        if not parts[reached].size:  # only the first part may be empty: the upload started, nothing came yet
            break
        reached += parts[reached].size
    return chain


def _reached(chain: list[blobs.Entry]) -> int:
    return sum(entry.size for entry in chain)


def start(store, files: str | Path | blobs.Blobs, filename: object, size: object, options: dict,
          request_limit: int) -> dict:
    """Begin an upload of `size` bytes; its id, the offset (0) and the chunk size to send."""
    if not isinstance(filename, str) or not filename.strip():
        raise ChunkError(400, _("Give the file's name as 'filename'."))
    if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= MAX_TOTAL_BYTES:
        raise ChunkError(400, _("Give the file's size in bytes as 'size' (1 to %(max)s).", max=MAX_TOTAL_BYTES))
    files = blobs.at(files)
    upload_id = secrets.token_urlsafe(16)
    _remove_abandoned(store, files)
    files.put_bytes(_part(upload_id, 0), b"")  # an empty first part: the upload exists, and when it started
    store.set_setting(f"chunked:{upload_id}", {"filename": Path(filename.replace("\\", "/")).name[:200] or "upload",
                                               "size": size, "options": options})
    return {"id": upload_id, "offset": 0, "size": size, "chunk_bytes": chunk_bytes(request_limit)}


def _described(store, files: blobs.Blobs, upload_id: str) -> tuple[dict, list[blobs.Entry]]:
    described = store.get_setting(f"chunked:{upload_id}") if _ID.match(upload_id or "") else None
    chain = _chain(files, upload_id) if described is not None else []
    if described is None or not chain:
        raise ChunkError(404, _("No upload in progress has this id; start the upload again."))
    return described, chain


def status(store, files: str | Path | blobs.Blobs, upload_id: str, request_limit: int) -> dict:
    """How far an upload has come, and the chunk size to go on with: {id, offset, size, chunk_bytes}."""
    described, chain = _described(store, blobs.at(files), upload_id)
    return {"id": upload_id, "offset": _reached(chain), "size": described["size"],
            "chunk_bytes": chunk_bytes(request_limit)}


def append(store, files: str | Path | blobs.Blobs, upload_id: str, offset: object, data: bytes,
           sha256: str | None) -> dict:
    """Add a chunk at `offset`, which must be where the upload stands (else 409 with the offset to resume from);
    the chunk is refused when its SHA-256 is given and differs."""
    files = blobs.at(files)
    described, chain = _described(store, files, upload_id)
    reached = _reached(chain)
    if offset != reached:
        raise ChunkError(409, _("The upload stands at byte %(offset)s; send the chunk that starts there.",
                                offset=reached), reached)
    if not data:
        raise ChunkError(400, _("The chunk is empty."), reached)
    if reached + len(data) > described["size"]:
        raise ChunkError(400, _("The chunk goes past the %(size)s bytes the upload was started with.",
                                size=described["size"]), reached)
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256.strip().lower():
        raise ChunkError(400, _("The chunk arrived damaged (its SHA-256 differs); send it again."), reached)
    files.put_bytes(_part(upload_id, reached), data)  # atomic: the part is there whole, or not at all
    return {"id": upload_id, "offset": reached + len(data), "size": described["size"]}


def assembled(store, files: str | Path | blobs.Blobs, upload_id: str) -> tuple[BinaryIO, dict]:
    """The whole file, as a stream over its parts, once every byte arrived, with the upload's description (file
    name, options); the caller closes the stream."""
    files = blobs.at(files)
    described, chain = _described(store, files, upload_id)
    reached = _reached(chain)
    if reached != described["size"]:
        raise ChunkError(409, _("Only %(offset)s of %(size)s bytes have arrived; send the rest first.",
                                offset=reached, size=described["size"]), reached)
    return io.BufferedReader(_Joined(files, [entry.key for entry in chain if entry.size])), described


class _Joined(io.RawIOBase):
    """The parts of an upload read one after the other, as one stream."""

    def __init__(self, files: blobs.Blobs, keys: list[str]) -> None:
        super().__init__()
        self.files, self.keys = files, list(keys)
        self.current: io.BufferedIOBase | None = None

    def readable(self) -> bool:
        """Always."""
        return True

    def readinto(self, buffer) -> int:
        """Bytes of the current part, going on to the next at its end."""
        while self.current is not None or self.keys:
            if self.current is None:
                # Blobs.open gives a BufferedReader (a local file, an S3 range reader): it has readinto
                self.current = cast(io.BufferedIOBase, self.files.open(self.keys.pop(0)))
            count = self.current.readinto(buffer)
            if count:
                return count
            self.current.close()
            self.current = None
        return 0

    def close(self) -> None:
        """Close the part being read."""
        if self.current is not None:
            self.current.close()
            self.current = None
        super().close()


def _remove_abandoned(store, files: blobs.Blobs) -> None:
    """Remove the parts (and descriptions) of uploads that received nothing for ABANDONED_S."""
    newest: dict[str, float] = {}
    for entry in files.list(".chunked-"):
        upload_id = entry.key.split("/", 1)[0].removeprefix(".chunked-")
        newest[upload_id] = max(newest.get(upload_id, 0.0), entry.modified)
    for upload_id, modified in newest.items():
        if time.time() - modified > ABANDONED_S:
            discard(store, files, upload_id)


def discard(store, files: str | Path | blobs.Blobs, upload_id: str) -> None:
    """Forget an upload in progress and remove its parts."""
    files = blobs.at(files)
    for entry in list(files.list(_prefix(upload_id))):
        files.delete(entry.key)
    store.set_setting(f"chunked:{upload_id}", None)

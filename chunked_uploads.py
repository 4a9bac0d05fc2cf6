"""Resumable uploads in chunks, for files over the single-request upload limit.

A client starts an upload (its file name, size and the kind's upload fields), then sends the file's bytes in
order, each chunk at the offset the server has reached, with the chunk's SHA-256 when it can compute one; after a
network failure it asks for that offset and goes on from there. Finishing hands the assembled file to ingest, like
any upload. The partial file is named by the upload's random id (never the user's file name) in the uploads
folder; its description is a setting of the store, so that any web process of a deployment can take the next
chunk. An upload that received nothing for a week is removed when another one starts.
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from pathlib import Path

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


def _partial(folder: str | Path, upload_id: str) -> Path:
    return Path(folder) / f".chunked-{upload_id}"


def start(store, folder: str | Path, filename: object, size: object, options: dict, request_limit: int) -> dict:
    """Begin an upload of `size` bytes; its id, the offset (0) and the chunk size to send."""
    if not isinstance(filename, str) or not filename.strip():
        raise ChunkError(400, _("Give the file's name as 'filename'."))
    if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= MAX_TOTAL_BYTES:
        raise ChunkError(400, _("Give the file's size in bytes as 'size' (1 to %(max)s).", max=MAX_TOTAL_BYTES))
    upload_id = secrets.token_urlsafe(16)
    Path(folder).mkdir(parents=True, exist_ok=True)
    _remove_abandoned(store, folder)
    _partial(folder, upload_id).touch()
    store.set_setting(f"chunked:{upload_id}", {"filename": Path(filename.replace("\\", "/")).name[:200] or "upload",
                                               "size": size, "options": options})
    return {"id": upload_id, "offset": 0, "size": size, "chunk_bytes": chunk_bytes(request_limit)}


def _described(store, folder: str | Path, upload_id: str) -> tuple[dict, Path]:
    described = store.get_setting(f"chunked:{upload_id}") if _ID.match(upload_id or "") else None
    path = _partial(folder, upload_id)
    if described is None or not path.exists():
        raise ChunkError(404, _("No upload in progress has this id; start the upload again."))
    return described, path


def status(store, folder: str | Path, upload_id: str) -> dict:
    """How far an upload has come: {id, offset, size}."""
    described, path = _described(store, folder, upload_id)
    return {"id": upload_id, "offset": path.stat().st_size, "size": described["size"]}


def append(store, folder: str | Path, upload_id: str, offset: object, data: bytes, sha256: str | None) -> dict:
    """Add a chunk at `offset`, which must be where the upload stands (else 409 with the offset to resume from);
    the chunk is refused when its SHA-256 is given and differs."""
    described, path = _described(store, folder, upload_id)
    reached = path.stat().st_size
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
    with path.open("ab") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    return {"id": upload_id, "offset": reached + len(data), "size": described["size"]}


def assembled(store, folder: str | Path, upload_id: str) -> tuple[Path, dict]:
    """The whole file once every byte arrived, with the upload's description (file name, options)."""
    described, path = _described(store, folder, upload_id)
    reached = path.stat().st_size
    if reached != described["size"]:
        raise ChunkError(409, _("Only %(offset)s of %(size)s bytes have arrived; send the rest first.",
                                offset=reached, size=described["size"]), reached)
    return path, described


def _remove_abandoned(store, folder: str | Path) -> None:
    """Remove the partial files (and descriptions) of uploads that received nothing for ABANDONED_S."""
    for path in Path(folder).glob(".chunked-*"):
        try:
            if time.time() - path.stat().st_mtime > ABANDONED_S:
                discard(store, folder, path.name.removeprefix(".chunked-"))
        except OSError:
            pass  # another process removed it first


def discard(store, folder: str | Path, upload_id: str) -> None:
    """Forget an upload in progress and remove its partial file."""
    _partial(folder, upload_id).unlink(missing_ok=True)
    store.set_setting(f"chunked:{upload_id}", None)

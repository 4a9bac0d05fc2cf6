"""Where files are kept: uploads, the parts of chunked uploads, result documents and reference sets.

`Blobs` is the interface, over keys such as `<sha256>.jsonl` or `references/<sha256>.npz`; `LocalFolder` keeps
them in a folder (the default: UPLOAD_FOLDER, RESULTS_FOLDER) and `S3Bucket` in an S3-compatible bucket
(STORAGE_URL=s3://bucket/prefix, with the endpoint and credentials of AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY and AWS_REGION). Every write is atomic: a reader sees the whole old object or the whole new
one, never half of one. Reads are seekable file objects; over S3 they fetch only the byte ranges read (with a
read-ahead that grows while reading goes forward), so a ZIP's directory or a session at an offset costs a few
ranged GETs, not the whole object.

Kinds never see this module: they get a `kinds.kind.StoredFile` (`Blobs.file`), opened with
`kinds.kind.open_file`.
"""
from __future__ import annotations

import io
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Mapping, NamedTuple
from urllib.parse import urlparse

CHUNK = 1 << 20
MIN_AHEAD = 256 * 1024  # the first ranged GET of a read; doubled while reading goes forward
MAX_AHEAD = 8 * 1024 * 1024
TMP_PREFIX = ".tmp-"


class Entry(NamedTuple):
    """One stored object: its key, size in bytes, and last change (seconds since the epoch)."""

    key: str
    size: int
    modified: float


class Blobs(ABC):
    """A place that keeps objects by key; writes are atomic, reads are seekable binary file objects."""

    @abstractmethod
    def open(self, key: str) -> BinaryIO:
        """The object for reading, seekable; FileNotFoundError when there is none."""

    @abstractmethod
    def put(self, key: str, stream: BinaryIO) -> None:
        """Store the stream's bytes under `key`, replacing any object there, all at once."""

    @abstractmethod
    def put_file(self, key: str, path: Path) -> None:
        """Store a temporary file made in `scratch()` under `key`, all at once (the file may be moved)."""

    @abstractmethod
    def exists(self, key: str) -> bool:
        """Whether an object is stored under `key`."""

    @abstractmethod
    def size(self, key: str) -> int:
        """The object's size in bytes; FileNotFoundError when there is none."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object (nothing happens when there is none)."""

    @abstractmethod
    def list(self, prefix: str) -> Iterator[Entry]:
        """The objects whose keys start with `prefix`."""

    @abstractmethod
    def scratch(self) -> Path:
        """A local folder for temporary files that `put_file` will store."""

    def file(self, key: str) -> Any:
        """A handle on one object for the kinds: `.open("rb")`, `.exists()`, `.name` (a StoredFile)."""
        return StoredObject(self, key)

    def prepare(self, create: bool) -> None:
        """Make sure the place exists (making it with `create`); an error naming what is missing otherwise."""

    def check(self, create: bool = False) -> None:
        """Write, read back and delete a small object here (after `prepare`); raises what went wrong."""
        self.prepare(create)
        key, probe = ".check", os.urandom(16)
        self.put_bytes(key, probe)
        try:
            with self.open(key) as stream:
                if stream.read() != probe:
                    raise OSError(f"{self}: an object read back differs from what was written")
        finally:
            self.delete(key)

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store bytes under `key`, all at once."""
        self.put(key, io.BytesIO(data))


class StoredObject:
    """A handle on one object of a Blobs: what `Blobs.file` gives where no local path exists."""

    def __init__(self, blobs: Blobs, key: str) -> None:
        self.blobs, self.key = blobs, key
        self.name = key.rsplit("/", 1)[-1]

    def open(self, mode: str = "rb") -> BinaryIO:
        """The object for reading (only "rb")."""
        if mode != "rb":
            raise ValueError("stored objects are opened for reading only")
        return self.blobs.open(self.key)

    def exists(self) -> bool:
        """Whether the object is stored."""
        return self.blobs.exists(self.key)

    def __str__(self) -> str:
        return f"{self.blobs}/{self.key}"


def _checked_key(key: str) -> str:
    """A key as given, refused when it is empty or climbs out of its place."""
    if not key or key.startswith("/") or ".." in key.split("/"):
        raise ValueError(f"bad storage key {key!r}")
    return key


class LocalFolder(Blobs):
    """Objects as files under a folder; a write goes to a temporary file in the same folder, then os.replace."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def __str__(self) -> str:
        return str(self.root)

    def prepare(self, create: bool) -> None:
        """Make the folder with `create`; FileNotFoundError when it is missing otherwise."""
        if create:
            self.root.mkdir(parents=True, exist_ok=True)
        elif not self.root.is_dir():
            raise FileNotFoundError(f"{self.root} does not exist (--create makes it)")

    def path(self, key: str) -> Path:
        """The file of a key."""
        return self.root / _checked_key(key)

    def file(self, key: str) -> Path:
        """The object's own path (a Path is a StoredFile)."""
        return self.path(key)

    def open(self, key: str) -> BinaryIO:
        """The file, opened for reading."""
        return open(self.path(key), "rb")

    def put(self, key: str, stream: BinaryIO) -> None:
        """Copy the stream to a temporary file beside the target, flushed to disk, then rename it over the target."""
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=TMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(stream, out, CHUNK)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)

    def put_file(self, key: str, path: Path) -> None:
        """Move the file into place (a rename: `scratch()` is this folder)."""
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)

    def exists(self, key: str) -> bool:
        """Whether the file exists."""
        return self.path(key).is_file()

    def size(self, key: str) -> int:
        """The file's size."""
        return self.path(key).stat().st_size

    def delete(self, key: str) -> None:
        """Remove the file, then its folders that are left empty (never the root)."""
        path = self.path(key)
        path.unlink(missing_ok=True)
        for parent in path.parents:
            if parent == self.root or self.root not in parent.parents:
                break
            try:
                parent.rmdir()
            except OSError:
                break

    def list(self, prefix: str) -> Iterator[Entry]:
        """The files whose keys start with `prefix` (temporary files left out)."""
        folder, _, start = prefix.rpartition("/")
        base = self.root / folder if folder else self.root
        if not base.is_dir():
            return
        for child in base.iterdir():
            if not child.name.startswith(start) or child.name.startswith(TMP_PREFIX):
                continue
            for path in (child.rglob("*") if child.is_dir() else [child]):
                try:
                    if path.is_file() and not path.name.startswith(TMP_PREFIX):
                        stat = path.stat()
                        yield Entry(path.relative_to(self.root).as_posix(), stat.st_size, stat.st_mtime)
                except OSError:
                    continue  # removed meanwhile

    def scratch(self) -> Path:
        """The folder itself, so that put_file is a rename."""
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root


class S3Bucket(Blobs):
    """Objects in an S3-compatible bucket under a key prefix, through boto3 (multipart uploads, retries, ranged
    GETs). A PUT, or a multipart upload's completion, is atomic on S3: an object is never seen half-written."""

    def __init__(self, bucket: str, prefix: str = "", environ: Mapping[str, str] | None = None) -> None:
        self.bucket, self.prefix = bucket, prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.environ = dict(os.environ if environ is None else environ)
        self._client: Any = None
        self._pid = 0

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix.rstrip('/')}"

    def child(self, name: str) -> "S3Bucket":
        """The same bucket, under `<prefix><name>/`."""
        return S3Bucket(self.bucket, self.prefix + name, self.environ)

    @property
    def client(self) -> Any:
        """The boto3 client of this process (made again after a fork: a Celery worker's children)."""
        if self._client is None or self._pid != os.getpid():
            self._client, self._pid = s3_client(self.environ), os.getpid()
        return self._client

    def _key(self, key: str) -> str:
        return self.prefix + _checked_key(key)

    def prepare(self, create: bool) -> None:
        """Make the bucket with `create` when there is none; LookupError when it is missing otherwise."""
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
                raise
            if not create:
                raise LookupError(f"there is no bucket {self.bucket!r} (--create makes it)") from None
            self.client.create_bucket(Bucket=self.bucket)

    def open(self, key: str) -> BinaryIO:
        """A seekable reader that fetches byte ranges as they are read."""
        return io.BufferedReader(RangeReader(self.client, self.bucket, self._key(key)), 64 * 1024)

    def put(self, key: str, stream: BinaryIO) -> None:
        """One PUT, or a multipart upload for a large stream (the object appears when it completes)."""
        self.client.upload_fileobj(stream, self.bucket, self._key(key))

    def put_file(self, key: str, path: Path) -> None:
        """Upload the file (multipart when large); the caller removes it."""
        self.client.upload_file(str(path), self.bucket, self._key(key))

    def exists(self, key: str) -> bool:
        """A HEAD request."""
        try:
            self.size(key)
        except FileNotFoundError:
            return False
        return True

    def size(self, key: str) -> int:
        """A HEAD request's Content-Length."""
        return _head(self.client, self.bucket, self._key(key))

    def delete(self, key: str) -> None:
        """A DELETE request."""
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def list(self, prefix: str) -> Iterator[Entry]:
        """ListObjectsV2, page after page."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix + prefix)
        for page in pages:
            for item in page.get("Contents", []):
                yield Entry(item["Key"][len(self.prefix):], item["Size"], item["LastModified"].timestamp())

    def scratch(self) -> Path:
        """The system's temporary folder."""
        return Path(tempfile.gettempdir())


def s3_client(environ: Mapping[str, str]) -> Any:
    """A boto3 S3 client from the usual variables; path-style addressing when an endpoint is named (most
    S3-compatible servers want it)."""
    import boto3  # only a deployment that uses S3 needs it
    from botocore.config import Config

    endpoint = (environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or "").strip() or None
    session = boto3.session.Session(aws_access_key_id=environ.get("AWS_ACCESS_KEY_ID") or None,
                                    aws_secret_access_key=environ.get("AWS_SECRET_ACCESS_KEY") or None,
                                    aws_session_token=environ.get("AWS_SESSION_TOKEN") or None,
                                    region_name=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
                                    or "us-east-1")
    config = Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=32,
                    s3={"addressing_style": "path" if endpoint else "auto"})
    return session.client("s3", endpoint_url=endpoint, config=config)


def _head(client: Any, bucket: str, key: str) -> int:
    """An object's size; FileNotFoundError when it is missing."""
    from botocore.exceptions import ClientError

    try:
        return client.head_object(Bucket=bucket, Key=key)["ContentLength"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            raise FileNotFoundError(f"s3://{bucket}/{key}") from None
        raise


class RangeReader(io.RawIOBase):
    """A seekable read-only file over one S3 object: each read outside the window it holds issues one ranged GET
    of at least the bytes asked for, MIN_AHEAD at first and up to MAX_AHEAD while reading goes on forward.
    `fetched` and `requests` count what came over the network."""

    def __init__(self, client: Any, bucket: str, key: str) -> None:
        super().__init__()
        self.client, self.bucket, self.key = client, bucket, key
        self.length = _head(client, bucket, key)
        self.position = 0
        self.window_start, self.window = 0, b""
        self.ahead = MIN_AHEAD
        self.fetched = self.requests = 0

    def readable(self) -> bool:
        """Always."""
        return True

    def seekable(self) -> bool:
        """Always."""
        return True

    def tell(self) -> int:
        """The position."""
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move the position (no request is made)."""
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.length}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self.position = base + offset
        return self.position

    def readinto(self, buffer: Any) -> int:
        """Copy bytes at the position into `buffer`, from the window or from one ranged GET."""
        wanted = min(len(buffer), self.length - self.position)
        if wanted <= 0:
            return 0
        inside = self.position - self.window_start
        if not 0 <= inside < len(self.window):
            forward = self.position == self.window_start + len(self.window) and self.window
            self.ahead = min(MAX_AHEAD, self.ahead * 2) if forward else MIN_AHEAD
            self.window_start, self.window = self.position, self._get(self.position, max(wanted, self.ahead))
            inside = 0
        count = min(wanted, len(self.window) - inside)
        buffer[:count] = self.window[inside:inside + count]
        self.position += count
        return count

    def _get(self, start: int, count: int) -> bytes:
        end = min(self.length, start + count) - 1
        body = self.client.get_object(Bucket=self.bucket, Key=self.key, Range=f"bytes={start}-{end}")["Body"]
        try:
            data = body.read()
        finally:
            body.close()
        self.fetched += len(data)
        self.requests += 1
        if not data:
            raise OSError(f"s3://{self.bucket}/{self.key}: no bytes at offset {start}")
        return data


def at(where: "str | Path | Blobs") -> Blobs:
    """A Blobs as it is, or the local folder at a path."""
    return where if isinstance(where, Blobs) else LocalFolder(where)


def from_url(url: str, environ: Mapping[str, str] | None = None) -> S3Bucket:
    """The bucket and prefix of `s3://bucket/prefix`; ValueError for any other URL."""
    parsed = urlparse(url.strip())
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"STORAGE_URL must look like s3://bucket/prefix, not {url!r}")
    return S3Bucket(parsed.netloc, parsed.path, environ)


def for_config(config: Mapping) -> tuple[Blobs, Blobs]:
    """The uploads' and the results' places of an app: `<prefix>/uploads` and `<prefix>/results` of STORAGE_URL,
    else the folders UPLOAD_FOLDER and RESULTS_FOLDER."""
    url = (config.get("STORAGE_URL") or "").strip()
    if not url:
        return LocalFolder(config["UPLOAD_FOLDER"]), LocalFolder(config["RESULTS_FOLDER"])
    bucket = from_url(url)
    return bucket.child("uploads"), bucket.child("results")

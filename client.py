"""A Python client of the dashboard's JSON API (docs/client.md): upload (in resumable chunks when big), evaluate, wait
with progress, the result document, the judgments as a pandas DataFrame, compare and share; the rubrics (list, read,
add); people's ratings of a dialogue evaluation (add a file, read, export, delete).

Standard library only (pandas for `judgments`, imported when called). The token is sent only to the server the client
was made for: a redirect is followed only to the same scheme, host and port, and only for GET. Calls that are safe to
repeat (GET, a chunk PUT at an offset, and any request whose connection was refused before it was sent) are retried
a few times, with backoff, on connection errors and on 503 (waiting its Retry-After); a POST that may have been
applied is never sent twice.
"""
from __future__ import annotations

import email.utils
import hashlib
import http.client
import io
import json
import os
import secrets
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

DEFAULT_CHUNK_THRESHOLD = 32 * 1024 * 1024  # files above this go up in chunks (the server's own limit is larger)
FINISHED = ("done", "incomplete", "failed", "cancelled")
RETRY_AFTER_MAX_S = 60.0
# judgments.csv's text columns; every other column (round, total, the kind's scores, tokens, ...) is numeric
TEXT_COLUMNS = ("session_id", "method", "mode", "status", "scores", "error", "answer")


class ApiError(Exception):
    """An answer of the server that is not a success: its HTTP status (None when it could not be reached), its
    message, and for a rejected file every problem ({line, path, message})."""

    def __init__(self, status: int | None, message: str, problems: list[dict] | None = None,
                 truncated: bool = False, body: Any = None) -> None:
        super().__init__(message)
        self.status, self.message, self.problems = status, message, list(problems or [])
        self.truncated, self.body = truncated, body

    def __str__(self) -> str:
        lines = [f"{self.message} (HTTP {self.status})" if self.status else self.message]
        for p in self.problems:  # a file's problem has its line (and path); a request field's, its path
            where = " ".join(str(part) for part in (f"line {p['line']}" if p.get("line") else None, p.get("path"))
                             if part) or "file"
            lines.append(f"  {where}: {p.get('message', '')}")
        if self.truncated:
            lines.append("  (more problems were found; fix these first)")
        return "\n".join(lines)


class EvaluationError(Exception):
    """An evaluation that ended without a whole result (failed, cancelled or incomplete); `status` is its last
    status document (an incomplete one has its `result`)."""

    def __init__(self, status: dict) -> None:
        super().__init__(f"evaluation {status['id']} ended {status['status']}: {status.get('error') or ''}".strip())
        self.status = status


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only for GET and only to the origin asked, so the token never goes elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        """The redirected request, or None (the 3xx is then an error) for another origin or method."""
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if req.get_method() != "GET" or (old.scheme, old.netloc) != (new.scheme, new.netloc):
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class Client:
    """The API of one deployment at `url` (such as http://127.0.0.1:5000), with an API token when accounts are on."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 60.0,
                 chunk_threshold: int = DEFAULT_CHUNK_THRESHOLD, chunk_bytes: int | None = None, retries: int = 3,
                 backoff_s: float = 0.5, poll_s: float = 0.5) -> None:
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the server URL must start with http:// or https://, got {url!r}")
        self.url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.token, self.timeout = token or None, timeout
        self.chunk_threshold, self.chunk_bytes = chunk_threshold, chunk_bytes
        self.retries, self.backoff_s, self.poll_s = retries, backoff_s, poll_s
        self._opener = urllib.request.build_opener(_SameOrigin)
        self.last_chunked_id: str | None = None  # to resume with after an interruption this client could not get over

    def __repr__(self) -> str:
        return f"Client({self.url!r})"  # never the token

    # -- HTTP ----------------------------------------------------------------------------------------------------

    def _send(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
              params: dict | None = None) -> tuple[int, dict, bytes]:
        """One request: (status, headers, body) of any answer; OSError when the server cannot be reached."""
        url = self.url + path + (f"?{urllib.parse.urlencode(params, doseq=True)}" if params else "")
        all_headers = {"Accept": "application/json", **(headers or {})}
        if self.token:
            all_headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, data=body, headers=all_headers, method=method)
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, dict(exc.headers or {}), exc.read()
        except urllib.error.URLError as exc:  # the socket's own error (refused, reset, timed out) tells what happened
            raise exc.reason if isinstance(exc.reason, OSError) else exc

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
                params: dict | None = None, idempotent: bool | None = None, ok: tuple[int, ...] = ()) -> tuple:
        """(status, parsed JSON or raw bytes) of a success (2xx, or a status in `ok`); ApiError otherwise. Retried
        on connection errors and 503 when `idempotent` (default: GET); a refused connection is always retried."""
        idempotent = method == "GET" if idempotent is None else idempotent
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                status, answer_headers, raw = self._send(method, path, body, headers, params)
            except ConnectionRefusedError as exc:  # nothing was sent: safe to send again, whatever the call
                if last:
                    raise ApiError(None, f"cannot reach {self.url}: {exc}") from exc
                time.sleep(self._backoff(attempt))
                continue
            except (OSError, http.client.HTTPException) as exc:  # timeouts, dropped connections, cut answers
                if last or not idempotent:
                    raise ApiError(None, f"no answer from {self.url}{path}: {exc}") from exc
                time.sleep(self._backoff(attempt))
                continue
            if status == 503 and idempotent and not last:
                time.sleep(self._retry_after(answer_headers, attempt))
                continue
            parsed = _parsed(raw, answer_headers)
            if 200 <= status < 300 or status in ok:
                return status, parsed
            raise _error(status, parsed, answer_headers, self.url + path)
        raise AssertionError("unreachable")

    def _json(self, method: str, path: str, payload: Any = None, **kwargs) -> Any:
        body = None if payload is None else json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json"} if body is not None else {}
        return self.request(method, path, body, headers, **kwargs)[1]

    def _backoff(self, attempt: int) -> float:
        return self.backoff_s * 2 ** attempt * (1 + secrets.randbelow(100) / 200)  # with jitter

    def _retry_after(self, headers: dict, attempt: int) -> float:
        value = _header(headers, "Retry-After")
        if value:
            try:
                return min(max(float(value), 0.0), RETRY_AFTER_MAX_S)
            except ValueError:
                pass
            try:  # an HTTP date
                return min(max(email.utils.parsedate_to_datetime(value).timestamp() - time.time(), 0.0),
                           RETRY_AFTER_MAX_S)
            except (TypeError, ValueError):
                pass
        return self._backoff(attempt)

    # -- uploads -------------------------------------------------------------------------------------------------

    def upload(self, path: str | os.PathLike, kind: str | None = None, *, filename: str | None = None,
               chunked: bool | None = None, resume: str | None = None,
               on_progress: Callable[[int, int], None] | None = None, **fields: str) -> dict:
        """Upload a file (or a folder, as a ZIP of its files): one POST up to `chunk_threshold` bytes, else (or when
        the server answers 413, or with `resume`, the id of a chunked upload to go on with) in resumable chunks.
        `fields` are the kind's upload fields (`agent`, `task`); answers the upload {id, kind, summary, ...}."""
        path = Path(path)
        with opened(path) as (stream, name):
            name = filename or name
            size = stream.seek(0, io.SEEK_END)
            stream.seek(0)
            if resume or chunked or (chunked is None and size > self.chunk_threshold):
                return self._chunked(stream, name, size, kind, fields, resume, on_progress)
            try:
                return self._single(stream.read(), name, kind, fields)
            except ApiError as exc:
                if exc.status != 413 or chunked is False:
                    raise
            stream.seek(0)
            return self._chunked(stream, name, size, kind, fields, None, on_progress)

    def _single(self, data: bytes, name: str, kind: str | None, fields: dict, path: str = "/api/uploads") -> dict:
        boundary = f"psb-{secrets.token_hex(12)}"
        form = {**({"kind": kind} if kind else {}), **{k: v for k, v in fields.items() if v}}
        parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                 for k, v in form.items()]
        quoted = name.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{quoted}"\r\n'
                     "Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        return self.request("POST", path, body,
                            {"Content-Type": f"multipart/form-data; boundary={boundary}"}, idempotent=False)[1]

    def attach(self, upload_id: str, path: str | os.PathLike, name: str = "scores", **fields: str) -> dict:
        """Attach a file to an upload (`name`: one of its kind's attachments; dialogue: "scores", another judge's
        scores of its replies, `fields`: `rubric`); answers the attachment {id, summary, warnings, ...}."""
        path = Path(path)
        return self._single(path.read_bytes(), path.name, None, fields,
                            f"/api/uploads/{_quote(upload_id)}/{_quote(name)}")

    def _chunked(self, stream: BinaryIO, name: str, size: int, kind: str | None, fields: dict, resume: str | None,
                 on_progress: Callable[[int, int], None] | None) -> dict:
        if resume:
            state = self._json("GET", f"/api/uploads/chunked/{resume}")
            if state["size"] != size:
                raise ApiError(None, f"the chunked upload {resume} is of {state['size']} bytes, this file of {size}")
            upload_id, offset = resume, state["offset"]
            step = min(state["chunk_bytes"], self.chunk_bytes or state["chunk_bytes"])
        else:
            started = self._json("POST", "/api/uploads/chunked", {"filename": name, "size": size,
                                                                  **({"kind": kind} if kind else {}), **fields},
                                 idempotent=False)
            upload_id, offset = started["id"], started["offset"]
            step = min(started["chunk_bytes"], self.chunk_bytes or started["chunk_bytes"])
        self.last_chunked_id = upload_id
        damaged = 0
        while offset < size:
            if on_progress:
                on_progress(offset, size)
            stream.seek(offset)
            chunk = stream.read(step)
            try:
                answer = self.request("PUT", f"/api/uploads/chunked/{upload_id}", chunk,
                                              {"Content-Type": "application/octet-stream",
                                               "X-Chunk-SHA256": hashlib.sha256(chunk).hexdigest()},
                                              params={"offset": offset}, idempotent=True, ok=(409,))[1]
            except ApiError as exc:
                if exc.status == 413 and len(chunk) > 1:  # over this server's request limit: smaller chunks
                    step = len(chunk) // 2
                    continue
                if exc.status == 400 and "offset" in (exc.body or {}) and damaged < self.retries:
                    damaged += 1  # arrived damaged: send it again
                    continue
                if exc.status is not None:
                    raise
                # the answer was lost: the server says where the upload stands (retried like any GET)
                answer = self._json("GET", f"/api/uploads/chunked/{upload_id}")
            offset = answer["offset"]  # a 409 says where the upload already stands
        if on_progress:
            on_progress(size, size)
        return self._json("POST", f"/api/uploads/chunked/{upload_id}/finish", idempotent=False)

    # -- evaluations ---------------------------------------------------------------------------------------------

    def evaluate(self, upload_id: str, **options: Any) -> dict:
        """Start an evaluation of an upload; `options` are the API's fields (methods, judge, judges, samples,
        pairwise, rubric, reference, annotate, ...; `rubric=` names a dialogue's rubric by id or SHA-256). Answers
        {id, status, url}."""
        return self._json("POST", "/api/evaluations", {"upload_id": upload_id, **options}, idempotent=False)

    # -- rubrics (dialogue) --------------------------------------------------------------------------------------

    def rubrics(self) -> list[dict]:
        """Every rubric the server has: the built-ins, then those added, newest first (id, version, sha256, title,
        dimensions with their scales, headline, binary, ...)."""
        return self._json("GET", "/api/rubrics")

    def rubric(self, name: str) -> dict:
        """One rubric by id or SHA-256, with its whole `document`."""
        return self._json("GET", f"/api/rubrics/{_quote(name)}")

    def add_rubric(self, path: str | os.PathLike) -> dict:
        """Add a rubric file (YAML or JSON); answers the rubric. ApiError with every problem of the file (each with
        its line and field), or (409) when its id is a built-in's or its id and version are kept with other
        content."""
        data = Path(path).read_bytes()
        return self.request("POST", "/api/rubrics", data, {"Content-Type": "application/yaml"}, idempotent=False)[1]

    # -- people's ratings (dialogue) ------------------------------------------------------------------------------

    def add_ratings(self, evaluation_id: str, path: str | os.PathLike, rater: str | None = None, wait: bool = True,
                    timeout: float | None = None) -> dict:
        """Attach a file of people's ratings (CSV or JSONL: session_id, round, method, an optional rater, and total,
        binary and/or the rubric's dimensions) to a finished dialogue evaluation, in place of the ratings of the
        raters it names (its rows without a rater are `rater`'s, else the file's name); a rescore job scores the
        evaluation again. Answers {ratings, replies, attached, raters, rescore}; with `wait` (the default) once the
        job is over (wait_rescored), with `agreement` added (the result's agreement.human). ApiError with every
        problem of the file, each with its line and column."""
        path = Path(path)
        answer = self._single(path.read_bytes(), path.name, None, {"rater": rater or ""},
                              f"/api/evaluations/{_quote(evaluation_id)}/human-ratings")
        return self._rescored(evaluation_id, answer, timeout) if wait else answer

    def _rescored(self, evaluation_id: str, answer: dict, timeout: float | None) -> dict:
        """An answer that started a rescore job, once the job is over: its last state, and `agreement`."""
        state = self.wait_rescored(evaluation_id, timeout)
        result = self.status(evaluation_id)["result"] or {}
        return {**answer, "rescore": state, "agreement": (result.get("agreement") or {}).get("human")}

    def rescore_state(self, evaluation_id: str) -> dict:
        """The state of the evaluation's last rescore job, which attaching or removing people's ratings starts:
        {status (queued, running, done, failed, cancelled), error, requested_at, finished_at}."""
        return self._json("GET", f"/api/evaluations/{_quote(evaluation_id)}/rescore")

    def wait_rescored(self, evaluation_id: str, timeout: float | None = None) -> dict:
        """Poll until the evaluation's rescore job is over; its last state (ApiError 409 with its error when it
        failed; TimeoutError after `timeout` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self.rescore_state(evaluation_id)
            if state["status"] == "failed":
                raise ApiError(409, state["error"] or "scoring again failed", body=state)
            if state["status"] not in ("queued", "running"):
                return state
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"evaluation {evaluation_id} is still being scored again after {timeout} s")
            time.sleep(self.poll_s)

    def ratings(self, evaluation_id: str, rater: str | None = None) -> dict:
        """Every rater's ratings of a dialogue evaluation (or one rater's): {raters: [{rater, ratings, sources,
        updated_at}], ratings: [{rater, session_id, round, method, total, verdict, each dimension by key, source,
        line, updated_at}]}."""
        return self._json("GET", f"/api/evaluations/{_quote(evaluation_id)}/human-ratings",
                          params={"rater": rater} if rater else None)

    def export_ratings(self, evaluation_id: str, path: str | os.PathLike | None = None, format: str = "csv",
                       rater: str | None = None) -> str:
        """Every rater's ratings (or one rater's) as a ratings file, `format` csv or jsonl, which add_ratings takes
        back: its text, also written to `path` when given."""
        raw = self.request("GET", f"/api/evaluations/{_quote(evaluation_id)}/human-ratings",
                           params={"format": format, **({"rater": rater} if rater else {})})[1]
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def delete_ratings(self, evaluation_id: str, rater: str | None = None, wait: bool = True,
                       timeout: float | None = None) -> dict:
        """Remove one rater's ratings (ApiError 404 when they have none), else every rater's; a rescore job scores the
        evaluation again. Answers {ratings (how many are left), rescore}; with `wait` (the default) once the job is
        over, with `agreement` added as add_ratings does."""
        answer = self._json("DELETE", f"/api/evaluations/{_quote(evaluation_id)}/human-ratings",
                            params={"rater": rater} if rater else None, idempotent=False)
        return self._rescored(evaluation_id, answer, timeout) if wait else answer

    def status(self, evaluation_id: str) -> dict:
        """An evaluation's status document: {id, status, progress, error, failure, result, ...}."""
        return self._json("GET", f"/api/evaluations/{_quote(evaluation_id)}")

    def wait(self, evaluation_id: str, on_progress: Callable[[dict], None] | None = None,
             timeout: float | None = None) -> dict:
        """Poll until the evaluation has ended, calling `on_progress` with its progress dict ({done, total, failed,
        unparsed, ...}) whenever it moved; the final status document (TimeoutError after `timeout` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = None
        while True:
            current = self.status(evaluation_id)
            progress = current["progress"]
            moved = (progress["done"], progress["total"], progress["failed"], progress.get("unparsed"))
            if on_progress and moved != seen:
                on_progress(progress)
                seen = moved
            if current["status"] in FINISHED:
                return current
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"evaluation {evaluation_id} is still {current['status']} after {timeout} s")
            time.sleep(self.poll_s)

    def result(self, evaluation_id: str) -> dict:
        """The result document of a finished evaluation (docs/result-documents.md)."""
        return self._json("GET", f"/evaluations/{_quote(evaluation_id)}.json")

    def judgments(self, evaluation_id: str):
        """Every judgment as a pandas DataFrame (judgments.csv): text columns as str, every other one numeric."""
        import pandas as pd

        raw = self.request("GET", f"/evaluations/{_quote(evaluation_id)}/judgments.csv",
                           headers={"Accept": "text/csv"})[1]
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        for column in frame.columns:
            if column in TEXT_COLUMNS:
                frame[column] = frame[column].replace("", None)
            else:
                frame[column] = pd.to_numeric(frame[column].replace("", None), errors="coerce")
        return frame

    def compare(self, ids: list[str], baseline: str | None = None, **options: Any) -> dict:
        """The paired differences of finished evaluations against `baseline` (default the earliest created):
        {baseline, runs, paired, regression}; `options`: correction, metric, max_drop."""
        params = {"ids": list(ids), **({"baseline": baseline} if baseline else {}),
                  **{k: v for k, v in options.items() if v is not None}}
        return self._json("GET", "/api/compare", params=params)

    def evaluations(self, **params: Any) -> list[dict]:
        """A page of the evaluations that match: `GET /api/evaluations` with its parameters (q, kind, status, tag,
        started_by, since, until, sort, figure, page, per_page; None leaves one out), newest first by default."""
        return self._json("GET", "/api/evaluations", params={k: v for k, v in params.items() if v is not None})

    def share(self, evaluation_id: str) -> str:
        """A new read-only share link of a finished evaluation: its URL."""
        return self._json("POST", f"/api/evaluations/{_quote(evaluation_id)}/shares", idempotent=False)["url"]

    def score(self, path: str | os.PathLike, kind: str | None = None, *, upload_fields: dict | None = None,
              on_progress: Callable[[dict], None] | None = None, timeout: float | None = None,
              **options: Any) -> dict:
        """Upload, evaluate, wait and fetch the result document; EvaluationError when the evaluation ends without a
        whole result."""
        upload = self.upload(path, kind, **(upload_fields or {}))
        started = self.evaluate(upload["id"], **options)
        final = self.wait(started["id"], on_progress=on_progress, timeout=timeout)
        if final["status"] != "done":
            raise EvaluationError(final)
        return self.result(started["id"])


def _quote(part: str) -> str:
    return urllib.parse.quote(str(part), safe="")


def _header(headers: dict, name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name.lower()), None)


def _parsed(raw: bytes, headers: dict) -> Any:
    """JSON when the answer says so, else the bytes."""
    if "json" in (_header(headers, "Content-Type") or ""):
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return raw
    return raw


def _error(status: int, body: Any, headers: dict, url: str) -> ApiError:
    """The ApiError of a failed answer: the server's message and problems, else what the status means."""
    if 300 <= status < 400:
        return ApiError(status, f"{url} redirects to {_header(headers, 'Location')}; the client follows redirects "
                                "only within the same server, for GET")
    if isinstance(body, dict):
        return ApiError(status, str(body.get("error") or f"HTTP {status}"), body.get("problems"),
                        bool(body.get("truncated")), body)
    return ApiError(status, f"{url} answered HTTP {status}", body=body)


@contextmanager
def opened(path: Path) -> Iterator[tuple[BinaryIO, str]]:
    """A file to upload, with the name it goes up under (the path as given, so that `<agent>/<task>/overall.json`
    names its agent and task); a folder as an uncompressed ZIP of its files, in a temporary file."""
    if not path.is_dir():
        with path.open("rb") as stream:
            yield stream, str(path)
        return
    with tempfile.TemporaryFile() as spool:
        with zipfile.ZipFile(spool, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            for member in sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()):
                archive.write(member, f"{path.name}/{member.relative_to(path).as_posix()}")
        spool.seek(0)
        yield spool, f"{path}.zip"

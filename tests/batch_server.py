"""The local judge server with the OpenAI Batch API, for the tests of judge.batch, and the `batch_server` fixture.

`BatchServer` is a `JudgeServer` (its chat endpoint, knobs and counters unchanged) that also serves:
    POST /v1/files                  multipart upload (fields `file` and `purpose`, which must be "batch")
    GET  /v1/files/{id}             the file object
    GET  /v1/files/{id}/content     the file's bytes
    DELETE /v1/files/{id}
    POST /v1/batches                create {input_file_id, endpoint "/v1/chat/completions", completion_window "24h"}
    GET  /v1/batches                list, newest first
    GET  /v1/batches/{id}           retrieve
    POST /v1/batches/{id}/cancel    cancel

A created batch is "validating", then "in_progress" while it waits `batch_delay_s`, then each line is answered
exactly as the chat endpoint would answer the same body (JudgeServer's own handler code, its output captured
instead of sent; no chat request is counted), then "completed" with an output file (answers, HTTP 200) and an
error file (lines that got an error), as OpenAI writes them. Lines are validated as OpenAI does: a JSON object with
a unique custom_id, method POST, url /v1/chat/completions, a body with messages, one model for all lines, at most
`max_batch_lines` lines and `max_file_bytes` bytes; otherwise the batch is "failed" with the errors.

Knobs (set from the test thread; reset() restores them):
    batch_delay_s       seconds a batch stays in_progress before its lines are answered
    line_fault          None or callable(index, line: dict) -> kind | None, for each line (0-based index); kinds:
                        LINE_FAULTS: "error" (an error object, code server_error, in the error file), "missing"
                        (in neither file), an HTTP status of ERROR_STATUSES (the chat endpoint's error body, in
                        the error file; "401" echoes the key like a careless gateway), or one of the chat
                        endpoint's bad answers (BAD_ANSWERS: "malformed", "empty", "out_of_range",
                        "missing_property", "truncated"), answered with that content
    fault_every(n, kind)  sets line_fault: every n-th line of a batch (n-1, 2n-1, ...) gets kind
    batch_outcome       None, "failed" (the batch fails validation, no line answered; its error message echoes
                        the key) or "expired" (after `expire_after_lines` lines, the rest are expired)
    expired_error_lines whether expired requests are written to the error file (code batch_expired, as OpenAI
                        does) or left out of both files
    lose_create_responses  the next n batch creations create the batch but drop the connection unanswered
    create_faults       HTTP statuses (or None: no fault) for the next batch creations, in order; a faulted one
                        creates nothing and answers with that status
Counters: chat requests as in JudgeServer (`requests`...); batch_lines (lines answered), batch_lines_by_mode,
batch_log (custom_id and body of every line answered), uploads, files {id: {...}}, batches {id: batch object},
batch_authorizations {id: Authorization header of the creation}.
"""
from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.judge_server import BAD_ANSWERS, ERROR_STATUSES, JudgeServer, _Handler, judge_form, judged_text

LINE_FAULTS = ("error", "missing", *ERROR_STATUSES, *BAD_ANSWERS)
BATCH_OUTCOMES = (None, "failed", "expired")
ENDPOINT = "/v1/chat/completions"

_FILE_RE = re.compile(r"^/v1/files/([^/]+)(/content)?$")
_BATCH_RE = re.compile(r"^/v1/batches/([^/]+)(/cancel)?$")


class _Capture:
    """Runs the chat handler's answer code for one request and keeps what it would send."""

    _answer = _Handler._answer
    _send_error_fault = _Handler._send_error_fault

    def __init__(self) -> None:
        self.sent: tuple[int, dict] | None = None

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        self.sent = (status, payload)

    def _drop(self) -> None:
        self.sent = None


class _BatchHandler(_Handler):
    """The chat handler plus the files and batches routes."""

    def _route(self) -> str:
        return urlsplit(self.path).path.rstrip("/")

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _error(self, status: int, message: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": "invalid_request_error"}})

    def _send_bytes(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        owner: BatchServer = self.server.owner  # type: ignore[assignment]
        path = self._route()
        file_match = _FILE_RE.match(path)
        batch_match = _BATCH_RE.match(path)
        if file_match:
            found = owner._file(file_match.group(1))
            if found is None:
                self._error(404, f"No such File object: {file_match.group(1)}")
            elif file_match.group(2):
                self._send_bytes(found["data"])
            else:
                self._send_json(200, found["object"])
        elif path == "/v1/batches":
            self._send_json(200, owner._list_batches())
        elif batch_match and not batch_match.group(2):
            batch = owner._batch(batch_match.group(1))
            if batch is None:
                self._error(404, f"No such Batch object: {batch_match.group(1)}")
            else:
                self._send_json(200, batch)
        else:
            super().do_GET()

    def do_DELETE(self) -> None:  # noqa: N802 - stdlib naming
        owner: BatchServer = self.server.owner  # type: ignore[assignment]
        match = _FILE_RE.match(self._route())
        if match and not match.group(2) and owner._delete_file(match.group(1)):
            self._send_json(200, {"id": match.group(1), "object": "file", "deleted": True})
        else:
            self._error(404, f"no route or file {self.path}")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        owner: BatchServer = self.server.owner  # type: ignore[assignment]
        path = self._route()
        batch_match = _BATCH_RE.match(path)
        if path == "/v1/files":
            self._upload(owner, self._read_body())
        elif path == "/v1/batches":
            self._create(owner, self._read_body())
        elif batch_match and batch_match.group(2):
            self._read_body()
            status, payload = owner._cancel(batch_match.group(1))
            self._send_json(status, payload)
        else:
            super().do_POST()  # the chat endpoint, which reads its own body

    def _upload(self, owner: BatchServer, raw: bytes) -> None:
        fields = _multipart(self.headers.get("Content-Type", ""), raw)
        if fields is None or "file" not in fields:
            self._error(400, "expected multipart/form-data with a 'file' field")
            return
        purpose = fields.get("purpose", (None, b""))[1].decode()
        if purpose != "batch":
            self._error(400, f"purpose must be 'batch' here, got {purpose!r}")
            return
        filename, data = fields["file"]
        self._send_json(200, owner._add_file(data, filename or "upload.jsonl", "batch"))

    def _create(self, owner: BatchServer, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._error(400, "invalid JSON body")
            return
        if body.get("endpoint") != ENDPOINT or body.get("completion_window") != "24h":
            self._error(400, "endpoint must be /v1/chat/completions and completion_window 24h")
            return
        fault = owner._create_fault()
        if fault is not None:
            self._send_json(fault, {"error": {"message": f"Simulated batch creation error {fault}.",
                                              "type": "server_error" if fault >= 500 else "invalid_request_error"}})
            return
        if owner._file(str(body.get("input_file_id"))) is None:
            self._error(400, f"No such File object: {body.get('input_file_id')}")
            return
        batch, lose = owner._create_batch(body, self.headers.get("Authorization", ""))
        if lose:
            self._drop()
        else:
            self._send_json(200, batch)


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]] | None:
    """name -> (filename, bytes) of a multipart/form-data body, or None when it is not one."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not content_type.startswith("multipart/form-data") or not match:
        return None
    fields = {}
    for part in raw.split(b"--" + match.group(1).encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, data = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        disposition = next((line for line in head.decode("utf-8", "replace").split("\r\n")
                            if line.lower().startswith("content-disposition")), "")
        name = re.search(r'\bname="([^"]*)"', disposition)
        filename = re.search(r'\bfilename="([^"]*)"', disposition)
        if name:
            fields[name.group(1)] = (filename.group(1) if filename else None, data.removesuffix(b"\r\n"))
    return fields


class BatchServer(JudgeServer):
    """A JudgeServer that also serves the Batch API's files and batches."""

    def __init__(self, latency_s: float = 0.0, retry_after_s: float = 1.0, hang_s: float = 30.0,
                 batch_delay_s: float = 0.0) -> None:
        self._batch_defaults = batch_delay_s
        super().__init__(latency_s, retry_after_s, hang_s)

    def start(self) -> BatchServer:
        if self._httpd is None:
            super().start()
            # Before anyone knows the port: every connection is served by the handler with the batch routes.
            assert self._httpd is not None
            self._httpd.RequestHandlerClass = _BatchHandler
        return self

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self.batch_delay_s = self._batch_defaults
            self.line_fault: Callable[[int, dict], str | None] | None = None
            self.batch_outcome: str | None = None
            self.expire_after_lines = 0
            self.expired_error_lines = True
            self.max_batch_lines = 50_000
            self.max_file_bytes = 200 * 1024 * 1024
            self.lose_create_responses = 0
            self.create_faults: list[int | None] = []
            self.files: dict[str, dict] = {}
            self.batches: dict[str, dict] = {}
            self.batch_authorizations: dict[str, str] = {}
            self.batch_lines = 0
            self.batch_lines_by_mode = {"fine": 0, "binary": 0, "annotate": 0, "other": 0}
            self.batch_log: list[dict] = []
            self.uploads = 0
            self._cancel_requested: set[str] = set()
            self._ids = 0

    def fault_every(self, n: int, kind: str) -> None:
        """Every n-th line of each batch (index n-1, 2n-1, ...) gets the line fault `kind`."""
        _check_line_fault(kind)
        self.line_fault = lambda index, _line: kind if (index + 1) % n == 0 else None

    def batch_stats(self) -> dict:
        with self._lock:
            return {"uploads": self.uploads, "batches": len(self.batches), "batch_lines": self.batch_lines,
                    "chat_requests": self.requests}

    # -- files -------------------------------------------------------------------------------

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}-test-{self._ids}"

    def _add_file(self, data: bytes, filename: str, purpose: str) -> dict:
        file_id = self._next_id("file")
        obj = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
               "filename": filename, "purpose": purpose, "status": "processed"}
        with self._lock:
            self.files[file_id] = {"object": obj, "data": data}
            if purpose == "batch":
                self.uploads += 1
        return obj

    def _file(self, file_id: str) -> dict | None:
        with self._lock:
            return self.files.get(file_id)

    def _delete_file(self, file_id: str) -> bool:
        with self._lock:
            return self.files.pop(file_id, None) is not None

    # -- batches -----------------------------------------------------------------------------

    def _create_fault(self) -> int | None:
        with self._lock:
            return self.create_faults.pop(0) if self.create_faults else None

    def _create_batch(self, body: dict, authorization: str) -> tuple[dict, bool]:
        batch_id = self._next_id("batch")
        now = int(time.time())
        batch = {"id": batch_id, "object": "batch", "endpoint": ENDPOINT, "errors": None,
                 "input_file_id": body["input_file_id"], "completion_window": "24h", "status": "validating",
                 "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
                 "expires_at": now + 86400, "finalizing_at": None, "completed_at": None, "failed_at": None,
                 "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                 "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": body.get("metadata")}
        with self._lock:
            self.batches[batch_id] = batch
            self.batch_authorizations[batch_id] = authorization
            lose = self.lose_create_responses > 0
            if lose:
                self.lose_create_responses -= 1
            snapshot = json.loads(json.dumps(batch))
        threading.Thread(target=self._process, args=(batch_id,), name=f"batch-{batch_id}", daemon=True).start()
        return snapshot, lose

    def _batch(self, batch_id: str) -> dict | None:
        with self._lock:
            batch = self.batches.get(batch_id)
            return json.loads(json.dumps(batch)) if batch is not None else None

    def _list_batches(self) -> dict:
        with self._lock:
            data = [json.loads(json.dumps(b)) for b in reversed(list(self.batches.values()))]
        return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None, "has_more": False}

    def _cancel(self, batch_id: str) -> tuple[int, dict]:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {"error": {"message": f"No such Batch object: {batch_id}", "type": "invalid_request_error"}}
            if batch["status"] not in ("validating", "in_progress", "finalizing"):
                return 409, {"error": {"message": f"Cannot cancel a batch with status {batch['status']}.",
                                       "type": "invalid_request_error"}}
            self._cancel_requested.add(batch_id)
            batch.update(status="cancelling", cancelling_at=int(time.time()))
            return 200, json.loads(json.dumps(batch))

    def _set(self, batch_id: str, **changes: Any) -> None:
        with self._lock:
            self.batches[batch_id].update(changes)

    def _validate(self, data: bytes) -> tuple[list[dict], list[dict]]:
        """The lines of an input file, and the errors that fail the batch (OpenAI's error object shape)."""
        errors: list[dict] = []
        lines: list[dict] = []
        if len(data) > self.max_file_bytes:
            errors.append({"code": "file_too_large", "message": f"The input file is {len(data)} bytes, more than "
                           f"{self.max_file_bytes}.", "line": None, "param": None})
        custom_ids: set[str] = set()
        models: set[str] = set()
        for number, text in enumerate(data.decode("utf-8").splitlines(), start=1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
                ok = (isinstance(line, dict) and line.get("method") == "POST" and line.get("url") == ENDPOINT
                      and isinstance(line.get("custom_id"), str) and isinstance(line["body"]["messages"], list))
            except (ValueError, KeyError, TypeError):
                ok = False
            if not ok:
                errors.append({"code": "invalid_request", "message": "Invalid request line.", "line": number,
                               "param": None})
                continue
            if line["custom_id"] in custom_ids:
                errors.append({"code": "duplicate_custom_id", "message": "The custom_id for this request is a "
                               "duplicate of another request.", "line": number, "param": "custom_id"})
            custom_ids.add(line["custom_id"])
            models.add(str(line["body"].get("model")))
            lines.append(line)
        if len(models) > 1:
            errors.append({"code": "mixed_models", "message": "All requests of a batch must use one model.",
                           "line": None, "param": "body.model"})
        if len(lines) > self.max_batch_lines:
            errors.append({"code": "too_many_requests", "message": f"{len(lines)} requests, more than "
                           f"{self.max_batch_lines}.", "line": None, "param": None})
        return lines, errors

    def _process(self, batch_id: str) -> None:
        """Validate, wait, answer each line, write the output and error files; in a background thread."""
        with self._lock:
            input_file_id = self.batches[batch_id]["input_file_id"]
            authorization = self.batch_authorizations[batch_id]
            outcome = self.batch_outcome
        found = self._file(input_file_id)
        lines, errors = self._validate(found["data"] if found is not None else b"")
        if outcome == "failed" and not errors:
            token = authorization.removeprefix("Bearer ")
            errors = [{"code": "simulated_failure", "message": f"Batch rejected for key {token} (simulated).",
                       "line": None, "param": None}]
        if errors:
            self._set(batch_id, status="failed", failed_at=int(time.time()),
                      errors={"object": "list", "data": errors})
            return
        self._set(batch_id, status="in_progress", in_progress_at=int(time.time()),
                  request_counts={"total": len(lines), "completed": 0, "failed": 0})
        deadline = time.monotonic() + self.batch_delay_s
        while time.monotonic() < deadline and batch_id not in self._cancel_requested:  # a cancel ends the wait
            if self._stopping.wait(min(0.01, max(0.0, deadline - time.monotonic()))):
                return
        output: list[dict] = []
        failed: list[dict] = []
        stopped_by = None
        for index, line in enumerate(lines):
            with self._lock:
                if batch_id in self._cancel_requested:
                    stopped_by = "cancelled"
            if stopped_by is None and outcome == "expired" and index >= self.expire_after_lines:
                stopped_by = "expired"
            if stopped_by is not None:
                if stopped_by == "expired" and self.expired_error_lines:
                    failed.append(_line_result(batch_id, index, line, error={
                        "code": "batch_expired",
                        "message": "This request could not be executed before the completion window expired."}))
                continue
            kind = self.line_fault(index, line) if self.line_fault is not None else None
            if kind is not None:
                _check_line_fault(kind)
            if kind == "missing":
                continue
            if kind == "error":
                failed.append(_line_result(batch_id, index, line, error={
                    "code": "server_error", "message": "Simulated batch line error."}))
                continue
            status, payload = self._answer_line(index, line, authorization, kind)
            entry = _line_result(batch_id, index, line, response={"status_code": status,
                                                                  "request_id": f"req-{batch_id}-{index}",
                                                                  "body": payload})
            (output if status == 200 else failed).append(entry)
            with self._lock:
                counts = self.batches[batch_id]["request_counts"]
                counts["completed" if status == 200 else "failed"] += 1
        final = stopped_by or "completed"
        files = {}
        for name, entries in (("output_file_id", output), ("error_file_id", failed)):
            if entries:
                data = "".join(json.dumps(e) + "\n" for e in entries).encode("utf-8")
                files[name] = self._add_file(data, f"{batch_id}_{name.split('_')[0]}.jsonl",
                                             "batch_output")["id"]
        now = int(time.time())
        with self._lock:
            batch = self.batches[batch_id]
            batch["request_counts"]["failed"] = len(failed)
            batch.update(files, status=final, finalizing_at=now, **{f"{final}_at": now})

    def _answer_line(self, index: int, line: dict, authorization: str, kind: str | None) -> tuple[int, dict]:
        """The chat endpoint's answer to a line's body: (HTTP status, JSON body)."""
        body = line["body"]
        messages = body["messages"]
        form = judge_form(messages, body.get("response_format"))
        mode = form.mode
        request = {"mode": mode, "form": form, "body": body, "authorization": authorization,
                   "reply": judged_text(messages, form)}
        with self._lock:
            self.batch_lines += 1
            self.batch_lines_by_mode[mode] += 1
            self.batch_log.append({"custom_id": line["custom_id"], "body": body})
            owner = SimpleNamespace(latency_s=0.0, hang_s=0.0, _stopping=self._stopping, requests=self.batch_lines,
                                    retry_after_s=self.retry_after_s, retry_after_form=self.retry_after_form,
                                    models=self.models)
        capture = _Capture()
        capture._answer(owner, request, messages, kind)
        assert capture.sent is not None
        return capture.sent


def _line_result(batch_id: str, index: int, line: dict, response: dict | None = None,
                 error: dict | None = None) -> dict:
    return {"id": f"batch_req-{batch_id}-{index}", "custom_id": line["custom_id"], "response": response,
            "error": error}


def _check_line_fault(kind: str) -> None:
    if kind not in LINE_FAULTS:
        raise ValueError(f"unknown line fault {kind!r}; expected one of {', '.join(LINE_FAULTS)}")


@pytest.fixture
def batch_server() -> Iterator[BatchServer]:
    """A started BatchServer, stopped after the test."""
    with BatchServer() as server:
        yield server

"""Resumable uploads in chunks (issue 15, item 3): a file sent in chunks, interrupted and continued, ends as the
same upload as one sent whole; every misuse is a clear 4xx and leaves nothing behind."""
from __future__ import annotations

import hashlib
import io
from pathlib import Path

from tests.conftest import jsonl, session_line


def start(client, data: bytes, name: str = "big.jsonl", **extra):
    return client.post("/api/uploads/chunked", json={"filename": name, "size": len(data), **extra})


def put(client, upload_id: str, offset: int, chunk: bytes, digest: str | None = None):
    headers = {"X-Chunk-SHA256": digest or hashlib.sha256(chunk).hexdigest()}
    return client.put(f"/api/uploads/chunked/{upload_id}?offset={offset}", data=chunk, headers=headers)


def test_an_interrupted_upload_continues_where_it_stopped(client, app):
    data = jsonl(*(session_line(f"s{i}", 3) for i in range(40)))
    started = start(client, data)
    assert started.status_code == 201
    body = started.get_json()
    upload_id, size = body["id"], 1000
    assert body["offset"] == 0 and body["size"] == len(data) and len(upload_id) == 22
    assert put(client, upload_id, 0, data[:size]).get_json()["offset"] == size
    assert put(client, upload_id, size, data[size:2 * size]).get_json()["offset"] == 2 * size
    # The connection dropped: the client asks where to go on, and a chunk sent again is refused with that offset.
    assert client.get(f"/api/uploads/chunked/{upload_id}").get_json() == {"id": upload_id, "offset": 2 * size,
                                                                        "size": len(data), "chunk_bytes": body["chunk_bytes"]}
    again = put(client, upload_id, size, data[size:2 * size])
    assert again.status_code == 409 and again.get_json()["offset"] == 2 * size
    offset = 2 * size
    while offset < len(data):
        offset = put(client, upload_id, offset, data[offset:offset + size]).get_json()["offset"]
    finished = client.post(f"/api/uploads/chunked/{upload_id}/finish")
    assert finished.status_code == 201, finished.get_json()
    record = finished.get_json()
    assert record["kind"] == "dialogue" and record["summary"]["sessions"] == 40 and record["filename"] == "big.jsonl"
    assert record["url"] == f"/uploads/{record['id']}"
    whole = client.post("/api/uploads", data={"file": (io.BytesIO(data), "big.jsonl")},
                        content_type="multipart/form-data").get_json()
    assert whole["id"] == record["id"]  # the same content: the same upload
    stored = app.extensions["store"].get_upload(record["id"])
    assert stored["sha256"] == hashlib.sha256(data).hexdigest()
    assert not list(Path(app.config["UPLOAD_FOLDER"]).glob(".chunked-*"))  # nothing partial left
    assert client.get(f"/api/uploads/chunked/{upload_id}").status_code == 404


def test_bad_chunks_and_requests_are_refused(client, app):
    data = jsonl(session_line("a", 2))
    upload_id = start(client, data).get_json()["id"]
    damaged = put(client, upload_id, 0, data[:10], digest=hashlib.sha256(b"other").hexdigest())
    assert damaged.status_code == 400 and "damaged" in damaged.get_json()["error"] and damaged.get_json()["offset"] == 0
    past = put(client, upload_id, 0, data + b"more")
    assert past.status_code == 400 and "goes past" in past.get_json()["error"]
    assert put(client, upload_id, 0, b"").status_code == 400
    bad_offset = client.put(f"/api/uploads/chunked/{upload_id}?offset=x", data=data[:5])
    assert bad_offset.status_code == 400 and bad_offset.get_json()["problems"][0]["path"] == "offset"
    early = client.post(f"/api/uploads/chunked/{upload_id}/finish")
    assert early.status_code == 409 and "Only 0 of" in early.get_json()["error"]
    assert client.get("/api/uploads/chunked/not-an-id").status_code == 404
    assert client.get("/api/uploads/chunked/AAAAAAAAAAAAAAAAAAAAAA").status_code == 404
    for body in ({"size": 10}, {"filename": "x.jsonl"}, {"filename": "x.jsonl", "size": -1},
                 {"filename": "x.jsonl", "size": True}):
        assert client.post("/api/uploads/chunked", json=body).status_code == 400, body
    assert client.post("/api/uploads/chunked", data="x").status_code == 400


def test_an_invalid_file_sent_in_chunks_gets_its_problems_and_leaves_nothing(client, app):
    data = b'{"session_id": "a", "rounds": [}\n'
    upload_id = start(client, data, name="../../etc/bad.jsonl").get_json()["id"]
    assert put(client, upload_id, 0, data).status_code == 200
    finished = client.post(f"/api/uploads/chunked/{upload_id}/finish")
    assert finished.status_code == 400 and finished.get_json()["problems"][0]["line"] == 1
    assert list(Path(app.config["UPLOAD_FOLDER"]).iterdir()) == []  # no partial file, no stored upload


def test_a_lone_overall_json_in_chunks_keeps_its_agent_and_task(client):
    from tests.kinds.agentbench.test_agentbench import custom_for, dumps, overall

    data = dumps(overall(custom_for("os-std", 0.5)))
    upload_id = start(client, data, name="overall.json", agent="m", task="os-std").get_json()["id"]
    put(client, upload_id, 0, data)
    record = client.post(f"/api/uploads/chunked/{upload_id}/finish").get_json()
    assert record["kind"] == "agentbench" and record["summary"]["agent_names"] == ["m"]


def test_an_abandoned_upload_is_removed_when_another_starts(client, app):
    import os
    import time

    from pipeline import chunked_uploads

    old = start(client, b"x" * 10).get_json()["id"]
    partial = Path(app.config["UPLOAD_FOLDER"]) / f".chunked-{old}"
    week_ago = time.time() - chunked_uploads.ABANDONED_S - 60
    for part in partial.iterdir():  # its parts: the first, empty one marks when it started
        os.utime(part, (week_ago, week_ago))
    fresh = start(client, b"y" * 10).get_json()["id"]
    assert not partial.exists() and client.get(f"/api/uploads/chunked/{old}").status_code == 404
    assert client.get(f"/api/uploads/chunked/{fresh}").status_code == 200

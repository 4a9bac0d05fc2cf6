"""Object storage (issue 24, item 3): the Blobs interface on a local folder and on a real S3 server (SeaweedFS or
moto's, from tests/services.py), then the whole app with STORAGE_URL set: uploads, evaluations, result files,
chunked uploads, AgentBench samples, mobility reference sets and deletes, with nothing in the local folders."""
from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from storage import blobs
from tests.conftest import jsonl, session_line, wait_for

MB = 1024 * 1024


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    """A Blobs on each backend: a temporary folder, and a fresh bucket of the test S3 server."""
    if request.param == "local":
        return blobs.LocalFolder(tmp_path / "files")
    url, _bucket = request.getfixturevalue("s3_storage")
    return blobs.from_url(url)


class Breaking(io.RawIOBase):
    """A stream that gives `size` bytes, then fails: a client that went away half way."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            raise ConnectionError("the client went away")
        count = min(len(buffer), self.left)
        buffer[:count] = b"x" * count
        self.left -= count
        return count


def test_write_read_list_and_delete(store):
    store.put_bytes("a/one.txt", b"first")
    store.put("two.bin", io.BytesIO(b"\x00" * 10))
    assert store.exists("a/one.txt") and not store.exists("a/none.txt")
    assert store.size("two.bin") == 10
    with store.open("a/one.txt") as f:
        assert f.read() == b"first"
    store.put_bytes("a/one.txt", b"second, longer")  # replaced whole
    with store.file("a/one.txt").open("rb") as f:
        assert f.read() == b"second, longer"
    assert [(e.key, e.size) for e in store.list("a/")] == [("a/one.txt", 14)]
    assert sorted(e.key for e in store.list("")) == ["a/one.txt", "two.bin"]
    store.delete("a/one.txt")
    store.delete("a/one.txt")  # twice is fine
    assert not store.exists("a/one.txt") and not store.file("a/one.txt").exists()
    with pytest.raises(FileNotFoundError):
        store.open("a/one.txt")
    with pytest.raises(FileNotFoundError):
        store.size("a/one.txt")
    with pytest.raises(ValueError):
        store.put_bytes("../escape", b"x")


@pytest.mark.parametrize("size", [1000, 9 * MB])  # one PUT, and a multipart upload on S3
def test_a_write_that_breaks_leaves_the_old_object_whole(store, size):
    store.put_bytes("doc.json", b'{"old": true}')
    with pytest.raises(ConnectionError):
        store.put("doc.json", io.BufferedReader(Breaking(size)))
    with store.open("doc.json") as f:
        assert f.read() == b'{"old": true}'
    with pytest.raises(ConnectionError):
        store.put("new.json", io.BufferedReader(Breaking(size)))
    assert not store.exists("new.json")
    assert [e.key for e in store.list("")] == ["doc.json"]  # no temporary file, no half object
    if isinstance(store, blobs.LocalFolder):
        assert sorted(p.name for p in store.root.iterdir()) == ["doc.json"]


def test_put_file_stores_a_scratch_file(store):
    scratch = store.scratch() / ".tmp-test"
    scratch.write_bytes(b"made elsewhere")
    store.put_file("kept.txt", scratch)
    scratch.unlink(missing_ok=True)
    with store.open("kept.txt") as f:
        assert f.read() == b"made elsewhere"


def test_reads_by_offset_and_zip_members(store):
    data = os.urandom(3 * MB)
    store.put_bytes("big.bin", data)
    with store.open("big.bin") as f:
        assert f.seekable()
        for offset in (0, 17, MB - 3, 2 * MB + 5, len(data) - 10):
            f.seek(offset)
            assert f.read(100) == data[offset:offset + 100]
        f.seek(-5, io.SEEK_END)
        assert f.read() == data[-5:] and f.read(10) == b""
    lines = b"".join(b'{"n": %d}\n' % n for n in range(20_000))
    store.put_bytes("lines.jsonl", lines)
    offset = lines.index(b'{"n": 12345}')
    with store.open("lines.jsonl") as f:
        f.seek(offset)
        assert json.loads(f.readline()) == {"n": 12345}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a/runs.jsonl", lines, zipfile.ZIP_DEFLATED)
        archive.writestr("b.txt", b"small")
    store.put_bytes("run.zip", buffer.getvalue())
    with store.open("run.zip") as f, zipfile.ZipFile(f) as archive:
        assert archive.read("b.txt") == b"small" and archive.read("a/runs.jsonl") == lines


def test_a_small_read_of_a_large_object_fetches_only_its_range(s3_storage):
    """A ranged GET of the bytes asked for plus a read-ahead, not the object: 100 bytes at 30 MB of a 40 MB object,
    then a ZIP member's few bytes out of a ZIP of 24 MB."""
    store = blobs.from_url(s3_storage[0])
    data = os.urandom(40 * MB)
    store.put_bytes("large.bin", data)
    with store.open("large.bin") as f:
        f.seek(30 * MB)
        assert f.read(100) == data[30 * MB:30 * MB + 100]
        assert f.raw.requests == 1 and f.raw.fetched <= blobs.MIN_AHEAD
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("outputs/big.bin", data[:24 * MB], zipfile.ZIP_STORED)
        archive.writestr("outputs/overall.json", b'{"accuracy": 0.5}', zipfile.ZIP_DEFLATED)
    store.put_bytes("run.zip", buffer.getvalue())
    with store.open("run.zip") as f, zipfile.ZipFile(f) as archive:
        assert json.loads(archive.read("outputs/overall.json")) == {"accuracy": 0.5}
        assert f.raw.fetched < 1 * MB, f.raw.fetched  # the directory at the end and the member, not 24 MB
    with store.open("large.bin") as f:  # reading it all: the read-ahead grows to MAX_AHEAD
        assert hashlib.sha256(f.read()).digest() == hashlib.sha256(data).digest()
        assert f.raw.fetched == len(data) and f.raw.requests <= 12


# --- the app with STORAGE_URL --------------------------------------------------------------------------------------

@pytest.fixture
def s3_app(make_app, judge_env, s3_storage, tmp_path):
    """An app whose files are all in the test bucket (its folders are never made)."""
    url, bucket = s3_storage
    app = make_app(judge_env, STORAGE_URL=url, UPLOAD_FOLDER=str(tmp_path / "no-uploads"),
                   RESULTS_FOLDER=str(tmp_path / "no-results"))
    yield app
    assert not (tmp_path / "no-uploads").exists() and not (tmp_path / "no-results").exists()


def keys(s3_server, s3_storage) -> list[str]:
    """The keys of the test bucket."""
    return s3_server.keys(s3_storage[1])


def test_a_dialogue_upload_evaluation_and_delete_through_s3(s3_app, s3_server, s3_storage):
    client = s3_app.test_client()
    data = jsonl(*(session_line(f"s{i}", 3, user_profile=f"profile number {i}") for i in range(30)))
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(data), "log.jsonl")},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    upload_id, sha = resp.get_json()["id"], hashlib.sha256(data).hexdigest()
    assert keys(s3_server, s3_storage) == [f"psb/uploads/{sha}.jsonl"]
    page = client.post("/uploads", data={"file": (io.BytesIO(jsonl(session_line("p", 2))), "page.jsonl")},
                       content_type="multipart/form-data")
    assert page.status_code == 302
    created = client.post("/api/evaluations", json={"upload_id": upload_id})
    assert created.status_code == 202, created.get_json()
    evaluation_id = created.get_json()["id"]
    body = wait_for(client, evaluation_id)
    assert body["status"] == "done", body
    assert f"psb/results/{evaluation_id}.json" in keys(s3_server, s3_storage)
    stored = json.loads(blobs.from_url(s3_storage[0]).child("results").open(f"{evaluation_id}.json").read())
    assert stored["methods"] == body["result"]["methods"]
    assert client.get(f"/evaluations/{evaluation_id}").status_code == 200
    assert client.get(f"/evaluations/{evaluation_id}.json").get_json()["methods"] == body["result"]["methods"]
    session = client.get(f"/evaluations/{evaluation_id}/view/session?index=17")  # read at its byte offset
    assert session.status_code == 200 and "profile number 17" in session.get_data(as_text=True)
    assert client.get(f"/evaluations/{evaluation_id}/view/grid").status_code == 200
    deleted = client.delete(f"/api/uploads/{upload_id}?evaluations=delete")
    assert deleted.status_code == 200, deleted.get_json()
    left = keys(s3_server, s3_storage)
    assert f"psb/uploads/{sha}.jsonl" not in left and f"psb/results/{evaluation_id}.json" not in left
    assert len(left) == 1 and left[0].startswith("psb/uploads/")  # the page's upload stays


def test_a_chunked_upload_through_s3_leaves_no_part(s3_app, s3_server, s3_storage):
    client = s3_app.test_client()
    data = jsonl(*(session_line(f"s{i}", 3) for i in range(40)))
    upload_id = client.post("/api/uploads/chunked", json={"filename": "big.jsonl", "size": len(data)}).get_json()["id"]
    assert [k for k in keys(s3_server, s3_storage) if ".chunked-" in k] == [f"psb/uploads/.chunked-{upload_id}/"
                                                                           f"{0:015d}"]
    offset = 0
    while offset < len(data):
        chunk = data[offset:offset + 1000]
        resp = client.put(f"/api/uploads/chunked/{upload_id}?offset={offset}", data=chunk,
                          headers={"X-Chunk-SHA256": hashlib.sha256(chunk).hexdigest()})
        assert resp.status_code == 200, resp.get_json()
        offset = resp.get_json()["offset"]
    again = client.put(f"/api/uploads/chunked/{upload_id}?offset=0", data=data[:1000])
    assert again.status_code == 409 and again.get_json()["offset"] == len(data)
    assert client.get(f"/api/uploads/chunked/{upload_id}").get_json()["offset"] == len(data)
    finished = client.post(f"/api/uploads/chunked/{upload_id}/finish")
    assert finished.status_code == 201, finished.get_json()
    assert finished.get_json()["summary"]["sessions"] == 40
    assert keys(s3_server, s3_storage) == [f"psb/uploads/{hashlib.sha256(data).hexdigest()}.jsonl"]


def test_agentbench_samples_and_a_mobility_reference_through_s3(s3_app, s3_server, s3_storage):
    from tests.kinds.agentbench.test_agentbench_pipeline import evaluate, outputs_zip, upload
    from tests.kinds.mobility.test_mobility_pipeline import add_reference, synthetic, upload_generated

    client = s3_app.test_client()
    up = upload(client, outputs_zip(), "outputs.zip")
    assert up.status_code == 201, up.get_json()
    body = evaluate(client, up.get_json()["id"])
    samples = client.get(f"/evaluations/{body['id']}/view/samples?agent=agent-b&task=os")
    assert samples.status_code == 200 and "agent invalid action" in samples.get_data(as_text=True)

    ref = add_reference(client, json.dumps(synthetic(seed=1)).encode(), "ref.json", "synthetic")
    assert ref.status_code == 201, ref.get_json()
    npz = f"psb/uploads/references/{ref.get_json()['sha256']}.npz"
    assert npz in keys(s3_server, s3_storage)
    generated = upload_generated(client, synthetic(seed=2, shift=500))
    created = client.post("/api/evaluations", json={"upload_id": generated["id"], "reference": "synthetic"})
    done = wait_for(client, created.get_json()["id"])
    assert done["status"] == "done" and done["result"]["reference"]["name"] == "synthetic", done
    assert client.delete(f"/api/evaluations/{done['id']}").status_code == 204
    assert client.delete(f"/api/references/{ref.get_json()['id']}").status_code == 204
    assert npz not in keys(s3_server, s3_storage)


def test_a_missing_object_fails_the_evaluation_visibly(s3_app, s3_server, s3_storage):
    client = s3_app.test_client()
    data = jsonl(session_line("a", 2))
    upload_id = client.post("/api/uploads", data={"file": (io.BytesIO(data), "log.jsonl")},
                            content_type="multipart/form-data").get_json()["id"]
    s3_server.client().delete_object(Bucket=s3_storage[1], Key=f"psb/uploads/{hashlib.sha256(data).hexdigest()}.jsonl")
    body = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    assert body["status"] == "failed" and "missing" in body["error"], body


def test_storage_url_must_be_s3():
    with pytest.raises(ValueError):
        blobs.from_url("https://bucket/prefix")
    bucket = blobs.from_url("s3://bucket/a/b/")
    assert (bucket.bucket, bucket.prefix, bucket.child("uploads").prefix) == ("bucket", "a/b/", "a/b/uploads/")
    assert isinstance(blobs.for_config({"UPLOAD_FOLDER": "u", "RESULTS_FOLDER": "r"})[0], blobs.LocalFolder)
    assert Path(str(blobs.at("x"))) == Path("x")


def test_celery_workers_read_the_upload_from_s3(redis_server, s3_server, s3_storage, tmp_path):
    """Workers on other "machines" share no folder: they read the upload's sessions from the bucket by range, and
    the result document lands there too."""
    pytest.importorskip("celery")
    from tests.pipeline.test_celery import LATENCY_S, Deployment, Judge, dialogue

    judge = Judge(LATENCY_S).start()
    dep = Deployment(tmp_path / "deployment", redis_server.url, judge,
                     extra={"STORAGE_URL": s3_storage[0], **s3_server.environ})
    try:
        dep.start_worker("s3w1")
        dep.wait_ready("s3w1")
        upload_id = dep.upload(dialogue(30))
        evaluation_id = dep.evaluate(upload_id)
        body = dep.wait_finished(evaluation_id)
        assert body["status"] == "done", (body, dep.logs_tail())
        assert body["progress"]["done"] == 30 * 5 * 2 * 2
        assert f"psb/results/{evaluation_id}.json" in keys(s3_server, s3_storage)
        assert not (tmp_path / "deployment" / "uploads").exists() and not (tmp_path / "deployment" / "results").exists()
    finally:
        dep.stop()
        judge.stop()


def test_a_conversation_zip_is_read_member_by_member_from_s3(s3_app):
    from tests.kinds.conversation.test_conversation_pipeline import own_conversation

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("convs/a.json", json.dumps([own_conversation("agent", 2)]))
        archive.writestr("convs/b.json", json.dumps([own_conversation("human", 3, "travel planning")]))
    client = s3_app.test_client()
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(buffer.getvalue()), "mine.zip")},
                       content_type="multipart/form-data")
    assert resp.status_code == 201 and resp.get_json()["kind"] == "conversation", resp.get_json()
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"]}).get_json()
    assert wait_for(client, created["id"])["status"] == "done"
    listing = client.get(f"/evaluations/{created['id']}/view/conversations").get_data(as_text=True)
    assert "convs/b.json" in listing, listing
    index = 1 if listing.index("convs/a.json") < listing.index("convs/b.json") else 0
    html = client.get(f"/evaluations/{created['id']}/view/transcript?index={index}").get_data(as_text=True)
    assert "question 2" in html and "travel planning" in html

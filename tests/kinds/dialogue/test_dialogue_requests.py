"""The dialogue kind's judge requests for a block of sessions start at the block, not at the top of the file."""
from __future__ import annotations

import io

from kinds.dialogue import format as dialogue_format
from pipeline.evaluation_steps import Pipeline
from pipeline.evaluations import create_evaluation
from pipeline.ingest import ingest
from storage.store import Store
from tests.conftest import jsonl, session_line

ENV = {"JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "JUDGE_MODEL": "m"}  # never called here


def planned(tmp_path, data: bytes):
    """A store, and the kind and job of a planned dialogue evaluation of `data`."""
    store = Store(tmp_path / "db.sqlite")
    upload = ingest(io.BytesIO(data), "log.jsonl", store, tmp_path / "uploads")
    evaluation = create_evaluation(store, upload["id"], environ=ENV)
    pipeline = Pipeline(store, tmp_path / "uploads", tmp_path / "results", lambda: ENV)
    kind, job = pipeline.load(evaluation["id"])
    pipeline.plan(kind, job)
    return store, kind, job


def test_a_late_block_reads_only_its_sessions_and_asks_the_same(tmp_path, monkeypatch):
    # A byte-order mark and blank lines shift the offsets; sessions of different sizes too.
    data = b"\xef\xbb\xbf" + b"\n".join(jsonl(session_line(f"s{i}", rounds=1 + i % 3)) for i in range(8)) + b"\n\n"
    store, kind, job = planned(tmp_path, data)
    every = set(store.pending_keys(job.evaluation["id"]))
    block = {key for key in every if 5 <= key[0] <= 6}
    from_the_top = [(k, p.messages) for k, p in kind.requests(job, every) if k in block]

    parsed = []
    real_parse = dialogue_format.parse_session
    monkeypatch.setattr(dialogue_format, "parse_session", lambda obj, line=1, limits=None: parsed.append(obj) or real_parse(obj, line, limits))
    asked = [(k, p.messages) for k, p in kind.requests(job, block)]

    assert asked == from_the_top and {k for k, _m in asked} == block
    assert [obj["session_id"] for obj in parsed[:2]] == ["s5", "s6"]  # nothing before the block was read
    store.close()


def test_the_first_block_and_a_file_without_offsets_read_from_the_top(tmp_path):
    store, kind, job = planned(tmp_path, jsonl(*(session_line(f"s{i}") for i in range(3))))
    every = set(store.pending_keys(job.evaluation["id"]))
    first = {key for key in every if key[0] == 0}
    assert {k for k, _p in kind.requests(job, first)} == first
    store.set_session_offsets(job.upload["id"], [])  # as an upload planned before offsets were recorded
    last = {key for key in every if key[0] == 2}
    assert {k for k, _p in kind.requests(job, last)} == last
    store.close()

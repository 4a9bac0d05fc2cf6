"""Batch mode of the judge (judge_batch) through the real openai SDK against the local server's Batch API
(tests/batch_server.py): the same verdicts as the synchronous Judge, no chat call, the cache, identical
requests, per-line and batch-level failures, a restart between submit and collect, splitting, and the key."""
from __future__ import annotations

import gc
import json
import time
from dataclasses import replace

import pytest

from judge import Judge, JudgeConfig, Prompt, Verdict
from judge import batch as judge_batch
from judge.batch import (
    BatchError,
    BatchLimits,
    BatchProgress,
    abandon,
    cancel,
    collect,
    finished,
    pending_keys,
    poll,
    submit,
)
from kinds.conversation.prompts import ConversationContext
from kinds.conversation.prompts import prompt as annotation_prompt
from kinds.dialogue.prompts import DialogueContext
from kinds.dialogue.prompts import prompt as dialogue_prompt
from tests.batch_server import BatchServer, batch_server  # noqa: F401  (fixture)
from tests.judge.test_evaluator import DictCache

SECRET = "sk-test-0123456789abcdef-batch-secret"


def settings(server: BatchServer, **changes: object) -> dict:
    return {"base_url": server.url, "api_key": SECRET, "model": "judge-test", "max_retries": 2, "timeout_s": 5.0,
            "retry_base_s": 0.01, "retry_max_s": 0.05, **changes}


def config(server: BatchServer, **changes: object) -> JudgeConfig:
    return JudgeConfig(**settings(server, **changes))


def dialogue(mode: str, reply: str, language: str = "en") -> Prompt:
    ctx = DialogueContext(profile="PROFILE: retired teacher who watches birds", personality="calm and curious",
                          history=[("hello", "hi there")], user_message="any walks nearby?", reply=reply)
    return dialogue_prompt(mode, ctx, language)


def annotation(marker: str = "", language: str = "en") -> Prompt:
    ctx = ConversationContext("travel planning", "two days in Kyoto", "likes temples",
                              [("user", "Plan my trip"), ("assistant", f"Day 1: Fushimi Inari at dawn. {marker}")])
    return annotation_prompt(ctx, language)


def mixed_items() -> list[tuple[str, Prompt]]:
    """Fine and binary dialogue judgments (with and without markers, en and zh) and annotations."""
    items = [(f"fine-{i}", dialogue("fine", f"reply {i} [[score={30 + 7 * i}]] [[keep={i % 2}]]")) for i in range(4)]
    items += [(f"binary-{i}", dialogue("binary", f"reply {i} [[score={30 + 7 * i}]] [[keep={i % 2}]]"))
              for i in range(4)]
    items += [("fine-unmarked", dialogue("fine", "an unmarked reply")),
              ("binary-unmarked", dialogue("binary", "an unmarked reply")),
              ("fine-zh", dialogue("fine", "中文回复 [[score=66]]", "zh")),
              ("annotate-marked", annotation("[[annotate=2,1,0,1]]")),
              ("annotate-unmarked", annotation("", "zh"))]
    return items


def fine_items(n: int, salt: str = "") -> list[tuple[str, Prompt]]:
    return [(f"{salt}k{i}", dialogue("fine", f"{salt}reply {i} [[score={i + 10}]]")) for i in range(n)]


def wait_done(cfg: JudgeConfig, state: dict, timeout: float = 10.0) -> BatchProgress:
    deadline = time.monotonic() + timeout
    while True:
        progress = poll(cfg, state)
        if progress.done:
            return progress
        assert time.monotonic() < deadline, f"batches still running: {progress}"
        time.sleep(0.02)


def run_batch(cfg: JudgeConfig, items: list[tuple[str, Prompt]], cache: object = None,
              **options: object) -> tuple[dict, judge_batch.BatchRun | None]:
    """submit, wait, collect: {key: verdict} of every item, and the run."""
    ready, run = submit(cfg, items, cache, **options)
    verdicts = dict(ready)
    if run is not None:
        wait_done(cfg, run.state)
        verdicts.update(collect(cfg, run.state, cache, dict(items).get))
    return verdicts, run


def sync_verdicts(cfg: JudgeConfig, items: list[tuple[str, Prompt]]) -> dict[str, Verdict]:
    """The synchronous judge's verdicts, without their latency (a batch answers all requests at once)."""
    with Judge(cfg) as judge:
        return {key: replace(judge.judge(p), latency_ms=None) for key, p in items}


# -- the same verdicts, without chat calls -----------------------------------------------------


def test_verdicts_equal_the_synchronous_judges(batch_server):
    items = mixed_items()
    cfg = config(batch_server)
    cache = DictCache()
    ready, run = submit(cfg, items, cache)
    assert ready == [] and run is not None and run.requests == run.keys == len(items)
    progress = wait_done(cfg, run.state)
    assert (progress.status, progress.done, progress.collected) == ("completed", True, False)
    assert (progress.batches, progress.total, progress.completed, progress.failed) == (1, len(items), len(items), 0)
    batch = dict(collect(cfg, run.state, cache, dict(items).get))
    assert batch_server.requests == 0  # the batch path made no chat call
    assert batch_server.batch_lines == len(items) and batch_server.uploads == 1 and len(batch_server.batches) == 1
    assert batch_server.batch_lines_by_mode == {"fine": 6, "binary": 5, "annotate": 2, "other": 0}

    sync = sync_verdicts(cfg, items)
    assert batch_server.requests == len(items)
    assert batch == sync
    assert all(v.status == "ok" and v.prompt_tokens > 0 and v.attempts == 1 and not v.cached for v in batch.values())
    assert batch["fine-2"].total == 44.0 and batch["binary-1"].verdict == 1
    assert batch["annotate-marked"].dims == {"detail": 2, "diversity": 1, "utility": 0, "hallucination": 1}
    assert cache.puts == len(items)
    assert finished(run.state) and poll(cfg, run.state).collected
    assert collect(cfg, run.state, cache, dict(items).get) == []  # each batch is collected once


def test_a_batch_line_is_the_request_judge_sends(batch_server):
    cfg = config(batch_server, temperature=0.3, max_tokens=321)
    item = dialogue("fine", "one reply [[score=50]]")
    run_batch(cfg, [("a", item)])
    with Judge(cfg) as judge:
        judge.judge(item)
    (line,) = batch_server.batch_log
    assert line["custom_id"] == judge_batch.cache_key(cfg, item)
    assert line["body"] == batch_server.last_request


def test_cache_key_is_judges(batch_server):
    cfg = config(batch_server)
    with Judge(cfg) as judge:
        for _key, p in mixed_items():
            assert judge_batch.cache_key(cfg, p) == judge.cache_key(p)


# -- the cache ----------------------------------------------------------------------------------


def test_cached_items_are_answered_at_once_and_not_sent(batch_server):
    items = fine_items(6)
    cfg = config(batch_server)
    cache = DictCache()
    with Judge(cfg, cache=cache) as judge:
        first = {key: judge.judge(p) for key, p in items[:2]}
    ready, run = submit(cfg, items, cache)
    assert [key for key, _v in ready] == ["k0", "k1"]
    assert all(v.cached and v.attempts == 0 and v.prompt_tokens == 0 for _key, v in ready)
    assert {key: v.total for key, v in ready} == {key: v.total for key, v in first.items()}
    assert run is not None and run.requests == 4 and pending_keys(run.state) == ["k2", "k3", "k4", "k5"]
    wait_done(cfg, run.state)
    collected = dict(collect(cfg, run.state, cache, dict(items).get))
    assert sorted(collected) == ["k2", "k3", "k4", "k5"] and pending_keys(run.state) == []
    assert batch_server.batch_lines == 4 and cache.puts == 6

    again, none = submit(cfg, items, cache)  # everything is cached now: no upload, no batch
    assert none is None and len(again) == 6 and all(v.cached for _key, v in again)
    assert batch_server.uploads == 1

    off = config(batch_server, use_cache=False)  # not read, still written
    verdicts, run = run_batch(off, items, cache)
    assert run is not None and run.requests == 6 and not any(v.cached for v in verdicts.values())
    assert batch_server.batch_lines == 10 and cache.puts == 12


def test_identical_requests_are_sent_once(batch_server):
    same = dialogue("fine", "the same reply [[score=42]]")
    items = [("a", same), ("b", same), ("c", dialogue("binary", "the same reply [[score=42]]")), ("d", same)]
    cfg = config(batch_server)
    cache = DictCache()
    ready, run = submit(cfg, items, cache)
    assert ready == [] and run is not None and (run.requests, run.keys) == (2, 4)
    wait_done(cfg, run.state)
    verdicts = dict(collect(cfg, run.state, cache, dict(items).get))
    assert batch_server.batch_lines == 2 and cache.puts == 2
    assert len({line["custom_id"] for line in batch_server.batch_log}) == 2
    assert verdicts["a"].total == verdicts["b"].total == verdicts["d"].total == 42.0
    assert verdicts["a"].prompt_tokens > 0 and not verdicts["a"].cached and verdicts["a"].attempts == 1
    for key in ("b", "d"):
        assert verdicts[key].prompt_tokens == 0 and verdicts[key].cached and verdicts[key].attempts == 0


# -- failures -----------------------------------------------------------------------------------


def test_line_errors_become_failed_verdicts_with_their_message(batch_server):
    items = fine_items(9)
    faults = {1: "401", 3: "500", 4: "error", 6: "malformed", 7: "missing"}
    batch_server.line_fault = lambda index, _line: faults.get(index)
    cfg = config(batch_server)
    cache = DictCache()
    verdicts, _run = run_batch(cfg, items, cache)
    errors = {key: v.error for key, v in verdicts.items() if v.status == "failed"}
    assert errors == {
        "k1": "the batch's request failed: HTTP 401: Invalid API key: ***",
        "k3": "the batch's request failed: HTTP 500: Simulated server error 500.",
        "k4": "the batch could not answer this request (server_error: Simulated batch line error.)",
        "k7": "the batch ended without an answer for this request",
    }
    assert verdicts["k6"].status == "unparsed" and verdicts["k6"].answer and verdicts["k6"].error
    assert [key for key, v in verdicts.items() if v.status == "ok"] == ["k0", "k2", "k5", "k8"]
    assert cache.puts == 4  # failures and unparsed answers are not cached
    assert SECRET not in json.dumps([(k, v.__dict__) for k, v in verdicts.items()])
    assert batch_server.batch_authorizations  # the key did reach the server
    assert all(auth == f"Bearer {SECRET}" for auth in batch_server.batch_authorizations.values())

    # An unparsed answer reads as the chat endpoint's same answer does.
    batch_server.fail_next(1, "malformed")
    with Judge(cfg) as judge:
        assert replace(judge.judge(items[6][1]), latency_ms=None) == verdicts["k6"]  # (a batch has no latency)


def test_every_nth_line_error(batch_server):
    batch_server.fault_every(3, "error")
    verdicts, _run = run_batch(config(batch_server), fine_items(7))
    assert [key for key, v in verdicts.items() if v.status == "failed"] == ["k2", "k5"]


@pytest.mark.parametrize("error_lines", [True, False])
def test_an_expired_batch_fails_its_outstanding_keys(batch_server, error_lines):
    batch_server.batch_outcome = "expired"
    batch_server.expire_after_lines = 2
    batch_server.expired_error_lines = error_lines
    cfg = config(batch_server)
    items = fine_items(5)
    ready, run = submit(cfg, items, DictCache())
    assert run is not None
    assert wait_done(cfg, run.state).status == "expired"
    verdicts = dict(collect(cfg, run.state, DictCache(), dict(items).get))
    assert [verdicts[k].status for k in ("k0", "k1")] == ["ok", "ok"]
    expected = ("the batch could not answer this request (batch_expired: This request could not be executed "
                "before the completion window expired.)" if error_lines else
                "the batch expired before this request was answered (completion window 24h)")
    assert {verdicts[k].error for k in ("k2", "k3", "k4")} == {expected}
    assert all(verdicts[k].status == "failed" for k in ("k2", "k3", "k4"))


def test_a_failed_batch_fails_every_key_with_its_reason_and_no_key(batch_server):
    batch_server.batch_outcome = "failed"
    cfg = config(batch_server)
    items = fine_items(3)
    verdicts, run = run_batch(cfg, items)
    assert run is not None and poll(cfg, run.state).status == "failed"
    assert {v.status for v in verdicts.values()} == {"failed"}
    assert {v.error for v in verdicts.values()} == {
        "the batch failed: simulated_failure: Batch rejected for key *** (simulated)."}
    assert SECRET not in json.dumps(run.state) and "***" in json.dumps(run.state)
    assert batch_server.batch_lines == 0


def test_cancel_fails_what_was_not_answered(batch_server):
    batch_server.batch_delay_s = 5.0
    cfg = config(batch_server)
    items = fine_items(3)
    _ready, run = submit(cfg, items)
    assert run is not None and poll(cfg, run.state).status in ("validating", "in_progress")
    assert collect(cfg, run.state, None, dict(items).get) == []  # nothing has ended yet
    assert pending_keys(run.state) == ["k0", "k1", "k2"] and not finished(run.state)
    assert cancel(cfg, run.state).status in ("cancelling", "cancelled")
    assert wait_done(cfg, run.state).status == "cancelled"
    verdicts = dict(collect(cfg, run.state, None, dict(items).get))
    assert {v.error for v in verdicts.values()} == {"the batch was cancelled before this request was answered"}
    assert batch_server.batch_lines == 0 and finished(run.state)
    assert cancel(cfg, run.state).status == "cancelled"  # nothing left to cancel


# -- restart --------------------------------------------------------------------------------------


def rebuild(key: list) -> Prompt:
    """A key's prompt, from the key alone (as the runner rebuilds it from the database)."""
    mode, i = key
    return dialogue(mode, f"restart reply {i} [[score={i * 9}]] [[keep={i % 2}]]")


def test_the_state_survives_a_restart(batch_server, tmp_path):
    batch_server.batch_delay_s = 3.0  # still running when polled, even on a machine busy enough to delay the poll
    keys = [[mode, i] for i in range(5) for mode in ("fine", "binary")]
    stored = tmp_path / "state.json"

    def before_restart() -> None:
        cfg = config(batch_server)
        ready, run = submit(cfg, [(key, rebuild(key)) for key in keys], DictCache())
        assert ready == [] and run is not None
        assert poll(cfg, run.state).status in ("validating", "in_progress")
        stored.write_text(json.dumps(run.state))

    before_restart()
    gc.collect()
    assert SECRET not in stored.read_text()

    cfg = JudgeConfig(**settings(batch_server))  # a new process: only the stored state
    state = json.loads(stored.read_text())
    cache = DictCache()
    assert pending_keys(state) == keys
    wait_done(cfg, state)
    verdicts = collect(cfg, state, cache, rebuild)
    assert [key for key, _v in verdicts] == keys
    assert batch_server.uploads == 1 and len(batch_server.batches) == 1 and batch_server.batch_lines == len(keys)
    assert batch_server.requests == 0 and cache.puts == len(keys)
    sync = sync_verdicts(cfg, [(f"{m}-{i}", rebuild([m, i])) for m, i in keys])
    assert [v for _key, v in verdicts] == list(sync.values())


def test_collect_that_fails_marks_nothing_and_abandon_gives_up(batch_server):
    cfg = config(batch_server)
    items = fine_items(3)
    _ready, run = submit(cfg, items)
    assert run is not None
    wait_done(cfg, run.state)
    before = json.dumps(run.state)
    output = run.state["batches"][0]["output_file_id"]
    kept = batch_server.files.pop(output)
    with pytest.raises(BatchError) as caught:
        collect(cfg, run.state, None, dict(items).get)
    assert caught.value.status == 404 and not caught.value.retryable and SECRET not in caught.value.message
    assert json.dumps(run.state) == before  # nothing marked collected
    batch_server.files[output] = kept
    assert len(collect(cfg, run.state, None, dict(items).get)) == 3

    _ready, run = submit(cfg, fine_items(2, salt="x"))
    assert run is not None
    gone = abandon(run.state, "the endpoint no longer knows this batch")
    assert [(k, v.status, v.error) for k, v in gone] == [
        ("xk0", "failed", "the endpoint no longer knows this batch"),
        ("xk1", "failed", "the endpoint no longer knows this batch")]
    assert finished(run.state) and collect(cfg, run.state, None, {}.get) == []


def test_a_changed_or_dropped_prompt(batch_server):
    cfg = config(batch_server)
    items = fine_items(3)
    _ready, run = submit(cfg, items)
    assert run is not None
    wait_done(cfg, run.state)
    changed = {"k0": dialogue("fine", "edited since"), "k1": None, "k2": items[2][1]}
    verdicts = dict(collect(cfg, run.state, DictCache(), changed.get))
    assert sorted(verdicts) == ["k0", "k2"]  # None: no longer wanted
    assert verdicts["k0"].status == "failed" and verdicts["k0"].error == judge_batch.PROMPT_CHANGED
    assert verdicts["k2"].status == "ok"


def test_state_of_another_endpoint_or_version_is_refused(batch_server):
    cfg = config(batch_server)
    _ready, run = submit(cfg, fine_items(1))
    assert run is not None
    elsewhere = config(batch_server, base_url="http://127.0.0.1:9/v1")
    for call in (lambda: poll(elsewhere, run.state), lambda: collect(elsewhere, run.state, None, {}.get),
                 lambda: cancel(elsewhere, run.state)):
        with pytest.raises(ValueError, match="were sent to"):
            call()
    with pytest.raises(ValueError, match="version"):
        poll(cfg, {**run.state, "version": 99})


def test_keys_must_survive_json(batch_server):
    with pytest.raises(ValueError, match="JSON"):
        submit(config(batch_server), [(("fine", 1), dialogue("fine", "x"))])
    assert batch_server.uploads == 0


# -- limits ---------------------------------------------------------------------------------------


def test_split_by_number_of_requests(batch_server):
    batch_server.max_batch_lines = 3
    items = fine_items(8) + [("again-0", fine_items(8)[0][1]), ("again-7", fine_items(8)[7][1])]
    cfg = config(batch_server)
    cache = DictCache()
    ready, run = submit(cfg, items, cache, limits=BatchLimits(max_requests=3))
    assert ready == [] and run is not None
    assert [len(entry["requests"]) for entry in run.state["batches"]] == [3, 3, 2]
    assert run.state["batches"][0]["requests"][judge_batch.cache_key(cfg, items[0][1])] == ["k0", "again-0"]
    assert len(set(run.batch_ids)) == 3 and batch_server.uploads == 3
    progress = wait_done(cfg, run.state)
    assert (progress.batches, progress.total, progress.completed) == (3, 8, 8)
    verdicts = dict(collect(cfg, run.state, cache, dict(items).get))
    assert {v.status for v in verdicts.values()} == {"ok"} and len(verdicts) == 10
    assert verdicts["again-7"].total == verdicts["k7"].total == 17.0 and verdicts["again-7"].cached
    assert batch_server.batch_lines == 8 and batch_server.requests == 0
    assert {b["metadata"]["part"] for b in batch_server.batches.values()} == {"1", "2", "3"}
    assert len({b["metadata"]["submission"] for b in batch_server.batches.values()}) == 1


def test_split_by_bytes_and_a_request_too_large_for_any_batch(batch_server):
    cfg = config(batch_server)
    items = fine_items(5)
    sizes = [len(judge_batch._line(cfg, judge_batch.cache_key(cfg, p), p)) for _key, p in items]
    limit = max(sizes) * 2 + 1  # two lines fit, three do not
    batch_server.max_file_bytes = limit
    huge = ("huge", dialogue("fine", "x" * limit))
    verdicts, run = run_batch(cfg, [*items[:3], huge, *items[3:]], limits=BatchLimits(max_bytes=limit))
    assert run is not None and [len(e["requests"]) for e in run.state["batches"]] == [2, 2, 1]
    assert all(f["object"]["bytes"] <= limit for f in batch_server.files.values() if f["object"]["purpose"] == "batch")
    assert verdicts["huge"].status == "failed" and "more than a batch file may hold" in verdicts["huge"].error
    assert all(verdicts[key].status == "ok" for key, _p in items)


def test_limits_are_checked():
    with pytest.raises(ValueError):
        BatchLimits(max_requests=0)
    with pytest.raises(ValueError):
        BatchLimits(max_bytes=True)


# -- sending ---------------------------------------------------------------------------------------


def test_an_unreachable_endpoint_fails_every_key_at_submit():
    with BatchServer() as server:
        cfg = config(server, max_retries=0)
    ready, run = submit(cfg, fine_items(2) + [("dup", fine_items(1)[0][1])])
    assert run is None
    verdicts = dict(ready)
    assert sorted(verdicts) == ["dup", "k0", "k1"] and {v.status for v in verdicts.values()} == {"failed"}
    assert all(v.error.startswith("the batch could not be sent: connection refused") for v in verdicts.values())
    assert verdicts["dup"].error == verdicts["k0"].error and verdicts["dup"].attempts == 0


def test_a_failed_creation_keeps_the_batches_already_created(batch_server):
    batch_server.create_faults = [None, 400]
    cfg = config(batch_server)
    items = fine_items(5)
    ready, run = submit(cfg, items, limits=BatchLimits(max_requests=2))
    assert run is not None and len(run.batch_ids) == 1 and pending_keys(run.state) == ["k0", "k1"]
    assert [key for key, _v in ready] == ["k2", "k3", "k4"]
    assert {v.error for _key, v in ready} == {
        "the batch could not be sent: BadRequestError: HTTP 400: Simulated batch creation error 400."}
    assert len(batch_server.batches) == 1
    uploads = [f for f in batch_server.files.values() if f["object"]["purpose"] == "batch"]
    assert batch_server.uploads == 2 and len(uploads) == 1  # the upload of the batch not created was deleted


def test_creation_is_retried_without_creating_twice(batch_server):
    batch_server.create_faults = [503]
    batch_server.lose_create_responses = 1  # then the one that works loses its answer
    cfg = config(batch_server)
    items = fine_items(3)
    verdicts, run = run_batch(cfg, items)
    assert run is not None and len(batch_server.batches) == 1 and run.batch_ids == list(batch_server.batches)
    assert {v.status for v in verdicts.values()} == {"ok"} and batch_server.batch_lines == 3


def test_the_api_key_is_never_stored_or_shown(batch_server):
    batch_server.line_fault = lambda index, _line: "401" if index == 0 else None
    cfg = config(batch_server)
    verdicts, run = run_batch(cfg, fine_items(2), DictCache())
    assert run is not None
    assert verdicts["k0"].error is not None and "***" in verdicts["k0"].error
    shown = json.dumps(run.state) + repr(run) + repr(poll(cfg, run.state)) + json.dumps(
        [v.__dict__ for v in verdicts.values()])
    assert SECRET not in shown
    paths = [path for _method, path, _headers in batch_server.seen_headers]
    assert "/v1/files" in paths and "/v1/batches" in paths
    sent = [{k.lower(): v for k, v in h.items()}.get("authorization") for _m, _p, h in batch_server.seen_headers]
    assert set(sent) == {f"Bearer {SECRET}"}  # the key was sent with every call, and only as the header

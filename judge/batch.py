"""Batch mode of the judge: many judgments sent at once through the OpenAI-compatible Batch API.

A large evaluation need not be judged call by call. `submit` writes its requests as JSONL (one line per distinct
request), uploads it (`POST /files`, purpose "batch"), and creates a batch (`POST /batches`, endpoint
/v1/chat/completions, completion window 24h). OpenAI answers a batch within a day, at half the price of the same
calls. `poll` follows the batches (`GET /batches/{id}`), and `collect` reads the answers of the batches that have
ended (`GET /files/{id}/content` of the output and error files) into the same `Verdict`s that `Judge` gives for
the same prompts.

Everything the later calls need is in `BatchRun.state`, a JSON-serialisable dict with no secret in it. The caller
stores it after `submit` and after each `poll` / `collect` / `cancel`, which update it in place, so a restarted
server continues polling the same batches instead of paying for them twice. The state has this shape:

    {"version": 1,
     "endpoint": "http://host:8000/v1",      # where the batches live (without credentials); poll/collect/cancel
                                             # refuse a config that points elsewhere
     "model": "gpt-4o-mini",
     "submitted_at": 1767225600,             # unix seconds
     "batches": [{
         "id": "batch_...", "input_file_id": "file-...",
         "status": "validating" | "in_progress" | "finalizing" | "cancelling"
                   | "completed" | "failed" | "expired" | "cancelled",
         "output_file_id": "file-..." | None, "error_file_id": "file-..." | None,
         "request_counts": {"total": 3, "completed": 0, "failed": 0},
         "errors": ["..."],                  # batch-level errors, API key scrubbed
         "collected": False,                 # True once collect() has returned this batch's verdicts
         "requests": {"<custom_id>": [key, ...], ...}}]}

A request's `custom_id` is its cache key (`cache_key`), so identical requests are sent once, and their answer is
cached under the key of the messages that were actually sent. Keys are the caller's; they must be JSON values that
survive a JSON round trip unchanged (str, int, float, bool, None, and lists and dicts of them; not tuples), because
collect() gives back the keys it reads from the stored state.

Like Judge: answers that parse are cached (and read from the cache unless config.use_cache is off), unparsed
answers and failures never; an error never contains the API key; a failure is a Verdict("failed", error=...).
"""
from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from common.lazy_modules import lazy
from judge.cache import CachedAnswers, endpoint_url
from judge.config import JudgeConfig
from judge.engine import make_client
from judge.prompt import Prompt, Verdict, duplicate_verdict, request_body, verdict_from_response
from judge.retry import MAX_WAIT_S, backoff_s, describe_error, is_retryable, retry_after_s, safe_url, scrub

if TYPE_CHECKING:
    import openai
else:
    openai = lazy("openai")

ENDPOINT: Final = "/v1/chat/completions"
COMPLETION_WINDOW: Final = "24h"
STATE_VERSION = 1
# A batch in one of these states changes no more.
FINAL_STATUSES = frozenset({"completed", "failed", "expired", "cancelled"})
# OpenAI's limits are 50,000 requests and 200 MB per batch input file; the byte default keeps a margin.
DEFAULT_MAX_REQUESTS = 50_000
DEFAULT_MAX_BYTES = 190_000_000
# An upload of up to DEFAULT_MAX_BYTES needs more time than one judge call.
UPLOAD_TIMEOUT_S = 600.0
_FILENAME = "judge-batch.jsonl"
_LIST_LIMIT = 100  # batches listed to find one whose creation answer was lost
# The error of a key whose prompt, rebuilt by collect()'s prompt_for, is no longer the one that was sent.
PROMPT_CHANGED = "the judgment's prompt changed after its batch was sent; judge it again"

Key = Any  # a JSON value, see the module's docstring
PromptFor = Callable[[Key], "Prompt | None"]


# ---------------------------------------------------------------------------------------------
# Public types


@dataclass(frozen=True)
class BatchLimits:
    """How much one batch may hold; past either limit, submit() starts another batch."""

    max_requests: int = DEFAULT_MAX_REQUESTS
    max_bytes: int = DEFAULT_MAX_BYTES  # of the JSONL input file

    def __post_init__(self) -> None:
        for name in ("max_requests", "max_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


@dataclass
class BatchRun:
    """The batches of one submit(): `state` is what the caller stores (JSON-serialisable, no secret in it)."""

    state: dict

    @property
    def batch_ids(self) -> list[str]:
        return [entry["id"] for entry in self.state["batches"]]

    @property
    def requests(self) -> int:
        """Distinct requests sent."""
        return sum(len(entry["requests"]) for entry in self.state["batches"])

    @property
    def keys(self) -> int:
        """Keys waiting for these requests' answers (identical requests share one)."""
        return sum(len(keys) for entry in self.state["batches"] for keys in entry["requests"].values())


@dataclass
class BatchProgress:
    """Where the batches of a state are, as last seen by the endpoint (counts are of distinct requests)."""

    status: str  # the least advanced status while some batch runs; once all ended "completed", else the worst
    done: bool  # every batch has ended (completed, failed, expired or cancelled)
    collected: bool  # and collect() has returned every verdict
    batches: int
    total: int
    completed: int
    failed: int


class BatchError(Exception):
    """A call to the Batch API failed; the message says why and never contains the API key.

    `retryable` is true for timeouts, connection errors, 408/409/429 and 5xx (try again later), `status` the HTTP
    status, if any. The call that raised marked no batch collected (statuses it learnt before may be recorded).
    """

    def __init__(self, message: str, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable


# ---------------------------------------------------------------------------------------------
# The cache, as Judge uses it


def cache_key(config: JudgeConfig, prompt: Prompt) -> str:
    """The key under which Judge(config) caches the answer to `prompt`; also the request's custom_id in a batch."""
    return CachedAnswers(config).cache_key(prompt)


# ---------------------------------------------------------------------------------------------
# Helpers


def _open(config: JudgeConfig) -> openai.OpenAI:
    """A client of the endpoint whose calls the SDK retries (config.max_retries), unlike Judge's."""
    problem = config.problem()
    if problem:
        raise ValueError(problem)
    return make_client(endpoint_url(config), config, 4).with_options(max_retries=config.max_retries)


def _api_error(exc: BaseException, config: JudgeConfig) -> BatchError:
    """A BatchError for a failed API call, its message scrubbed."""
    return BatchError(describe_error(exc, endpoint_url(config), config.api_key, config.timeout_s),
                      getattr(exc, "status_code", None), is_retryable(exc))


def _check_state(config: JudgeConfig, state: Mapping) -> None:
    """Refuse a state of another version or another endpoint (its batches live there, and the key is not for it)."""
    if not isinstance(state, Mapping) or state.get("version") != STATE_VERSION:
        raise ValueError(f"not a judge batch state of version {STATE_VERSION}")
    here = safe_url(endpoint_url(config))
    if state.get("endpoint") != here:
        raise ValueError(f"these batches were sent to {state.get('endpoint')}, not to {here}")


def _check_key(key: Key) -> None:
    try:
        same = json.loads(json.dumps(key)) == key
    except (TypeError, ValueError):
        same = False
    if not same:
        raise ValueError(f"a batch item's key must survive a JSON round trip unchanged, got {key!r}")


def _line(config: JudgeConfig, custom_id: str, prompt: Prompt) -> bytes:
    """One JSONL request: the body Judge sends for this prompt, to the chat completions endpoint."""
    head = json.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT}, ensure_ascii=False,
                      separators=(",", ":"))
    return b"".join((f'{head[:-1]},"body":'.encode("utf-8"), request_body(config, prompt), b"}\n"))  # its last member


def _update(entry: dict, batch: Any, config: JudgeConfig) -> None:
    """Copy what a retrieved batch says into its state entry."""
    entry["status"] = batch.status
    entry["output_file_id"] = batch.output_file_id
    entry["error_file_id"] = batch.error_file_id
    counts = batch.request_counts
    if counts is not None:
        entry["request_counts"] = {"total": counts.total, "completed": counts.completed, "failed": counts.failed}
    errors = (batch.errors.data if batch.errors is not None else None) or []
    entry["errors"] = [scrub(_batch_error_text(e), config.api_key) for e in errors]


def _batch_error_text(error: Any) -> str:
    text = ": ".join(str(part) for part in (error.code, error.message) if part) or "no reason given"
    return f"{text} (line {error.line})" if error.line is not None else text


def _refresh(client: openai.OpenAI, config: JudgeConfig, entry: dict) -> None:
    try:
        batch = client.batches.retrieve(entry["id"])
    except Exception as exc:  # noqa: BLE001 - every failure is reported the same way
        raise _api_error(exc, config) from None
    _update(entry, batch, config)


# ---------------------------------------------------------------------------------------------
# submit


class _Chunk:
    """The requests of one batch being filled."""

    def __init__(self) -> None:
        self.requests: dict[str, list[Key]] = {}
        self.lines: list[bytes] = []
        self.size = 0


def _batch_on_file(client: openai.OpenAI, file_id: str) -> Any:
    """The batch created on file_id, if one is among the latest: a creation whose answer was lost."""
    try:
        page = client.batches.list(limit=_LIST_LIMIT)
    except Exception:  # noqa: BLE001 - best effort; the caller raises the creation's own error
        return None
    return next((batch for batch in page.data if batch.input_file_id == file_id), None)


def _create_batch(client: openai.OpenAI, config: JudgeConfig, file_id: str, metadata: dict[str, str]) -> Any:
    """POST /batches with retries that cannot create the same batch twice.

    The SDK's retries are off here: when no answer came back (timeout, dropped connection) the batch may
    exist all the same, so the latest batches are looked through for one on this file before another attempt.
    """
    creator = client.with_options(max_retries=0)
    retry = 0
    while True:
        try:
            return creator.batches.create(input_file_id=file_id, endpoint=ENDPOINT,
                                          completion_window=COMPLETION_WINDOW, metadata=metadata)
        except Exception as exc:
            if not isinstance(exc, openai.APIStatusError):
                found = _batch_on_file(client, file_id)
                if found is not None:
                    return found
            if not is_retryable(exc) or retry >= config.max_retries:
                raise
            headers = exc.response.headers if isinstance(exc, openai.APIStatusError) else None
            wait = retry_after_s(headers)
            if wait is None:
                wait = backoff_s(retry, config.retry_base_s, config.retry_max_s)
            time.sleep(min(wait, MAX_WAIT_S))
            retry += 1


def submit(
    config: JudgeConfig,
    items: Iterable[tuple[Key, Prompt]],
    cache: Any = None,
    *,
    limits: BatchLimits | None = None,
    metadata: Mapping[str, str] | None = None,
) -> tuple[list[tuple[Key, Verdict]], BatchRun | None]:
    """Send (key, Prompt) items as batches; returns (verdicts known now, the run to poll, or None).

    The verdicts known now are those answered from the cache (as Judge would answer them, `cached` set) and
    failed ones for requests that could not be sent: one larger than limits.max_bytes, or everything left
    once an upload or a batch creation failed (the batches created before stay in the run). Every other
    key is in the run, whose `state` the caller stores; None when no batch was created. `metadata` (string
    values) is attached to each batch, besides a submission id and the part number.
    """
    limits = limits or BatchLimits()
    client = _open(config)
    judgments = CachedAnswers(config, cache)
    key_scrub = config.api_key
    state: dict = {"version": STATE_VERSION, "endpoint": safe_url(endpoint_url(config)), "model": config.model,
                   "submitted_at": int(time.time()), "batches": []}
    tags = {"source": "personasteer-bench", "submission": uuid.uuid4().hex, **dict(metadata or {})}
    ready: list[tuple[Key, Verdict]] = []
    placed: dict[str, list[Key]] = {}  # custom_id -> its keys, in the chunk that holds it
    refused: dict[str, Verdict] = {}  # custom_id -> the failed verdict of a request that was not sent
    failure: str | None = None  # why the first batch that could not be created was not

    def refuse(custom_id: str, keys: list[Key], error: str) -> None:
        verdict = Verdict("failed", error=error, attempts=0)
        refused[custom_id] = verdict
        ready.extend((key, verdict if i == 0 else duplicate_verdict(verdict)) for i, key in enumerate(keys))

    def send(chunk: _Chunk) -> str | None:
        """Upload a chunk and create its batch; None, else why it failed (its keys then have failed verdicts)."""
        part = str(len(state["batches"]) + 1)
        file_id = None
        try:
            uploaded = client.files.create(file=(_FILENAME, b"".join(chunk.lines), "application/jsonl"),
                                           purpose="batch", timeout=max(UPLOAD_TIMEOUT_S, config.timeout_s))
            file_id = uploaded.id
            batch = _create_batch(client, config, file_id, {**tags, "part": part})
        except Exception as exc:  # noqa: BLE001 - the reason goes into the failed verdicts
            reason = describe_error(exc, endpoint_url(config), key_scrub, config.timeout_s)
            error = scrub(f"the batch could not be sent: {reason}", key_scrub)
            if file_id is not None:
                try:
                    client.files.delete(file_id)
                except Exception:  # noqa: BLE001, S110 - an unused upload left behind costs nothing
                    pass
            for custom_id, keys in chunk.requests.items():
                del placed[custom_id]
                refuse(custom_id, keys, error)
            return error
        entry = {"id": batch.id, "input_file_id": file_id, "status": batch.status, "output_file_id": None,
                 "error_file_id": None, "errors": [], "collected": False,
                 "request_counts": {"total": len(chunk.requests), "completed": 0, "failed": 0},
                 "requests": chunk.requests}
        _update(entry, batch, config)
        entry["request_counts"]["total"] = entry["request_counts"]["total"] or len(chunk.requests)
        state["batches"].append(entry)
        return None

    chunk = _Chunk()
    try:
        for key, prompt in items:
            _check_key(key)
            custom_id = judgments.cache_key(prompt)
            if custom_id in placed:
                placed[custom_id].append(key)
                continue
            if custom_id in refused:
                ready.append((key, duplicate_verdict(refused[custom_id])))
                continue
            cached = judgments.lookup(prompt, custom_id)
            if cached is not None:
                ready.append((key, cached))
                continue
            if failure is not None:
                refuse(custom_id, [key], failure)
                continue
            line = _line(config, custom_id, prompt)
            if len(line) > limits.max_bytes:
                refuse(custom_id, [key], f"the request is {len(line)} bytes, more than a batch file may hold "
                                         f"({limits.max_bytes} bytes)")
                continue
            if chunk.requests and (len(chunk.requests) >= limits.max_requests
                                   or chunk.size + len(line) > limits.max_bytes):
                failure = send(chunk)
                chunk = _Chunk()
                if failure is not None:
                    refuse(custom_id, [key], failure)
                    continue
            chunk.requests[custom_id] = placed[custom_id] = [key]
            chunk.lines.append(line)
            chunk.size += len(line)
        if chunk.requests:
            send(chunk)
    finally:
        client.close()
    return ready, (BatchRun(state) if state["batches"] else None)


# ---------------------------------------------------------------------------------------------
# poll, cancel


def progress(state: Mapping) -> BatchProgress:
    """The progress recorded in a state (no call)."""
    entries = state["batches"]
    statuses = [entry["status"] for entry in entries]
    running = [s for s in statuses if s not in FINAL_STATUSES]
    order = ("validating", "in_progress", "finalizing", "cancelling")
    if running:
        status = min(running, key=lambda s: order.index(s) if s in order else -1)
    else:
        status = next((s for s in ("failed", "expired", "cancelled") if s in statuses), "completed")
    counts = [entry.get("request_counts") or {} for entry in entries]
    return BatchProgress(
        status=status, done=not running, collected=all(entry.get("collected") for entry in entries),
        batches=len(entries), total=sum(c.get("total", 0) for c in counts),
        completed=sum(c.get("completed", 0) for c in counts), failed=sum(c.get("failed", 0) for c in counts))


def poll(config: JudgeConfig, state: dict) -> BatchProgress:
    """Ask the endpoint where each running batch is, record it in `state`, and return the progress.

    Raises BatchError when a call fails (statuses learnt before it are kept), ValueError for a state of another
    endpoint or version.
    """
    _check_state(config, state)
    running = [entry for entry in state["batches"] if entry["status"] not in FINAL_STATUSES]
    if running:
        client = _open(config)
        try:
            for entry in running:
                _refresh(client, config, entry)
        finally:
            client.close()
    return progress(state)


def cancel(config: JudgeConfig, state: dict) -> BatchProgress:
    """Ask the endpoint to cancel every running batch; collect() then gives what was answered before.

    The requests not answered become failed verdicts once their batch reaches "cancelled" (OpenAI takes up to
    10 minutes). Raises BatchError when a call fails.
    """
    _check_state(config, state)
    client = _open(config)
    try:
        for entry in state["batches"]:
            if entry["status"] in FINAL_STATUSES or entry["status"] == "cancelling":
                continue
            try:
                batch = client.batches.cancel(entry["id"])
            except openai.APIStatusError as exc:
                if exc.status_code not in (400, 409):  # 400/409: it ended meanwhile
                    raise _api_error(exc, config) from None
                _refresh(client, config, entry)
            except Exception as exc:  # noqa: BLE001 - every failure is reported the same way
                raise _api_error(exc, config) from None
            else:
                _update(entry, batch, config)
    finally:
        client.close()
    return progress(state)


# ---------------------------------------------------------------------------------------------
# collect


def _outcome(line: Mapping, secret: str | None) -> tuple[str, Any]:
    """("answer", chat completion body) or ("error", why) for one line of an output or error file."""
    error = line.get("error")
    response = line.get("response")
    if isinstance(error, Mapping) and error:
        text = ": ".join(str(error[part]) for part in ("code", "message") if error.get(part)) or "no reason given"
        return "error", scrub(f"the batch could not answer this request ({text})", secret)
    if isinstance(response, Mapping):
        status = response.get("status_code")
        body = response.get("body")
        if isinstance(status, int) and 200 <= status < 300 and isinstance(body, Mapping):
            return "answer", body
        detail = body.get("error") if isinstance(body, Mapping) else None
        message = detail.get("message") if isinstance(detail, Mapping) else None
        return "error", scrub(f"the batch's request failed: HTTP {status}: {message or body}", secret)
    return "error", "the batch returned neither an answer nor an error for this request"


def _read_file(client: openai.OpenAI, config: JudgeConfig, file_id: str,
               wanted: Mapping[str, Any]) -> Iterator[tuple[str, tuple[str, Any]]]:
    """(custom_id, outcome) for each line of an output or error file whose custom_id is wanted, as it streams in."""
    try:
        with client.files.with_streaming_response.content(file_id) as response:
            for text in response.iter_lines():
                try:
                    line = json.loads(text)
                except ValueError:
                    continue  # blank or cut: its request counts as unanswered
                custom_id = line.get("custom_id") if isinstance(line, dict) else None
                if isinstance(custom_id, str) and custom_id in wanted:
                    yield custom_id, _outcome(line, config.api_key)
    except Exception as exc:  # noqa: BLE001 - every failure is reported the same way
        raise _api_error(exc, config) from None


def _missing_reason(entry: Mapping) -> str:
    """Why a request of an ended batch has no line in its output or error file."""
    status = entry["status"]
    if status == "failed":
        return f"the batch failed: {'; '.join(entry.get('errors') or []) or 'no reason given'}"
    if status == "expired":
        return f"the batch expired before this request was answered (completion window {COMPLETION_WINDOW})"
    if status == "cancelled":
        return "the batch was cancelled before this request was answered"
    return "the batch ended without an answer for this request"


def _answer_verdict(prompt: Prompt, body: Mapping, secret: str | None) -> Verdict:
    try:
        return verdict_from_response(prompt.parse, body, 1)
    except Exception as exc:  # noqa: BLE001 - as Judge: a bad answer is a failed judgment, not a crash
        return Verdict("failed", error=scrub(f"the batch's answer could not be read: {type(exc).__name__}: {exc}",
                                              secret), attempts=1)


def _request_verdicts(judgments: CachedAnswers, custom_id: str, keys: list[Key], outcome: tuple[str, Any],
                      prompt_for: PromptFor) -> Iterator[tuple[Key, Verdict]]:
    """The verdicts of one request's keys; a parsed answer goes to the cache first."""
    same: list[tuple[Key, Prompt]] = []  # keys whose prompt is still the one that was sent
    for key in keys:
        prompt = prompt_for(key)
        if prompt is None:
            continue  # no longer wanted
        if judgments.cache_key(prompt) == custom_id:
            same.append((key, prompt))
        else:
            yield key, Verdict("failed", error=PROMPT_CHANGED, attempts=0)
    if not same:
        return
    kind, value = outcome
    if kind == "answer":
        verdict = _answer_verdict(same[0][1], value, judgments.config.api_key)
        judgments.store([(custom_id, verdict)])
    else:
        verdict = Verdict("failed", error=value, attempts=1)
    for i, (key, _prompt) in enumerate(same):
        yield key, verdict if i == 0 else duplicate_verdict(verdict)


def _entry_verdicts(client: openai.OpenAI, judgments: CachedAnswers, entry: Mapping,
                    prompt_for: PromptFor) -> Iterator[tuple[Key, Verdict]]:
    """The verdicts of an ended batch's keys: its output file's, its error file's, then those of requests in neither."""
    requests = entry["requests"]
    seen: set[str] = set()
    for file_id in (entry.get("output_file_id"), entry.get("error_file_id")):
        if file_id:
            for custom_id, outcome in _read_file(client, judgments.config, file_id, requests):
                if custom_id not in seen:
                    seen.add(custom_id)
                    yield from _request_verdicts(judgments, custom_id, requests[custom_id], outcome, prompt_for)
    missing = ("error", _missing_reason(entry))
    for custom_id, keys in requests.items():
        if custom_id not in seen:
            yield from _request_verdicts(judgments, custom_id, keys, missing, prompt_for)


def collect(config: JudgeConfig, state: dict, cache: Any, prompt_for: PromptFor) -> list[tuple[Key, Verdict]]:
    """The verdicts of every batch that has ended and was not collected yet; marks those batches collected.

    `prompt_for(key)` rebuilds the Prompt of a key (None: the key is no longer wanted, it gets no verdict); its
    parser reads the answer. Each answer becomes an "ok" or "unparsed" verdict with its token usage, and
    parsed answers are cached (under the custom_id, the cache key of the messages sent) before this returns.
    An error line, or a request missing from the files, becomes a failed verdict saying why (for a failed,
    expired or cancelled batch, the batch's reason). A key whose rebuilt prompt is no longer the one sent fails
    with PROMPT_CHANGED. Identical requests: the first key gets the answer's tokens, the others duplicates, as in
    Judge.run. Verdicts come batch by batch, in the order of the output file, then the error file, then of
    requests in neither. Batches still running are left for a later call, which polls them itself. Raises
    BatchError when a call fails; then no batch is marked collected and a later call reads the same files again.
    """
    _check_state(config, state)
    judgments = CachedAnswers(config, cache)
    results: list[tuple[Key, Verdict]] = []
    ended: list[dict] = []
    waiting = [entry for entry in state["batches"] if not entry.get("collected")]
    if not waiting:
        return results
    client = _open(config)
    try:
        for entry in waiting:
            if entry["status"] not in FINAL_STATUSES:
                _refresh(client, config, entry)
                if entry["status"] not in FINAL_STATUSES:
                    continue
            results.extend(_entry_verdicts(client, judgments, entry, prompt_for))
            ended.append(entry)
    finally:
        client.close()
    for entry in ended:
        entry["collected"] = True
    return results


# ---------------------------------------------------------------------------------------------
# Bookkeeping without calls


def pending_keys(state: Mapping) -> list[Key]:
    """The keys whose verdicts collect() has not returned yet (not to be submitted again meanwhile)."""
    return [key for entry in state["batches"] if not entry.get("collected")
            for keys in entry["requests"].values() for key in keys]


def finished(state: Mapping) -> bool:
    """Every batch has ended and been collected."""
    return all(entry.get("collected") for entry in state["batches"])


def abandon(state: dict, reason: str) -> list[tuple[Key, Verdict]]:
    """Give up on the batches not collected yet (e.g. the endpoint no longer knows them): a failed verdict
    with `reason` for each of their keys, and they count as collected. Answers they may still hold are lost."""
    results: list[tuple[Key, Verdict]] = []
    for entry in state["batches"]:
        if entry.get("collected"):
            continue
        for keys in entry["requests"].values():
            verdict = Verdict("failed", error=reason, attempts=1)
            results.extend((key, verdict if i == 0 else duplicate_verdict(verdict)) for i, key in enumerate(keys))
        entry["collected"] = True
    return results

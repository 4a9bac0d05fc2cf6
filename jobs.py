"""Evaluations: create them, run them in the background, cancel and resume them."""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, Mapping

import judge_endpoints
import references
from benchmarks import agentbench, conversation, conversation_annotation, dialogue, mobility
from benchmarks.dialogue_result import build_result, judge_summary
from benchmarks.mobility_result import build_result as build_mobility_result
from conversation_prompts import ANNOTATION_PROMPT_VERSION
from evaluator import DIMENSIONS, MODES, DialogueContext, Judge, JudgeConfig, Verdict
from ingest import new_id, upload_path
from judge_settings import prices
from store import JudgeCache, Store
from translations import _

log = logging.getLogger(__name__)

# Settings a request may override per evaluation. The URL and the key come only from the endpoint the request
# picks among those the operator named ("endpoint", or a "base_url" equal to one of theirs).
JUDGE_OVERRIDES = ("model", "concurrency", "temperature", "language", "max_tokens", "timeout_s", "max_retries",
                   "use_cache")
REQUEST_FIELDS = ("endpoint", "base_url", *JUDGE_OVERRIDES)
FLUSH_EVERY = 200
FLUSH_SECONDS = 0.5


class RequestError(ValueError):
    """A request to create or change an evaluation that cannot be honoured; the message says why."""


def iter_sessions_with_offsets(path: str | Path) -> Iterator[tuple[int, int, dialogue.Session]]:
    """(index, byte offset, session) for every session of an already validated dialogue file."""
    offset = 0
    idx = 0
    with open(path, "rb") as f:
        for line in f:
            start, offset = offset, offset + len(line)
            if start == 0 and line.startswith(b"\xef\xbb\xbf"):
                line, start = line[3:], 3
            if not line.strip():
                continue
            yield idx, start, dialogue.parse_session(json.loads(line))
            idx += 1


def read_session(path: str | Path, offset: int) -> dialogue.Session:
    """The session stored on the line starting at a byte offset."""
    with open(path, "rb") as f:
        f.seek(offset)
        return dialogue.parse_session(json.loads(f.readline()))


def judge_config(settings: Mapping, environ: Mapping[str, str]) -> JudgeConfig:
    """The judge configuration of an evaluation: its endpoint's URL and key, the environment's defaults, then its
    stored overrides. ValueError when the endpoint is unknown or does not allow the model."""
    endpoint = judge_endpoints.choose(judge_endpoints.parse(environ), settings.get("endpoint"),
                                      None if settings.get("endpoint") else settings.get("base_url"))
    defaults = {k: v for k, v in environ.items()
                if k not in judge_endpoints.URL_VARIABLES + judge_endpoints.KEY_VARIABLES}
    config = replace(JudgeConfig.from_env(defaults, **{k: settings.get(k) for k in JUDGE_OVERRIDES}),
                     base_url=endpoint.base_url, api_key=endpoint.api_key)
    if not endpoint.allows(config.model):
        raise ValueError(_("Judge endpoint '%(name)s' does not allow model %(model)s. Allowed: %(models)s.",
                           name=endpoint.name, model=repr(config.model), models=", ".join(endpoint.models)))
    return config


def create_evaluation(store: Store, upload_id: str, methods: list[str] | None = None,
                      judge: Mapping | None = None, environ: Mapping[str, str] = os.environ,
                      reference: str | None = None, annotate: bool = False) -> dict:
    """Check a request and record a queued evaluation; raises RequestError with a readable reason.

    `annotate` asks the judge to annotate a conversation upload (otherwise it is scored without one).
    """
    upload = store.get_upload(upload_id or "")
    if upload is None:
        raise RequestError(_("Upload '%(id)s' does not exist. Upload the file first.", id=upload_id))
    if upload["kind"] == "mobility":
        return _create_mobility(store, upload, reference)
    if upload["kind"] == "agentbench":
        return _create_single_step(store, upload, {})
    if upload["kind"] == "conversation":
        settings = {"annotate": True, **_judge_settings(judge, environ)} if annotate else {}
        return _create_single_step(store, upload, settings,
                                   upload["summary"]["conversations"] if annotate else 1)
    available = upload["summary"]["methods"]
    methods = list(methods or available)
    unknown = [m for m in methods if m not in available]
    if unknown:
        raise RequestError(_("Unknown methods: %(unknown)s. This file has: %(available)s.",
                             unknown=", ".join(unknown), available=", ".join(available)))
    evaluation = {"id": new_id(), "upload_id": upload_id, "kind": upload["kind"], "methods": methods,
                  "settings": {**_judge_settings(judge, environ), "modes": list(MODES)},
                  "total": upload["summary"]["rounds"] * len(methods) * len(MODES)}
    store.add_evaluation(evaluation)
    return store.get_evaluation(evaluation["id"])


def _judge_settings(judge: Mapping | None, environ: Mapping[str, str]) -> dict:
    """The judge settings an evaluation records (overrides checked, prices, never the key)."""
    overrides = dict(judge or {})
    if "api_key" in overrides:
        raise RequestError(_("The judge's API key cannot be sent with a request; set JUDGE_API_KEY in the "
                             "server's environment or save it on the settings page."))
    bad = sorted(set(overrides) - set(REQUEST_FIELDS))
    if bad:
        raise RequestError(_("Unknown judge settings: %(bad)s. Allowed: %(allowed)s.", bad=", ".join(bad),
                             allowed=", ".join(REQUEST_FIELDS)))
    try:
        endpoint = judge_endpoints.choose(judge_endpoints.parse(environ), overrides.pop("endpoint", None),
                                          overrides.pop("base_url", None))
        config = judge_config({**overrides, "endpoint": endpoint.name}, environ)
        price = prices(environ)
    except ValueError as exc:
        raise RequestError(str(exc)) from exc
    problem = config.problem()
    if problem:
        raise RequestError(problem)
    return {"endpoint": endpoint.name, "base_url": config.base_url,
            **{k: v for k, v in config.public().items() if k in JUDGE_OVERRIDES}, "prices": price}


def _create_mobility(store: Store, upload: dict, reference: str | None) -> dict:
    """A mobility evaluation: the generated upload scored against a named reference set."""
    record = store.get_reference(reference) if reference else None
    if record is None:
        names = ", ".join(r["name"] for r in store.list_references())
        raise RequestError(_("Pick the reference set to score against (by name or id). Known reference sets: "
                             "%(names)s.", names=names or _("none yet; add one on the reference sets page")))
    return _create_single_step(store, upload, {"reference": record["id"], "reference_name": record["name"]})


def _create_single_step(store: Store, upload: dict, settings: dict, total: int = 1) -> dict:
    """An evaluation of a whole upload rather than of methods (named after the uploaded file)."""
    evaluation = {"id": new_id(), "upload_id": upload["id"], "kind": upload["kind"],
                  "methods": [Path(upload["filename"]).stem or upload["id"]], "settings": settings, "total": total}
    store.add_evaluation(evaluation)
    return store.get_evaluation(evaluation["id"])


class Runner:
    """Runs evaluations on background threads; the database holds every bit of their state."""

    def __init__(self, store: Store, upload_folder: str | Path, results_folder: str | Path,
                 environ: Callable[[], Mapping[str, str]] = lambda: os.environ):
        self.store = store
        self.upload_folder = Path(upload_folder)
        self.results_folder = Path(results_folder)
        self.environ = environ  # called at each run, so settings saved meanwhile (and the key) apply
        self._cancelled: set[str] = set()
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def start(self, evaluation_id: str) -> None:
        """Run an evaluation on a background thread (no-op when it is already running here)."""
        with self._lock:
            thread = self._threads.get(evaluation_id)
            if thread and thread.is_alive():
                return
            self._cancelled.discard(evaluation_id)
            thread = threading.Thread(target=self.run, args=(evaluation_id,), name=f"eval-{evaluation_id}",
                                      daemon=True)
            self._threads[evaluation_id] = thread
            thread.start()

    def resume(self) -> list[str]:
        """Start again every evaluation that was queued or running when the server stopped."""
        ids = self.store.unfinished_evaluations()
        for evaluation_id in ids:
            self.start(evaluation_id)
        return ids

    def cancel(self, evaluation_id: str) -> bool:
        """Ask a queued or running evaluation to stop; False when it is not running."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        if evaluation is None or evaluation["status"] not in ("queued", "running"):
            return False
        self._cancelled.add(evaluation_id)
        thread = self._threads.get(evaluation_id)
        if thread is None or not thread.is_alive():
            self.store.set_status(evaluation_id, "cancelled")
        return True

    def resume_one(self, evaluation_id: str, rerun_failed: bool = False) -> bool:
        """Continue a cancelled, failed or finished evaluation, first putting failed and unparsed judgments
        back in the queue when asked; False when it is still running."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        thread = self._threads.get(evaluation_id)
        if evaluation is None or (thread and thread.is_alive()):
            return False
        if rerun_failed:
            self.store.reset_judgments(evaluation_id)
        self.store.set_status(evaluation_id, "queued")
        self.start(evaluation_id)
        return True

    def wait(self, evaluation_id: str, timeout: float | None = None) -> None:
        """Block until the evaluation's background thread has finished."""
        thread = self._threads.get(evaluation_id)
        if thread:
            thread.join(timeout)

    def run(self, evaluation_id: str, on_progress: Callable[[dict], None] | None = None) -> None:
        """Run one evaluation to its end in this thread, recording a failure instead of raising."""
        try:
            self._run(evaluation_id, on_progress)
        except Exception as exc:  # the job must end in a visible state, whatever went wrong
            log.exception("evaluation %s failed", evaluation_id)
            self.store.set_status(evaluation_id, "failed", _("The evaluation stopped on an internal error: "
                                                             "%(error)s", error=f"{type(exc).__name__}: {exc}"))

    def _run(self, evaluation_id: str, on_progress: Callable[[dict], None] | None) -> None:
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        upload = self.store.get_upload(evaluation["upload_id"])
        path = upload_path(self.upload_folder, upload["sha256"], upload["kind"])
        if not path.exists():
            self.store.set_status(evaluation_id, "failed",
                                  _("The uploaded file is missing from the uploads folder; upload it again."))
            return
        if evaluation["kind"] == "mobility":
            self._run_mobility(evaluation, upload, path)
            return
        if evaluation["kind"] == "conversation":
            self._run_conversation(evaluation, upload, path, on_progress)
            return
        if evaluation["kind"] == "agentbench":
            self._run_agentbench(evaluation, upload, path)
            return
        config = self._judge_config(evaluation)
        if config is None:
            return
        self.store.set_status(evaluation_id, "running")
        self._plan(evaluation, upload, path)
        pending = self.store.pending_keys(evaluation_id)
        with Judge(config, cache=JudgeCache(self.store)) as judge:
            self._judge(evaluation_id, self._items(evaluation, path, pending), judge, on_progress)
        cancelled = evaluation_id in self._cancelled
        document = self.result_document(evaluation_id)
        self._write_result_file(evaluation_id, document)
        self.store.set_result(evaluation_id, document, status="cancelled" if cancelled else "done")

    def _judge_config(self, evaluation: dict) -> JudgeConfig | None:
        """The evaluation's judge, or None after recording why it cannot be called (endpoint gone, no judge)."""
        try:
            config = judge_config(evaluation["settings"], self.environ())
        except ValueError as exc:
            self.store.set_status(evaluation["id"], "failed", str(exc))
            return None
        if config.problem():
            self.store.set_status(evaluation["id"], "failed", config.problem())
            return None
        return config

    def _run_mobility(self, evaluation: dict, upload: dict, path: Path) -> None:
        """Score a generated mobility set against its reference set: no judge, one step."""
        record = self.store.get_reference(evaluation["settings"]["reference"])
        if record is None:
            self.store.set_status(evaluation["id"], "failed", _("The reference set of this evaluation was removed."))
            return
        self.store.set_status(evaluation["id"], "running")
        with open(path, "rb") as f:
            generated = mobility.load(f)
        document = build_mobility_result(evaluation, upload, record,
                                         references.load(self.upload_folder, record), generated)
        self._write_result_file(evaluation["id"], document)
        self.store.set_result(evaluation["id"], document)

    def _run_conversation(self, evaluation: dict, upload: dict, path: Path,
                          on_progress: Callable[[dict], None] | None) -> None:
        """Statistics and simulator fidelity of Human-vs-Agent conversations, with the judge's annotation
        of every conversation when asked for."""
        config = self._judge_config(evaluation) if evaluation["settings"].get("annotate") else None
        if evaluation["settings"].get("annotate") and config is None:
            return
        self.store.set_status(evaluation["id"], "running")
        with open(path, "rb") as f:
            _report, conversations = conversation.read_any(f, upload["filename"])
        document = {"kind": "conversation", "evaluation_id": evaluation["id"],
                    "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"],
                              "conversations": len(conversations)},
                    **conversation.statistics(conversations)}
        cancelled = False
        if config is not None:
            if not self.store.progress(evaluation["id"])["total"]:
                self.store.add_pending(evaluation["id"], conversation_annotation.plan_rows(conversations))
            pending = self.store.pending_keys(evaluation["id"])
            with Judge(config, cache=JudgeCache(self.store)) as judge:
                self._judge(evaluation["id"], conversation_annotation.requests(conversations, pending), judge,
                            on_progress)
            cancelled = evaluation["id"] in self._cancelled
            document["annotation"] = {
                "judge": {**judge_summary(config, self.store.usage(evaluation["id"]),
                                          evaluation["settings"].get("prices"), []),
                          "prompt_version": ANNOTATION_PROMPT_VERSION},
                **conversation_annotation.summarise(conversations, self.store.judgments(evaluation["id"]))}
        self._write_result_file(evaluation["id"], document)
        self.store.set_result(evaluation["id"], document, status="cancelled" if cancelled else "done")

    def _run_agentbench(self, evaluation: dict, upload: dict, path: Path) -> None:
        """Per-task tables, status breakdown and overall score of AgentBench outputs: no judge, one step."""
        self.store.set_status(evaluation["id"], "running")
        names = upload["summary"].get("names") or {}
        with open(path, "rb") as f:
            _report, run = agentbench.read_any(f, upload["filename"], names.get("agent"), names.get("task"))
        document = {**agentbench.score(run), "evaluation_id": evaluation["id"],
                    "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"]}}
        self._write_result_file(evaluation["id"], document)
        self.store.set_result(evaluation["id"], document)

    def _plan(self, evaluation: dict, upload: dict, path: Path) -> None:
        """Record every judgment the evaluation needs as pending (once; a resumed run skips this)."""
        if self.store.progress(evaluation["id"])["total"]:
            return
        offsets = []
        rows = []
        for idx, offset, session in iter_sessions_with_offsets(path):
            offsets.append((idx, session.session_id, offset))
            rows.extend((idx, session.session_id, rnd.number, method, mode)
                        for rnd in session.rounds for method in evaluation["methods"] for mode in MODES)
        if not self.store.count_sessions(upload["id"]):
            self.store.set_session_offsets(upload["id"], offsets)
        self.store.add_pending(evaluation["id"], rows)
        self.store.set_total(evaluation["id"], len(rows))

    def _items(self, evaluation: dict, path: Path, pending: set) -> Iterator[tuple[tuple, str, DialogueContext]]:
        """Judge requests for the pending judgments, built lazily one session at a time."""
        for idx, _offset, session in iter_sessions_with_offsets(path):
            for position, rnd in enumerate(session.rounds):
                for method in evaluation["methods"]:
                    history = [(r.user_message, r.responses[method]) for r in session.rounds[:position]]
                    ctx = DialogueContext(session.user_profile, session.user_personality, history,
                                          rnd.user_message, rnd.responses[method])
                    for mode in MODES:
                        key = (idx, rnd.number, method, mode)
                        if key in pending:
                            yield key, mode, ctx

    def _judge(self, evaluation_id: str, items: Iterator, judge: Judge,
               on_progress: Callable[[dict], None] | None) -> None:
        """Judge the items, saving verdicts in batches and reporting progress after each batch."""
        batch: list = []
        last_flush = time.monotonic()

        def flush() -> None:
            nonlocal last_flush
            if batch:
                self.store.save_judgments(evaluation_id, batch)
                batch.clear()
            last_flush = time.monotonic()
            if on_progress:
                on_progress(self.store.progress(evaluation_id))

        for key, verdict in judge.run(items, should_stop=lambda: evaluation_id in self._cancelled):
            batch.append((key, verdict_fields(verdict)))
            if len(batch) >= FLUSH_EVERY or time.monotonic() - last_flush >= FLUSH_SECONDS:
                flush()
        flush()

    def result_document(self, evaluation_id: str) -> dict:
        """Build the result document from everything judged so far."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        upload = self.store.get_upload(evaluation["upload_id"])
        config = judge_config(evaluation["settings"], self.environ())
        return build_result(evaluation, upload, self.store.judgments(evaluation_id),
                            self.store.usage(evaluation_id), config)

    def _write_result_file(self, evaluation_id: str, document: dict) -> None:
        """Write results/<id>.json atomically, so a crash never leaves half a file."""
        self.results_folder.mkdir(parents=True, exist_ok=True)
        target = self.results_folder / f"{evaluation_id}.json"
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, target)


def verdict_fields(verdict: Verdict) -> dict:
    """The database columns of one judgment's outcome."""
    dims = verdict.dims or {}
    other = {k: v for k, v in dims.items() if k not in DIMENSIONS}
    return {"status": verdict.status, "total": verdict.total, "verdict": verdict.verdict,
            **{d: dims.get(d) for d in DIMENSIONS}, "scores": json.dumps(other) if other else None,
            "answer": verdict.answer, "error": verdict.error,
            "prompt_tokens": verdict.prompt_tokens, "completion_tokens": verdict.completion_tokens,
            "cached": int(verdict.cached), "attempts": verdict.attempts}

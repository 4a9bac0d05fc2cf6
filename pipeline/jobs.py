"""Evaluations: create them, run them in the background, cancel and resume them.

`Pipeline` holds the steps of one run; `Runner` runs them on threads of this process (the default), and
pipeline/queue_runner.py on Celery workers when CELERY_BROKER_URL is set.
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from judge import PLACEHOLDER_API_KEY, Judge, JudgeConfig, Verdict, judge_of, panel_settings, prices
from judge import batch as judge_batch
from judge import endpoints as judge_endpoints
from kinds import registry
from kinds.host import new_id
from kinds.kind import Job, JobFailed, Judged, Scored, Site, StartError, StartRequest, as_flag, calls_judge
from pipeline import provenance
from pipeline.ingest import stored_name
from pipeline.refusals import not_scored
from storage import blobs
from storage.database import database_unreachable, now
from storage.store import JudgeCache, Store
from translations import _, ngettext

log = logging.getLogger(__name__)

# Settings a request may override per evaluation. The URL and the key come only from the endpoint the request
# picks among those the operator named ("endpoint", or a "base_url" equal to one of theirs).
JUDGE_OVERRIDES = ("model", "concurrency", "temperature", "language", "max_tokens", "timeout_s", "max_retries",
                   "use_cache")
REQUEST_FIELDS = ("endpoint", "base_url", "batch", *JUDGE_OVERRIDES)
FLUSH_EVERY = 200
FLUSH_SECONDS = 0.5
BATCH_POLL_S = 30.0  # between two polls of a Batch API run (JUDGE_BATCH_POLL_S)
BLOCK_JUDGMENTS = 20_000  # judgments a thread runner takes from the store at a time
PLAN_CHUNK = 50_000  # planned judgments written per transaction
MAX_JUDGES = 5  # of a panel
FAILED_RETRY_S = 600.0  # JUDGE_FAILED_RETRY_S: the longest an evaluation waits in all to ask failed judgments again
FIRST_RETRY_PAUSE_S = 5.0  # the first pause before asking them again (at most a tenth of that); each next one doubles
FINISHED = ("done", "incomplete", "cancelled")  # the statuses of an evaluation with a result document
DATABASE_WAIT_S = 2.0  # between two attempts to go on with an evaluation while the database cannot be reached


def failed_retry_s(environ: Mapping[str, str]) -> float:
    """JUDGE_FAILED_RETRY_S: seconds an evaluation may wait in all before asking failed judgments again (0: never);
    ValueError when it is not a number >= 0."""
    raw = str(environ.get("JUDGE_FAILED_RETRY_S") or "").strip()
    try:
        value = float(raw) if raw else FAILED_RETRY_S
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(_("JUDGE_FAILED_RETRY_S must be a number of seconds >= 0, got %(value)s.", value=repr(raw)))
    return value


class RequestError(ValueError):
    """A request to create or change an evaluation that cannot be honoured; the message says why."""


def judge_config(settings: Mapping, environ: Mapping[str, str]) -> JudgeConfig:
    """The judge configuration of an evaluation: its endpoint's URL and key, the environment's defaults, then its
    stored overrides. ValueError when the endpoint is unknown or does not allow the model."""
    endpoint = judge_endpoints.choose(judge_endpoints.parse(environ), settings.get("endpoint"),
                                      None if settings.get("endpoint") else settings.get("base_url"))
    defaults = {k: v for k, v in environ.items()
                if k not in judge_endpoints.URL_VARIABLES + judge_endpoints.KEY_VARIABLES}
    config = replace(JudgeConfig.from_env(defaults, **{k: settings.get(k) for k in JUDGE_OVERRIDES}),
                     base_url=endpoint.base_url, api_key=endpoint.api_key,
                     structured_output=endpoint.structured_output)
    if not endpoint.allows(config.model):
        raise ValueError(_("Judge endpoint '%(name)s' does not allow model %(model)s. Allowed: %(models)s.",
                           name=endpoint.name, model=repr(config.model), models=", ".join(endpoint.models)))
    return config


def create_evaluation(store: Store, upload_id: str, methods: list[str] | None = None,
                      judge: Mapping | None = None, environ: Mapping[str, str] = os.environ,
                      options: Mapping | None = None, judges: list | None = None) -> dict:
    """Check a request and record a queued evaluation; raises RequestError with a readable reason.

    `options` are the upload's kind's own start fields (a mobility reference set, a conversation annotation);
    `judges`, a panel: each judge's settings, over the `judge` settings they share.
    """
    upload = store.get_upload(upload_id or "")
    if upload is None:
        raise RequestError(_("Upload '%(id)s' does not exist. Upload the file first.", id=upload_id))
    kind = registry.get(upload["kind"])
    if not isinstance(kind, Scored):
        raise RequestError(not_scored(kind))
    request = StartRequest(methods, options or {}, lambda: _panel_settings(judge, judges, environ), store)
    try:
        plan = kind.start(upload, request)
    except StartError as exc:
        raise RequestError(str(exc)) from exc
    evaluation = {"id": new_id(), "upload_id": upload_id, "kind": upload["kind"], "methods": plan.methods,
                  "settings": plan.settings, "total": plan.total}
    store.add_evaluation(evaluation)
    return store.get_evaluation(evaluation["id"])


def check_judges(judge: Mapping | None, judges: list | None, environ: Mapping[str, str]) -> dict:
    """The judge settings a request names (one judge, or a panel), checked now; RequestError when they cannot be
    used (a simulation that scores its files checks them before it starts)."""
    return _panel_settings(judge, judges, environ)


def _panel_settings(judge: Mapping | None, judges: list | None, environ: Mapping[str, str]) -> dict:
    """The judge settings an evaluation records: its one judge's, or its first judge's with the whole panel's
    under "judges"."""
    if judges is None:
        return _judge_settings(judge, environ)
    if not isinstance(judges, list) or not 1 <= len(judges) <= MAX_JUDGES or not all(
            isinstance(j, Mapping) for j in judges):
        raise RequestError(_("'judges' must be a list of 1 to %(max)s objects of judge settings.", max=MAX_JUDGES))
    panel = [_judge_settings({**(judge or {}), **j}, environ) for j in judges]
    seen: dict[tuple, int] = {}
    for number, settings in enumerate(panel, 1):
        same = seen.setdefault((settings["base_url"], settings["model"]), number)
        if same != number:
            raise RequestError(_("Judge %(number)s is the same model on the same endpoint as judge %(same)s; a "
                                 "panel needs different judges.", number=number, same=same))
    if len({bool(s.get("batch")) for s in panel}) > 1:
        raise RequestError(_("Either every judge of a panel uses batch mode or none does."))
    return panel[0] if len(panel) == 1 else {**panel[0], "judges": panel}


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
    batch = as_flag(overrides.pop("batch", False))
    if batch is None:
        raise RequestError(_("'batch' must be true or false."))
    try:
        endpoint = judge_endpoints.choose(judge_endpoints.parse(environ), overrides.pop("endpoint", None),
                                          overrides.pop("base_url", None))
        config = judge_config({**overrides, "endpoint": endpoint.name}, environ)
        price = prices(environ, batch, endpoint.name)  # its own endpoint's, never another's
        failed_retry_s(environ)  # a bad setting is reported now, not when the evaluation ends
    except ValueError as exc:
        raise RequestError(str(exc)) from exc
    problem = config.problem()
    if problem:
        raise RequestError(problem)
    return {"endpoint": endpoint.name, "base_url": config.base_url,
            **{k: v for k, v in config.public().items() if k in JUDGE_OVERRIDES}, "prices": price,
            **({"batch": True} if batch else {})}


class Pipeline:
    """The steps of running one evaluation, over the database that holds every bit of its state: load it, plan
    its judgments once, judge the pending ones (cache, batching, progress), score it and keep the result.

    The thread `Runner` below chains them in one thread; the Celery tasks (pipeline/queue_runner.py) spread them over
    workers, judging blocks of sessions apart.
    """

    def __init__(self, store: Store, uploads: str | Path | blobs.Blobs, results: str | Path | blobs.Blobs,
                 environ: Callable[[], Mapping[str, str]] = lambda: os.environ):
        self.store = store
        self.uploads = blobs.at(uploads)  # a folder's path is that folder
        self.results = blobs.at(results)
        self.environ = environ  # called at each run, so settings saved meanwhile (and the key) apply

    def load(self, evaluation_id: str) -> tuple[Scored, Job] | None:
        """The evaluation's kind and job (with its judge configuration when it calls the judge), or None after
        recording why it cannot run (its file is missing, its endpoint is gone, no judge is configured)."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        upload = self.store.get_upload(evaluation["upload_id"])
        kind = registry.scored(evaluation["kind"])
        site = Site(self.store, self.uploads, stored_name)
        path = site.file_of(upload)
        if not path.exists():
            self.store.set_status(evaluation_id, "failed",
                                  _("The uploaded file is missing from the uploads folder; upload it again."))
            return None
        job = Job(evaluation, upload, path, site)
        if calls_judge(kind, evaluation):
            job.judges = [self._judge_config(evaluation, settings)
                          for settings in panel_settings(evaluation["settings"])]
            if None in job.judges:
                return None
            job.config = job.judges[0]
        return kind, job

    def plan(self, kind: Judged, job: Job, given: Iterable[tuple[tuple, dict]] = ()) -> None:
        """Record the evaluation's pending judgments, once (a resumed run skips this when it got to the end), and
        the outcomes of those it brings with it (`given`: Judged.given_judgments)."""
        evaluation_id = job.evaluation["id"]
        if self.store.get_setting(f"planned:{evaluation_id}"):
            return
        # In chunks, each its own transaction, so that the plan is never held whole in memory; a run that stops
        # half way plans again (adding only what is missing) until the marker says it got to the end.
        rows = iter(kind.plan(job))
        while chunk := list(itertools.islice(rows, PLAN_CHUNK)):
            self.store.add_pending(evaluation_id, chunk)
        outcomes = iter(given)  # only pending judgments are written: a run that stops half way writes the rest
        while chunk := list(itertools.islice(outcomes, PLAN_CHUNK)):
            self.store.save_judgments(evaluation_id, chunk)
        self.store.set_total(evaluation_id, self.store.progress(evaluation_id)["total"])
        self.store.set_setting(f"planned:{evaluation_id}", True)

    def judge(self, kind: Judged, job: Job, pending: set, should_stop: Callable[[], bool],
              on_progress: Callable[[dict], None] | None = None) -> None:
        """Judge the `pending` keys with the evaluation's judges (a panel's one after the other, each with its own
        endpoint's budget) and the shared cache, saving verdicts in batches (through the Batch API when the
        evaluation asked for batch mode)."""
        by_judge: dict[int, set] = {}
        for key in pending:
            by_judge.setdefault(judge_of(key), set()).add(key)
        for number in sorted(by_judge):
            if should_stop():
                return
            own = replace(job, config=job.judges[number]) if job.judges else job
            if job.evaluation["settings"].get("batch"):
                self._judge_by_batch(kind, own, by_judge[number], should_stop, on_progress, number)
                continue
            with Judge(own.config, cache=JudgeCache(self.store)) as judge:
                self._judge(job.evaluation["id"], _until_all_asked(kind.requests(own, by_judge[number]),
                                                                   by_judge[number]),
                            judge, on_progress, should_stop)

    def _judge_by_batch(self, kind: Judged, job: Job, pending: set, should_stop: Callable[[], bool],
                        on_progress: Callable[[dict], None] | None, number: int = 0) -> None:
        """Batch mode: submit the pending judgments of judge `number` once (the batches' state is stored with the
        evaluation, so a restarted run polls the same batches instead of paying twice), then poll and record
        answers as they come."""
        evaluation_id, config = job.evaluation["id"], job.config
        name, cache = f"batch:{evaluation_id}" + (f"@{number}" if number else ""), JudgeCache(self.store)
        prompts = dict(_until_all_asked(kind.requests(job, pending), pending))
        poll_s = float(self.environ().get("JUDGE_BATCH_POLL_S") or BATCH_POLL_S)

        def record(verdicts: list) -> None:
            if verdicts:
                self.store.save_judgments(evaluation_id, [(tuple(key), verdict_fields(v)) for key, v in verdicts])
            if on_progress:
                on_progress(self.store.progress(evaluation_id))

        state = self.store.get_setting(name)
        if state is None or (judge_batch.finished(state) and prompts):  # first run, or failed ones asked again
            ready, run = judge_batch.submit(config, ([list(key), prompt] for key, prompt in prompts.items()), cache,
                                            metadata={"evaluation": evaluation_id})
            state = run.state if run else None
            self.store.set_setting(name, state)
            record(ready)
        while state and not judge_batch.finished(state):
            if should_stop():
                judge_batch.cancel(config, state)  # what was answered so far is collected on resume
                self.store.set_setting(name, state)
                return
            try:
                judge_batch.poll(config, state)
                verdicts = judge_batch.collect(config, state, cache, lambda key: prompts.get(tuple(key)))
            except judge_batch.BatchError as exc:
                if exc.retryable:
                    verdicts = []
                else:  # the batch or its files are gone, or the key was refused: fail what is left, visibly
                    verdicts = judge_batch.abandon(state, exc.message)
            self.store.set_setting(name, state)
            record(verdicts)
            if not judge_batch.finished(state):
                _wait(poll_s, should_stop)

    def _judge_config(self, evaluation: dict, settings: Mapping) -> JudgeConfig | None:
        """One of the evaluation's judges, or None after recording why it cannot be called (endpoint gone, no
        judge)."""
        try:
            config = judge_config(settings, self.environ())
        except ValueError as exc:
            self.store.set_status(evaluation["id"], "failed", str(exc))
            return None
        if config.problem():
            self.store.set_status(evaluation["id"], "failed", config.problem())
            return None
        return config

    def _judge(self, evaluation_id: str, items: Iterator, judge: Judge,
               on_progress: Callable[[dict], None] | None, should_stop: Callable[[], bool]) -> None:
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

        for key, verdict in judge.run(items, should_stop=should_stop):
            batch.append((key, verdict_fields(verdict)))
            if len(batch) >= FLUSH_EVERY or time.monotonic() - last_flush >= FLUSH_SECONDS:
                flush()
        flush()

    def retry_failed(self, evaluation_id: str) -> float | None:
        """After every judgment was asked: put the judgments that failed for a reason worth retrying (an outage of
        the judge) back to pending and return the pause to make before judging them, or None when there are none or
        the evaluation's JUDGE_FAILED_RETRY_S (the sum of its pauses) is spent. The pauses grow: 5 s (or a tenth of
        the setting, when less), then twice the one before, the last one cut to what is left."""
        name = f"retry:{evaluation_id}"
        state = self.store.get_setting(name) or {"waited": 0.0}
        budget = failed_retry_s(self.environ())
        left = budget - state["waited"]
        if left <= 0 or not self.store.reset_judgments(evaluation_id, ("failed",), retryable_only=True):
            return None
        pause = min(left, state.get("next") or min(FIRST_RETRY_PAUSE_S, budget / 10))
        until = time.time() + pause
        self.store.set_setting(name, {"waited": state["waited"] + pause, "next": 2 * pause, "until": until})
        return pause

    def retry_wait(self, evaluation_id: str) -> float | None:
        """Seconds left of the pause before failed judgments are asked again, or None when none is under way."""
        state = self.store.get_setting(f"retry:{evaluation_id}") or {}
        left = (state.get("until") or 0) - time.time()
        return left if left > 0 else None

    def end_status(self, evaluation_id: str) -> tuple[str, str | None]:
        """The status a run that judged everything it could ends with, and why: "done" when every judgment has an
        answer, else "incomplete" with how many failed and their commonest reason."""
        failed = self.store.progress(evaluation_id)["failed"]
        if not failed:
            return "done", None
        return "incomplete", ngettext(
            "%(num)d judgment failed after every retry; the commonest reason: %(reason)s",
            "%(num)d judgments failed after every retry; the commonest reason: %(reason)s", failed,
            reason=self.store.commonest_failure(evaluation_id))

    def rescore(self, evaluation_id: str) -> dict:
        """Score a finished evaluation again from what is stored (after human ratings were attached, say) and keep
        the new document with the same status; JobFailed when it cannot be."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        if evaluation is None or evaluation["status"] not in FINISHED:
            raise JobFailed(_("Only a finished evaluation can be scored again."))
        upload = self.store.get_upload(evaluation["upload_id"])
        site = Site(self.store, self.uploads, stored_name)
        job = Job(evaluation, upload, site.file_of(upload), site)
        if not job.path.exists():
            raise JobFailed(_("The uploaded file is missing from the uploads folder; upload it again."))
        kind = registry.scored(evaluation["kind"])
        if calls_judge(kind, evaluation):
            # The endpoints' URLs and keys are not needed to score: only the recorded settings.
            job.judges = [JudgeConfig(**{k: v for k, v in settings.items() if k in JUDGE_OVERRIDES},
                                      base_url=settings.get("base_url"), api_key=PLACEHOLDER_API_KEY)
                          for settings in panel_settings(evaluation["settings"])]
            job.config = job.judges[0]
        document = self.score(kind, job)
        self.finish(evaluation_id, document, status=evaluation["status"], error=evaluation["error"])
        return document

    def score(self, kind: Scored, job: Job) -> dict:
        """The kind's result document of the job, with its provenance (pipeline/provenance.py) ending now; the
        judgments an evaluation brings with it instead of calling a judge (imported scores) are recorded first."""
        given = kind.given_judgments(job) if isinstance(kind, Judged) else None
        if given is not None:
            self.plan(kind, job, given)
        document = kind.score(job)
        started = (self.store.get_evaluation(job.evaluation["id"], with_result=False) or {}).get("started_at")
        document["provenance"] = provenance.build(kind, job, started, now(), self.environ())
        return document

    def finish(self, evaluation_id: str, document: dict, status: str = "done", error: str | None = None) -> None:
        """Keep a result document: results/<id>.json, then the database with the final status (and why, when the
        evaluation is incomplete) and the end time its provenance records; the next run gets its own
        JUDGE_FAILED_RETRY_S again."""
        self._write_result_file(evaluation_id, document)
        self.store.set_result(evaluation_id, document, status=status,
                              headline=registry.scored(document["kind"]).headline(document), error=error,
                              finished_at=(document.get("provenance") or {}).get("finished_at"))
        self.store.set_setting(f"retry:{evaluation_id}", None)

    def _write_result_file(self, evaluation_id: str, document: dict) -> None:
        """Write results/<id>.json atomically, so a crash never leaves half a file."""
        self.results.put_bytes(f"{evaluation_id}.json", json.dumps(document, ensure_ascii=False, indent=1).encode())


def can_resume(evaluation: dict, rerun_failed: bool) -> bool:
    """Whether a stopped evaluation can be started again: cancelled or failed, or done or incomplete when its failed
    and unparsed judgments are to be asked again (those have nothing else left)."""
    return evaluation["status"] in ("cancelled", "failed") or (
        rerun_failed and evaluation["status"] in ("done", "incomplete"))


class Runner(Pipeline):
    """Runs evaluations on background threads of this process; the database holds every bit of their state."""

    def __init__(self, store: Store, uploads: str | Path | blobs.Blobs, results: str | Path | blobs.Blobs,
                 environ: Callable[[], Mapping[str, str]] = lambda: os.environ):
        super().__init__(store, uploads, results, environ)
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
        """Continue a cancelled or failed evaluation, first putting failed and unparsed judgments back in the queue
        when asked (a finished one only then); False when it is still running or finished."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        thread = self._threads.get(evaluation_id)
        if evaluation is None or (thread and thread.is_alive()) or not can_resume(evaluation, rerun_failed):
            return False
        if rerun_failed:
            self.store.reset_judgments(evaluation_id)
        self.store.set_status(evaluation_id, "queued")
        self.start(evaluation_id)
        return True

    def waiting(self, evaluation_id: str) -> str | None:
        """What a queued or running evaluation waits for, if anything: "retry" (the pause before failed judgments
        are asked again), "worker" (no thread of this process runs it), else None."""
        if self.retry_wait(evaluation_id):
            return "retry"
        thread = self._threads.get(evaluation_id)
        return None if thread and thread.is_alive() else "worker"

    def wait(self, evaluation_id: str, timeout: float | None = None) -> None:
        """Block until the evaluation's background thread has finished."""
        thread = self._threads.get(evaluation_id)
        if thread:
            thread.join(timeout)

    def run(self, evaluation_id: str, on_progress: Callable[[dict], None] | None = None) -> None:
        """Run one evaluation to its end in this thread, recording a failure instead of raising. While the database
        cannot be reached (a restart), it tries again every DATABASE_WAIT_S and goes on from where it stood."""
        while True:
            try:
                self._run(evaluation_id, on_progress)
                return
            except Exception as exc:  # the job must end in a visible state, whatever went wrong
                if database_unreachable(exc) and evaluation_id not in self._cancelled:
                    log.warning("evaluation %s: the database cannot be reached (%s); trying again in %s s",
                                evaluation_id, type(exc).__name__, DATABASE_WAIT_S)
                    time.sleep(DATABASE_WAIT_S)
                    continue
                log.exception("evaluation %s failed", evaluation_id)
                self.store.set_status(evaluation_id, "failed", _("The evaluation stopped on an internal error: "
                                                                 "%(error)s", error=f"{type(exc).__name__}: {exc}"))
                return

    def _run(self, evaluation_id: str, on_progress: Callable[[dict], None] | None) -> None:
        loaded = self.load(evaluation_id)
        if loaded is None:
            return
        kind, job = loaded
        self.store.set_status(evaluation_id, "running")
        stop = lambda: evaluation_id in self._cancelled  # noqa: E731
        try:
            if job.config is not None and isinstance(kind, Judged):
                self._judge_all(kind, job, on_progress)
                while not stop() and (pause := self.retry_failed(evaluation_id)) is not None:
                    _wait(pause, stop)
                    self._judge_all(kind, job, on_progress)
            document = self.score(kind, job)
        except JobFailed as exc:
            self.store.set_status(evaluation_id, "failed", str(exc))
            return
        status, error = ("cancelled", None) if stop() else self.end_status(evaluation_id)
        self.finish(evaluation_id, document, status=status, error=error)

    def _judge_all(self, kind: Judged, job: Job, on_progress: Callable[[dict], None] | None) -> None:
        """Plan the judgments once (a resumed run skips this), then judge every one still pending, a block of about
        BLOCK_JUDGMENTS at a time (so that memory does not grow with the evaluation; batch mode sends them all)."""
        evaluation_id = job.evaluation["id"]
        self.plan(kind, job)
        stop = lambda: evaluation_id in self._cancelled  # noqa: E731
        span = self.store.pending_sessions(evaluation_id)
        if span is None or job.evaluation["settings"].get("batch"):
            self.judge(kind, job, self.store.pending_keys(evaluation_id), stop, on_progress)
            return
        low, high = span
        total = self.store.progress(evaluation_id)["total"]
        sessions = max(1, BLOCK_JUDGMENTS * (high + 1) // max(1, total))
        for first in range(low, high + 1, sessions):
            pending = self.store.pending_keys(evaluation_id, first, first + sessions - 1)
            if pending:
                self.judge(kind, job, pending, stop, on_progress)
            if stop():
                return


def _wait(seconds: float, should_stop: Callable[[], bool]) -> None:
    """Sleep (between two polls of a batch, before asking failed judgments again), waking early when the evaluation
    is cancelled."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not should_stop():
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))


def _until_all_asked(items: Iterator, pending: set) -> Iterator:
    """The kind's requests, ending once every pending key was given: the rest of the file is not read (a block of
    a few sessions near the start of a large file is done as soon as they are)."""
    left = set(pending)
    if not left:
        return
    for key, prompt in items:
        yield key, prompt
        left.discard(key)
        if not left:
            return


def verdict_fields(verdict: Verdict) -> dict:
    """The stored fields of one judgment's outcome (Store.save_judgments): its judge scores, all of them, as `scores`."""
    return {"status": verdict.status, "total": verdict.total, "verdict": verdict.verdict,
            "scores": dict(verdict.dims) if verdict.dims else None,
            "answer": verdict.answer, "error": verdict.error,
            "prompt_tokens": verdict.prompt_tokens, "completion_tokens": verdict.completion_tokens,
            "cached": int(verdict.cached), "attempts": verdict.attempts, "latency_ms": verdict.latency_ms,
            "retryable": int(verdict.retryable)}

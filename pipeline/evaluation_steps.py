"""The steps of running one evaluation, over the database that holds every bit of its state: load it, plan its
judgments once, judge the pending ones (cache, batching, progress; a panel's judges one after the other; the Batch API
in batch mode), ask failed ones again after a pause, score it and keep the result.

The evaluations' job type (pipeline/evaluations.py) runs them, block by block, on either backend (pipeline/job.py).
"""
from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, cast

from judge import PLACEHOLDER_API_KEY, Breakers, EndpointDown, Judge, JudgeConfig, Verdict, judge_of, panel_settings
from judge import batch as judge_batch
from kinds import registry
from kinds.kind import Job, JobFailed, Judged, Scored, Site, calls_judge
from pipeline import datasets, provenance
from pipeline.ingest import stored_name
from pipeline.job import pause
from pipeline.judge_requests import JUDGE_OVERRIDES, failed_retry_s, judge_config
from storage import blobs
from storage.database import now
from storage.store import JudgeCache, Store
from translations import _, ngettext

FLUSH_EVERY = 200
FLUSH_SECONDS = 0.5
BATCH_POLL_S = 30.0  # between two polls of a Batch API run (JUDGE_BATCH_POLL_S)
PLAN_CHUNK = 50_000  # planned judgments written per transaction
FIRST_RETRY_PAUSE_S = 5.0  # the first pause before asking them again (at most a tenth of that); each next one doubles
FINISHED = ("done", "incomplete", "cancelled")  # the statuses of an evaluation with a result document


class Pipeline:
    """The steps of running one evaluation, over the database that holds every bit of its state: load it, plan
    its judgments once, judge the pending ones (cache, batching, progress), score it and keep the result.

    pipeline/evaluations.py chains them as a job type: one thread judges its blocks one after the other, or Celery
    workers judge blocks of sessions apart.
    """

    def __init__(self, store: Store, uploads: str | Path | blobs.Blobs, results: str | Path | blobs.Blobs,
                 environ: Callable[[], Mapping[str, str]] = lambda: os.environ):
        self.store = store
        self.uploads = blobs.at(uploads)  # a folder's path is that folder
        self.results = blobs.at(results)
        self.environ = environ  # called at each run, so settings saved meanwhile (and the key) apply
        # Each run's breakers (judge/breaker.py) by evaluation: made anew when a run opens it, so that a resumed run
        # probes its endpoints again (the key may have been fixed meanwhile); kept while they are recent, for the
        # next block of the same run that this process judges (a Celery worker opens the evaluation for each).
        self._breakers: dict[str, Breakers] = {}

    def load(self, evaluation_id: str) -> tuple[Scored, Job] | None:
        """The evaluation's kind and job (with its judge configuration when it calls the judge), or None after
        recording why it cannot run (its file is missing, its endpoint is gone, no judge is configured)."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        if evaluation is None:
            return None
        upload = self.store.get_upload(evaluation["upload_id"])
        kind = registry.scored(evaluation["kind"])
        site = Site(self.store, self.uploads, stored_name)
        if upload is None or not site.file_of(upload).exists():
            self.store.set_status(evaluation_id, "failed",
                                  _("The uploaded file is missing from the uploads folder; upload it again."))
            return None
        job = Job(evaluation, upload, site.file_of(upload), site)
        if calls_judge(kind, evaluation):
            job.judges = [self._judge_config(evaluation, settings)
                          for settings in panel_settings(evaluation["settings"])]
            if None in job.judges:
                return None
            job.config = job.judges[0]
            kept = self._breakers.get(evaluation_id)
            if kept is None or not kept.recent():
                self._breakers[evaluation_id] = Breakers()
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
        evaluation asked for batch mode). JobFailed, with the reason, once a judge's endpoint is found dead
        (judge/breaker.py): what is left stays pending for a resumed run."""
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
            breaker = self._breakers.setdefault(job.evaluation["id"], Breakers()).of(own.config)
            with Judge(own.config, cache=JudgeCache(self.store), breaker=breaker) as judge:
                try:
                    self._judge(job.evaluation["id"], _until_all_asked(kind.requests(own, by_judge[number]),
                                                                       by_judge[number]),
                                judge, on_progress, should_stop)
                except EndpointDown as exc:
                    raise JobFailed(str(exc)) from exc

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
                on_progress(self.progress(evaluation_id))

        state = self.store.get_setting(name)
        if state is None or (judge_batch.finished(state) and prompts):  # first run, or failed ones asked again
            ready, run = judge_batch.submit(config, ((list(key), prompt) for key, prompt in prompts.items()), cache,
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
                pause(poll_s, should_stop)

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
                on_progress(self.progress(evaluation_id))

        try:
            for key, verdict in judge.run(items, should_stop=should_stop):
                batch.append((key, verdict_fields(verdict)))
                if len(batch) >= FLUSH_EVERY or time.monotonic() - last_flush >= FLUSH_SECONDS:
                    flush()
        except EndpointDown:
            flush()  # the answers that came before the endpoint was found dead are kept
            raise
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
        if left <= 0 or not self.ask_again(evaluation_id, ("failed",), retryable_only=True):
            return None
        pause = min(left, state.get("next") or min(FIRST_RETRY_PAUSE_S, budget / 10))
        until = time.time() + pause
        self.store.set_setting(name, {"waited": state["waited"] + pause, "next": 2 * pause, "until": until})
        return pause

    def ask_again(self, evaluation_id: str, statuses: tuple[str, ...] = ("failed", "unparsed"),
                  retryable_only: bool = False) -> int:
        """Put judgments with these statuses back to pending (Store.reset_judgments), counting them among those asked
        again, which `progress` counts as done; how many."""
        name, before = f"again:{evaluation_id}", self.store.progress(evaluation_id)
        still = min(before["total"] - before["done"], self.store.get_setting(name) or 0)
        return self.store.reset_judgments(evaluation_id, statuses, retryable_only, counted_in=(name, still))

    def progress(self, evaluation_id: str) -> dict:
        """The store's counts of the evaluation's judgments, with those put back to pending to be asked again (an
        outage's failures, a re-run of failed ones) still counted as done, since they were asked once: the progress
        never runs backwards when they are asked again (those pending are taken for them first, so `done` may count
        a never asked one instead, never less than before)."""
        progress = self.store.progress(evaluation_id)
        again = self.store.get_setting(f"again:{evaluation_id}") or 0
        progress["done"] += min(progress["total"] - progress["done"], again)
        return progress

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
        document, evaluation = self.rescored(evaluation_id)
        self.finish(evaluation_id, document, status=evaluation["status"], error=evaluation["error"])
        return document

    def rescored(self, evaluation_id: str) -> tuple[dict, dict]:
        """A finished evaluation's result document made again from what is stored, not kept, and the evaluation as
        it was read (its status to keep it with); JobFailed when it cannot be."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        if evaluation is None or evaluation["status"] not in FINISHED:
            raise JobFailed(_("Only a finished evaluation can be scored again."))
        return self.score(*self.scoring_job(evaluation)), evaluation

    def scoring_job(self, evaluation: dict) -> tuple[Scored, Job]:
        """The kind and job that score an evaluation from what is stored, with no judge to call (its recorded
        settings stand for it); JobFailed when its file is missing."""
        upload = self.store.get_upload(evaluation["upload_id"])
        site = Site(self.store, self.uploads, stored_name)
        if upload is None or not site.file_of(upload).exists():
            raise JobFailed(_("The uploaded file is missing from the uploads folder; upload it again."))
        job = Job(evaluation, upload, site.file_of(upload), site)
        kind = registry.scored(evaluation["kind"])
        if calls_judge(kind, evaluation):
            # The endpoints' URLs and keys are not needed to score: only the recorded settings.
            job.judges = [JudgeConfig(**{k: v for k, v in settings.items() if k in JUDGE_OVERRIDES},
                                      base_url=settings.get("base_url"), api_key=PLACEHOLDER_API_KEY)
                          for settings in panel_settings(evaluation["settings"])]
            job.config = job.judges[0]
        return kind, job

    def score_so_far(self, evaluation: dict) -> tuple[dict, int]:
        """A running evaluation's result document from the judgments stored so far, made by the kind's own `score`
        (pipeline/live_results.py keeps it), and how many judgments with an outcome it read (more are stored while it
        reads); no provenance: the run has not ended. JobFailed when its file is missing."""
        kind, job = self.scoring_job(evaluation)
        reading = _CountingStore(self.store)
        job.site = replace(job.site, store=cast(Store, reading))
        return kind.score(job), reading.judged

    def score(self, kind: Scored, job: Job) -> dict:
        """The kind's result document of the job, with its provenance (pipeline/provenance.py) ending now; the
        judgments an evaluation brings with it instead of calling a judge (imported scores) are recorded first."""
        if isinstance(kind, Judged) and (given := kind.given_judgments(job)) is not None:
            self.plan(kind, job, given)
        document = kind.score(job)
        started = (self.store.get_evaluation(job.evaluation["id"], with_result=False) or {}).get("started_at")
        document["provenance"] = provenance.build(kind, job, started, now(), self.environ())
        return document

    def finish(self, evaluation_id: str, document: dict, status: str = "done", error: str | None = None) -> None:
        """Keep a result document: results/<id>.json, then the database with the final status (and why, when the
        evaluation is incomplete) and the end time its provenance records, and its dataset (pipeline/datasets.py);
        the next run gets its own JUDGE_FAILED_RETRY_S again."""
        self._write_result_file(evaluation_id, document)
        self.store.set_result(evaluation_id, document, status=status,
                              headline=registry.scored(document["kind"]).headline(document), error=error,
                              finished_at=(document.get("provenance") or {}).get("finished_at"))
        record = self.store.get_evaluation(evaluation_id, with_result=False)
        upload = self.store.get_upload(record["upload_id"]) if record else None
        if upload is not None and status in datasets.FINISHED:  # its leaderboard's (pipeline/datasets.py)
            datasets.keep(self.store, evaluation_id, document, upload["sha256"])
        self.store.set_setting(f"retry:{evaluation_id}", None)
        self._breakers.pop(evaluation_id, None)

    def _write_result_file(self, evaluation_id: str, document: dict) -> None:
        """Write results/<id>.json atomically, so a crash never leaves half a file."""
        self.results.put_bytes(f"{evaluation_id}.json", json.dumps(document, ensure_ascii=False, indent=1).encode())


class _CountingStore:
    """The store as a kind reads it while scoring, counting the judgments with an outcome (not pending) it reads."""

    def __init__(self, store: Store):
        self._store = store
        self.judged = 0

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def iter_judgments(self, *args, **kwargs) -> Iterator[dict]:
        """Store.iter_judgments, counted."""
        for row in self._store.iter_judgments(*args, **kwargs):
            self.judged += row.get("status") != "pending"
            yield row

    def judgments(self, *args, **kwargs) -> list[dict]:
        """Store.judgments, counted."""
        rows = self._store.judgments(*args, **kwargs)
        self.judged += sum(row.get("status") != "pending" for row in rows)
        return rows


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

"""Simulations: create them, run them on threads of this process, cancel and resume them; when one ends, its
dialogue files become uploads and, when asked, evaluations score them."""
from __future__ import annotations

import io
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from judge import JudgeConfig
from kinds.host import new_id
from pipeline.ingest import InvalidUpload, ingest
from pipeline.jobs import RequestError, create_evaluation
from simulate.engine import Engine
from simulate.estimate import estimate
from simulate.output import Output, dialogue_kind, outputs
from simulate.plan import Plan
from simulate.request import settings_of, speaker_config
from storage import blobs
from storage.database import database_unreachable
from storage.store import Store
from translations import _, ngettext

log = logging.getLogger(__name__)
FINISHED = ("done", "incomplete", "failed", "cancelled")
DATABASE_WAIT_S = 2.0
SHOWN = 20  # persona ids an error names at most


def create_simulation(store: Store, request: Any, environ: Mapping[str, str] = os.environ,
                      uploads: blobs.Blobs | None = None) -> dict:
    """Check a request (RequestError, before any connection, when it cannot be honoured) and record a queued
    simulation with its estimate (simulate/estimate.py: what its report compares the calls made with); `uploads` is
    where a personas upload's file is read."""
    settings = settings_of(store, uploads, request, environ)
    try:
        settings["estimate"] = estimate(settings, environ, store)
    except ValueError as exc:  # a price setting that is not a number
        raise RequestError(str(exc)) from exc
    if settings["estimate"]["rubric"]:  # the rubric itself, by its SHA-256: a version added later is not it
        settings["rubric"] = settings["estimate"]["rubric"]["sha256"]
    simulation_id = new_id()
    store.add_simulation(simulation_id, settings, Plan.from_settings(settings).total())
    return store.get_simulation(simulation_id)  # type: ignore[return-value]


def configs_of(plan: Plan, environ: Mapping[str, str]) -> dict[str, JudgeConfig]:
    """Each speaker's calls' configuration (ValueError when its endpoint is gone or no longer allows its model)."""
    return {s.name: speaker_config({"model": s.model, "endpoint": s.endpoint, "temperature": s.temperature,
                                    "max_tokens": s.max_tokens}, environ) for s in (plan.simulator, *plan.methods)}


def reopen(store: Store, simulation_id: str, rerun_failed: bool) -> bool:
    """Queue a cancelled or failed simulation again (with rerun_failed, also an incomplete one, its failed turns
    forgotten so they are asked again); False when it is not one of those."""
    simulation = store.get_simulation(simulation_id)
    if simulation is None or not (simulation["status"] in ("cancelled", "failed")
                                  or (rerun_failed and simulation["status"] == "incomplete")):
        return False
    if rerun_failed:
        store.forget_failed_turns(simulation_id)
    store.set_simulation_status(simulation_id, "queued")
    return True


class SimulationRunner:
    """Runs simulations on background threads of this process; the database holds every bit of their state.

    `evaluations` is the evaluations' runner that scores the files (None: the evaluations are created, queued, for
    the caller to run, as the CLI does in the foreground).
    """

    def __init__(self, store: Store, uploads: str | Path | blobs.Blobs, evaluations: Any = None,
                 environ: Callable[[], Mapping[str, str]] = lambda: os.environ) -> None:
        self.store = store
        self.uploads = blobs.at(uploads)
        self.evaluations = evaluations
        self.environ = environ
        self._cancelled: set[str] = set()
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def create(self, request: Any) -> dict:
        """create_simulation with this runner's store, uploads and settings."""
        return create_simulation(self.store, request, self.environ(), self.uploads)

    def start(self, simulation_id: str) -> None:
        """Run a simulation on a background thread (no-op when it already runs here)."""
        with self._lock:
            thread = self._threads.get(simulation_id)
            if thread and thread.is_alive():
                return
            self._cancelled.discard(simulation_id)
            thread = threading.Thread(target=self.run, args=(simulation_id,), name=f"simulation-{simulation_id}",
                                      daemon=True)
            self._threads[simulation_id] = thread
            thread.start()

    def resume(self) -> list[str]:
        """Start again every simulation that was queued or running when the process stopped."""
        ids = self.store.unfinished_simulations()
        for simulation_id in ids:
            self.start(simulation_id)
        return ids

    def running(self, simulation_id: str) -> bool:
        """Whether a thread of this process runs the simulation."""
        thread = self._threads.get(simulation_id)
        return bool(thread and thread.is_alive())

    def cancel(self, simulation_id: str) -> bool:
        """Ask a queued or running simulation to stop (calls in flight finish and are kept); False when it is not
        running."""
        simulation = self.store.get_simulation(simulation_id)
        if simulation is None or simulation["status"] not in ("queued", "running"):
            return False
        self._cancelled.add(simulation_id)
        if not self.running(simulation_id):
            self.store.set_simulation_status(simulation_id, "cancelled")
        return True

    def resume_one(self, simulation_id: str, rerun_failed: bool = False) -> bool:
        """Go on with a cancelled or failed simulation from the turns kept; with rerun_failed, also one that ended
        incomplete, asking its failed turns again. False when it is running or there is nothing to resume."""
        if self.running(simulation_id) or not reopen(self.store, simulation_id, rerun_failed):
            return False
        self.start(simulation_id)
        return True

    def wait(self, simulation_id: str, timeout: float | None = None) -> None:
        """Block until the simulation's thread has finished."""
        thread = self._threads.get(simulation_id)
        if thread:
            thread.join(timeout)

    def run(self, simulation_id: str, on_progress: Callable[[dict], None] | None = None) -> None:
        """Run one simulation to its end in this thread, recording a failure instead of raising; while the
        database cannot be reached it tries again every DATABASE_WAIT_S."""
        while True:
            try:
                self._run(simulation_id, on_progress)
                return
            except Exception as exc:  # the run must end in a visible state, whatever went wrong
                if database_unreachable(exc) and simulation_id not in self._cancelled:
                    time.sleep(DATABASE_WAIT_S)
                    continue
                log.exception("simulation %s failed", simulation_id)
                self.store.set_simulation_status(simulation_id, "failed", _(
                    "The simulation stopped on an internal error: %(error)s", error=f"{type(exc).__name__}: {exc}"))
                return

    def _run(self, simulation_id: str, on_progress: Callable[[dict], None] | None) -> None:
        simulation = self.store.get_simulation(simulation_id)
        if simulation is None:
            return
        plan = Plan.from_settings(simulation["settings"])
        try:
            configs = configs_of(plan, self.environ())
        except ValueError as exc:  # the endpoint was removed since, or no longer allows the model
            self.store.set_simulation_status(simulation_id, "failed", str(exc))
            return
        self.store.set_simulation_status(simulation_id, "running")
        stop = lambda: simulation_id in self._cancelled  # noqa: E731
        engine = Engine(self.store, simulation_id, plan, configs)
        engine.run(stop, on_progress)
        if stop():
            self.store.set_simulation_status(simulation_id, "cancelled")
            return
        self.finish(simulation_id, simulation["settings"], plan, engine.kept)

    def finish(self, simulation_id: str, settings: Mapping, plan: Plan, kept: Mapping) -> None:
        """Ingest the dialogue files as uploads, start their evaluations when asked, and record the end status:
        "done", "incomplete" (turns failed, or personas left out for want of a complete round, said in `error`) or
        "failed" (no file has a session)."""
        files = outputs(simulation_id, plan, kept)
        upload_ids = []
        for out in files:
            if out.sessions:
                try:
                    upload = ingest(io.BytesIO(out.content()), out.filename, self.store, self.uploads, dialogue_kind().name)
                except InvalidUpload as exc:
                    self.store.set_simulation_status(simulation_id, "failed", str(exc))
                    return
                upload_ids.append(upload["id"])
        self.store.set_simulation_outputs(simulation_id, upload_ids=upload_ids)
        problems = _problems(files, kept)
        if settings.get("score") and upload_ids:
            problems += self._score(simulation_id, settings, upload_ids)
        status = "failed" if not upload_ids else "incomplete" if problems else "done"
        self.store.set_simulation_status(simulation_id, status, " ".join(problems) or None)

    def _score(self, simulation_id: str, settings: Mapping, upload_ids: list[str]) -> list[str]:
        """Create (and, with an evaluations runner, start) an evaluation of each upload; what went wrong."""
        evaluation_ids = []
        try:
            for upload_id in upload_ids:
                evaluation = create_evaluation(self.store, upload_id, None, settings.get("judge") or None,
                                               self.environ(), {"rubric": settings["rubric"]}
                                               if settings.get("rubric") else None, settings.get("judges"))
                evaluation_ids.append(evaluation["id"])
        except RequestError as exc:
            return [_("The files could not be scored: %(error)s", error=exc)]
        finally:
            self.store.set_simulation_outputs(simulation_id, evaluation_ids=evaluation_ids)
        if self.evaluations is not None:
            for evaluation_id in evaluation_ids:
                self.evaluations.start(evaluation_id)
        return []


def _problems(files: list[Output], kept: Mapping) -> list[str]:
    """What an incomplete simulation lacks: failed turns with their commonest reason, personas left out."""
    problems = []
    failed = Counter(turn["problem"] or "" for turn in kept.values() if turn["status"] == "failed")
    if failed:
        total = sum(failed.values())
        problems.append(ngettext("%(num)d turn failed; the commonest reason: %(reason)s.",
                                 "%(num)d turns failed; the commonest reason: %(reason)s.", total,
                                 reason=failed.most_common(1)[0][0]))
    left = sorted({persona for out in files for persona in out.left_out})
    if left:
        named = ", ".join(left[:SHOWN]) + (", …" if len(left) > SHOWN else "")
        problems.append(_("Left out for want of one complete round: %(ids)s.", ids=named))
    return problems

"""Simulations: created from a request, then run as a job type (pipeline/job.py) by either backend: opened (its
speakers' endpoints), its personas in blocks (simulate/engine.py asks the turns missing), and, when every turn is
kept, its dialogue files become uploads and, when asked, evaluations score them."""
from __future__ import annotations

import io
import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge import JudgeConfig
from kinds.host import new_id
from pipeline.evaluations import Evaluations, create_evaluation
from pipeline.ingest import InvalidUpload, ingest
from pipeline.job import Backend, Block, Progress
from pipeline.judge_requests import RequestError
from simulate.engine import Engine
from simulate.estimate import estimate
from simulate.output import Output, dialogue_kind, outputs
from simulate.plan import Plan
from simulate.request import settings_of, speaker_config
from storage import blobs
from storage.store import Store
from translations import _, ngettext

SHOWN = 20  # persona ids an error names at most
PERSONAS_PER_BLOCK = 4  # personas of a block when workers share them


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


@dataclass
class Work:
    """What running a simulation needs: its record, its plan and each speaker's calls' configuration."""

    simulation: dict
    plan: Plan
    configs: dict[str, JudgeConfig]


class Simulations:
    """The simulations' job type. `evaluations` is the evaluations' backend that scores the files (None: the
    evaluations are created, queued, for the caller to run, as the CLI does in the foreground)."""

    name = "simulation"

    def __init__(self, store: Store, uploads: str | Path | blobs.Blobs,
                 evaluations: Backend[Evaluations] | None = None,
                 environ: Callable[[], Mapping[str, str]] = lambda: os.environ) -> None:
        self.store = store
        self.uploads = blobs.at(uploads)
        self.evaluations = evaluations
        self.environ = environ

    def create(self, request: Any) -> dict:
        """create_simulation with this job type's store, uploads and settings."""
        return create_simulation(self.store, request, self.environ(), self.uploads)

    # -- its state --------------------------------------------------------------------------------------------

    def status(self, job_id: str) -> str | None:
        """The simulation's status, None when it does not exist."""
        return (self.store.get_simulation(job_id) or {}).get("status")

    def set_status(self, job_id: str, status: str, error: str | None = None) -> None:
        """Move the simulation to a status, stamping its start and end times."""
        self.store.set_simulation_status(job_id, status, error)

    def unfinished(self) -> list[str]:
        """The queued and running simulations, oldest first."""
        return self.store.unfinished_simulations()

    def reopen(self, job_id: str, rerun_failed: bool) -> bool:
        """Queue a cancelled or failed simulation again (with rerun_failed, also an incomplete one, its failed turns
        forgotten so they are asked again); False when it is not one of those."""
        simulation = self.store.get_simulation(job_id)
        if simulation is None or not (simulation["status"] in ("cancelled", "failed")
                                      or (rerun_failed and simulation["status"] == "incomplete")):
            return False
        if rerun_failed:
            self.store.forget_failed_turns(job_id)
        self.store.set_simulation_status(job_id, "queued")
        return True

    def progress(self, job_id: str) -> dict:
        """Turns asked, failed and answered by the cache, of the total."""
        simulation = self.store.get_simulation(job_id) or {}
        return {**self.store.simulation_progress(job_id), "total": simulation.get("total", 0)}

    def retry_wait(self, job_id: str) -> float | None:
        """None: a simulation makes no pause (a failed turn is asked again only when people ask: rerun-failed)."""
        return None

    def failed(self, job_id: str, exc: BaseException) -> None:
        """Record that the simulation stopped on an unexpected error."""
        self.store.set_simulation_status(job_id, "failed", _(
            "The simulation stopped on an internal error: %(error)s", error=f"{type(exc).__name__}: {exc}"))

    # -- its steps --------------------------------------------------------------------------------------------

    def open(self, job_id: str) -> Work | None:
        """Its record, plan and speakers' configurations; None when it is gone, or after recording why it cannot run
        (an endpoint removed since, or no longer allowing its model)."""
        simulation = self.store.get_simulation(job_id)
        if simulation is None:
            return None
        plan = Plan.from_settings(simulation["settings"])
        try:
            configs = configs_of(plan, self.environ())
        except ValueError as exc:
            self.store.set_simulation_status(job_id, "failed", str(exc))
            return None
        return Work(simulation, plan, configs)

    def plan(self, work: Work, shared: bool) -> list[Block]:
        """Blocks of personas (their conversations): PERSONAS_PER_BLOCK when shared, else all of them at once (the
        turns are derived from the settings: nothing to record)."""
        count = len(work.plan.personas)
        size = PERSONAS_PER_BLOCK if shared else max(1, count)
        return [(first, min(count, first + size) - 1) for first in range(0, count, size)]

    def run_block(self, work: Work, block: Block, should_stop: Callable[[], bool],
                  on_progress: Progress | None) -> None:
        """Ask the missing turns of the conversations of personas block[0]..block[1], wave after wave."""
        Engine(self.store, work.simulation["id"], work.plan, work.configs, personas=block).run(should_stop, on_progress)

    def all_done(self, job_id: str) -> bool:
        """Whether no turn is left to ask (a conversation with a failed turn asks no more)."""
        simulation = self.store.get_simulation(job_id)
        if simulation is None:
            return True
        engine = Engine(self.store, job_id, Plan.from_settings(simulation["settings"]), {})
        engine.load()
        return not engine.ready_steps()

    def again(self, job_id: str) -> float | None:
        """None: finished as soon as every turn is kept."""
        return None

    def keeps_partial(self, job_id: str) -> bool:
        """False: a cancelled simulation keeps its turns for a resume, and writes no file."""
        return False

    def result(self, work: Work) -> dict:
        """The turns kept."""
        engine = Engine(self.store, work.simulation["id"], work.plan, {})
        engine.load()
        return engine.kept

    def record(self, work: Work, result: dict, cancelled: bool) -> None:
        """Marked cancelled, or its files written and scored (`finish`)."""
        if cancelled:
            self.store.set_simulation_status(work.simulation["id"], "cancelled")
            return
        self.finish(work.simulation["id"], work.simulation["settings"], work.plan, result)

    def finish(self, simulation_id: str, settings: Mapping, plan: Plan, kept: Mapping) -> None:
        """Ingest the dialogue files as uploads, start their evaluations when asked, and record the end status:
        "done", "incomplete" (turns failed, or personas left out for want of a complete round, said in `error`) or
        "failed" (no file has a session)."""
        files = outputs(simulation_id, plan, kept)
        upload_ids = []
        for out in files:
            if out.sessions:
                try:
                    upload = ingest(io.BytesIO(out.content()), out.filename, self.store, self.uploads,
                                    dialogue_kind().name)
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
        """Create (and, with the evaluations' backend, start) an evaluation of each upload; what went wrong."""
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

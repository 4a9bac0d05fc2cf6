"""What `flask --app app score` shares between its local and remote modes (web/cli.py, web/cli_remote.py): the
progress bar (also `simulate`'s), the panel of judges from the options, the check of the kinds' own options."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from kinds import registry
from kinds.kind import Kind, Scored, StartError
from kinds.readers import json_text, limits
from pipeline.judge_requests import RequestError
from translations import _, duration


class ProgressBar:
    """A one-line progress bar on stderr: done / total, failures, pace and time left."""

    WIDTH = 30

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.first_done: int | None = None

    def __call__(self, progress: dict) -> None:
        done, total = progress["done"], progress["total"] or 1
        if self.first_done is None:
            self.first_done = done
        filled = self.WIDTH * done // total
        elapsed = time.monotonic() - self.started
        rate = (done - self.first_done) / elapsed if elapsed > 0 else 0
        eta = duration((total - done) / rate) if rate else "—"
        line = _("%(done)s/%(total)s judged (%(percent)s%%), %(failed)s failed, %(unparsed)s unparsed",
                 done=done, total=progress["total"], percent=round(100 * done / total), failed=progress["failed"],
                 unparsed=progress["unparsed"])
        speed = _("%(rate)s judgments/s · about %(eta)s left", rate=f"{rate:.1f}", eta=eta)
        click.echo(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {line} · {speed}  ", nl=False, err=True)


def panel(judge_models: tuple[str, ...], judges_file: Path | None) -> list | None:
    """A panel of judges from --judge-model (several) or --judges-file (a JSON list of judge settings); None for
    the one judge of the server's settings."""
    if judges_file:
        try:  # read as an uploaded JSON text is (a BOM dropped, the limits applied)
            text = judges_file.read_bytes().decode("utf-8").removeprefix("\ufeff")
            judges: Any = json_text.loads(text, limits.current(), judges_file.name)  # checked as the API's `judges`
            return judges
        except (OSError, ValueError) as exc:  # not UTF-8, not JSON, or past a limit
            raise RequestError(_("%(path)s is not a JSON list of judge settings: %(problem)s", path=judges_file,
                                 problem=exc)) from exc
    return [{"model": model} for model in judge_models] or None


def check_kind_options(detected: Kind, kind_values: dict) -> None:
    """StartError for an option of another kind than the file's (--reference for a dialogue file)."""
    own = detected.cli_options if isinstance(detected, Scored) else ()
    scored: list[Scored] = registry.having(Scored)
    for other in scored:
        for option in other.cli_options:
            if other is not detected and option not in own and kind_values.get(option.name):
                raise StartError(_("%(option)s applies to %(kind)s uploads only.", option=option.opts[0],
                                   kind=other.name))

"""The `provenance` block of a result document: what produced its numbers, so that a run can be checked later.

The common part is here (the product's version and commit, the uploaded file's SHA-256, each judge by its endpoint's
name, the Python and library versions, the start and end times); the kind adds its own (`Scored.format_version`,
`Judged.prompt_templates`, `Scored.provenance`: the bootstrap, a reference set, a rubric, the file of imported scores). Never a key nor a URL: a judge is named
by the endpoint the operator named (JUDGE_ENDPOINTS, "default"). `rows` flattens a block into labelled fields, for
the result page and the compare page (`differences`).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from common.version import product_version
from judge import panel_settings
from kinds.kind import Job, Judged, Scored
from translations import _
from translations import lazy_gettext as _l

ROOT = Path(__file__).resolve().parent.parent
GIT_TIMEOUT_S = 2.0
LIBRARIES = ("numpy", "scipy", "pandas")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
# fields that tell two runs apart in time only, left out of `differences`
TIMES = ("started_at", "finished_at")


@functools.cache
def _git_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and _COMMIT.match(commit) else None


def commit(environ=os.environ) -> str | None:
    """The git commit the code runs from: PSB_COMMIT when set (an image), else the checkout's HEAD (asked once per
    process), else None."""
    given = (environ.get("PSB_COMMIT") or "").strip().lower()  # an image has no .git
    return given if _COMMIT.match(given) else _git_commit()


def libraries() -> dict[str, str]:
    """The versions of Python and of the libraries the numbers are computed with: a loaded module's own, else its
    installed distribution's (read without importing it: pandas alone takes 0.35 s of CPU and 70 MB to load, and a
    kind that does not use it should not pay that for its provenance)."""
    def version(name: str) -> str:
        module = sys.modules.get(name)
        return module.__version__ if module is not None else importlib.metadata.version(name)

    return {"python": platform.python_version(), **{name: version(name) for name in LIBRARIES}}


def sha256(text: str) -> str:
    """The SHA-256 of a text's UTF-8 bytes, in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judges(kind: Scored, job: Job) -> list[dict]:
    """Each judge of the evaluation by its endpoint's name, its settings and the SHA-256 of each prompt template it
    is sent; [] for an evaluation without a judge."""
    if not isinstance(kind, Judged) or not kind.needs_judge(job.evaluation):
        return []
    settings = job.evaluation["settings"]
    configs = job.judges or [job.config]
    out = []
    for recorded, config in zip(panel_settings(settings), configs):
        templates = kind.prompt_templates(job.evaluation, config, job.store)
        versions = list(dict.fromkeys(version for version, _text in templates.values()))
        out.append({"endpoint": recorded.get("endpoint") or "default", "model": config.model,
                    "temperature": config.temperature, "max_tokens": config.max_tokens, "language": config.language,
                    "samples": settings.get("samples") or 1, "batch": bool(settings.get("batch")),
                    "prompt_version": ", ".join(versions),
                    "prompts": {name: {"version": version, "sha256": sha256(text)}
                                for name, (version, text) in templates.items()}})
    return out


def build(kind: Scored, job: Job, started_at: str | None, finished_at: str, environ=os.environ) -> dict:
    """The provenance block of a result scored now (docs/result-documents.md)."""
    own = kind.provenance(job)
    return {"code": {"version": product_version(), "commit": commit(environ)},
            "upload": {"sha256": job.upload["sha256"]},
            "kind": {"name": kind.name, "format_version": kind.format_version},
            "judges": judges(kind, job),
            "reference": own.get("reference"),
            **({"rubric": own["rubric"]} if own.get("rubric") else {}),
            **({"scores": own["scores"]} if own.get("scores") else {}),
            "bootstrap": own.get("bootstrap"),
            "environment": libraries(),
            "started_at": started_at, "finished_at": finished_at}


# -- as labelled fields ------------------------------------------------------------------------------------------

_JUDGE_FIELDS = (("endpoint", _l("judge endpoint")), ("model", _l("judge model")),
                 ("temperature", _l("judge temperature")), ("max_tokens", _l("judge max tokens")),
                 ("language", _l("prompt language")), ("samples", _l("samples per judgment")),
                 ("batch", _l("Batch API")), ("prompt_version", _l("prompt version")))


def rows(provenance: dict | None) -> list[tuple[str, str, Any]]:
    """The block as (key, label, value) fields in a fixed order, for display and comparison; [] when not recorded."""
    if not provenance:
        return []
    code, kind = provenance.get("code") or {}, provenance.get("kind") or {}
    out: list[tuple[str, str, Any]] = [
        ("code.version", _("product version"), code.get("version")),
        ("code.commit", _("code commit"), code.get("commit")),
        ("upload.sha256", _("uploaded file SHA-256"), (provenance.get("upload") or {}).get("sha256")),
        ("kind.format_version", _("format version (%(kind)s)", kind=kind.get("name")), kind.get("format_version"))]
    panel = provenance.get("judges") or []

    def judge_label(number: int, label: str) -> str:
        return label if len(panel) == 1 else _("%(field)s, judge %(n)s", field=label, n=number)

    for number, judge in enumerate(panel, 1):
        prefix = f"judges.{number}."
        out += [(prefix + key, judge_label(number, str(label)), judge.get(key)) for key, label in _JUDGE_FIELDS]
        out += [(f"{prefix}prompts.{name}", judge_label(number, _("prompt SHA-256 (%(name)s)", name=name)),
                 prompt.get("sha256")) for name, prompt in (judge.get("prompts") or {}).items()]
    rubric = provenance.get("rubric")
    if rubric:
        out += [("rubric.id", _("rubric"), f"{rubric.get('id')} {rubric.get('version')}"),
                ("rubric.sha256", _("rubric SHA-256"), rubric.get("sha256"))]
    scores = provenance.get("scores")
    if scores:  # imported from another judge: the file, in place of any judge
        out += [("scores.filename", _("imported scores file"), scores.get("filename")),
                ("scores.sha256", _("imported scores file SHA-256"), scores.get("sha256"))]
    reference = provenance.get("reference")
    if reference:
        out += [("reference.name", _("reference set"), reference.get("name")),
                ("reference.sha256", _("reference set SHA-256"), reference.get("sha256"))]
    environment = provenance.get("environment") or {}
    out.append(("environment.python", "Python", environment.get("python")))
    out += [(f"environment.{name}", name, environment.get(name)) for name in LIBRARIES]
    bootstrap = provenance.get("bootstrap") or {}
    out += [("bootstrap.seed", _("bootstrap seed"), bootstrap.get("seed")),
            ("bootstrap.replicates", _("bootstrap replicates"), bootstrap.get("replicates")),
            ("started_at", _("started"), provenance.get("started_at")),
            ("finished_at", _("finished"), provenance.get("finished_at"))]
    return out


def differences(blocks: list[dict | None]) -> list[dict]:
    """The fields in which runs' provenance blocks differ (their times aside), each {"key", "label", "values"} with
    every run's value in order (None: not recorded, or not applicable)."""
    fields = [{key: (label, value) for key, label, value in rows(block)} for block in blocks]
    keys = list(dict.fromkeys(key for own in fields for key in own if key not in TIMES))
    out = []
    for key in keys:
        values = [own[key][1] if key in own else None for own in fields]
        if len({repr(v) for v in values}) > 1:
            label = next(own[key][0] for own in fields if key in own)
            out.append({"key": key, "label": label, "values": values})
    return out

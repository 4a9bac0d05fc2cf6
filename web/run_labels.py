"""Labels that tell runs apart: each evaluation shown is named by what differs among the evaluations shown with it
(judge model(s) or reference set, prompt language, samples, pairwise, method set, file), with its title and tags
when it has them, and its short id only when nothing else tells two apart. The compare page and the list of
evaluations both use `run_labels`. A run nobody gave a title is listed under `default_title`: its file, judge model(s),
rubric and date."""
from __future__ import annotations

from typing import Callable

from kinds import registry
from pipeline.housekeeping import measured_with, rubric_name
from translations import _

SHORT_ID = 6
SEPARATOR = " · "


def _judge(record: dict) -> str:
    """The judge model(s) or reference set from the settings, else the kind's run_label of the result."""
    found = measured_with(record)
    if not found and record.get("result") and record.get("kind") in registry.names():
        found = registry.scored(record["kind"]).run_label(record["result"])
    return found if found and found != "—" else ""


def _language(record: dict) -> str:
    language = (record.get("settings") or {}).get("language") or ""
    return _("prompts in %(language)s", language=language) if language else ""


def _samples(record: dict) -> str:
    """How often each judgment was asked, for kinds that record it."""
    settings = record.get("settings") or {}
    if "samples" not in settings:
        return ""
    samples = settings["samples"] or 1
    return _("%(n)s samples", n=samples) if samples > 1 else _("1 sample")


def _pairwise(record: dict) -> str:
    """Settings record pairwise judging only when it was asked for."""
    return _("pairwise") if (record.get("settings") or {}).get("pairwise") else ""


def _methods(record: dict) -> str:
    return ", ".join(record.get("methods") or [])


def _file(record: dict) -> str:
    return record.get("filename") or ""


# What may tell runs apart, in the order a label names them: a fact is named when it differs among the runs shown.
FACTS: tuple[Callable[[dict], str], ...] = (_judge, _language, _samples, _pairwise, _methods, _file)


def _names(record: dict) -> list[str]:
    """The title and tags a person gave the run."""
    return [part for part in (record.get("title") or "", *(f"#{tag}" for tag in record.get("tags") or [])) if part]


def run_labels(records: list[dict], names: bool = True) -> list[str]:
    """A label per evaluation record (with "settings", "methods", "filename", "id", optionally "title", "tags",
    "kind", "result"), in order: the facts that differ among these records, after the title and tags when `names`;
    the short id is added to every label two records would otherwise share, and is the label of a run nothing else
    names."""
    differing = [fact for fact in FACTS if len({fact(record) for record in records}) > 1]
    parts = [[*(_names(record) if names else []), *(fact(record) for fact in differing)] for record in records]
    parts = [[part for part in labelled if part] for labelled in parts]
    joined = [SEPARATOR.join(labelled) for labelled in parts]
    for record, labelled, label in zip(records, parts, joined):
        if not labelled or joined.count(label) > 1:
            labelled.append(str(record["id"])[:SHORT_ID])
    return [SEPARATOR.join(labelled) for labelled in parts]


def default_title(record: dict) -> str:
    """A run's title when nobody gave it one, made of what tells runs apart: its file, judge model(s) (or reference
    set), rubric (when not the default) and when it was created (UTC, to the minute)."""
    created = str(record.get("created_at") or "")[:16].replace("T", " ")
    parts = (_file(record), measured_with(record), rubric_name(record), created)
    return SEPARATOR.join(part for part in parts if part) or str(record["id"])[:SHORT_ID]


def display_titles(records: list[dict]) -> list[str]:
    """Each run's title (the one a person gave it, else its default title), with its short id after any title two
    of these records would otherwise share."""
    titles = [record.get("title") or default_title(record) for record in records]
    return [f"{title}{SEPARATOR}{str(record['id'])[:SHORT_ID]}" if titles.count(title) > 1 else title
            for record, title in zip(records, titles)]

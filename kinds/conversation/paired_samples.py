"""Conversation runs sample by sample: each conversation as a `Sample`, keyed by its path (its id in the upload).

Two runs pair on the conversations they share (the same path, from the same source): an annotation run of a file
beside another of the same file or of a new version of it with the same paths. What pairs is what each run says
about one conversation: its number of turns, and the judge's annotation (Detail Level, Diversity, Practical
Utility 0-2, the hallucination flag 0/1; None where the run has no annotation, or the judgment failed). Fidelity
(Jensen-Shannon divergences between simulated and real users) compares distributions and stays unpaired.
"""
from __future__ import annotations

from typing import Iterator

from kinds.conversation.annotation import FLAG
from kinds.conversation.format import read_any
from kinds.conversation.prompts import ANNOTATION_SCALES
from kinds.kind import Metric, Sample, Site, open_file
from translations import lazy_gettext as _l

TURNS = "turns"
METRICS = (Metric(TURNS, _l("Turns")), Metric("detail", _l("Detail Level")), Metric("diversity", _l("Diversity")),
           Metric("utility", _l("Practical Utility")), Metric(FLAG, _l("Hallucination"), binary=True))


def _last_turn(history: list) -> str | None:
    """The content of the conversation's last turn, when it is text."""
    last = history[-1] if history else None
    content = last.get("content") if isinstance(last, dict) else None
    return content if isinstance(content, str) else None


def samples(record: dict, site: Site) -> Iterator[Sample]:
    """One sample per conversation of the run's upload: method its source, key and cluster its path."""
    upload = site.store.get_upload(record["upload_id"])
    if upload is None:
        return
    with open_file(site.file_of(upload)) as stream:
        _report, conversations = read_any(stream, upload["filename"])
    rows = ((record.get("result") or {}).get("annotation") or {}).get("conversations") or []
    scores = {row["index"]: row.get("scores") or {} for row in rows}
    for index, conv in enumerate(conversations):
        judged = scores.get(index, {})
        values = {TURNS: float(conv.turns), **{name: _number(judged.get(name)) for name in (*ANNOTATION_SCALES, FLAG)}}
        yield Sample(method=conv.source, key=(conv.path,), cluster=conv.path, values=values,
                     text=_last_turn(conv.history), links={"transcript": f"transcript?index={index}"})


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

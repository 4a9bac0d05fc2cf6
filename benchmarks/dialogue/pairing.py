"""The dialogue kind's samples for comparing two runs: one per reply (session, round, method).

A sample's values are the reply's judged figures as the result document counts them (records.py, panel.py): its fine
score "avg" (0-100, the mean over repeated samples and, for a panel, over judges), its keep-chatting verdict
"binary_rate" (0 or 1; the mean, in between, when repeated samples or a panel's judges disagree) and each dimension.
Its round is its stratum (AVG averages the rounds' means), the session its cluster: rounds of one session are not
independent evidence.
"""
from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlencode

from benchmarks.dialogue.format import iter_sessions_with_offsets
from benchmarks.dialogue.panel import by_judge, cells, panel_records
from benchmarks.dialogue.prompts import DIMENSIONS
from benchmarks.dialogue.records import CHUNK, STORED, judgment_frame
from benchmarks.kind import Metric, Sample, Site
from judge import judge_labels
from translations import lazy_gettext as _l

# The result document's figures of the same names (metrics.py): AVG the mean over rounds of AL(k), the binary rate
# 100 x the mean of the verdicts, a dimension the mean of the replies' scores.
METRICS = (
    Metric("avg", _l("AVG"), per_stratum=True),
    Metric("binary_rate", _l("Keep-chatting rate"), binary=True, scale=100.0),
    Metric("style", _l("Style")),
    Metric("content", _l("Content")),
    Metric("naturalness", _l("Naturalness")),
    Metric("personalization", _l("Personalization")),
    Metric("conversation", _l("Conversation")),
)


def reply_cells(record: dict, site: Site) -> dict[tuple, dict]:
    """Each judged reply's figures, keyed (session index, session id, round, method), as the result counts them."""
    store, evaluation_id = site.store, record["id"]
    frame = judgment_frame(store.iter_judgments(evaluation_id, batch=CHUNK, columns=STORED),
                           size=store.progress(evaluation_id)["total"])
    per_judge = by_judge(frame, len(judge_labels(record["settings"])))
    return cells(per_judge[0] if len(per_judge) == 1 else panel_records(per_judge))


def paired_samples(record: dict, site: Site) -> Iterator[Sample]:
    """One sample per judged reply, in file order, with the reply's text and links to its session and judgments."""
    judged = reply_cells(record, site)
    path = site.file_of(site.store.get_upload(record["upload_id"]))
    for idx, _offset, session in iter_sessions_with_offsets(path):
        for rnd in session.rounds:
            for method, reply in rnd.responses.items():
                cell = judged.get((idx, session.session_id, rnd.number, method))
                if cell is None:
                    continue
                values = {"avg": cell["total"], "binary_rate": cell["binary"], **{d: cell[d] for d in DIMENSIONS}}
                where = {"index": idx, "round": rnd.number, "method": method}
                yield Sample(method=method, key=(session.session_id, rnd.number), cluster=session.session_id,
                             values=values, stratum=rnd.number, text=reply,
                             links={"session": "session?" + urlencode({"index": idx}),
                                    "fine": "prompt?" + urlencode({**where, "mode": "fine"}),
                                    "binary": "prompt?" + urlencode({**where, "mode": "binary"})})

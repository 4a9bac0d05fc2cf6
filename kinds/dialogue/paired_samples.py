"""The dialogue kind's samples for comparing two runs: one per reply (session, round, method), and the metrics they
pair on.

A sample's values are the reply's judged figures as the result document counts them (records.py, panel.py): its fine
score "avg" (the 0-100 headline, the mean over repeated samples and, for a panel, over judges), its answer to the
rubric's yes/no question "binary_rate" (0 or 1; the mean, in between, when repeated samples or a panel's judges
disagree; none without a question) and each dimension of the rubric, on its own scale. Its round is its stratum (AVG
averages the rounds' means), the session its cluster: rounds of one session are not independent evidence.

Runs judged under one rubric pair on all of these; runs judged under different rubrics on AVG only, the 0-100 headline
every rubric makes (their dimensions, scales and questions are not the same things).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from urllib.parse import urlencode

from judge import judge_labels
from kinds.dialogue import result_rubric
from kinds.dialogue.format import iter_sessions_with_offsets
from kinds.dialogue.panel import by_judge, cells, panel_records
from kinds.dialogue.records import CHUNK, STORED, judgment_table
from kinds.dialogue.result_rubric import HasRubric
from kinds.kind import Metric, Sample, Site
from translations import lazy_gettext as _l

# The result document's figures of the same names (metrics.py): AVG the mean over rounds of AL(k), the binary rate
# 100 x the mean of the verdicts, a dimension the mean of the replies' scores.
AVG = Metric("avg", _l("AVG"), per_stratum=True)
METRICS = (  # under the default rubric
    AVG,
    Metric("binary_rate", _l("Keep-chatting rate"), binary=True, scale=100.0),
    Metric("style", _l("Style")),
    Metric("content", _l("Content")),
    Metric("naturalness", _l("Naturalness")),
    Metric("personalization", _l("Personalization")),
    Metric("conversation", _l("Conversation")),
)


def metrics_for(results: Sequence[HasRubric]) -> tuple[Metric, ...]:
    """The metrics runs with these result documents pair on: AVG, the yes/no rate (when their rubric asks a yes/no
    question) and each dimension (labelled in the page's language) when they share a rubric; AVG only otherwise."""
    if not result_rubric.same_rubric(results):
        return (AVG,)
    rubric = result_rubric.of(results[0]) if results else result_rubric.default_block()
    yesno = result_rubric.yes_no(rubric)
    labels = result_rubric.dimension_labels(rubric)
    return (AVG, *((Metric("binary_rate", yesno["rate"], binary=True, scale=100.0),) if yesno else ()),
            *(Metric(key, label) for key, label in labels.items()))


def reply_cells(record: dict, site: Site, dimensions: tuple[str, ...]) -> dict[tuple, dict]:
    """Each judged reply's figures (the rubric's `dimensions` among them), keyed (session index, session id, round,
    method), as the result counts them."""
    store, evaluation_id = site.store, record["id"]
    table = judgment_table(store.iter_judgments(evaluation_id, batch=CHUNK, columns=STORED),
                           size=store.progress(evaluation_id)["total"], dimensions=dimensions)
    per_judge = by_judge(table, len(judge_labels(record["settings"])))
    return cells(per_judge[0] if len(per_judge) == 1 else panel_records(per_judge, dimensions), dimensions)


def paired_samples(record: dict, site: Site) -> Iterator[Sample]:
    """One sample per judged reply, in file order, with the reply's text and links to its session and judgments."""
    rubric = result_rubric.of_record(record, site.store)
    dimensions = result_rubric.keys(rubric)
    questions = ("fine", "binary") if result_rubric.has_binary(rubric) else ("fine",)
    upload = site.store.get_upload(record["upload_id"])
    if upload is None:
        return
    judged = reply_cells(record, site, dimensions)
    path = site.file_of(upload)
    for idx, _offset, session in iter_sessions_with_offsets(path):
        for rnd in session.rounds:
            for method, reply in rnd.responses.items():
                cell = judged.get((idx, session.session_id, rnd.number, method))
                if cell is None:
                    continue
                values = {"avg": cell["total"], "binary_rate": cell["binary"], **{d: cell[d] for d in dimensions}}
                where = {"index": idx, "round": rnd.number, "method": method}
                yield Sample(method=method, key=(session.session_id, rnd.number), cluster=session.session_id,
                             values=values, stratum=rnd.number, text=reply,
                             links={"session": "session?" + urlencode({"index": idx}),
                                    **{mode: "prompt?" + urlencode({**where, "mode": mode}) for mode in questions}})

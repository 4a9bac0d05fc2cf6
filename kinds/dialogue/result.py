"""The dialogue result document (docs/result-documents.md) from stored judgments."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from common.lazy_modules import lazy
from judge import JudgeConfig, judge_labels, judge_summary, split_mode, usage_totals
from kinds.dialogue.human_agreement import human_agreement
from kinds.dialogue.judge_agreement import consistency, judges_agreement
from kinds.dialogue.length_bias import length_bias
from kinds.dialogue.metrics import score_methods
from kinds.dialogue.pairwise_mode import PAIR_MODES, pairwise_result
from kinds.dialogue.panel import by_judge, cells, panel_records
from kinds.dialogue.prompts import DEFAULT
from kinds.dialogue.records import ReplyLengths, as_records, judgment_frame
from kinds.dialogue.result_rubric import block
from kinds.dialogue.reviews import applied
from kinds.dialogue.reviews import counts as review_counts
from kinds.rubrics import Rubric

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy("pandas")


def session_rows(records: pd.DataFrame, methods: list[str]) -> list[dict]:
    """Per session: its rounds and each method's mean fine score and keep-chatting rate (records as by_judge's)."""
    sessions = records.groupby("session_idx", sort=True).agg(session_id=("session_id", "first"),
                                                             rounds=("round", "nunique"))
    ok = records["status"] == "ok"  # the columns used, not a copy of the whole frame
    value = records["total"].where(records["mode"] == "fine", 100.0 * records["verdict"])[ok]
    means = value.groupby([records[c][ok] for c in ("session_idx", "method", "mode")]).mean().to_dict()
    return [{"index": int(idx), "session_id": session_id, "rounds": int(rounds),
             "methods": {m: {mode: _number(means.get((idx, m, mode))) for mode in ("fine", "binary")}
                         for m in methods}}
            for idx, session_id, rounds in sessions.itertuples()]


def _number(value: float | None) -> float | None:
    return None if value is None or value != value else float(value)


IMPORTED = "imported"  # the judge of imported scores, as results name it (by_judge, agreement with people)


def imported_judge(scores: dict, methods: list[str]) -> dict:
    """The `judge` block of imported scores (settings["scores"]: the file they came from): no judge was called, so
    no model, calls, tokens nor cost."""
    none = usage_totals([], None)
    return {"imported": {"filename": scores["filename"], "sha256": scores["sha256"]}, "model": None,
            "endpoint": None, "prompt_version": None, "temperature": None, "language": None, "max_tokens": None,
            "prices_per_million": None, **none, "by_method": {m: dict(none) for m in methods}}


def build_result(evaluation: dict, upload: dict, judgments: Iterable[dict] | pd.DataFrame, usage: list[dict],
                 configs: list[JudgeConfig], lengths: ReplyLengths, human: list[dict] | None = None,
                 reviews: list[dict] | None = None, rubric: Rubric = DEFAULT) -> dict:
    """The whole result document of a dialogue evaluation from its judgments (records.judgment_frame, or the rows
    it is made of) under its `rubric`; `configs` are its judges' (one, or a panel's; none for scores imported from
    another judge, settings["scores"]), `lengths` the replies' lengths (records.reply_lengths), `human` people's ratings attached to it, `reviews` people's reviews of single
    judgments (reviews.py: their counts, and "overrides": the methods' metrics with the overrides applied).

    With a panel, "methods", "comparisons", "sessions" and "length_bias" hold the panel's figures (panel.py), and
    "by_judge" each judge's; "agreement" says how far the judges agree. A rubric without a yes/no question has null
    binary figures. The figures new with rubrics (each dimension's mean by round, its self-consistency) are given
    for rubrics other than the default, whose documents keep the shape they had before rubrics."""
    methods, settings = evaluation["methods"], evaluation["settings"]
    imported = settings.get("scores")  # another judge's scores, imported: no judge of ours
    labels = [IMPORTED] if imported else judge_labels(settings)
    dims = rubric.keys
    extended = rubric != DEFAULT  # the default's documents keep their shape from before rubrics, byte for byte
    shape = {"dimensions": dims, "binary": rubric.has_binary, "dimension_curves": extended}
    frame = judgment_frame(judgments, dimensions=dims)
    per_judge = by_judge(frame, len(labels))

    def scored(per_judge: list) -> pd.DataFrame:
        return per_judge[0] if len(labels) == 1 else panel_records(per_judge, dims)

    records = scored(per_judge)
    method_docs, comparisons = score_methods(records, methods, **shape)
    document = {
        "kind": "dialogue",
        "evaluation_id": evaluation["id"],
        "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"],
                  "sessions": upload["summary"]["sessions"], "rounds": upload["summary"]["rounds"],
                  "methods": methods},
        "judge": (imported_judge(imported, methods) if imported
                  else judge_summary(configs[0], usage, settings.get("prices"), methods, rubric.cache_version)),
        "judges": labels,
        "rubric": block(rubric),
        "methods": method_docs,
        "comparisons": comparisons,
        "sessions": session_rows(records, methods),
        "length_bias": length_bias(records, lengths, methods),
    }
    samples = settings.get("samples") or 1
    # Per-reply cells are dicts, read only for the figures that compare raters reply by reply.
    judge_cells = [cells(own, dims) for own in per_judge] if len(labels) > 1 or samples > 1 or human else []
    if len(labels) > 1:
        document["by_judge"] = {}
        for label, own in zip(labels, per_judge):
            docs, comps = score_methods(own, methods, **shape)
            document["by_judge"][label] = {"methods": docs, "comparisons": comps,
                                           "length_bias": length_bias(own, lengths, methods)}
        document["judge"]["by_judge"] = {
            label: usage_totals([r for r in usage if split_mode(r["mode"])[1] == number], settings.get("prices"))
            for number, label in enumerate(labels)}
        document["agreement"] = judges_agreement(
            labels, judge_cells, {label: doc["methods"] for label, doc in document["by_judge"].items()},
            {label: [[c["a"], c["b"], c["metric"]] for c in doc["comparisons"] if c["significant_holm"]]
             for label, doc in document["by_judge"].items()}, dims, rubric.has_binary)
    if human:
        raters = dict(zip(labels, judge_cells)) | ({"panel": cells(records, dims)} if len(labels) > 1 else {})
        document.setdefault("agreement", {})["human"] = human_agreement(human, raters, methods, dims)
    if settings.get("pairwise"):
        pair_rows = frame[frame["mode"].map({m: split_mode(m)[0] in PAIR_MODES for m in frame["mode"].unique()})]
        document["pairwise"] = pairwise_result(as_records(pair_rows), methods, labels)
    if samples > 1:
        document["consistency"] = consistency(labels, judge_cells, methods, samples,
                                              dims if extended else ())
    if reviews:
        document["reviews"] = review_counts(reviews)
        if document["reviews"]["overridden"]:
            overridden = scored(by_judge(applied(frame, reviews), len(labels)))
            document["overrides"] = {"methods": score_methods(overridden, methods, **shape)[0]}
    return document

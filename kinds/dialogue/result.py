"""The dialogue result document (docs/result-documents.md) from stored judgments."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from common.lazy_modules import lazy
from judge import JudgeConfig, judge_labels, judge_summary, split_mode, usage_totals
from kinds.agreement import Agreement
from kinds.dialogue.calibrated import Calibration, calibration_block
from kinds.dialogue.human_agreement import HumanAgreement, human_agreement
from kinds.dialogue.judge_agreement import Consistency, JudgePair, consistency, judges_agreement
from kinds.dialogue.length_bias import LengthBias, length_bias
from kinds.dialogue.metrics import Comparison, MethodScores, reply_cells, score_methods
from kinds.dialogue.pairwise_mode import PAIR_MODES, Pairwise, pairwise_result
from kinds.dialogue.panel import by_judge, cells, panel_records
from kinds.dialogue.prompts import DEFAULT
from kinds.dialogue.records import ReplyLengths, Table, judgment_table
from kinds.dialogue.result_rubric import RubricBlock, block
from kinds.dialogue.reviews import ReviewCounts, applied
from kinds.dialogue.reviews import counts as review_counts
from kinds.groups import group_means, grouped
from kinds.result_document import ResultDocument, UploadInput
from kinds.rubrics import Rubric

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")


class DialogueInput(UploadInput):
    """The upload, with its summary's counts."""

    sessions: int
    rounds: int
    methods: list[str]  # the methods scored


class SessionRow(TypedDict):
    """One session's means."""

    index: int  # its position in the file
    session_id: str
    rounds: int
    methods: dict[str, dict[str, float | None]]  # method -> {"fine": mean fine score, "binary": keep-chatting x 100}


class JudgeScores(TypedDict):
    """One judge's own figures, in a panel's result."""

    methods: dict[str, MethodScores]
    comparisons: list[Comparison]
    length_bias: LengthBias


class AgreementBlock(TypedDict):
    """The `agreement` block: how far a panel's judges agree (its first three keys), and how far they agree with
    people (human)."""

    # a panel only: as judge_agreement.JudgesAgreement
    krippendorff_alpha: NotRequired[dict[str, Agreement]]
    pairs: NotRequired[list[JudgePair]]
    significant: NotRequired[dict[str, list[list[str]]]]
    human: NotRequired[HumanAgreement]  # only when people's ratings are attached


class Overrides(TypedDict):
    """The methods' metrics with people's overrides applied."""

    methods: dict[str, MethodScores]


class DialogueResult(ResultDocument):
    """A dialogue evaluation's result document (kind "dialogue"). With a panel of judges, methods, comparisons,
    sessions and length_bias are the panel's (panel.py)."""

    input: DialogueInput
    # the judge and its usage (judge/usage.py's judge_summary: model, endpoint, prompt_version, calls, cache_hits,
    # failed, unparsed, tokens, cost, per method under "by_method", a panel's per judge under "by_judge"); for
    # imported scores, imported_judge's
    judge: dict[str, Any]
    judges: list[str]  # each judge's label (judge/keys.py's judge_labels); ["imported"] for imported scores
    rubric: NotRequired[RubricBlock]  # absent from results kept before rubrics (judged under personasteer)
    methods: dict[str, MethodScores]
    comparisons: list[Comparison]  # per pair of methods and metric
    sessions: list[SessionRow]
    length_bias: LengthBias
    by_judge: NotRequired[dict[str, JudgeScores]]  # each judge's own figures; a panel only
    agreement: NotRequired[AgreementBlock]  # a panel, or people's ratings attached
    calibration: NotRequired[Calibration]  # only when people's ratings are attached (calibrated.py)
    pairwise: NotRequired[Pairwise]  # pairwise mode only
    consistency: NotRequired[Consistency]  # only when each judgment was asked several times (samples)
    reviews: NotRequired[ReviewCounts]  # only when people reviewed judgments
    overrides: NotRequired[Overrides]  # only when a review overrode a judgment


def session_rows(records: Table, methods: list[str]) -> list[SessionRow]:
    """Per session: its rounds and each method's mean fine score and keep-chatting rate (records as by_judge's)."""
    indexes, first, of_session = np.unique(records["session_idx"], return_index=True, return_inverse=True)
    _, (with_round, _rounds) = grouped([of_session, records["round"]])
    rounds = np.bincount(with_round, minlength=len(indexes))
    # Each (session, method, question) mean in a session x method x question array, NaN where there is none.
    keep = records["status"].equals("ok") & records["method"].isin(methods) & records["mode"].isin(["fine", "binary"])
    fine = records["mode"].equals("fine")
    value = np.where(fine, records["total"], 100.0 * records["verdict"])[keep]
    column = np.array([methods.index(m) if m in methods else -1 for m in records["method"].names] + [-1])
    groups, (session, method, question) = grouped([of_session[keep], column[records["method"].codes[keep]],
                                                   (~fine[keep]).astype(np.int64)])
    means = np.full((len(indexes), len(methods), 2), np.nan)
    means[session, method, question] = group_means(groups, value, len(session))[0]
    session_ids = records["session_id"][first].tolist()
    return [{"index": idx, "session_id": session_id, "rounds": int(count),
             "methods": {m: {"fine": _number(fine_mean), "binary": _number(binary_mean)}
                         for m, (fine_mean, binary_mean) in zip(methods, by_method)}}
            for idx, session_id, count, by_method in zip(indexes.tolist(), session_ids, rounds, means.tolist())]


def _number(value: float | None) -> float | None:
    return None if value is None or value != value else float(value)


IMPORTED = "imported"  # the judge of imported scores, as results name it (by_judge, agreement with people)


def imported_judge(scores: dict, methods: list[str]) -> dict[str, Any]:
    """The `judge` block of imported scores (settings["scores"]: the file they came from): no judge was called, so
    no model, calls, tokens nor cost."""
    none = usage_totals([], None)
    return {"imported": {"filename": scores["filename"], "sha256": scores["sha256"]}, "model": None,
            "endpoint": None, "prompt_version": None, "temperature": None, "language": None, "max_tokens": None,
            "prices_per_million": None, **none, "by_method": {m: dict(none) for m in methods}}


def build_result(evaluation: dict, upload: dict, judgments: Iterable[dict] | Table, usage: list[dict],
                 configs: list[JudgeConfig], lengths: ReplyLengths, human: list[dict] | None = None,
                 reviews: list[dict] | None = None, rubric: Rubric = DEFAULT,
                 per_rater: list[dict] | None = None) -> DialogueResult:
    """The whole result document of a dialogue evaluation from its judgments (records.judgment_table, or the rows
    it is made of) under its `rubric`; `configs` are its judges' (one, or a panel's; none for scores imported from
    another judge, settings["scores"]), `lengths` the replies' lengths (records.reply_lengths), `human` people's
    ratings attached to it, per reply (the `agreement.human` and `calibration` blocks), `reviews` people's reviews of
    single judgments (reviews.py: their counts, and "overrides": the methods' metrics with the overrides applied),
    `per_rater` each person's own ratings (rating_store.people_ratings: alpha among people, the spread of each reply's
    ratings).

    With a panel, "methods", "comparisons", "sessions" and "length_bias" hold the panel's figures (panel.py), and
    "by_judge" each judge's; "agreement" says how far the judges agree. A rubric without a yes/no question has null
    binary figures. The figures new with rubrics (each dimension's mean by round, its self-consistency) are given
    for rubrics other than the default, whose documents keep the shape they had before rubrics."""
    methods, settings = evaluation["methods"], evaluation["settings"]
    imported = settings.get("scores")  # another judge's scores, imported: no judge of ours
    labels = [IMPORTED] if imported else judge_labels(settings)
    dims = rubric.keys
    extended = rubric != DEFAULT  # the default's documents keep their shape from before rubrics, byte for byte
    table = judgment_table(judgments, dimensions=dims)
    per_judge = by_judge(table, len(labels))

    def scored(per_judge: list) -> Table:
        return per_judge[0] if len(labels) == 1 else panel_records(per_judge, dims)

    def scores(records: Table) -> tuple[dict[str, MethodScores], list[Comparison]]:
        return score_methods(records, methods, dimensions=dims, binary=rubric.has_binary, dimension_curves=extended)

    records = scored(per_judge)
    method_docs, comparisons = scores(records)
    document: DialogueResult = {
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
            docs, comps = scores(own)
            document["by_judge"][label] = {"methods": docs, "comparisons": comps,
                                           "length_bias": length_bias(own, lengths, methods)}
        document["judge"]["by_judge"] = {
            label: usage_totals([r for r in usage if split_mode(r["mode"])[1] == number], settings.get("prices"))
            for number, label in enumerate(labels)}
        document["agreement"] = {**judges_agreement(
            labels, judge_cells, {label: doc["methods"] for label, doc in document["by_judge"].items()},
            {label: [[c["a"], c["b"], c["metric"]] for c in doc["comparisons"] if c["significant_holm"]]
             for label, doc in document["by_judge"].items()}, dims, rubric.has_binary)}
    if human:
        raters = dict(zip(labels, judge_cells)) | ({"panel": cells(records, dims)} if len(labels) > 1 else {})
        document.setdefault("agreement", {})["human"] = human_agreement(human, raters, methods, dims,
                                                                           per_rater=per_rater)
        headline = "panel" if len(labels) > 1 else labels[0]  # whose figures the methods table shows
        document["calibration"] = calibration_block(human, reply_cells(records, dims), methods, dims,
                                                    rubric.has_binary, headline, comparisons)
    if settings.get("pairwise"):
        pair_rows = table.rows(table["mode"].isin([m for m in table["mode"].names if split_mode(m)[0] in PAIR_MODES]))
        document["pairwise"] = pairwise_result(pair_rows.records(), methods, labels)
    if samples > 1:
        document["consistency"] = consistency(labels, judge_cells, methods, samples,
                                              dims if extended else ())
    if reviews:
        document["reviews"] = review_counts(reviews)
        if document["reviews"]["overridden"]:
            overridden = scored(by_judge(applied(table, reviews), len(labels)))
            document["overrides"] = {"methods": scores(overridden)[0]}
    return document

"""The dialogue result document (DESIGN.md section 7) from stored judgments."""
from __future__ import annotations

from collections import defaultdict

from benchmarks.dialogue.human_agreement import human_agreement
from benchmarks.dialogue.judge_agreement import consistency, judges_agreement
from benchmarks.dialogue.length_bias import length_bias
from benchmarks.dialogue.metrics import score_methods
from benchmarks.dialogue.pairwise_mode import pairwise_result
from benchmarks.dialogue.panel import by_judge, cells, panel_records
from benchmarks.dialogue.prompts import PROMPT_VERSION
from benchmarks.judge_keys import judge_labels, split_mode
from benchmarks.judge_usage import judge_summary, usage_totals
from evaluator import JudgeConfig


def session_rows(judgments: list[dict], methods: list[str]) -> list[dict]:
    """Per session: its rounds and each method's mean fine score and keep-chatting rate."""
    sessions: dict[int, dict] = {}
    sums: dict[tuple[int, str, str], list[float]] = defaultdict(list)
    for j in judgments:
        entry = sessions.setdefault(j["session_idx"], {"session_id": j["session_id"], "rounds": set()})
        entry["rounds"].add(j["round"])
        if j["status"] == "ok":
            value = j["total"] if j["mode"] == "fine" else 100.0 * j["verdict"]
            sums[(j["session_idx"], j["method"], j["mode"])].append(value)
    rows = []
    for idx in sorted(sessions):
        scores = {m: {mode: (sum(v) / len(v) if (v := sums.get((idx, m, mode))) else None)
                      for mode in ("fine", "binary")} for m in methods}
        rows.append({"index": idx, "session_id": sessions[idx]["session_id"],
                     "rounds": len(sessions[idx]["rounds"]), "methods": scores})
    return rows


def build_result(evaluation: dict, upload: dict, judgments: list[dict], usage: list[dict],
                 configs: list[JudgeConfig], lengths: dict[tuple[int, int, str], int],
                 human: list[dict] | None = None) -> dict:
    """The whole result document of a dialogue evaluation; `configs` are its judges' (one, or a panel's), `lengths`
    the replies' lengths in characters by (session index, round, method), `human` people's ratings attached to it.

    With a panel, "methods", "comparisons", "sessions" and "length_bias" hold the panel's figures (panel.py), and
    "by_judge" each judge's; "agreement" says how far the judges agree."""
    methods, settings = evaluation["methods"], evaluation["settings"]
    labels = judge_labels(settings)
    per_judge = by_judge(judgments, len(labels))
    records = per_judge[0] if len(labels) == 1 else panel_records(per_judge)
    method_docs, comparisons = score_methods(records, methods)
    document = {
        "kind": "dialogue",
        "evaluation_id": evaluation["id"],
        "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"],
                  "sessions": upload["summary"]["sessions"], "rounds": upload["summary"]["rounds"],
                  "methods": methods},
        "judge": judge_summary(configs[0], usage, settings.get("prices"), methods, PROMPT_VERSION),
        "judges": labels,
        "methods": method_docs,
        "comparisons": comparisons,
        "sessions": session_rows(records, methods),
        "length_bias": length_bias(records, lengths, methods),
    }
    judge_cells = [cells(own) for own in per_judge]
    if len(labels) > 1:
        document["by_judge"] = {}
        for label, own in zip(labels, per_judge):
            docs, comps = score_methods(own, methods)
            document["by_judge"][label] = {"methods": docs, "comparisons": comps,
                                           "length_bias": length_bias(own, lengths, methods)}
        document["judge"]["by_judge"] = {
            label: usage_totals([r for r in usage if split_mode(r["mode"])[1] == number], settings.get("prices"))
            for number, label in enumerate(labels)}
        document["agreement"] = judges_agreement(
            labels, judge_cells, {label: doc["methods"] for label, doc in document["by_judge"].items()},
            {label: [[c["a"], c["b"], c["metric"]] for c in doc["comparisons"] if c["significant_holm"]]
             for label, doc in document["by_judge"].items()})
    if human:
        raters = dict(zip(labels, judge_cells)) | ({"panel": cells(records)} if len(labels) > 1 else {})
        document.setdefault("agreement", {})["human"] = human_agreement(human, raters, methods)
    if settings.get("pairwise"):
        document["pairwise"] = pairwise_result(judgments, methods, labels)
    if (settings.get("samples") or 1) > 1:
        document["consistency"] = consistency(labels, judge_cells, methods, settings["samples"])
    return document

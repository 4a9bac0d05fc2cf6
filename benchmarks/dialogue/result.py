"""The dialogue result document (DESIGN.md section 7) from stored judgments."""
from __future__ import annotations

from collections import defaultdict

from benchmarks.dialogue.length_bias import length_bias
from benchmarks.dialogue.metrics import score_methods
from benchmarks.dialogue.prompts import PROMPT_VERSION
from benchmarks.judge_usage import judge_summary
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
                 config: JudgeConfig, lengths: dict[tuple[int, int, str], int]) -> dict:
    """The whole result document of a dialogue evaluation; `lengths` are the replies' lengths in characters by
    (session index, round, method)."""
    methods = evaluation["methods"]
    records = [{**j, "session": j["session_id"]} for j in judgments]
    method_docs, comparisons = score_methods(records, methods)
    return {
        "kind": "dialogue",
        "evaluation_id": evaluation["id"],
        "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"],
                  "sessions": upload["summary"]["sessions"], "rounds": upload["summary"]["rounds"],
                  "methods": methods},
        "judge": judge_summary(config, usage, evaluation["settings"].get("prices"), methods, PROMPT_VERSION),
        "methods": method_docs,
        "comparisons": comparisons,
        "sessions": session_rows(judgments, methods),
        "length_bias": length_bias(judgments, lengths, methods),
    }

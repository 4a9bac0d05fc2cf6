"""The dialogue result document (DESIGN.md section 7) from stored judgments."""
from __future__ import annotations

from collections import defaultdict
from urllib.parse import urlsplit

from benchmarks.dialogue_metrics import score_methods
from evaluator import PROMPT_VERSION, JudgeConfig


def endpoint_label(base_url: str | None) -> str:
    """Scheme and host of the judge endpoint, without path, query or credentials."""
    if not base_url:
        return "default"
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


USAGE_FIELDS = ("calls", "attempts", "cache_hits", "failed", "unparsed", "prompt_tokens", "completion_tokens")


def cost(usage: dict, prices: dict | None) -> float | None:
    """What the tokens cost at the configured prices per million tokens, or None without prices."""
    if not prices or prices.get("prompt") is None or prices.get("completion") is None:
        return None
    return (usage["prompt_tokens"] * prices["prompt"] + usage["completion_tokens"] * prices["completion"]) / 1e6


def usage_totals(rows: list[dict], prices: dict | None) -> dict:
    """Calls, cache hits, failures, tokens and cost summed over usage rows."""
    totals = {k: sum(row.get(k) or 0 for row in rows) for k in USAGE_FIELDS}
    return {**totals, "cost": cost(totals, prices)}


def judge_summary(config: JudgeConfig, usage: list[dict], prices: dict | None, methods: list[str]) -> dict:
    """The `judge` block: settings that shaped the scores, and what the calls cost in all and per method."""
    return {"model": config.model, "endpoint": endpoint_label(config.base_url), "prompt_version": PROMPT_VERSION,
            "temperature": config.temperature, "language": config.language, "max_tokens": config.max_tokens,
            "prices_per_million": prices, **usage_totals(usage, prices),
            "by_method": {m: usage_totals([r for r in usage if r["method"] == m], prices) for m in methods}}


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
                 config: JudgeConfig) -> dict:
    """The whole result document of a dialogue evaluation."""
    methods = evaluation["methods"]
    records = [{**j, "session": j["session_id"]} for j in judgments]
    method_docs, comparisons = score_methods(records, methods)
    return {
        "kind": "dialogue",
        "evaluation_id": evaluation["id"],
        "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"],
                  "sessions": upload["summary"]["sessions"], "rounds": upload["summary"]["rounds"],
                  "methods": methods},
        "judge": judge_summary(config, usage, evaluation["settings"].get("prices"), methods),
        "methods": method_docs,
        "comparisons": comparisons,
        "sessions": session_rows(judgments, methods),
    }

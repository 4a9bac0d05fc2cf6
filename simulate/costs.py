"""What a simulation spends, per speaker (the simulator, each method and, when its files are scored, each judge):
the calls, tokens and cost its estimate said before it started (simulate/estimate.py), beside those spent so far."""
from __future__ import annotations

from collections.abc import Mapping

from judge import cost, judge_labels, panel_settings, prices, split_mode
from simulate.estimate import FIELDS
from simulate.plan import USER, Plan

NO_PRICES = {"prompt": None, "completion": None}
WHO = ("role", "name", "model", "endpoint", "prices")
COST_DIGITS = 6  # the decimals of a cost, as the API's usage gives them


def speaker_prices(simulation: Mapping, environ: Mapping[str, str]) -> dict[str, dict]:
    """The prices of the simulator's and each method's tokens, by speaker name: those its estimate recorded when it
    started, else (a simulation from before estimates were kept) its endpoint's now."""
    recorded = {row["name"]: row["prices"] for row in (simulation["settings"].get("estimate") or {}).get("rows", [])
                if row["role"] != "judge"}
    plan = Plan.from_settings(simulation["settings"])
    return {s.name: recorded.get(s.name) or _now(environ, s.endpoint) for s in (plan.simulator, *plan.methods)}


def _now(environ: Mapping[str, str], endpoint: str) -> dict:
    try:
        return prices(environ, endpoint=endpoint)
    except ValueError:  # a price that is not a number, or an endpoint removed since: the settings page says why
        return dict(NO_PRICES)


def report(store, simulation: Mapping, environ: Mapping[str, str]) -> dict:
    """{"rows", "total"}: a row per speaker with its role, name, model, endpoint, prices, "estimate" (calls, prompt
    and completion tokens, cost; None when no estimate was kept) and "actual" (the same, spent so far: calls are
    HTTP calls, retries included; a judge's are those of the evaluations scoring the files, at their prices)."""
    kept = simulation["settings"].get("estimate")
    estimated = (kept or {}).get("rows", [])
    rows = {(row["role"], row["name"]): {**{k: row[k] for k in WHO}, "estimate": {k: row[k] for k in (*FIELDS, "cost")}}
            for row in estimated}
    for key, spent in _spent(store, simulation, environ).items():
        row = rows.setdefault(key, {**{k: spent[k] for k in WHO}, "estimate": None})
        row.update(prices=spent["prices"], actual={field: spent[field] for field in FIELDS})
    for row in rows.values():
        counts = row.get("actual") or dict.fromkeys(FIELDS, 0)
        row["actual"] = {**counts, "cost": cost(counts, row["prices"])}
    found = list(rows.values())
    total = {"estimate": {k: kept[k] for k in (*FIELDS, "cost")} if kept else None,
             "actual": _total([r["actual"] for r in found])}
    for part in [total, *found]:
        for side in ("estimate", "actual"):
            if part[side] and part[side]["cost"] is not None:
                part[side]["cost"] = round(part[side]["cost"], COST_DIGITS)
    return {"rows": found, "total": total}


def _total(parts: list) -> dict:
    """Calls and tokens summed; the cost too, when every part has one."""
    costs = [part["cost"] for part in parts]
    return {**{field: sum(part[field] for part in parts) for field in FIELDS},
            "cost": None if None in costs else sum(costs)}


def _spent(store, simulation: Mapping, environ: Mapping[str, str]) -> dict[tuple[str, str], dict]:
    """What each speaker spent so far, by (role, name): the simulation's turns, then the judgments of its
    evaluations (each judge's at the prices its evaluation recorded)."""
    spent: dict[tuple[str, str], dict] = {}
    own = speaker_prices(simulation, environ)
    for usage in store.simulation_usage(simulation["id"]):
        role = "simulator" if usage["speaker"] == USER else "method"
        _count(spent.setdefault((role, usage["speaker"]), {
            "role": role, "name": usage["speaker"], "model": usage["model"], "endpoint": usage["endpoint"],
            "prices": own.get(usage["speaker"], NO_PRICES)}), usage)
    for evaluation_id in simulation["evaluation_ids"]:
        evaluation = store.get_evaluation(evaluation_id, with_result=False)
        if evaluation is None:  # deleted since
            continue
        panel, labels = panel_settings(evaluation["settings"]), judge_labels(evaluation["settings"])
        for usage in store.usage(evaluation_id):
            number = split_mode(usage["mode"])[1]
            judge = panel[number]
            _count(spent.setdefault(("judge", labels[number]), {
                "role": "judge", "name": labels[number], "model": judge.get("model"), "endpoint": judge.get("endpoint"),
                "prices": judge.get("prices") or NO_PRICES}), usage)
    return spent


def _count(row: dict, usage: Mapping) -> None:
    """Add a usage row's HTTP calls and tokens."""
    row["calls"] = row.get("calls", 0) + (usage["attempts"] or 0)
    row["prompt_tokens"] = row.get("prompt_tokens", 0) + (usage["prompt_tokens"] or 0)
    row["completion_tokens"] = row.get("completion_tokens", 0) + (usage["completion_tokens"] or 0)

"""Data shaped for display, shared by the pages and the JSON API."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Mapping

from jobs import read_session
from evaluator import DIMENSIONS
from web import file_of, get_store

PER_PAGE = 20
MAX_PER_PAGE = 200


def upload_json(upload: dict) -> dict:
    """What the API says about an upload."""
    return {k: upload[k] for k in ("id", "kind", "filename", "size", "summary", "warnings", "created_at")}


def _speed(evaluation: dict, progress: dict) -> tuple[float | None, float | None]:
    """Judgments per second since this run started, and the seconds left at that pace."""
    if evaluation["status"] != "running" or not evaluation.get("run_started_at"):
        return None, None
    elapsed = (datetime.now(timezone.utc) - datetime.fromisoformat(evaluation["run_started_at"])).total_seconds()
    done = progress["done"] - (evaluation.get("run_done_at_start") or 0)
    if elapsed <= 0 or done <= 0:
        return None, None
    rate = done / elapsed
    return rate, (progress["total"] - progress["done"]) / rate


def upload_names(form: Mapping) -> dict:
    """The agent and task names a form gives for a lone AgentBench overall.json (blank ones left out)."""
    return {k: form[k].strip()[:200] for k in ("agent", "task") if isinstance(form.get(k), str) and form[k].strip()}


def evaluation_status(evaluation: dict) -> dict:
    """Status and progress of an evaluation (no result document), with its pace and time left while running."""
    progress = get_store().progress(evaluation["id"])
    if not progress["total"]:
        progress["total"] = evaluation["total"]
    progress["rate_per_s"], progress["eta_s"] = _speed(evaluation, progress)
    return {k: evaluation[k] for k in ("id", "upload_id", "kind", "status", "methods", "error", "created_at",
                                       "started_at", "finished_at")} | {"progress": progress}


def _int_arg(args: Mapping, name: str, default: int, low: int, high: int) -> int:
    try:
        return min(max(int(args.get(name, default)), low), high)
    except (TypeError, ValueError):
        return default


def _judgment_view(j: dict) -> dict:
    view = {k: j[k] for k in ("status", "answer", "error", "cached")}
    if j["mode"] == "fine":
        view |= {"total": j["total"], "dims": {d: j[d] for d in DIMENSIONS}}
    else:
        view["verdict"] = j["verdict"]
    return view


def session_list(evaluation: dict, args: Mapping) -> dict:
    """One page of an evaluation's sessions (index and id only); `q` filters by session id."""
    store = get_store()
    per_page = _int_arg(args, "per_page", PER_PAGE, 1, MAX_PER_PAGE)
    query = str(args.get("q", ""))[:200]
    total = store.count_sessions(evaluation["upload_id"], query)
    pages = max(1, -(-total // per_page))
    page = _int_arg(args, "page", 1, 1, pages)
    rows = store.session_offsets(evaluation["upload_id"], (page - 1) * per_page, per_page, query)
    return {"page": page, "pages": pages, "per_page": per_page, "total": total, "q": query, "sessions": rows}


def session_details(evaluation: dict, rows: list[dict]) -> list[dict]:
    """Sessions with every round's replies and judgments (scores, status, the judge's answers)."""
    store = get_store()
    judged: dict[tuple[int, int, str], dict] = {}
    for j in store.judgments(evaluation["id"], [r["idx"] for r in rows]):
        judged.setdefault((j["session_idx"], j["round"], j["method"]), {})[j["mode"]] = _judgment_view(j)
    path = file_of(store.get_upload(evaluation["upload_id"]))
    sessions = []
    for row in rows:
        session = read_session(path, row["offset"])
        sessions.append({
            "index": row["idx"], "session_id": session.session_id, "user_profile": session.user_profile,
            "user_personality": session.user_personality,
            "rounds": [{"round": r.number, "user_message": r.user_message,
                        "methods": {m: {"reply": r.responses[m], **judged.get((row["idx"], r.number, m), {})}
                                    for m in evaluation["methods"]}}
                       for r in session.rounds]})
    return sessions


def session_page(evaluation: dict, args: Mapping) -> dict:
    """One page of sessions with all their detail, for the API."""
    listing = session_list(evaluation, args)
    return {**listing, "sessions": session_details(evaluation, listing["sessions"])}


def session_detail(evaluation: dict, index: int) -> dict | None:
    """One session's detail by its index in the file, or None."""
    rows = get_store().session_offsets(evaluation["upload_id"], index, 1) if index >= 0 else []
    return session_details(evaluation, rows)[0] if rows and rows[0]["idx"] == index else None

BEST_COLUMNS = ("avg", "slope", "intercept", "r2", "n_ir", "n_r2", "binary_rate")


def best_by_column(methods: dict) -> dict[str, set[str]]:
    """For each metric column, the methods holding its highest value (ties all win)."""
    best = {}
    for column in BEST_COLUMNS:
        values = {name: m[column] for name, m in methods.items() if m.get(column) is not None}
        if len(values) > 1:
            top = max(values.values())
            best[column] = {name for name, v in values.items() if v == top}
    return best


def round_table(result: dict) -> list[dict]:
    """One row per round: each method's AL(k), BAR(k) and the number of sessions behind them."""
    rows: dict[int, dict] = {}
    for name, m in result["methods"].items():
        for key, curve in (("al", m["al_curve"]), ("bar", m["binary_curve"])):
            for point in curve:
                cell = rows.setdefault(point["round"], {}).setdefault(name, {})
                cell[key], cell[key + "_n"] = point["value"], point["n"]
    return [{"round": k, "methods": rows[k]} for k in sorted(rows)]


def comparison_matrix(result: dict, metric: str) -> dict[str, dict[str, dict]]:
    """matrix[a][b] = the paired difference a - b (with its CI and significance) for one metric."""
    matrix: dict[str, dict[str, dict]] = {a: {} for a in result["methods"]}
    for c in result["comparisons"]:
        if c["metric"] != metric or c["diff"] is None:
            continue
        matrix[c["a"]][c["b"]] = {"diff": c["diff"], "ci95": c["ci95"], "significant": c["significant"]}
        flipped = [-c["ci95"][1], -c["ci95"][0]] if c["ci95"] else None
        matrix[c["b"]][c["a"]] = {"diff": -c["diff"], "ci95": flipped, "significant": c["significant"]}
    return matrix


def list_arg(args: Mapping, name: str) -> list[str]:
    """A list from the query string, given as `name=a,b` and/or `name=a&name=b`: in order, no blanks or repeats."""
    values = args.getlist(name) if hasattr(args, "getlist") else [args.get(name, "")]
    items: list[str] = []
    for value in values:
        for part in str(value).split(","):
            part = part.strip()
            if part and part not in items:
                items.append(part)
    return items


def chosen_methods(result: dict, args: Mapping) -> list[str]:
    """The methods picked in the query string (`methods=A,B`), in result order; all by default."""
    picked = set(list_arg(args, "methods"))
    chosen = [m for m in result["methods"] if m in picked]
    return chosen or list(result["methods"])


def with_methods(result: dict, methods: list[str]) -> dict:
    """The result document narrowed to some methods (their metrics and the comparisons among them)."""
    keep = set(methods)
    return {**result, "methods": {m: result["methods"][m] for m in methods},
            "comparisons": [c for c in result["comparisons"] if c["a"] in keep and c["b"] in keep]}


def method_toggles(all_methods: list[str], chosen: list[str]) -> list[dict]:
    """For each method: whether it is shown, and the `methods` query value that toggles it."""
    toggles = []
    for name in all_methods:
        shown = name in chosen
        after = [m for m in all_methods if (m in chosen) != (m == name)] if not (shown and len(chosen) == 1) \
            else chosen
        toggles.append({"name": name, "shown": shown,
                        "param": None if len(after) == len(all_methods) else ",".join(after)})
    return toggles


def result_tables(result: dict) -> dict:
    """The tables a result is shown with (best values, rounds, difference matrices), for page and report."""
    return {"best": best_by_column(result["methods"]), "rounds": round_table(result),
            "matrices": {metric: comparison_matrix(result, metric) for metric in ("fine", "binary")}}

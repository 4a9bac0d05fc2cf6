"""What the dialogue pages show: pages of sessions with their judgments, the tables beside the charts."""
from __future__ import annotations

from typing import Final, Mapping

from judge import judge_labels, split_mode
from kinds.dialogue import figures, result_rubric
from kinds.dialogue.calibrated import ReversedOrder, UninformativeJudge
from kinds.dialogue.format import read_session
from kinds.dialogue.metrics import MethodScores
from kinds.dialogue.prompts import MODES
from kinds.dialogue.result import DialogueResult
from kinds.figures import method_colours, run_style
from kinds.kind import Site, list_arg

PER_PAGE = 20
MAX_PER_PAGE = 200


def _int_arg(args: Mapping, name: str, default: int, low: int, high: int) -> int:
    try:
        return min(max(int(args.get(name, default)), low), high)
    except (TypeError, ValueError):
        return default


def _judgment_view(j: dict, dimensions: tuple[str, ...]) -> dict:
    view = {k: j[k] for k in ("status", "answer", "error", "cached")}
    if j["mode"] == "fine":
        view |= {"total": j["total"], "dims": {d: (j["scores"] or {}).get(d) for d in dimensions}}
    else:
        view["verdict"] = j["verdict"]
    return view


def session_list(evaluation: dict, args: Mapping, store) -> dict:
    """One page of an evaluation's sessions (index and id only); `q` filters by session id."""
    per_page = _int_arg(args, "per_page", PER_PAGE, 1, MAX_PER_PAGE)
    query = str(args.get("q", ""))[:200]
    total = store.count_sessions(evaluation["upload_id"], query)
    pages = max(1, -(-total // per_page))
    page = _int_arg(args, "page", 1, 1, pages)
    rows = store.session_offsets(evaluation["upload_id"], (page - 1) * per_page, per_page, query)
    return {"page": page, "pages": pages, "per_page": per_page, "total": total, "q": query, "sessions": rows}


def session_details(evaluation: dict, rows: list[dict], site: Site) -> list[dict]:
    """Sessions with every round's replies and judgments (scores, status, the judge's answers; a fine judgment's
    dimensions those of the evaluation's rubric); the first judge's first sample as "fine" and "binary", the others
    under "more"."""
    store = site.store
    upload = store.get_upload(evaluation["upload_id"])
    if upload is None:  # deleted meanwhile: no session to show
        return []
    judged: dict[tuple[int, int, str], dict] = {}
    labels = judge_labels(evaluation["settings"])
    dimensions = result_rubric.keys(result_rubric.of_record(evaluation, store))
    for j in store.judgments(evaluation["id"], [r["idx"] for r in rows]):
        question, judge, sample = split_mode(j["mode"])
        if question not in MODES:
            continue
        view = _judgment_view({**j, "mode": question}, dimensions)
        slot = judged.setdefault((j["session_idx"], j["round"], j["method"]), {})
        if judge == 0 and sample == 0:
            slot[question] = view
        else:  # a panel's other judges and the repeated samples
            slot.setdefault("more", []).append({**view, "question": question, "judge": labels[judge],
                                                "sample": sample + 1})
    path = site.file_of(upload)
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


def session_page(evaluation: dict, args: Mapping, site: Site) -> dict:
    """One page of sessions with all their detail, for the API."""
    listing = session_list(evaluation, args, site.store)
    return {**listing, "sessions": session_details(evaluation, listing["sessions"], site)}


def session_detail(evaluation: dict, index: int, site: Site) -> dict | None:
    """One session's detail by its index in the file, or None."""
    rows = site.store.session_offsets(evaluation["upload_id"], index, 1) if index >= 0 else []
    return session_details(evaluation, rows, site)[0] if rows and rows[0]["idx"] == index else None

BEST_COLUMNS: Final = ("avg", "slope", "intercept", "r2", "n_ir", "n_r2", "binary_rate")


def best_by_column(methods: dict[str, MethodScores]) -> dict[str, set[str]]:
    """For each metric column, the methods holding its highest value (ties all win)."""
    best = {}
    for column in BEST_COLUMNS:
        values = {name: value for name, m in methods.items() if (value := m[column]) is not None}
        if len(values) > 1:
            top = max(values.values())
            best[column] = {name for name, v in values.items() if v == top}
    return best


def round_table(result: DialogueResult) -> list[dict]:
    """One row per round: each method's AL(k), BAR(k) (when the rubric asks a yes/no question), each dimension's
    mean on its own scale (when the result has them) and the number of sessions behind them; the row's n (the most
    sessions behind any of its values) and whether the methods' n differ."""
    rows: dict[int, dict] = {}
    for name, m in result["methods"].items():
        for key, curve in (("al", m["al_curve"]), ("bar", m["binary_curve"] or [])):
            for point in curve:
                cell = rows.setdefault(point["round"], {}).setdefault(name, {})
                cell[key], cell[key + "_n"] = point["value"], point["n"]
        for dimension, curve in (m.get("dimension_curves") or {}).items():
            for point in curve:
                rows.setdefault(point["round"], {}).setdefault(name, {}).setdefault("dims", {})[dimension] = \
                    point["value"]
    table = []
    for k in sorted(rows):
        counts = {cell.get(key) for cell in rows[k].values() for key in ("al_n", "bar_n") if cell.get(key)}
        table.append({"round": k, "methods": rows[k], "n": max(counts, default=0), "uneven": len(counts) > 1})
    return table


def comparison_matrix(result: DialogueResult, metric: str) -> dict[str, dict[str, dict]]:
    """matrix[a][b] = the paired difference a - b (with its CI, significance, and significance after Holm's
    correction when the result has it) for one metric."""
    matrix: dict[str, dict[str, dict]] = {a: {} for a in result["methods"]}
    for c in result["comparisons"]:
        if c["metric"] != metric or c["diff"] is None:
            continue
        marks = {"significant": c["significant"], "significant_holm": c.get("significant_holm"),
                 "p_holm": c.get("p_holm")}
        matrix[c["a"]][c["b"]] = {"diff": c["diff"], "ci95": c["ci95"], **marks}
        flipped = [-c["ci95"][1], -c["ci95"][0]] if c["ci95"] else None
        matrix[c["b"]][c["a"]] = {"diff": -c["diff"], "ci95": flipped, **marks}
    return matrix


def chosen_methods(methods: list[str], args: Mapping) -> list[str]:
    """Those of the methods picked in the query string (`methods=A,B`), in their order; all by default."""
    picked = set(list_arg(args, "methods"))
    chosen = [m for m in methods if m in picked]
    return chosen or list(methods)


def with_methods(result: DialogueResult, methods: list[str]) -> DialogueResult:
    """The result document narrowed to some methods (their metrics and the comparisons among them)."""
    keep = set(methods)
    narrowed: DialogueResult = {**result, "methods": {m: result["methods"][m] for m in methods},
                "comparisons": [c for c in result["comparisons"] if c["a"] in keep and c["b"] in keep]}
    if result.get("length_bias"):  # its numbers are the whole evaluation's; the scatter shows the chosen methods
        bias = result["length_bias"]
        narrowed["length_bias"] = {**bias, "points": {m: p for m, p in bias["points"].items() if m in keep}}
    if "calibration" in result:
        calibrated = result["calibration"]
        narrowed["calibration"] = {
            **calibrated, "methods": {m: f for m, f in calibrated["methods"].items() if m in keep},
            "differences": [d for d in calibrated["differences"] if d["a"] in keep and d["b"] in keep],
            "warnings": [w for w in calibrated["warnings"] if _names(w) <= keep]}
    return narrowed


def _names(warning: ReversedOrder | UninformativeJudge) -> set[str]:
    """The methods a calibration warning is about."""
    if warning["code"] == "uninformative_judge":
        return {warning["method"]}
    return {warning["a"], warning["b"]}


def failures(record: dict, store) -> list[dict]:
    """The first failed and unparsed judgments, each with its question ("fine", "binary") and judge's name."""
    labels = judge_labels(record["settings"])
    rows = []
    for f in store.failures(record["id"]):
        question, judge, _sample = split_mode(f["mode"])
        rows.append({**f, "question": question, "judge": labels[judge] if judge < len(labels) else judge})
    return rows


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


def result_tables(result: DialogueResult) -> dict:
    """The tables a result is shown with (best values, rounds, difference matrices: the binary one when the rubric
    asks a yes/no question, the figures calibrated to people), and its rubric's page values
    (result_rubric.page_values), for page and report."""
    rubric = result_rubric.of(result)
    metrics = ("fine", "binary") if result_rubric.has_binary(rubric) else ("fine",)
    consistency = result.get("consistency")
    return {"best": best_by_column(result["methods"]), "rounds": round_table(result),
            "by_round_dimensions": any(m.get("dimension_curves") for m in result["methods"].values()),
            "consistency_by_dimension": any("dimension_sd" in c for per_method in
                                            (consistency["by_judge"] if consistency else {}).values()
                                            for c in per_method.values()),
            "matrices": {metric: comparison_matrix(result, metric) for metric in metrics},
            "calibrated": calibrated_figures(result), **result_rubric.page_values(rubric)}


def calibrated_figures(result: DialogueResult) -> list[str]:
    """The methods table's figures that have calibrated counterparts ("avg", "binary_rate"): those people rated."""
    methods = result["calibration"]["methods"].values() if "calibration" in result else []
    return [metric for metric in ("avg", "binary_rate") if any(metric in m for m in methods)]


def _difference(first, second) -> float | None:
    return None if first is None or second is None else second - first


def _overlap(first, second) -> bool | None:
    """Whether two confidence intervals [low, high] overlap; None when either is missing."""
    if not first or not second:
        return None
    return first[0] <= second[1] and second[0] <= first[1]


def comparison(runs: list[dict]) -> dict:
    """Rows of the merged table, differences of each run from the baseline run (the one marked "baseline", else the
    first) for the methods both have, colours and figures. Runs judged under different rubrics compare on the
    headline score only ("headline_only", with each run's rubric in "rubrics"); the yes/no question's figures are
    shown when the runs share a rubric that asks one ("yesno")."""
    methods: list[str] = []
    for run in runs:
        methods += [m for m in run["result"]["methods"] if m not in methods]
    colours = method_colours(methods)
    for position, run in enumerate(runs):
        run["style"] = run_style(position)
    results = [run["result"] for run in runs]
    same = result_rubric.same_rubric(results)
    rubric = result_rubric.of(results[0])
    yesno = result_rubric.yes_no(rubric) if same else None
    rows = [{"run": run, "method": name, "metrics": m} for run in runs for name, m in run["result"]["methods"].items()]
    base = next((run for run in runs if run.get("baseline")), runs[0])
    differences = []
    for name in methods:
        if name not in base["result"]["methods"]:
            continue
        a = base["result"]["methods"][name]
        for other in (run for run in runs if run is not base and name in run["result"]["methods"]):
            b = other["result"]["methods"][name]
            differences.append({
                "method": name, "base": base, "other": other,
                "avg": _difference(a["avg"], b["avg"]), "avg_overlap": _overlap(a["ci95"]["avg"], b["ci95"]["avg"]),
                "binary_rate": _difference(a["binary_rate"], b["binary_rate"]),
                "binary_rate_overlap": _overlap(a["ci95"]["binary_rate"], b["ci95"]["binary_rate"])})
    return {"runs": runs, "methods": methods, "colours": colours, "rows": rows, "differences": differences,
            "baseline": base, "figures": figures.compare_figures(runs, colours), "yesno": yesno,
            "headline_only": not same,
            "rubrics": [{"run": run, "rubric": result_rubric.described(result_rubric.of(run["result"]))}
                        for run in runs],
            "rubric_text": result_rubric.described(rubric) if same else None}

"""The `calibration` block of a dialogue result (issue 40, item 4): each figure three ways, the calibrated AL(k), the
calibrated paired differences and the warnings, checked against kinds/calibration.py called directly on hand-built
data, and the judge-only figures against the methods table's own."""
from __future__ import annotations

import html
import io
import json
import re

import numpy as np
import pytest

from kinds import calibration
from kinds.calibration import Stratum
from kinds.dialogue.calibrated import calibration_block
from kinds.dialogue.metrics import reply_cells, score_methods
from tests.conftest import jsonl, session_line, wait_for, wait_rescored
from tests.kinds.dialogue.test_agreement_with_people import attach, panel_evaluation, ratings_csv, replies
from tests.web.test_api import upload

METHODS = ["A", "B", "C"]
DIMS = ("style", "content")
SESSIONS = [f"s{n:02d}" for n in range(12)]
FAILED = ("s00", 1, "B")  # a reply whose fine judgment failed


def rounds_of(session: str) -> list[int]:
    """Sessions s00-s07 have three rounds, s08-s11 two: the rounds weigh differently by replies than equally."""
    return [1, 2, 3] if int(session[1:]) < 8 else [1, 2]


def hand_built():
    """Judgments (records as metrics.score_methods reads them) and people's ratings per reply.

    The judge scores A about 10 above B; people rate A 20 below the judge and B as the judge (so the calibrated order
    of A and B reverses the judge's); people's ratings of C are made uncorrelated with the judge's within each round
    (the judge tells nothing of them: its weight is 0). Every third reply of A has two samples with opposite verdicts
    (a cell's verdict 0.5). People rate the even sessions, and s01 and s03 (every round has at least 5 ratings)."""
    rng = np.random.default_rng(7)
    records, judge, people = [], {}, {}
    for n, session in enumerate(SESSIONS):
        for k in rounds_of(session):
            for m in METHODS:
                total = float(np.clip(rng.normal({"A": 70, "B": 60, "C": 55}[m] + 3 * k, 10), 0, 100))
                verdict = int(rng.random() < total / 100)
                style, content = round(total / 5, 1), float(rng.integers(0, 21))
                base = {"session_idx": n, "session_id": session, "session": session, "round": k, "method": m,
                        "status": "ok"}
                samples = [(verdict, total)] + ([(1 - verdict, total)] if m == "A" and (n + k) % 3 == 0 else [])
                failed = (session, k, m) == FAILED  # its fine judgment failed: no total nor dimension, rated or not
                for v, t in samples:
                    records.append({**base, "mode": "fine", "total": None if failed else t, "verdict": None,
                                    "style": None if failed else style, "content": None if failed else content,
                                    **({"status": "failed"} if failed else {})})
                    records.append({**base, "mode": "binary", "total": None, "verdict": v, "style": None,
                                    "content": None})
                judge[(session, k, m)] = {"total": None if failed else total,
                                          "verdict": float(np.mean([v for v, _t in samples])),
                                          "style": None if failed else style, "content": None if failed else content}
    rated = [s for n, s in enumerate(SESSIONS) if n % 2 == 0 or s in ("s01", "s03")]
    for session in rated:
        for k in rounds_of(session):
            for m in ("A", "B"):
                j = judge[(session, k, m)]
                known = judge[(session, k, "A" if (session, k, m) == FAILED else m)]  # people rate it all the same
                people[(session, k, m)] = {"total": known["total"] - (20 if m == "A" else 0) + rng.normal(0, 4),
                                           "verdict": int(round(j["verdict"] + 0.01)) if m == "B" else
                                           int(rng.random() < 0.5), "style": known["style"] + rng.normal(0, 1)}
    for k in (1, 2, 3):  # C: people's totals orthogonal to the judge's within each round
        keys = [(s, k, "C") for s in rated if k in rounds_of(s)]
        x = np.array([judge[key]["total"] for key in keys])
        z = rng.normal(50, 10, len(keys))
        centred = x - x.mean()
        y = z - (z - z.mean()) @ centred / (centred @ centred) * centred
        for key, value in zip(keys, y):
            people[key] = {"total": float(value), "verdict": None, "style": None}
    human = [{"session_id": s, "round": k, "method": m, **{f: v for f, v in values.items()}, "raters": 1}
             for (s, k, m), values in people.items()]
    return records, judge, people, human


def direct_strata(judge: dict, people: dict, method: str, field: str) -> list[Stratum]:
    """A method's rounds as strata, built from the hand-built values (rated replies in session order)."""
    scale = 100.0 if field == "verdict" else 1.0
    out = []
    for k in (1, 2, 3):
        every = [s for s in SESSIONS if k in rounds_of(s) and judge[(s, k, method)][field] is not None]
        rated = [s for s in every if (people.get((s, k, method)) or {}).get(field) is not None]
        out.append(Stratum([scale * judge[(s, k, method)][field] for s in rated],
                           [scale * people[(s, k, method)][field] for s in rated],
                           [scale * judge[(s, k, method)][field] for s in every], rated, every))
    return out


def same(actual, expected) -> bool:
    """Whether two nested values are equal, floats to 1e-9 relative (pytest.approx compares one level only)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and actual.keys() == expected.keys() and all(
            same(actual[k], expected[k]) for k in expected)
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(same, actual, expected))
    if isinstance(expected, float) and actual is not None:
        return actual == pytest.approx(expected, rel=1e-9, abs=1e-12)
    return actual == expected


def block_of(records, human, methods=METHODS):
    table, comparisons = score_methods(records, methods, dimensions=DIMS)
    return table, comparisons, calibration_block(human, reply_cells(records, DIMS), methods, DIMS, True, "judge-x",
                                                 comparisons)


def test_each_figure_three_ways_equals_calibration_called_directly():
    records, judge, people, human = hand_built()
    table, _comparisons, block = block_of(records, human)
    assert (block["rater"], block["confidence"], block["min_rated"]) == ("judge-x", 0.95, calibration.MIN_RATED)
    assert list(block["methods"]) == METHODS
    for m in METHODS:
        for metric, field, weighting in (("avg", "total", "equal"), ("binary_rate", "verdict", "judged")):
            strata = direct_strata(judge, people, m, field)
            expected = {"judge": calibration.stratified_judge_mean(strata, weighting=weighting),
                        "people": calibration.stratified_people_mean(strata, weighting=weighting),
                        "calibrated": calibration.stratified_ppi_mean(strata, weighting=weighting)}
            assert same(block["methods"][m][metric], expected), (m, metric)
        if m != "C":
            strata = direct_strata(judge, people, m, "style")
            assert same(block["methods"][m]["dimensions"], {"style": {
                "judge": calibration.stratified_judge_mean(strata, weighting="judged"),
                "people": calibration.stratified_people_mean(strata, weighting="judged"),
                "calibrated": calibration.stratified_ppi_mean(strata, weighting="judged")}})
    # people rated neither C's verdicts nor its style (but A's and B's): C's say why they are missing; nobody rated
    # content
    assert list(block["methods"]["C"]) == ["avg", "al_curve", "binary_rate", "dimensions"]
    assert list(block["methods"]["C"]["dimensions"]) == ["style"]
    for figure in (block["methods"]["C"]["dimensions"]["style"], block["methods"]["C"]["binary_rate"]):
        assert figure["judge"]["value"] is not None and figure["judge"]["n_judged"] == 8 * 3 + 4 * 2
        for estimate in (figure["people"], figure["calibrated"]):
            assert (estimate["value"], estimate["n_rated"], estimate["reason"]) == (None, 0, calibration.TOO_FEW_RATED)
    # the numbers are people's (A: 20 below the judge) and the judge's, not a default
    a = block["methods"]["A"]["avg"]
    assert a["judge"]["value"] - a["calibrated"]["value"] == pytest.approx(20, abs=3)
    assert a["calibrated"]["low"] < a["calibrated"]["value"] < a["calibrated"]["high"]
    assert a["calibrated"]["n_rated"] == 4 * 3 + 2 * 2 + 2 * 3  # s00-s06 even, s08, s10, s01, s03
    b = block["methods"]["B"]["avg"]["calibrated"]
    assert (b["n_rated"], b["n_judged"]) == (22 - 1, 32 - 1)  # without the reply whose judgment failed
    assert table["B"]["failed"] == 1


def test_the_judge_only_figures_are_the_methods_tables():
    """AVG: rounds weigh the same; the rate and the dimension means: every reply weighs the same (the rounds by their
    replies). Rounds with fewer sessions make the two differ, so a wrong weighting would show."""
    records, judge, people, human = hand_built()
    table, _comparisons, block = block_of(records, human)
    for m in METHODS:
        figures = block["methods"][m]
        assert figures["avg"]["judge"]["value"] == pytest.approx(table[m]["avg"], rel=1e-12)
        if m != "C":
            assert figures["binary_rate"]["judge"]["value"] == pytest.approx(table[m]["binary_rate"], rel=1e-12)
        assert figures["dimensions"]["style"]["judge"]["value"] == pytest.approx(table[m]["dimensions"]["style"],
                                                                                 rel=1e-12)
    # by hand: AVG = mean over rounds of the round's mean; the rate and style: the mean over every reply
    a = [[judge[(s, k, "A")] for s in SESSIONS if k in rounds_of(s)] for k in (1, 2, 3)]
    avg = np.mean([np.mean([c["total"] for c in r]) for r in a])
    assert table["A"]["avg"] == pytest.approx(avg)
    assert table["A"]["binary_rate"] == pytest.approx(100 * np.mean([c["verdict"] for r in a for c in r]))
    assert table["A"]["dimensions"]["style"] == pytest.approx(np.mean([c["style"] for r in a for c in r]))
    # the other weighting gives another number here
    strata = direct_strata(judge, people, "A", "style")
    assert calibration.stratified_judge_mean(strata, weighting="equal")["value"] != pytest.approx(
        table["A"]["dimensions"]["style"], rel=1e-6)
    strata = direct_strata(judge, people, "A", "total")
    assert calibration.stratified_judge_mean(strata, weighting="judged")["value"] != pytest.approx(
        table["A"]["avg"], rel=1e-6)


def test_the_calibrated_al_curve_and_why_it_is_missing():
    records, judge, people, human = hand_built()
    _table, _comparisons, block = block_of(records, human)
    for m in METHODS:
        curve = block["methods"][m]["al_curve"]
        expected = calibration.ppi_strata(direct_strata(judge, people, m, "total"))
        assert curve["reason"] is None and [p["round"] for p in curve["points"]] == [1, 2, 3]
        assert same([{k: v for k, v in p.items() if k != "round"} for p in curve["points"]], expected)
        # the mean of the curve is the AVG calibrated (one lambda for all rounds)
        assert np.mean([p["value"] for p in curve["points"]]) == pytest.approx(
            block["methods"][m]["avg"]["calibrated"]["value"])
    # B's round 3 rated once only: no curve (round 3 named), and no calibrated AVG either
    fewer = [r for r in human if not (r["method"] == "B" and r["round"] == 3 and r["session_id"] != "s00")]
    _table, _comparisons, block = block_of(records, fewer)
    curve = block["methods"]["B"]["al_curve"]
    assert curve == {"points": [], "reason": calibration.TOO_FEW_RATED, "round": 3, "rated": 1}
    assert block["methods"]["B"]["avg"]["calibrated"]["reason"] == calibration.TOO_FEW_RATED
    assert block["methods"]["B"]["avg"]["calibrated"]["value"] is None
    assert block["methods"]["A"]["al_curve"]["reason"] is None


def test_paired_differences_calibrated_beside_the_judges():
    records, judge, people, human = hand_built()
    _table, comparisons, block = block_of(records, human)
    pairs = [(d["a"], d["b"], d["metric"]) for d in block["differences"]]
    assert pairs == [("A", "B", "avg"), ("A", "B", "binary_rate"), ("A", "C", "avg"), ("A", "C", "binary_rate"),
                     ("B", "C", "avg"), ("B", "C", "binary_rate")]
    for d in block["differences"]:
        field, weighting = ("total", "equal") if d["metric"] == "avg" else ("verdict", "judged")
        expected = calibration.ppi_difference(direct_strata(judge, people, d["a"], field),
                                              direct_strata(judge, people, d["b"], field), weighting=weighting)
        assert same(d["calibrated"], expected)
        assert (d["calibrated"]["reason"] is None) == (d["metric"] == "avg" or "C" not in (d["a"], d["b"]))
        comparison = next(c for c in comparisons if (c["a"], c["b"]) == (d["a"], d["b"])
                          and c["metric"] == {"avg": "fine", "binary_rate": "binary"}[d["metric"]])
        assert d["judge"] == {"diff": comparison["diff"], "ci95": comparison["ci95"]}
    # A - B: the judge says about +10, people about -10
    ab = block["differences"][0]
    assert ab["judge"]["diff"] > 5 and ab["calibrated"]["value"] < -5 and ab["calibrated"]["high"] < 0


def test_warnings_a_reversed_order_and_an_uninformative_judge():
    records, judge, people, human = hand_built()
    _table, _comparisons, block = block_of(records, human)
    avg = {m: block["methods"][m]["avg"] for m in METHODS}
    c_weight = avg["C"]["calibrated"]["weight"]
    assert c_weight == pytest.approx(0.0, abs=1e-9)  # people's C ratings are uncorrelated with the judge's
    expected_reversed = calibration.reversed_orders({m: f["calibrated"] for m, f in avg.items()},
                                                    {m: f["judge"] for m, f in avg.items()})
    assert ("B", "A") in expected_reversed
    reversed_avg = [w for w in block["warnings"] if w["code"] == "reversed_order" and w["metric"] == "avg"]
    assert [(w["a"], w["b"]) for w in reversed_avg] == expected_reversed
    first = reversed_avg[0]
    assert first == {"code": "reversed_order", "metric": "avg", "a": "B", "b": "A",
                     "calibrated": {"B": avg["B"]["calibrated"]["value"], "A": avg["A"]["calibrated"]["value"]},
                     "judge": {"B": avg["B"]["judge"]["value"], "A": avg["A"]["judge"]["value"]},
                     "significant": True}
    uninformative = [w for w in block["warnings"] if w["code"] == "uninformative_judge"]
    weights = {(m, metric): f[metric]["calibrated"]["weight"] for m, f in block["methods"].items()
               for metric in ("avg", "binary_rate") if metric in f}
    assert [(w["method"], w["metric"]) for w in uninformative] == [
        key for key, weight in weights.items() if weight is not None and weight < calibration.LOW_WEIGHT]
    assert {"code": "uninformative_judge", "metric": "avg", "method": "C", "weight": c_weight,
            "threshold": 0.1} in uninformative
    assert weights[("B", "avg")] > 0.5  # B's people follow the judge: no warning for it


def test_a_rubric_without_a_yes_no_question_has_no_rate():
    records, _judge, _people, human = hand_built()
    _table, comparisons = score_methods(records, METHODS, dimensions=DIMS, binary=False)
    block = calibration_block(human, reply_cells(records, DIMS), METHODS, DIMS, False, "judge-x", comparisons)
    assert [list(f) for f in block["methods"].values()] == [["avg", "al_curve", "dimensions"]] * 3
    assert {d["metric"] for d in block["differences"]} == {"avg"}
    assert {w["metric"] for w in block["warnings"]} == {"avg"}


def test_without_anything_rated_that_the_judge_has():
    """A rating of a reply whose judgment failed is no rating of its total; one verdict is too few."""
    records, _judge, _people, _human = hand_built()
    human = [{"session_id": "s00", "round": 1, "method": "B", "total": 50.0, "verdict": 1, "raters": 1}]
    _table, _comparisons, block = block_of(records, human, ["B"])
    figure = block["methods"]["B"]["avg"]
    assert figure["people"]["reason"] == figure["calibrated"]["reason"] == calibration.TOO_FEW_RATED
    assert figure["judge"]["value"] is not None and figure["calibrated"]["n_rated"] == 0
    assert block["methods"]["B"]["binary_rate"]["calibrated"]["n_rated"] == 1
    assert block["methods"]["B"]["binary_rate"]["calibrated"]["reason"] == calibration.TOO_FEW_RATED
    assert block["differences"] == [] and block["warnings"] == []


# -- the whole path: judged by the local judge, ratings attached through the API, the result document read back ----

# per session, per round: (A total, A keep, B total, B keep); s0-s5 three rounds, s6-s9 two
MARKED = {f"s{n}": [((37 * n + 11 * k) % 50 + 40, (n + k) % 2, (23 * n + 7 * k) % 45 + 30, (n * k) % 3 != 0)
                    for k in range(1, 4 if n < 6 else 3)] for n in range(10)}


def marked_upload(client) -> str:
    sessions = []
    for sid, rounds in MARKED.items():
        s = session_line(sid, rounds=len(rounds))
        for rnd, (a, ka, b, kb) in zip(s["rounds"], rounds):
            rnd["responses"] = {"A": f"A [[score={a}]] [[keep={int(ka)}]]", "B": f"B [[score={b}]] [[keep={int(kb)}]]"}
        sessions.append(s)
    return upload(client, jsonl(*sessions)).get_json()["id"]


def people_file() -> tuple[str, dict]:
    """alice and bob rate the replies of s0, s1, s2, s4, s6 and s8 (bob only A's); their mean total, and alice's
    verdicts (bob gives none). People rate A 15 below the judge and B 5 above it, and answer B's yes/no question as
    the judge but in round 2 of s0-s4. Returns the CSV, and per reply people's (total, verdict)."""
    rows, means = ["rater,session_id,round,method,total,binary"], {}
    for sid in ("s0", "s1", "s2", "s4", "s6", "s8"):
        for k, (a, ka, b, kb) in enumerate(MARKED[sid], 1):
            flip = k == 2 or sid == "s1"
            for m, total, keep in (("A", a - 15, int(ka)), ("B", b + 5, 1 - int(kb) if flip else int(kb))):
                alice, bob = total - 2 * (k % 2), total + 2 * (k % 2)
                rows.append(f"alice,{sid},{k},{m},{alice},{keep}")
                if m == "A":
                    rows.append(f"bob,{sid},{k},{m},{bob},")
                means[(sid, k, m)] = ((alice + bob) / 2 if m == "A" else alice, keep)
    return "\n".join(rows) + "\n", means


def judged(client) -> str:
    """A finished evaluation of MARKED by the local judge."""
    done = wait_for(client, client.post("/api/evaluations", json={"upload_id": marked_upload(client)}).get_json()["id"])
    assert done["status"] == "done", done
    return done["id"]


def add_people(client, evaluation_id: str, text: str) -> None:
    answer = client.post(f"/api/evaluations/{evaluation_id}/human-ratings",
                         data={"file": (io.BytesIO(text.encode()), "people.csv")}, content_type="multipart/form-data")
    assert answer.status_code == 202, answer.get_json()
    assert wait_rescored(client, evaluation_id)["status"] == "done"


def test_the_calibration_block_through_the_api(client, judge_server):
    evaluation_id = judged(client)
    assert "calibration" not in client.get(f"/evaluations/{evaluation_id}.json").get_json()
    text, people = people_file()
    add_people(client, evaluation_id, text)
    result = client.get(f"/evaluations/{evaluation_id}.json").get_json()
    block = result["calibration"]
    assert (block["rater"], block["min_rated"]) == ("judge-test", calibration.MIN_RATED)

    def strata(method: str, field: str) -> list[Stratum]:
        out = []
        for k in (1, 2, 3):
            every = sorted(s for s, rounds in MARKED.items() if len(rounds) >= k)
            value = {s: MARKED[s][k - 1][0 if method == "A" else 2] if field == "total"
                     else 100.0 * MARKED[s][k - 1][1 if method == "A" else 3] for s in every}
            rated = [s for s in every if (s, k, method) in people]
            out.append(Stratum([value[s] for s in rated],
                               [people[(s, k, method)][0 if field == "total" else 1] * (1 if field == "total" else 100)
                                for s in rated], [value[s] for s in every], rated, every))
        return out

    for m in ("A", "B"):
        for metric, field, weighting in (("avg", "total", "equal"), ("binary_rate", "verdict", "judged")):
            figure = block["methods"][m][metric]
            expected = {"judge": calibration.stratified_judge_mean(strata(m, field), weighting=weighting),
                        "people": calibration.stratified_people_mean(strata(m, field), weighting=weighting),
                        "calibrated": calibration.stratified_ppi_mean(strata(m, field), weighting=weighting)}
            assert same(figure, expected), (m, metric)
            assert figure["judge"]["value"] == pytest.approx(result["methods"][m][metric], rel=1e-12)
        assert same(block["methods"][m]["al_curve"]["points"],
                    [{"round": k, **e} for k, e in zip((1, 2, 3), calibration.ppi_strata(strata(m, "total")))])
    # people rate A 15 below the judge, B 5 above: calibrated, A falls below B
    ab = next(d for d in block["differences"] if d["metric"] == "avg")
    assert same(ab["calibrated"], calibration.ppi_difference(strata("A", "total"), strata("B", "total")))
    fine = next(c for c in result["comparisons"] if c["metric"] == "fine")
    assert ab["judge"] == {"diff": fine["diff"], "ci95": fine["ci95"]}
    avg = {m: block["methods"][m]["avg"] for m in ("A", "B")}
    assert ab["calibrated"]["value"] == pytest.approx(avg["A"]["calibrated"]["value"]
                                                      - avg["B"]["calibrated"]["value"])
    assert ab["calibrated"]["value"] < 0 < fine["diff"]
    assert [w for w in block["warnings"] if w["code"] == "reversed_order" and w["metric"] == "avg"] == [
        {"code": "reversed_order", "metric": "avg", "a": "B", "b": "A",
         "calibrated": {m: avg[m]["calibrated"]["value"] for m in ("B", "A")},
         "judge": {m: avg[m]["judge"]["value"] for m in ("B", "A")}, "significant": ab["calibrated"]["high"] < 0}]
    # people's totals follow the judge's; their verdicts of B go against its in round 2: there its weight is low
    weights = {(m, metric): block["methods"][m][metric]["calibrated"]["weight"]
               for m in ("A", "B") for metric in ("avg", "binary_rate")}
    assert min(weights[("A", "avg")], weights[("B", "avg")]) > 0.3 and weights[("B", "binary_rate")] < 0.1
    assert [w for w in block["warnings"] if w["code"] == "uninformative_judge"] == [
        {"code": "uninformative_judge", "metric": "binary_rate", "method": m, "weight": weights[(m, "binary_rate")],
         "threshold": 0.1} for m in ("A", "B") if weights[(m, "binary_rate")] < 0.1]
    # the ratings removed: no block
    assert client.delete(f"/api/evaluations/{evaluation_id}/human-ratings").status_code == 202
    assert wait_rescored(client, evaluation_id)["status"] == "done"
    assert "calibration" not in client.get(f"/evaluations/{evaluation_id}.json").get_json()


def test_a_panel_is_calibrated_as_the_methods_table_shows_it(client, judge_server):
    evaluation_id = panel_evaluation(client, judge_server)
    rows = [(s, k, m, t - 10, v, "") for s, k, m, t, v in replies()]
    assert attach(client, evaluation_id, ratings_csv(rows)).status_code == 202
    result = client.get(f"/evaluations/{evaluation_id}.json").get_json()
    block = result["calibration"]
    assert block["rater"] == "panel"
    for m, figures in block["methods"].items():
        # the panel's scores (the mean of judge-a's and judge-b's, judge-a's + 10) are its figures
        assert figures["avg"]["judge"]["value"] == pytest.approx(result["methods"][m]["avg"], rel=1e-12)
        assert figures["binary_rate"]["judge"]["value"] == pytest.approx(result["methods"][m]["binary_rate"])
        assert figures["avg"]["judge"]["value"] != pytest.approx(result["by_judge"]["judge-a"]["methods"][m]["avg"])


def figures_of(page: str) -> dict:
    """The page's charts (the JSON the page draws them from)."""
    return json.loads(html.unescape(re.search(r'<script id="figures" type="application/json"[^>]*>(.*?)</script>',
                                              page, re.S).group(1)))


def rows_of(page: str, method: str) -> tuple[str, str, str]:
    """The methods table's rows of a method: its own (the judge's figures), people's and the calibrated figures' under
    it (when the result has them), each without line breaks and indentation."""
    table = re.sub(r"\s*\n\s*", "", page[page.index('<table class="grid metrics">'):])
    found = re.search(r'<th scope="row"><span class="swatch"[^>]*></span>' + method + r'</th>(.*?)</tr>'
                      r'(?:<tr class="calibrated-row people"><th scope="row" aria-label="[^"]*">[^<]*</th>(.*?)</tr>'
                      r'<tr class="calibrated-row calibrated"><th scope="row" aria-label="[^"]*">[^<]*</th>(.*?)</tr>)?',
                      table)
    return found.group(1), found.group(2) or "", found.group(3) or ""


def shown(e: dict, interval: bool = True) -> str:
    """An estimate as the methods table shows it: its value, then (unless hidden) its interval in the next column."""
    if e["value"] is None:
        return f'<td title="{e["n_rated"]} of {e["n_judged"]} replies rated">—</td>' + (
            '<td><span class="hint">too few ratings</span></td>' if interval else "")
    weight = f'weight {e["weight"]:.2f}; ' if e["weight"] is not None else ""
    return (f'<td title="{weight}{e["n_rated"]} of {e["n_judged"]} replies rated">{e["value"]:.1f}</td>'
            + (f'<td>[{e["low"]:.1f}, {e["high"]:.1f}]</td>' if interval else ""))


def test_the_result_page_shows_the_calibrated_figures(client, judge_server):
    evaluation_id = judged(client)
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "calibrated" not in page and "calibration-warnings" not in page
    text, _people = people_file()
    add_people(client, evaluation_id, text)
    block = client.get(f"/evaluations/{evaluation_id}.json").get_json()["calibration"]
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    # the methods table: under each method's row (the judge's figures), people's and the calibrated ones, each in the
    # column of the judge's AVG and rate, its interval in the interval's column; nothing in the other columns
    for m in ("A", "B"):
        judge, people, calibrated = rows_of(page, m)
        figures = block["methods"][m]
        assert judge.startswith(f'<td class="best">{figures["avg"]["judge"]["value"]:.1f}</td>' if m == "A" else
                                f'<td>{figures["avg"]["judge"]["value"]:.1f}</td>')
        for source, row in (("people", people), ("calibrated", calibrated)):
            assert row == (shown(figures["avg"][source]) + "<td></td>" * 5 + shown(figures["binary_rate"][source])
                           + "<td></td>" * 3), (m, source, row)
        assert f"weight {figures['avg']['calibrated']['weight']:.2f}; 16 of 26 replies rated" in calibrated
    assert 'aria-label="A: people"' in page and 'aria-label="B: calibrated"' in page
    # the curves, drawn dotted with their error bars
    assert "The AL(k) chart shows the calibrated curve of A, B, dotted, with 95% error bars." in page
    traces = {t["name"]: t for t in figures_of(page)["al_curve"]["data"] if t.get("name")}
    for m in ("A", "B"):
        points = block["methods"][m]["al_curve"]["points"]
        trace = traces[f"{m}, calibrated to people"]
        assert trace["x"] == [1, 2, 3] and trace["y"] == [p["value"] for p in points]
        assert trace["error_y"]["array"] == pytest.approx([p["high"] - p["value"] for p in points])
        assert trace["error_y"]["arrayminus"] == pytest.approx([p["value"] - p["low"] for p in points])
    assert "calibrated to people" not in json.dumps(figures_of(page)["binary_curve"])
    # the warnings, in words, with their figures
    avg = {m: block["methods"]["B" if m == "B" else "A"]["avg"] for m in ("A", "B")}
    rate = block["methods"]["B"]["binary_rate"]["calibrated"]
    assert (f"Calibrated to people, B ranks above A on AVG ({avg['B']['calibrated']['value']:.1f} against "
            f"{avg['A']['calibrated']['value']:.1f}), but the judge ranks it below ({avg['B']['judge']['value']:.1f} "
            f"against {avg['A']['judge']['value']:.1f}).") in page
    assert "The calibrated difference's 95% interval includes 0: people's ratings do not settle the order." \
        in page
    assert (f"For B's Keep-chatting rate the judge tells almost nothing of people's ratings (weight "
            f"{rate['weight']:.2f}, below 0.1): its calibrated figure rests on the rated replies alone.") in page
    # the paired differences calibrated, beside the judge's
    card = page[page.index('id="calibrated-differences"'):]
    card = re.sub(r"\s*\n\s*", "", card[:card.index("</section>")])
    for d in block["differences"]:
        e = d["calibrated"]
        star = "*" if e["low"] > 0 or e["high"] < 0 else ""
        assert (f'<tr><th scope="row">A − B</th><td class="figure">{"AVG" if d["metric"] == "avg" else "Keep-chatting rate"}</td>'
                f'<td>{d["judge"]["diff"]:.1f} <span class="hint">[{d["judge"]["ci95"][0]:.1f}, '
                f'{d["judge"]["ci95"][1]:.1f}]</span></td><td>{e["value"]:.1f}{star} <span class="hint">'
                f'[{e["low"]:.1f}, {e["high"]:.1f}]</span></td><td>{e["n_rated"]}</td><td>{e["weight"]:.2f}</td></tr>'
                ) in card, card
    # one method shown: its figures, no warning nor difference about the other
    one = client.get(f"/evaluations/{evaluation_id}?methods=A").get_data(as_text=True)
    assert shown(block["methods"]["A"]["avg"]["calibrated"]) in rows_of(one, "A")[2]
    assert "calibration-warnings" not in one and "calibrated-differences" not in one
    assert "The AL(k) chart shows the calibrated curve of A, dotted" in one
    # the offline report shows the same
    report = client.get(f"/evaluations/{evaluation_id}/report.html").get_data(as_text=True)
    assert shown(block["methods"]["B"]["avg"]["calibrated"]) in rows_of(report, "B")[2]
    assert 'id="calibration-warnings"' in report and 'id="calibrated-differences"' in report


def test_the_page_says_why_a_calibrated_curve_is_missing(client, judge_server):
    evaluation_id = judged(client)
    text, _people = people_file()
    # B's round 3 rated in s0 only
    kept = [line for line in text.splitlines() if ",B," not in line or ",3,B," not in line or ",s0," in line]
    add_people(client, evaluation_id, "\n".join(kept) + "\n")
    block = client.get(f"/evaluations/{evaluation_id}.json").get_json()["calibration"]
    assert block["methods"]["B"]["al_curve"] == {"points": [], "reason": "too_few_rated", "round": 3, "rated": 1}
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert ("No calibrated AL(k) curve for B: its round 3 has 1 rated reply, and each round needs 3." in page)
    assert "The AL(k) chart shows the calibrated curve of A, dotted" in page
    people, calibrated = rows_of(page, "B")[1:]
    assert calibrated.startswith('<td title="13 of 26 replies rated">—</td><td><span class="hint">too few ratings'
                                 '</span></td>')
    assert people.startswith(shown(block["methods"]["B"]["avg"]["people"]))
    # the columns hidden by the chooser are hidden in the rows under each method too
    narrow = client.get(f"/evaluations/{evaluation_id}?cols=avg,binary_rate").get_data(as_text=True)
    a = block["methods"]["A"]
    assert rows_of(narrow, "A")[1] == shown(a["avg"]["people"], False) + shown(a["binary_rate"]["people"], False)
    names = [t.get("name") for t in figures_of(page)["al_curve"]["data"]]
    assert "A, calibrated to people" in names and "B, calibrated to people" not in names
    # in Chinese and Korean
    zh = client.get(f"/evaluations/{evaluation_id}", headers={"Accept-Language": "zh"}).get_data(as_text=True)
    assert "B 没有校准后的 AL(k) 曲线：它的第 3 轮只有 1 条已评分回复，而每一轮至少需要 3 条。" in zh
    assert "人工评分过少" in rows_of(zh, "B")[2] and "A（按人工评分校准）" in json.dumps(figures_of(zh), ensure_ascii=False)
    ko = client.get(f"/evaluations/{evaluation_id}", headers={"Accept-Language": "ko"}).get_data(as_text=True)
    assert "B의 보정된 AL(k) 곡선이 없습니다: 3라운드에 평가된 응답이 1개뿐이며, 각 라운드에는 3개가 필요합니다." in ko

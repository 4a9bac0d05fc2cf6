"""Agreement with people, complete (issue 40, item 3): two people rate overlapping replies through the API (a ratings
file with a `rater` column); the result then gives Krippendorff's alpha among them, Pearson's r and Kendall's tau
beside Spearman's rho, the methods' tau with its interval, and the judge-vs-people scatter, each checked against
scipy and the krippendorff package; the agreement CSV, the page's card and the scatter's data carry them."""
from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from scipy import stats

from tests.conftest import jsonl, session_line, wait_for
from tests.kinds.dialogue.test_agreement_with_people import _judged_totals
from tests.kinds.dialogue.test_people_ratings import attach, table
from tests.web.test_api import upload

METHODS = ("A", "B", "C")


def two_raters(client) -> tuple[str, dict, dict, dict]:
    """A finished evaluation of 2 sessions x 2 rounds x 3 methods (12 replies) and two people's ratings of it:
    alice rates the first nine replies, bob the last nine (six rated by both). (id, judge's totals, alice's, bob's),
    each a dict (session, round, method) -> (total, verdict) but the judge's (its total)."""
    upload_id = upload(client, jsonl(*(session_line(f"s{i}", 2, methods=METHODS) for i in range(2)))).get_json()["id"]
    done = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    assert done["status"] == "done", done
    judged = _judged_totals(client, done["id"])
    replies = sorted(judged)
    assert len(replies) == 12
    alice = {key: (min(100.0, judged[key] + 3 * (n % 4)), n % 2) for n, key in enumerate(replies[:9])}
    bob = {key: (float((judged[key] * 3 + 11 * n) % 101), (n // 2) % 2) for n, key in enumerate(replies[3:])}
    rows = [("rater", "session_id", "round", "method", "total", "binary")]
    rows += [(name, *key, *given[key]) for name, given in (("alice", alice), ("bob", bob)) for key in given]
    answer = attach(client, done["id"], table(rows))
    assert answer.status_code in (200, 202), answer.get_json()
    return done["id"], judged, alice, bob


def _figures(page: str) -> dict:
    return json.loads(re.search(r'<script id="figures" type="application/json">(.*?)</script>', page, re.S).group(1))


def test_two_raters_give_every_agreement_figure(client, judge_server):
    krippendorff = pytest.importorskip("krippendorff")
    evaluation_id, judged, alice, bob = two_raters(client)
    replies = sorted(judged)
    human = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["agreement"]["human"]
    mean = {k: np.mean([r[k][0] for r in (alice, bob) if k in r]) for k in replies}
    people, judge = [mean[k] for k in replies], [judged[k] for k in replies]

    total = human["by_rater"]["judge-test"]["total"]
    assert total["spearman"]["value"] == pytest.approx(stats.spearmanr(people, judge).statistic)
    assert total["pearson"]["value"] == pytest.approx(stats.pearsonr(people, judge).statistic)
    assert total["kendall"]["value"] == pytest.approx(stats.kendalltau(people, judge).statistic)  # tau-b
    for figure in (total["pearson"], total["kendall"]):
        assert figure["n"] == 12 and figure["low"] <= figure["value"] <= figure["high"]

    # alpha among people: replies x (alice, bob), NaN where one did not rate; the verdict's is nominal
    def matrix(field: int) -> np.ndarray:
        return np.array([[r[k][field] if k in r else np.nan for k in replies] for r in (alice, bob)], dtype=float)

    assert list(human["people"]) == ["total", "verdict"]
    assert human["people"]["total"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix(0), level_of_measurement="interval"))
    assert human["people"]["verdict"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix(1), level_of_measurement="nominal"))
    assert human["people"]["total"]["n"] == 6  # the replies both rated

    # the methods ranked by people's means and the judge's, on the same replies: tau with its interval
    ranking = human["ranking"]
    by_people = [np.mean([mean[k] for k in replies if k[2] == m]) for m in METHODS]
    by_judge = [np.mean([judged[k] for k in replies if k[2] == m]) for m in METHODS]
    tau = stats.kendalltau(by_people, by_judge).statistic
    assert ranking["kendall_tau"]["judge-test"] == pytest.approx(tau)
    interval = ranking["kendall_tau_interval"]["judge-test"]
    assert interval["value"] == pytest.approx(tau) and interval["low"] - 1e-9 <= tau <= interval["high"] + 1e-9

    # the scatter: each reply, the judge's total against people's mean, with its raters and their spread
    points = {(p["session_id"], p["round"], p["method"]): p for p in human["scatter"]["points"]}
    assert human["scatter"]["rater"] == "judge-test" and sorted(points) == replies
    for key, p in points.items():
        given = [r[key][0] for r in (alice, bob) if key in r]
        assert (p["judge"], p["people"], p["raters"], p["low"], p["high"]) == pytest.approx(
            (judged[key], np.mean(given), len(given), min(given), max(given)))

    # the agreement CSV: Pearson and Kendall beside Spearman, the methods' tau with its interval, alpha among people
    rows = list(csv.DictReader(io.StringIO(client.get(f"/evaluations/{evaluation_id}/agreement.csv")
                                           .data.decode("utf-8-sig"))))
    found = {(r["statistic"], r["score"], r["raters"]): r for r in rows}
    for statistic in ("spearman", "pearson", "kendall", "alpha"):
        row = found[(statistic, "total", "people | judge-test")]
        assert float(row["value"]) == pytest.approx(total[statistic]["value"]) and int(row["n"]) == 12
    method_tau = found[("kendall_tau_method_mean", "total", "people | judge-test")]
    assert (float(method_tau["value"]), float(method_tau["ci95_low"]), float(method_tau["ci95_high"])) == \
        pytest.approx((tau, interval["low"], interval["high"]))
    for field in ("total", "verdict"):
        row = found[("krippendorff_alpha", field, "people")]
        assert float(row["value"]) == pytest.approx(human["people"][field]["value"]) and int(row["n"]) == 6

    # the page's card, and the scatter's data: one trace per method, its error bars the raters' spread
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    card = page[page.index('id="human"'):]
    for text in ("Pearson r", "Kendall τ", "Agreement among people (replies rated by two or more)",
                 'data-figure="people"', f"{human['people']['total']['value']:.2f}",
                 f"{total['pearson']['value']:.2f}", f"[{interval['low']:.2f}, {interval['high']:.2f}]"):
        assert text in card, text
    figure = _figures(page)["people"]
    assert figure["layout"]["xaxis"]["title"]["text"] == "Fine score by judge-test (0-100)"
    traces = {t["name"]: t for t in figure["data"][1:]}
    assert list(traces) == list(METHODS) and figure["data"][0]["x"] == [0, 100]  # the line judge = people first
    for method, trace in traces.items():
        mine = [points[k] for k in replies if k[2] == method]
        assert trace["x"] == [p["judge"] for p in mine] and trace["y"] == [p["people"] for p in mine]
        assert trace["error_y"]["array"] == pytest.approx([p["high"] - p["people"] for p in mine])
        assert trace["error_y"]["arrayminus"] == pytest.approx([p["people"] - p["low"] for p in mine])
        assert trace["marker"]["color"] == re.search(
            rf'<span class="swatch" style="background: (#[0-9A-F]{{6}})"></span>{method}<', page).group(1)
    assert sum(p["high"] > p["low"] for p in points.values()) == 6  # the six both rated, each with a bar


def test_one_rating_per_reply_gives_no_alpha_among_people(client, judge_server):
    upload_id = upload(client, jsonl(session_line("s0", 2))).get_json()["id"]
    done = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    rows = [("rater", "session_id", "round", "method", "total"), ("alice", "s0", 1, "A", 40), ("bob", "s0", 2, "B", 60)]
    assert attach(client, done["id"], table(rows)).status_code in (200, 202)
    human = client.get(f"/api/evaluations/{done['id']}").get_json()["result"]["agreement"]["human"]
    assert "people" not in human and [p["raters"] for p in human["scatter"]["points"]] == [1, 1]
    page = client.get(f"/evaluations/{done['id']}").get_data(as_text=True)
    assert "Agreement among people" not in page and 'data-figure="people"' in page
    rows = client.get(f"/evaluations/{done['id']}/agreement.csv").data.decode("utf-8-sig")
    assert ",people," not in rows

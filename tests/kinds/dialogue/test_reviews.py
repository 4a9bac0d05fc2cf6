"""People's reviews of single judgments (issue 16, item 2): agree or override on the judgment's page or through the API,
counted on the result page, metrics as judged or with the overrides applied, and exported as people's ratings."""
from __future__ import annotations

import csv
import io

import pytest

from kinds.dialogue import rating_store
from tests.conftest import wait_rescored
from tests.kinds.dialogue.test_sample_grid import evaluation

FINE_A = {"index": 0, "round": 1, "method": "A", "mode": "fine"}  # session s1, round 1: A scored 90


def review(client, evaluation_id: str, **body):
    return client.put(f"/api/evaluations/{evaluation_id}/reviews", json=body)


def test_overrides_change_the_metrics_shown_with_them_and_agreements_do_not(client):
    evaluation_id = evaluation(client)
    result = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    # A's fine scores: s1 90, 50; s2 30, 70. AL(1) = 60, AL(2) = 60: avg 60.
    assert result["methods"]["A"]["avg"] == pytest.approx(60.0) and "reviews" not in result
    resp = review(client, evaluation_id, **FINE_A, decision="agreed", comment="fair")
    assert resp.status_code == 200 and resp.get_json() == {"reviewed": 1, "agreed": 1, "overridden": 0}
    assert "overrides" not in client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    resp = review(client, evaluation_id, **FINE_A, decision="overridden", total=10, comment="too kind")
    assert resp.get_json() == {"reviewed": 1, "agreed": 0, "overridden": 1}  # the same judgment: replaced
    stored = {(j["session_idx"], j["round"], j["method"], j["mode"]): j
              for j in client.application.extensions["store"].judgments(evaluation_id)}
    flipped = 1 - stored[(1, 2, "B", "binary")]["verdict"]  # B's keep-chatting verdict of s2 round 2, the other way
    review(client, evaluation_id, index=1, round=2, method="B", mode="binary", decision="overridden", verdict=flipped)
    result = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    assert result["reviews"] == {"reviewed": 2, "agreed": 0, "overridden": 2}
    # With 10 instead of 90: AL(1) = (10 + 30) / 2 = 20, AL(2) = 60: avg 40. As judged it stays 60.
    assert result["overrides"]["methods"]["A"]["avg"] == pytest.approx(40.0)
    assert result["methods"]["A"]["avg"] == pytest.approx(60.0)
    judged_rate = result["methods"]["B"]["binary_rate"]
    # One of B's four verdicts flipped: its rate moves by a quarter.
    assert result["overrides"]["methods"]["B"]["binary_rate"] == pytest.approx(judged_rate + (100 if flipped else -100) / 4)

    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "2 judgments reviewed by people: 0 agreed with, 2 overridden." in page and "Metrics shown as judged." in page
    applied = client.get(f"/evaluations/{evaluation_id}?overrides=1").get_data(as_text=True)
    assert "Metrics shown with the overrides applied" in applied and "40.0" in applied
    listed = client.get(f"/api/evaluations/{evaluation_id}/reviews").get_json()
    assert [(r["session_id"], r["method"], r["mode"], r["comment"]) for r in listed] == [
        ("s1", "A", "fine", "too kind"), ("s2", "B", "binary", None)]
    assert client.delete(f"/api/evaluations/{evaluation_id}/reviews?index=1&round=2&method=B&mode=binary").status_code == 204
    assert client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["reviews"]["reviewed"] == 1


def test_a_review_is_checked(client, app):
    evaluation_id = evaluation(client)
    for body, status, words in (({**FINE_A}, 400, "The field 'decision' is wrong: Field required"),
                                ({**FINE_A, "decision": "overridden"}, 400, "from 0 to 100"),
                                ({**FINE_A, "decision": "overridden", "total": 101}, 400, "from 0 to 100"),
                                ({**FINE_A, "mode": "binary", "decision": "overridden", "verdict": 2}, 400, "1 (yes) or 0 (no)"),
                                ({**FINE_A, "round": 9, "decision": "agreed"}, 404, "no such judgment"),
                                ({"index": "x", "decision": "agreed"}, 400, "The field 'index' is wrong")):
        resp = review(client, evaluation_id, **body)
        assert resp.status_code == status and words in resp.get_json()["error"], body
    app.extensions["store"].set_status(evaluation_id, "running")
    assert review(client, evaluation_id, **FINE_A, decision="agreed").status_code == 409


def test_reviews_become_peoples_ratings_and_feed_the_agreement(client):
    evaluation_id = evaluation(client)
    review(client, evaluation_id, **FINE_A, decision="overridden", total=80)
    review(client, evaluation_id, **{**FINE_A, "mode": "binary"}, decision="agreed")
    review(client, evaluation_id, index=1, round=1, method="B", mode="fine", decision="agreed")
    rows = list(csv.reader(io.StringIO(client.get(f"/evaluations/{evaluation_id}/reviews.csv").data.decode("utf-8-sig"))))
    judged = {(j["session_id"], j["round"], j["method"], j["mode"]): j
              for j in client.application.extensions["store"].judgments(evaluation_id)}
    assert rows[0] == ["session_id", "round", "method", "total", "binary"]
    assert rows[1] == ["s1", "1", "A", "80.0", str(judged[("s1", 1, "A", "binary")]["verdict"])]
    assert rows[2] == ["s2", "1", "B", str(judged[("s2", 1, "B", "fine")]["total"]), ""]
    assert client.post(f"/evaluations/{evaluation_id}/reviews/as-ratings").status_code == 302
    assert wait_rescored(client, evaluation_id)["status"] == "done"  # a rescore job, in the background
    result = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    assert result["agreement"]["human"]  # the judge against the reviews, as against an uploaded ratings file
    info = rating_store.human_ratings_info(client.application.extensions["store"], evaluation_id)
    assert info["rows"] == 2 and info["raters"] == ["reviews"] and info["by_rater"][0]["sources"] == ["reviews"]


def test_the_judgment_page_reviews_with_a_form(client):
    evaluation_id = evaluation(client)
    url = f"/evaluations/{evaluation_id}/view/prompt?index=0&round=1&method=A&mode=fine"
    assert 'name="decision" value="agreed"' in client.get(url).get_data(as_text=True)
    resp = client.post(f"/evaluations/{evaluation_id}/reviews",
                       data={**{k: str(v) for k, v in FINE_A.items()}, "decision": "overridden", "total": "33",
                             "comment": "<i>too</i> kind"})
    assert resp.status_code == 302 and resp.headers["Location"].endswith(url)  # back to the judgment
    html = client.get(url).get_data(as_text=True)
    assert "Overridden with: 33.0." in html and "&lt;i&gt;too&lt;/i&gt; kind" in html

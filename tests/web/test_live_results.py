"""Live results over HTTP: while an evaluation runs, GET /api/evaluations/<id>/partial and the result page's live view
(/evaluations/<id>/live) show the figures of the judgments stored at that moment, computed here by hand from the
stored judgments; they are kept per number of judgments stored, made again at most once a second; the final figures
replace them at the end.

The local judge is held by a `Gate` (a hook that answers as many requests as it was allowed, and holds the rest), so
that the judgments stored stay the same while the test reads them.
"""
from __future__ import annotations

import io
import json
import re
import threading
import time
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from pipeline.evaluation_steps import FLUSH_SECONDS
from tests.conftest import jsonl, session_line, wait_for
from tests.judge_server import judge_server  # noqa: F401

SESSIONS, ROUNDS, METHODS = 6, 3, ("A", "B")
TOTAL = SESSIONS * ROUNDS * len(METHODS) * 2


class Gate:
    """A judge hook: answers the requests of replies that carry `marker` while some are allowed, holds the others
    until more are (or `open()`); other requests pass."""

    def __init__(self, marker: str, allowed: int = 0):
        self.marker = marker
        self.allowed = allowed
        self.answered = 0
        self._cond = threading.Condition()

    def allow(self, more: int) -> None:
        with self._cond:
            self.allowed += more
            self._cond.notify_all()

    def open(self) -> None:
        self.allow(10**9)

    def __call__(self, request: dict) -> None:
        if self.marker not in request.get("reply", ""):
            return None
        with self._cond:
            self._cond.wait_for(lambda: self.allowed > 0, timeout=120)
            self.allowed -= 1
            self.answered += 1
        return None


def scored_file(marker: str) -> bytes:
    """Sessions whose replies carry the fine total and verdict the local judge gives them: they differ by session,
    round and method, so that every figure depends on which judgments are stored."""
    sessions = []
    for s in range(SESSIONS):
        line = session_line(f"s{s}", rounds=ROUNDS, methods=METHODS)
        for rnd in line["rounds"]:
            k = rnd["round"]
            rnd["responses"] = {m: f"reply {k} of s{s} from {m} {marker} [[score={(17 * s + 11 * k + 29 * i) % 90 + 5}]]"
                                   f" [[keep={(s + k + i) % 2}]]" for i, m in enumerate(METHODS)}
        sessions.append(line)
    return jsonl(*sessions)


def answer_then_hold(gate: Gate, more: int, timeout: float = 30) -> int:
    """Let `more` requests be answered, then one more over half a second later (the runner stores the verdicts it
    holds when the next arrives FLUSH_SECONDS after the last store), then hold the judge; the requests answered."""
    target = gate.answered + more
    deadline = time.monotonic() + timeout
    gate.allow(more)
    while gate.answered < target:
        assert time.monotonic() < deadline, (gate.answered, target)
        time.sleep(0.02)
    time.sleep(FLUSH_SECONDS + 0.1)
    gate.allow(1)
    return target + 1


def settled(store, evaluation_id: str, quiet_s: float = 1.0, timeout: float = 30) -> int:
    """The number of judgments stored once it has not changed for quiet_s (the judge is held)."""
    deadline = time.monotonic() + timeout
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        done = store.progress(evaluation_id)["done"]
        if done != seen:
            seen, since = done, time.monotonic()
        elif time.monotonic() - since >= quiet_s and done:
            return done
        time.sleep(0.05)
    raise AssertionError(f"the judgments stored never settled: {seen}")


def by_hand(judgments: list[dict]) -> dict:
    """Per method, the figures of the stored judgments: AL(k) and BAR(k) (mean over the sessions judged in round k,
    with n), AVG (mean of AL(k)), the slope and intercept of AL(k) against k, the counts."""
    figures = {}
    for method in METHODS:
        fine, binary = defaultdict(list), defaultdict(list)
        for j in judgments:
            if j["method"] == method and j["status"] == "ok":
                (fine if j["mode"] == "fine" else binary)[j["round"]].append(
                    j["total"] if j["mode"] == "fine" else 100.0 * j["verdict"])
        al = [(k, float(np.mean(v)), len(v)) for k, v in sorted(fine.items())]
        bar = [(k, float(np.mean(v)), len(v)) for k, v in sorted(binary.items())]
        fit = stats.linregress([k for k, _, _ in al], [v for _, v, _ in al]) if len(al) >= 2 else None
        figures[method] = {
            "al_curve": al, "binary_curve": bar, "avg": float(np.mean([v for _, v, _ in al])) if al else None,
            "slope": fit.slope if fit else None, "intercept": fit.intercept if fit else None,
            "judged_fine": sum(n for _, _, n in al), "judged_binary": sum(n for _, _, n in bar),
            "pending": sum(1 for j in judgments if j["method"] == method and j["status"] == "pending")}
    return figures


def check_figures(result: dict, judgments: list[dict]) -> None:
    """The result document's methods are those computed by hand from `judgments`, with the same n."""
    expected = by_hand(judgments)
    for method, want in expected.items():
        got = result["methods"][method]
        assert [(p["round"], p["n"]) for p in got["al_curve"]] == [(k, n) for k, _, n in want["al_curve"]]
        assert [p["value"] for p in got["al_curve"]] == pytest.approx([v for _, v, _ in want["al_curve"]])
        assert [(p["round"], p["n"]) for p in got["binary_curve"]] == [(k, n) for k, _, n in want["binary_curve"]]
        assert [p["value"] for p in got["binary_curve"]] == pytest.approx([v for _, v, _ in want["binary_curve"]])
        assert got["avg"] == pytest.approx(want["avg"])
        if want["slope"] is not None:
            assert (got["slope"], got["intercept"]) == pytest.approx((want["slope"], want["intercept"]))
        assert (got["judged_fine"], got["judged_binary"], got["pending"]) == (
            want["judged_fine"], want["judged_binary"], want["pending"])
        assert got["judged"] == want["judged_fine"] + want["judged_binary"]


def start(client, data: bytes) -> str:
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(data), "live.jsonl")},
                         content_type="multipart/form-data")
    assert upload.status_code == 201, upload.get_json()
    created = client.post("/api/evaluations", json={"upload_id": upload.get_json()["id"]})
    assert created.status_code == 202, created.get_json()
    return created.get_json()["id"]


@pytest.fixture
def live_app(make_app, judge_server):  # noqa: F811
    """An app judging with the local judge, whose held requests do not time out."""
    return make_app({"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
                     "JUDGE_CONCURRENCY": "4", "JUDGE_MAX_RETRIES": "0", "JUDGE_TIMEOUT_S": "120"})


def test_the_partial_figures_are_those_of_the_judgments_stored_then_the_final_ones(live_app, judge_server):  # noqa: F811
    gate = Gate("[[live]]")
    judge_server.hook = gate
    client, store = live_app.test_client(), live_app.extensions["store"]
    later = [0.0]  # the second moment comes a minute later: the figures kept from the first are due again
    live_app.extensions["live_results"].clock = lambda: time.monotonic() + later[0]
    evaluation_id = start(client, scored_file("[[live]]"))
    try:
        for more in (20, 25):  # two moments of the run, the judge held at each
            later[0] += 60
            answered = answer_then_hold(gate, more)
            done = settled(store, evaluation_id)
            assert 0 < done <= answered < TOTAL
            body = client.get(f"/api/evaluations/{evaluation_id}/partial").get_json()
            assert (body["status"], body["partial"], body["judgments"], body["total"]) == ("running", True, done, TOTAL)
            stored = store.judgments(evaluation_id)
            assert sum(j["status"] != "pending" for j in stored) == done
            check_figures(body["result"], stored)

            page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
            view = client.get(f"/evaluations/{evaluation_id}/live").get_data(as_text=True)
            for html in (page, view):
                assert 'class="status status-partial">partial<' in html
                expected = by_hand(stored)
                n_al = sum(f["judged_fine"] for f in expected.values())
                n_bar = sum(f["judged_binary"] for f in expected.values())
                assert f"from the {done} of {TOTAL} judgments stored so far" in html
                assert re.search(rf'id="live-n-methods">[^<]*n = {n_al + n_bar} valid judgments', html)
                assert re.search(rf'id="live-n-al">[^<]*n = {n_al} fine judgments', html)
                assert re.search(rf'id="live-n-binary">[^<]*n = {n_bar} yes/no judgments', html)
                figures = json.loads(re.search(r'<script type="application/json" id="live-figures">(.*?)</script>',
                                               html, re.S).group(1))
                line = next(t for t in figures["al_curve"]["data"] if t.get("name") == "A" and t.get("mode"))
                assert line["y"] == pytest.approx([v for _, v, _ in expected["A"]["al_curve"]])
                assert line["customdata"] == [n for _, _, n in expected["A"]["al_curve"]]
            assert 'id="live"' in page and 'id="progress"' in page and "Cancel" in page  # progress and Cancel kept
            # the samples judged so far open in the grid, and a judgment's page
            assert f'/evaluations/{evaluation_id}/view/grid"' in view
            judged = next(j for j in stored if j["status"] == "ok")
            one = client.get(f"/evaluations/{evaluation_id}/view/prompt?index={judged['session_idx']}"
                             f"&round={judged['round']}&method={judged['method']}&mode={judged['mode']}")
            assert one.status_code == 200
            assert client.get(f"/evaluations/{evaluation_id}/view/grid").status_code == 200
    finally:
        gate.open()
    final = wait_for(client, evaluation_id)
    assert final["status"] == "done"
    body = client.get(f"/api/evaluations/{evaluation_id}/partial").get_json()
    assert (body["partial"], body["judgments"]) == (False, TOTAL)
    assert body["result"] == final["result"]
    check_figures(final["result"], store.judgments(evaluation_id))
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert 'id="live"' not in page and "status-partial" not in page
    assert client.get(f"/evaluations/{evaluation_id}/live").status_code == 200  # the page's last fetch: no error


def test_the_partial_result_is_computed_once_per_judgments_stored_and_at_most_once_a_second(live_app,
                                                                                            judge_server):  # noqa: F811
    gate = Gate("[[cache]]")
    judge_server.hook = gate
    client, store = live_app.test_client(), live_app.extensions["store"]
    live = live_app.extensions["live_results"]
    computed = []
    score_so_far = live.pipeline.score_so_far
    live.pipeline.score_so_far = lambda evaluation: computed.append(evaluation["id"]) or score_so_far(evaluation)
    now = [1000.0]
    live.clock = lambda: now[0]
    evaluation_id = start(client, scored_file("[[cache]]"))
    try:
        answer_then_hold(gate, 10)
        first = settled(store, evaluation_id)
        answers = [client.get(f"/api/evaluations/{evaluation_id}/partial").get_json() for _ in range(5)]
        views = [client.get(f"/evaluations/{evaluation_id}/live") for _ in range(5)]
        assert len(computed) == 1  # five pages, one computation
        assert {a["judgments"] for a in answers} == {first}
        assert len({v.headers["ETag"] for v in views}) == 1
        again = client.get(f"/evaluations/{evaluation_id}/live", headers={"If-None-Match": views[0].headers["ETag"]})
        assert again.status_code == 304

        answer_then_hold(gate, 20)  # more judgments stored, within the second: the kept figures
        second = settled(store, evaluation_id)
        assert second > first
        now[0] += 0.5
        assert client.get(f"/api/evaluations/{evaluation_id}/partial").get_json()["judgments"] == first
        assert len(computed) == 1
        now[0] += 0.6  # past the second: made again from what is stored now
        body = client.get(f"/api/evaluations/{evaluation_id}/partial").get_json()
        assert body["judgments"] == second and len(computed) == 2
        check_figures(body["result"], store.judgments(evaluation_id))
        changed = client.get(f"/evaluations/{evaluation_id}/live", headers={"If-None-Match": views[0].headers["ETag"]})
        assert changed.status_code == 200 and f"from the {second} of" in changed.get_data(as_text=True)
    finally:
        gate.open()
    assert wait_for(client, evaluation_id)["status"] == "done"


def test_before_the_first_judgment_the_live_view_says_so(live_app, judge_server):  # noqa: F811
    gate = Gate("[[none]]", allowed=0)
    judge_server.hook = gate
    client = live_app.test_client()
    evaluation_id = start(client, scored_file("[[none]]"))
    try:
        time.sleep(0.3)
        body = client.get(f"/api/evaluations/{evaluation_id}/partial").get_json()
        assert (body["partial"], body["judgments"], body["result"]) == (True, 0, None)
        view = client.get(f"/evaluations/{evaluation_id}/live").get_data(as_text=True)
        assert "No judgment is stored yet" in view and "live-figures" not in view
    finally:
        gate.open()
    assert wait_for(client, evaluation_id)["status"] == "done"


def test_an_unknown_evaluation_has_no_live_view(client):
    assert client.get("/api/evaluations/nope/partial").status_code == 404
    assert client.get("/evaluations/nope/live").status_code == 404

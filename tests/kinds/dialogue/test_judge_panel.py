"""Judge panels and self-consistency (issue 14): several judges and repeated samples of each judgment, through the
API, the form and the CLI, against the local judge server answering differently per model and per repeat."""
from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest
import scipy.stats

from judge import judge_labels, mode_key, split_mode
from kinds.dialogue.panel import majority
from tests.conftest import jsonl, session_line, wait_for
from tests.kinds.conversation.test_conversation_pipeline import own_conversation
from tests.web.test_api import upload

SCORES = {"s1": [(50, 1, 30, 0), (62, 0, 41, 1), (71, 1, 33, 0)],
          "s2": [(44, 0, 58, 1), (66, 1, 27, 0)],
          "s3": [(80, 1, 35, 1), (47, 0, 52, 0), (55, 1, 60, 1)]}  # per round: A total, A keep, B total, B keep


def marked_sessions() -> bytes:
    """Sessions whose replies tell the local judge their fine total and verdict (SCORES)."""
    sessions = []
    for sid, rounds in SCORES.items():
        s = session_line(sid, rounds=len(rounds), user_profile=f"profile {sid}")
        for rnd, (a, ka, b, kb) in zip(s["rounds"], rounds):
            rnd["responses"] = {"A": f"A answers [[score={a}]] [[keep={ka}]]", "B": f"B answers [[score={b}]] [[keep={kb}]]"}
        sessions.append(s)
    return jsonl(*sessions)


def cells(method: str) -> list[tuple[int, int]]:
    """(total, keep) of every reply of one method, in session and round order."""
    return [(r[0], r[1]) if method == "A" else (r[2], r[3]) for rounds in SCORES.values() for r in rounds]


def al_avg(method: str, field: int = 0) -> float:
    """AVG of a method's AL(k) curve by hand: the mean over rounds of each round's mean over sessions."""
    column = field if method == "A" else field + 2
    by_round: dict[int, list[float]] = {}
    for rounds in SCORES.values():
        for k, r in enumerate(rounds, 1):
            by_round.setdefault(k, []).append(r[column])
    return float(np.mean([np.mean(v) for v in by_round.values()]))


def naive_interval_alpha(rows: list[list[float]]) -> float:
    """Krippendorff's alpha (interval, no missing values) straight from its definition over pairs of values."""
    values = [v for row in rows for v in row]
    n = len(values)
    d_o = sum(sum((a - b) ** 2 for i, a in enumerate(row) for j, b in enumerate(row) if i != j) / (len(row) - 1)
              for row in rows) / n
    d_e = sum((a - b) ** 2 for i, a in enumerate(values) for j, b in enumerate(values) if i != j) / (n * (n - 1))
    return 1 - d_o / d_e


def start(client, body: dict, status: str = "done") -> dict:
    upload_id = upload(client, marked_sessions()).get_json()["id"]
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, **body})
    assert resp.status_code == 202, resp.get_json()
    done = wait_for(client, resp.get_json()["id"])
    assert done["status"] == status, done
    return done


def test_judge_keys_round_trip():
    assert mode_key("fine") == "fine" and mode_key("binary", 1) == "binary@1" and mode_key("fine", 2, 3) == "fine@2#3"
    for base, judge, sample in (("fine", 0, 0), ("binary", 4, 0), ("fine", 0, 2), ("pair_ab", 3, 4)):
        assert split_mode(mode_key(base, judge, sample)) == (base, judge, sample)
    with pytest.raises(ValueError):
        split_mode("fine@0")
    assert judge_labels({"model": "m"}) == ["m"]
    assert judge_labels({"judges": [{"model": "m", "endpoint": "a"}, {"model": "m", "endpoint": "b"},
                                    {"model": "n", "endpoint": "a"}]}) == ["m (a)", "m (b)", "n"]


def test_majority_of_a_panel():
    assert majority([1, 1, 0]) == 1 and majority([0, 0, 1]) == 0 and majority([1, 0]) == 0.5
    assert majority([1.0, 0.5, 0.0]) == 0.5 and majority([2 / 3, 1.0]) == 1


def test_panel_of_two_judges_per_judge_panel_and_agreement(client, judge_server):
    judge_server.models = {"judge-b": (10, True)}  # judge-b: every total +10, every verdict the opposite
    done = start(client, {"judges": [{"model": "judge-a"}, {"model": "judge-b"}]})
    result = done["result"]
    replies = sum(len(r) for r in SCORES.values())
    assert done["progress"]["total"] == replies * 2 * 2 * 2  # replies x methods x (fine, binary) x judges
    assert judge_server.requests == done["progress"]["total"]
    assert result["judges"] == ["judge-a", "judge-b"]
    for method in ("A", "B"):
        totals = [t for t, _k in cells(method)]
        keeps = [k for _t, k in cells(method)]
        by_a = result["by_judge"]["judge-a"]["methods"][method]
        by_b = result["by_judge"]["judge-b"]["methods"][method]
        assert by_a["avg"] == pytest.approx(al_avg(method))
        assert by_b["avg"] == pytest.approx(al_avg(method) + 10)
        assert by_a["binary_rate"] == pytest.approx(100 * np.mean(keeps))
        assert by_b["binary_rate"] == pytest.approx(100 * (1 - np.mean(keeps)))
        panel = result["methods"][method]
        assert panel["avg"] == pytest.approx(al_avg(method) + 5)  # mean of the two judges
        assert panel["binary_rate"] == pytest.approx(50)  # every reply a tie: half a "keep chatting"
        assert panel["dimensions"]["style"] == pytest.approx(np.mean(
            [(np.ceil(t / 5) + np.ceil((t + 10) / 5)) / 2 for t in totals]))  # the server's even split
    assert result["judge"]["by_judge"]["judge-a"]["calls"] == replies * 2 * 2
    agreement = result["agreement"]
    a_totals = [t for m in ("A", "B") for t, _k in cells(m)]
    # Units in the order the result sorts them does not matter for alpha: check against the definition.
    alpha = naive_interval_alpha([[t, t + 10] for t in a_totals])
    assert agreement["krippendorff_alpha"]["total"]["value"] == pytest.approx(alpha)
    assert agreement["krippendorff_alpha"]["total"]["n"] == replies * 2
    low, high = agreement["krippendorff_alpha"]["total"]["low"], agreement["krippendorff_alpha"]["total"]["high"]
    assert low <= alpha <= high
    (pair,) = agreement["pairs"]
    assert (pair["a"], pair["b"]) == ("judge-a", "judge-b")
    assert pair["spearman"]["value"] == pytest.approx(1.0)  # an offset keeps the order
    keeps = [k for m in ("A", "B") for _t, k in cells(m)]
    p1 = np.mean(keeps)
    p_e = p1 * (1 - p1) + (1 - p1) * p1  # rater b says 1 exactly where a says 0
    assert pair["kappa"]["value"] == pytest.approx((0 - p_e) / (1 - p_e))
    assert agreement["krippendorff_alpha"]["binary"]["value"] < 0
    assert pair["method_tau"] is None  # two methods: too few to rank-correlate
    assert set(agreement["significant"]) == {"judge-a", "judge-b"}


def test_three_judges_rank_methods_and_pair_every_judge(client, judge_server):
    judge_server.models = {"judge-b": (3, False), "judge-c": (-5, False)}
    upload_id = upload(client, jsonl(session_line("x", 4, methods=("A", "B", "C")),
                                     session_line("y", 3, methods=("A", "B", "C")))).get_json()["id"]
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, "judges": [
        {"model": "judge-a"}, {"model": "judge-b"}, {"model": "judge-c", "temperature": 0.3}]})
    done = wait_for(client, resp.get_json()["id"])
    result = done["result"]
    assert [(p["a"], p["b"]) for p in result["agreement"]["pairs"]] == list(
        combinations(["judge-a", "judge-b", "judge-c"], 2))
    for pair in result["agreement"]["pairs"]:
        avgs = [[result["by_judge"][j]["methods"][m]["avg"] for m in ("A", "B", "C")] for j in (pair["a"], pair["b"])]
        assert pair["method_tau"] == pytest.approx(scipy.stats.kendalltau(*avgs).statistic)
    assert done["progress"]["total"] == 7 * 3 * 2 * 3


def test_self_consistency_samples_sd_and_flip_rate(client, judge_server):
    # The three samples of each judgment: total +0, +4, -4 (sd 4 exactly); the second one's verdict flips.
    judge_server.repeats = [(0, False), (4, True), (-4, False)]
    done = start(client, {"judge": {"temperature": 0.7}, "samples": 3})
    result = done["result"]
    replies = sum(len(r) for r in SCORES.values())
    assert done["progress"]["total"] == replies * 2 * 2 * 3 and judge_server.requests == replies * 2 * 2 * 3
    consistency = result["consistency"]
    assert consistency["samples"] == 3
    for method in ("A", "B"):
        figures = consistency["by_judge"]["judge-test"][method]
        assert figures["fine_sd"] == pytest.approx(4.0) and figures["flip_rate"] == pytest.approx(1.0)
        assert figures["fine_replies"] == figures["binary_replies"] == replies
        keeps = [k for _t, k in cells(method)]
        # The metrics are computed on the mean of the samples: +0, +4, -4 average out; verdicts 2 of 3.
        assert result["methods"][method]["avg"] == pytest.approx(al_avg(method))
        assert result["methods"][method]["binary_rate"] == pytest.approx(
            100 * np.mean([(2 * k + (1 - k)) / 3 for k in keeps]))
    # Each sample is its own cache entry: the same evaluation again is answered from the cache.
    calls = judge_server.requests
    again = start(client, {"judge": {"temperature": 0.7}, "samples": 3})
    assert judge_server.requests == calls and again["result"]["judge"]["cache_hits"] == replies * 2 * 2 * 3


@pytest.mark.parametrize("body, message", [
    ({"judges": "judge-a"}, "The field 'judges' is wrong: Input should be a valid list"),
    ({"judges": []}, "'judges' must be a list"),
    ({"judges": [{"model": f"m{i}"} for i in range(6)]}, "'judges' must be a list of 1 to 5"),
    ({"judges": [{"model": "same"}, {"model": "same"}]}, "Judge 2 is the same model on the same endpoint as judge 1"),
    ({"judges": [{"model": "a"}, {"model": "b", "api_key": "sk-x"}]}, "API key cannot be sent"),
    ({"judges": [{"model": "a"}, {"model": "b", "batch": True}]}, "Either every judge of a panel uses batch mode"),
    ({"samples": 3}, "set a temperature above 0"),
    ({"samples": 9, "judge": {"temperature": 1}}, "'samples' must be a whole number from 1 to 5"),
    ({"samples": "two"}, "'samples' must be a whole number from 1 to 5"),
])
def test_bad_panel_requests_are_400(client, judge_server, body, message):
    upload_id = upload(client, marked_sessions()).get_json()["id"]
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, **body})
    assert resp.status_code == 400 and message in resp.get_json()["error"], resp.get_json()
    assert judge_server.requests == 0


def test_conversation_annotation_refuses_a_panel(client):
    items = [own_conversation("agent", 2), own_conversation("human", 2)]
    upload_id = upload(client, json.dumps(items).encode(), "mine.json").get_json()["id"]
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, "annotate": True,
                                                 "judges": [{"model": "a"}, {"model": "b"}]})
    assert resp.status_code == 400 and "dialogue evaluations" in resp.get_json()["error"]


def test_panel_from_the_upload_form(client, judge_server):
    judge_server.models = {"judge-b": (10, False)}
    upload_id = upload(client, marked_sessions()).get_json()["id"]
    resp = client.post(f"/uploads/{upload_id}/evaluate", data={"methods": ["A", "B"], "model": "judge-a",
                                                               "panel": "judge-b", "samples": "1"})
    assert resp.status_code == 302
    evaluation_id = resp.headers["Location"].rsplit("/", 1)[1]
    done = wait_for(client, evaluation_id)
    assert done["result"]["judges"] == ["judge-a", "judge-b"]
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "judge-b" in page
    form = client.get(f"/uploads/{upload_id}").get_data(as_text=True)
    assert 'name="panel"' in form and 'name="samples"' in form


def test_panel_and_samples_from_the_cli(runner, tmp_path, judge_server):
    judge_server.models = {"judge-b": (10, False)}
    path = tmp_path / "log.jsonl"
    path.write_bytes(marked_sessions())
    out = tmp_path / "result.json"
    result = runner.invoke(args=["score", str(path), "--judge-model", "judge-a", "--judge-model", "judge-b",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text("utf-8"))
    assert document["judges"] == ["judge-a", "judge-b"]
    assert document["by_judge"]["judge-b"]["methods"]["A"]["avg"] == pytest.approx(al_avg("A") + 10)
    judges_file = tmp_path / "judges.json"
    judges_file.write_text(json.dumps([{"model": "judge-a", "temperature": 0.5}, {"model": "judge-c"}]), "utf-8")
    result = runner.invoke(args=["score", str(path), "--judges-file", str(judges_file), "--samples", "2",
                                 "--out", str(out)])
    assert result.exit_code == 2 and "set a temperature above 0" in result.output  # judge-c samples at 0
    # read as an uploaded JSON text is: a byte order mark, CRLF line ends and a blank line at the end are fine
    judges_file.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"model": "judge-a", "temperature": 0.5},
                                                          {"model": "judge-c", "temperature": 1.0}], indent=1)
                            .replace("\n", "\r\n").encode() + b"\r\n\r\n")
    result = runner.invoke(args=["score", str(path), "--judges-file", str(judges_file), "--samples", "2",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text("utf-8"))
    assert document["judges"] == ["judge-a", "judge-c"] and document["consistency"]["samples"] == 2
    judges_file.write_text("not json", encoding="utf-8")
    bad = runner.invoke(args=["score", str(path), "--judges-file", str(judges_file)])
    assert bad.exit_code == 2 and "is not a JSON list of judge settings" in bad.output


def test_a_judge_that_fails_is_counted_and_asked_again_on_resume(client, judge_server):
    judge_server.fail_next(3, "400", match=lambda request: request["body"].get("model") == "judge-b")
    done = start(client, {"judges": [{"model": "judge-a"}, {"model": "judge-b"}]}, status="incomplete")
    assert done["progress"]["failed"] == 3 and done["failure"]["failed"] == 3
    assert "HTTP 400" in done["failure"]["reason"] and "this error is not retried" in done["failure"]["reason"]
    failed = sum(m["failed"] for m in done["result"]["methods"].values())
    by_b = sum(m["failed"] for m in done["result"]["by_judge"]["judge-b"]["methods"].values())
    assert failed == by_b == 3
    resp = client.post(f"/api/evaluations/{done['id']}/rerun-failed")
    assert resp.status_code == 202
    again = wait_for(client, done["id"])
    assert again["status"] == "done" and again["progress"]["failed"] == 0
    assert judge_server.requests == again["progress"]["total"] + 3


def test_panel_exports_share_page_and_compare_label(client, judge_server):
    import csv
    import io

    from tests.web.test_share import create_share, share_path

    judge_server.models = {"judge-b": (10, True)}
    done = start(client, {"judges": [{"model": "judge-a"}, {"model": "judge-b"}]})
    result, evaluation_id = done["result"], done["id"]
    rows = list(csv.DictReader(io.StringIO(client.get(f"/evaluations/{evaluation_id}/judges.csv")
                                           .data.decode("utf-8-sig"))))
    assert [(r["judge"], r["method"]) for r in rows] == [(j, m) for j in ("judge-a", "judge-b", "panel")
                                                        for m in ("A", "B")]
    by_row = {(r["judge"], r["method"]): r for r in rows}
    assert float(by_row[("judge-b", "A")]["avg"]) == pytest.approx(result["by_judge"]["judge-b"]["methods"]["A"]["avg"])
    assert float(by_row[("panel", "B")]["avg"]) == pytest.approx(result["methods"]["B"]["avg"])
    agreement = list(csv.DictReader(io.StringIO(client.get(f"/evaluations/{evaluation_id}/agreement.csv")
                                                .data.decode("utf-8-sig"))))
    alpha = next(r for r in agreement if r["statistic"] == "krippendorff_alpha" and r["score"] == "total")
    assert float(alpha["value"]) == pytest.approx(result["agreement"]["krippendorff_alpha"]["total"]["value"])
    kappa = next(r for r in agreement if r["statistic"] == "cohen_kappa")
    assert kappa["raters"] == "judge-a | judge-b"
    # A single judge has no such tables.
    single = start(client, {})
    assert client.get(f"/evaluations/{single['id']}/judges.csv").status_code == 404
    shared = client.get(share_path(create_share(client, evaluation_id))).get_data(as_text=True)
    assert 'id="agreement"' in shared and "judge-b" in shared and "agreement.csv" in shared
    compare = client.get(f"/compare?ids={evaluation_id},{single['id']}").get_data(as_text=True)
    assert "judge-a + judge-b" in compare


def test_session_detail_shows_every_judge_and_sample(client, judge_server):
    judge_server.models = {"judge-b": (10, True)}
    done = start(client, {"judges": [{"model": "judge-a", "temperature": 0.5}, {"model": "judge-b", "temperature": 0.5}],
                          "samples": 2})
    page = client.get(f"/api/evaluations/{done['id']}/sessions?q=s1").get_json()
    reply = page["sessions"][0]["rounds"][0]["methods"]["A"]
    a_total, a_keep = SCORES["s1"][0][0], SCORES["s1"][0][1]
    assert reply["fine"]["total"] == a_total and reply["binary"]["verdict"] == a_keep
    more = {(m["judge"], m["sample"], m["question"]): m for m in reply["more"]}
    assert set(more) == {(j, s, q) for j in ("judge-a", "judge-b") for s in (1, 2) for q in ("fine", "binary")} - {
        ("judge-a", 1, "fine"), ("judge-a", 1, "binary")}
    assert more[("judge-b", 2, "fine")]["total"] == a_total + 10 and more[("judge-b", 1, "binary")]["verdict"] == 1 - a_keep
    html = client.get(f"/evaluations/{done['id']}/view/session?index=0").get_data(as_text=True)
    assert "<code>judge-b</code> #2" in html

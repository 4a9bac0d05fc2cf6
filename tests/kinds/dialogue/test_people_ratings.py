"""People's ratings per rater through the API and the result page's form (issue 40, item 2): a ratings file's `rater`
column (or the form's `rater`, else the file's name), a file replacing only its raters' ratings, every rater's ratings
read back as JSON, CSV and JSONL, one rater's removed; the agreement figures compare the judge with people's mean."""
from __future__ import annotations

import csv
import io
import json

import pytest
from scipy import stats

from kinds.dialogue import rating_store
from tests.conftest import jsonl, session_line, wait_for, wait_rescored
from tests.kinds.dialogue.test_agreement_with_people import _judged_totals
from tests.web.test_api import upload


def attach(client, evaluation_id: str, text: str, name: str = "people.csv", **form):
    """POST a ratings file; once accepted (202), wait until the rescore job it started is over."""
    answer = client.post(f"/api/evaluations/{evaluation_id}/human-ratings",
                         data={"file": (io.BytesIO(text.encode("utf-8")), name), **form},
                         content_type="multipart/form-data")
    if answer.status_code == 202:
        assert wait_rescored(client, evaluation_id)["status"] == "done"
    return answer


def detach(client, evaluation_id: str, rater: str | None = None):
    """DELETE people's ratings (one rater's); once accepted (202), wait until the rescore job is over."""
    answer = client.delete(f"/api/evaluations/{evaluation_id}/human-ratings" + (f"?rater={rater}" if rater else ""))
    if answer.status_code == 202:
        assert wait_rescored(client, evaluation_id)["status"] == "done"
    return answer


def human(client, evaluation_id: str) -> dict:
    """The result's agreement with people (agreement.human)."""
    return client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["agreement"]["human"]


def finished(client) -> str:
    upload_id = upload(client, jsonl(*(session_line(f"s{i}", 2) for i in range(3)))).get_json()["id"]
    done = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    assert done["status"] == "done", done
    return done["id"]


def table(rows: list[tuple]) -> str:
    return "".join(",".join("" if v is None else str(v) for v in row) + "\n" for row in rows)


def kept(client, evaluation_id: str) -> list[tuple]:
    """(rater, session, round, method, total, verdict) of every rating the API answers."""
    answer = client.get(f"/api/evaluations/{evaluation_id}/human-ratings").get_json()
    return [(r["rater"], r["session_id"], r["round"], r["method"], r["total"], r["verdict"]) for r in answer["ratings"]]


def test_several_raters_their_mean_and_the_agreement_with_it(client, judge_server):
    evaluation_id = finished(client)
    judged = _judged_totals(client, evaluation_id)  # (session, round, method) -> the judge's total
    replies = sorted(judged)
    assert len(replies) == 12
    # alice gives the judge's totals; bob another order of his own, on the first eight replies
    alice = {key: judged[key] for key in replies}
    bob = {key: float((judged[key] * 7 + 13 * n) % 101) for n, key in enumerate(replies[:8])}
    rows = [("rater", "session_id", "round", "method", "total")]
    rows += [("alice", *key, alice[key]) for key in replies] + [("bob", *key, bob[key]) for key in bob]
    answer = attach(client, evaluation_id, table(rows))
    assert answer.status_code == 202, answer.get_json()
    body = answer.get_json()
    assert (body["attached"], body["raters"], body["ratings"], body["replies"]) == (20, ["alice", "bob"], 20, 12)
    assert body["rescore"]["status"] in ("queued", "running", "done")  # a job updates the figures
    assert answer.headers["Location"].endswith(f"/api/evaluations/{evaluation_id}/rescore")
    mean = {key: (alice[key] + bob[key]) / 2 if key in bob else alice[key] for key in replies}
    agreement = human(client, evaluation_id)
    assert agreement["ratings"] == 12  # one item per reply: people's mean
    expected = stats.spearmanr([mean[k] for k in replies], [judged[k] for k in replies]).statistic
    assert agreement["by_rater"]["judge-test"]["total"]["spearman"]["value"] == pytest.approx(expected)

    # carol's verdicts, in a JSONL file without a rater column: hers by the form's field
    carol = "".join(json.dumps({"session_id": s, "round": k, "method": m, "binary": n % 2})
                    + "\n" for n, (s, k, m) in enumerate(replies[:4]))
    answer = attach(client, evaluation_id, carol, "verdicts.jsonl", rater="carol")
    assert answer.status_code == 202 and answer.get_json()["raters"] == ["carol"]
    assert answer.get_json()["ratings"] == 24
    # bob again, one rating now: his eight go, alice's and carol's stay
    assert attach(client, evaluation_id, table([("session_id", "round", "method", "total"), (*replies[0], 99)]),
                  "bob.csv", rater="bob").get_json()["raters"] == ["bob"]
    ratings = kept(client, evaluation_id)
    assert [r for r in ratings if r[0] == "bob"] == [("bob", *replies[0], 99.0, None)]
    assert sum(r[0] == "alice" for r in ratings) == 12 and sum(r[0] == "carol" for r in ratings) == 4
    summary = client.get(f"/api/evaluations/{evaluation_id}/human-ratings").get_json()["raters"]
    assert [(r["rater"], r["ratings"], r["sources"]) for r in summary] == [
        ("alice", 12, ["file"]), ("bob", 1, ["file"]), ("carol", 4, ["file"])]
    result = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    means = {(s, k, m): (alice[(s, k, m)] + 99) / 2 if (s, k, m) == replies[0] else alice[(s, k, m)]
             for s, k, m in replies}
    expected = stats.spearmanr([means[k] for k in replies], [judged[k] for k in replies]).statistic
    assert result["agreement"]["human"]["by_rater"]["judge-test"]["total"]["spearman"]["value"] == \
        pytest.approx(expected)
    assert result["agreement"]["human"]["rated"] == ["total", "verdict"]
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "17 ratings from alice, bob, carol are attached." in page


def test_ratings_read_back_as_files_and_attached_again_unchanged(client, judge_server):
    evaluation_id = finished(client)
    rows = [("rater", "session_id", "round", "method", "total", "binary", "style"),
            ("alice", "s0", 1, "A", 70.5, 1, 14), ("bob", "s0", 1, "A", 20, 0, None),
            ("=cmd()", "s1", 2, "B", None, 1, None)]  # a name a spreadsheet would run
    assert attach(client, evaluation_id, table(rows)).status_code == 202
    before = kept(client, evaluation_id)
    url = f"/api/evaluations/{evaluation_id}/human-ratings"
    answer = client.get(f"{url}?format=csv")
    assert answer.mimetype == "text/csv" and f"human-ratings-{evaluation_id}.csv" in answer.headers[
        "Content-Disposition"]
    exported = list(csv.reader(io.StringIO(answer.get_data(as_text=True))))
    assert exported[0] == ["rater", "session_id", "round", "method", "total", "binary", "style", "content",
                           "naturalness", "personalization", "conversation"]
    assert exported[1:] == [["'=cmd()", "s1", "2", "B", "", "1", "", "", "", "", ""],
                            ["alice", "s0", "1", "A", "70.5", "1", "14.0", "", "", "", ""],
                            ["bob", "s0", "1", "A", "20.0", "0", "", "", "", "", ""]]
    lines = client.get(f"{url}?format=jsonl&rater=alice")
    assert lines.mimetype == "application/jsonl"
    assert [json.loads(line) for line in lines.get_data(as_text=True).splitlines()] == [
        {"rater": "alice", "session_id": "s0", "round": 1, "method": "A", "total": 70.5, "binary": 1, "style": 14.0}]
    # each file attached again gives the same ratings (the CSV's neutralised name aside, a new rater "'=cmd()")
    jsonl_file = client.get(f"{url}?format=jsonl").get_data(as_text=True)
    assert attach(client, evaluation_id, jsonl_file, "all.jsonl").status_code == 202
    assert kept(client, evaluation_id) == before
    assert attach(client, evaluation_id, answer.get_data(as_text=True).removeprefix("\ufeff"),
                  "all.csv").status_code == 202
    assert kept(client, evaluation_id) == sorted([*before, ("'=cmd()", "s1", 2, "B", None, 1)])
    page_download = client.get(f"/evaluations/{evaluation_id}/human-ratings.csv").get_data(as_text=True)
    assert page_download.startswith("\ufeffrater,session_id,round,method,total,binary,style")


def test_one_raters_ratings_removed_then_all(client, judge_server):
    evaluation_id = finished(client)
    rows = [("rater", "session_id", "round", "method", "total"), ("alice", "s0", 1, "A", 70),
            ("bob", "s0", 1, "A", 20), ("bob", "s1", 1, "B", 30)]
    attach(client, evaluation_id, table(rows))
    url = f"/api/evaluations/{evaluation_id}/human-ratings"
    removed = detach(client, evaluation_id, "bob")
    assert removed.status_code == 202 and removed.get_json()["ratings"] == 1
    assert kept(client, evaluation_id) == [("alice", "s0", 1, "A", 70.0, None)]
    assert human(client, evaluation_id)["ratings"] == 1  # scored again without bob
    missing = detach(client, evaluation_id, "bob")
    assert missing.status_code == 404 and missing.get_json()["error"] == "There are no ratings by bob."
    assert detach(client, evaluation_id).get_json()["ratings"] == 0
    assert "human" not in client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"].get("agreement", {})
    assert client.get(url).get_json() == {"raters": [], "ratings": []}
    assert client.get("/api/evaluations/nope/human-ratings").status_code == 404


@pytest.mark.parametrize("text, name, line, path, message", [
    ("rater,session_id,round,method,total\n" + "x" * 81 + ",s0,1,A,50\n", "r.csv", 2, "rater",
     "Line 2: 'rater' must be a name of at most 80 characters, found a string"),
    ('{"rater": ["a"], "session_id": "s0", "round": 1, "method": "A", "total": 50}\n', "r.jsonl", 1, "rater",
     "Line 1: 'rater' must be a name of at most 80 characters, found a list."),
    ("rater,session_id,round,method,total\nann,s0,1,A,50\nbob,s0,1,A,50\nann,s0,1,A,60\n", "r.csv", 4, "",
     "Line 4 rates the same reply as line 2"),
    # a blank rater is the file's (here r.csv's), whose rating of the reply is on line 2
    ("rater,session_id,round,method,total\n,s0,1,A,50\nr.csv,s0,1,A,60\n", "r.csv", 3, "",
     "Line 3 rates the same reply as line 2"),
])
def test_a_rater_column_with_problems_is_refused_by_line_and_column(client, judge_server, text, name, line, path,
                                                                    message):
    evaluation_id = finished(client)
    answer = attach(client, evaluation_id, text, name)
    assert answer.status_code == 400
    problem = answer.get_json()["problems"][0]
    assert (problem["line"], problem["path"]) == (line, path) and problem["message"].startswith(message), problem
    assert kept(client, evaluation_id) == []


def test_the_api_names_a_wrong_field_and_refuses_what_it_cannot_attach(client, judge_server):
    evaluation_id = finished(client)
    good = "session_id,round,method,total\ns0,1,A,50\n"
    answer = attach(client, evaluation_id, good, rater="x" * 81)
    assert answer.status_code == 400 and answer.get_json()["problems"][0]["path"] == "rater"
    answer = client.get(f"/api/evaluations/{evaluation_id}/human-ratings?format=xml")
    assert answer.status_code == 400 and answer.get_json()["problems"][0]["path"] == "format"
    blank = attach(client, evaluation_id, good, rater=" ")  # a blank rater is none: the file's name
    assert blank.status_code == 202 and blank.get_json()["raters"] == ["people.csv"]


def test_the_result_page_form_takes_a_rater(client, judge_server):
    evaluation_id = finished(client)
    path = f"/evaluations/{evaluation_id}/human-ratings"
    form = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert 'name="rater"' in form and "A file replaces only the ratings of the raters it names." in form
    for name, rater in (("mine.csv", "dana"), ("people.csv", "")):
        answer = client.post(path, data={"file": (io.BytesIO(b"session_id,round,method,total\ns0,1,A,50\n"), name),
                                         "rater": rater}, content_type="multipart/form-data")
        assert answer.status_code == 302
    assert wait_rescored(client, evaluation_id)["status"] == "done"
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "2 ratings from dana, people.csv are attached." in page
    store = client.application.extensions["store"]
    assert [r["rater"] for r in rating_store.people_ratings(store, evaluation_id)] == ["dana", "people.csv"]
    assert rating_store.human_ratings(store, evaluation_id)[0]["raters"] == 2

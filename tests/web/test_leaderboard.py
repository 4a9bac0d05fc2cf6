"""A dataset's leaderboard over HTTP (web/leaderboard.py, web/leaderboard_table.py, pipeline/datasets.py): runs of
three files over the same four sessions, judged through the real pipeline by the local judge (tests/judge_server.py),
ranked by their AVG as their result documents give it, with the latest, best and tagged run per method; the trend,
the JSON and CSV downloads, the links to paired comparisons, and share links with accounts on."""
from __future__ import annotations

import csv
import hashlib
import io
import re

import pytest

from tests.conftest import jsonl, session_line, wait_for
from tests.web.test_api import upload
from tests.web.test_auth import PASSWORD, signed_in
from web import accounts

SESSIONS = ("s0", "s1", "s2", "s3")


def dialogue_file(bases: dict[str, int], sessions=SESSIONS, marker: str = "") -> bytes:
    """Each session of two rounds; method M's reply in session i scores bases[M] + i in round 1 and bases[M] + i + 10
    in round 2, so M's AL(1) = bases[M] + 1.5, AL(2) = bases[M] + 11.5 and its AVG = bases[M] + 6.5."""
    lines = []
    for i, sid in enumerate(sessions):
        s = session_line(sid, rounds=2, methods=tuple(bases))
        for k, rnd in enumerate(s["rounds"]):
            rnd["responses"] = {m: f"{m} {sid} r{k} {marker} [[score={base + i + 10 * k}]] [[keep=1]]"
                                for m, base in bases.items()}
        lines.append(s)
    return jsonl(*lines)


def evaluate(client, data: bytes, name: str) -> str:
    upload_id = upload(client, data, name).get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    assert wait_for(client, created["id"])["status"] == "done", created
    return created["id"]


@pytest.fixture
def dataset_runs(client):
    """(r1, r2, r3, other): three runs over sessions s0-s3, of three files, made in this order (r2 tagged
    "candidate", its sessions in another order), and a run over other sessions."""
    r1 = evaluate(client, dialogue_file({"A": 50, "B": 40}), "one.jsonl")
    r2 = evaluate(client, dialogue_file({"A": 30, "C": 45, "D": 30}, sessions=SESSIONS[::-1]), "two.jsonl")
    r3 = evaluate(client, dialogue_file({"A": 44, "B": 40}, marker="again"), "three.jsonl")
    other = evaluate(client, dialogue_file({"A": 90}, sessions=("t0", "t1")), "other.jsonl")
    assert client.patch(f"/api/evaluations/{r2}", json={"tags": ["candidate"]}).status_code == 200
    return r1, r2, r3, other


# The AVGs by hand (dialogue_file's docstring): base + 6.5; r2's sessions are reversed, so its session i is s(3-i),
# whose scores are still base + (its place in the file); the mean over the four is the same.
AVG = {("r1", "A"): 56.5, ("r1", "B"): 46.5, ("r2", "A"): 36.5, ("r2", "C"): 51.5, ("r2", "D"): 36.5,
       ("r3", "A"): 50.5, ("r3", "B"): 46.5}


def expected_dataset() -> str:
    """The dataset id by its definition (docs/leaderboard.md): SHA-256 of the kind and the sorted session ids."""
    return hashlib.sha256("dialogue\nsamples\ns0\ns1\ns2\ns3".encode()).hexdigest()[:16]


def ci_of(client, run: str, method: str) -> list[float]:
    """The AVG interval the run's result document gives."""
    return client.get(f"/api/evaluations/{run}").get_json()["result"]["methods"][method]["ci95"]["avg"]


def test_runs_of_the_same_sessions_form_one_dataset(client, dataset_runs):
    r1, r2, r3, other = dataset_runs
    found = {run: client.get(f"/api/evaluations/{run}/dataset").get_json()["dataset"] for run in dataset_runs}
    assert found[r1] == found[r2] == found[r3] == expected_dataset()
    assert found[other] not in (expected_dataset(), None)
    body = client.get(f"/api/datasets/{expected_dataset()}").get_json()
    assert [run["id"] for run in body["runs"]] == [r1, r2, r3]
    assert body["files"] == ["one.jsonl", "three.jsonl", "two.jsonl"] and body["tags"] == ["candidate"]


def test_latest_ranks_each_methods_latest_run(client, dataset_runs):
    r1, r2, r3, _other = dataset_runs
    body = client.get(f"/api/datasets/{expected_dataset()}").get_json()
    assert body["choice"] == "latest" and body["higher_is_better"] is True
    ranking = [(row["rank"], row["method"], row["value"], row["run"], row["runs"]) for row in body["ranking"]]
    assert ranking == [(1, "C", pytest.approx(51.5), r2, 1), (2, "A", pytest.approx(50.5), r3, 3),
                       (3, "B", pytest.approx(46.5), r3, 2), (4, "D", pytest.approx(36.5), r2, 1)]
    for row in body["ranking"]:  # the interval is the result document's, as it gives it
        assert row["ci95"] == ci_of(client, row["run"], row["method"])
        assert row["ci95"][0] <= row["value"] <= row["ci95"][1]


def test_best_ranks_each_methods_best_run_and_a_tie_takes_the_later(client, dataset_runs):
    r1, r2, r3, _other = dataset_runs
    body = client.get(f"/api/datasets/{expected_dataset()}?choice=best").get_json()
    ranking = [(row["rank"], row["method"], row["value"], row["run"]) for row in body["ranking"]]
    # B scores 46.5 in r1 and r3: the later run stands for it
    assert ranking == [(1, "A", pytest.approx(56.5), r1), (2, "C", pytest.approx(51.5), r2),
                       (3, "B", pytest.approx(46.5), r3), (4, "D", pytest.approx(36.5), r2)]


def test_a_tag_ranks_the_tagged_runs_only_and_equal_figures_share_a_rank(client, dataset_runs):
    _r1, r2, _r3, _other = dataset_runs
    body = client.get(f"/api/datasets/{expected_dataset()}?choice=tag&tag=candidate").get_json()
    assert body["tag"] == "candidate"
    ranking = [(row["rank"], row["method"], row["value"], row["run"]) for row in body["ranking"]]
    assert ranking == [(1, "C", pytest.approx(51.5), r2), (2, "A", pytest.approx(36.5), r2),
                       (2, "D", pytest.approx(36.5), r2)]
    nobody = client.get(f"/api/datasets/{expected_dataset()}?choice=tag&tag=nothing").get_json()
    assert nobody["ranking"] == []


def test_trend_is_each_methods_figure_over_its_runs(client, dataset_runs):
    r1, r2, r3, _other = dataset_runs
    trends = client.get(f"/api/datasets/{expected_dataset()}").get_json()["trends"]
    names = {r1: "r1", r2: "r2", r3: "r3"}
    assert {m: [(names[p["run"]], p["value"]) for p in points] for m, points in trends.items()} == {
        "A": [("r1", pytest.approx(56.5)), ("r2", pytest.approx(36.5)), ("r3", pytest.approx(50.5))],
        "B": [("r1", pytest.approx(46.5)), ("r3", pytest.approx(46.5))],
        "C": [("r2", pytest.approx(51.5))], "D": [("r2", pytest.approx(36.5))]}
    for method, points in trends.items():
        for p in points:
            assert p["value"] == pytest.approx(AVG[(names[p["run"]], method)])
            assert p["ci95"] == ci_of(client, p["run"], method)


def test_bad_choices_are_400_with_a_message(client, dataset_runs):
    dataset = expected_dataset()
    resp = client.get(f"/api/datasets/{dataset}?choice=worst")
    assert resp.status_code == 400 and "choice" in resp.get_json()["error"]
    resp = client.get(f"/api/datasets/{dataset}?choice=tag")
    assert resp.status_code == 400 and "tag=" in resp.get_json()["error"]
    page = client.get(f"/datasets/{dataset}?choice=tag")
    assert page.status_code == 400 and "tag=" in page.get_data(as_text=True)
    assert client.get("/api/datasets/0000000000000000").status_code == 404
    upload_id = upload(client, dialogue_file({"A": 1}), "queued.jsonl").get_json()["id"]
    store = client.application.extensions["store"]
    store.add_evaluation({"id": "not-run", "upload_id": upload_id, "kind": "dialogue", "methods": ["A"],
                          "settings": {}, "total": 0})
    unfinished = client.get("/api/evaluations/not-run/dataset")
    assert unfinished.status_code == 404 and "not-run has not finished (queued)" in unfinished.get_json()["error"]
    assert client.get("/datasets/0000000000000000").status_code == 404


def test_json_and_csv_downloads(client, dataset_runs):
    r1, r2, r3, _other = dataset_runs
    dataset = expected_dataset()
    resp = client.get(f"/datasets/{dataset}.json?choice=best")
    assert resp.status_code == 200 and "attachment" in resp.headers["Content-Disposition"]
    assert resp.get_json() == client.get(f"/api/datasets/{dataset}?choice=best").get_json()
    resp = client.get(f"/datasets/{dataset}.csv?choice=best")
    assert resp.mimetype == "text/csv"
    rows = list(csv.reader(io.StringIO(resp.get_data(as_text=True).lstrip("\ufeff"))))
    assert rows[0] == ["rank", "method", "value", "ci95_low", "ci95_high", "run", "created_at", "runs"]
    assert [(r[0], r[1], float(r[2]), r[5], r[7]) for r in rows[1:]] == [
        ("1", "A", 56.5, r1, "3"), ("2", "C", 51.5, r2, "1"), ("3", "B", 46.5, r3, "2"), ("4", "D", 36.5, r2, "1")]
    assert [float(rows[1][3]), float(rows[1][4])] == ci_of(client, r1, "A")
    trend = list(csv.reader(io.StringIO(client.get(f"/datasets/{dataset}/trend.csv").get_data(as_text=True)
                                        .lstrip("\ufeff"))))
    assert trend[0] == ["method", "run", "created_at", "value", "ci95_low", "ci95_high"]
    assert [(r[0], r[1], float(r[3])) for r in trend[1:]] == [
        ("C", r2, 51.5), ("A", r1, 56.5), ("A", r2, 36.5), ("A", r3, 50.5), ("B", r1, 46.5), ("B", r3, 46.5),
        ("D", r2, 36.5)]


def test_page_ranks_draws_and_links_to_paired_comparisons(client, dataset_runs):
    r1, r2, r3, _other = dataset_runs
    dataset = expected_dataset()
    html = client.get(f"/datasets/{dataset}").get_data(as_text=True)
    assert 'data-figure="trend"' in html and "51.5" in html and "one.jsonl" in html
    resp = client.get(f"/datasets/{dataset}/compare?a={r3}&b={r1}")
    assert resp.status_code == 302
    assert resp.headers["Location"] == f"/compare?ids={r1},{r3}&baseline={r1}"
    compared = client.get(resp.headers["Location"])
    assert compared.status_code == 200 and 'id="paired"' in compared.get_data(as_text=True)
    paired = client.get(f"/api/compare?ids={r1}&ids={r3}&baseline={r1}").get_json()["paired"]
    a_avg = next(row for row in paired if row["method"] == "A" and row["metric"] == "avg")
    assert a_avg["diff"] == pytest.approx(50.5 - 56.5)
    same = client.get(f"/datasets/{dataset}/compare?a={r2}&b={r2}")
    assert same.status_code == 302 and same.headers["Location"] == f"/evaluations/{r2}"
    stranger = client.get(f"/datasets/{dataset}/compare?a={r1}&b=nope")
    assert stranger.status_code == 400 and "nope" in stranger.get_data(as_text=True)
    # each method's run links to the comparison with its run before
    assert f"/datasets/{dataset}/compare?a={r1}&amp;b={r2}" in html


def test_result_and_upload_pages_link_the_leaderboard(client, dataset_runs):
    r1 = dataset_runs[0]
    link = f"/datasets/{expected_dataset()}"
    assert link in client.get(f"/evaluations/{r1}").get_data(as_text=True)
    upload_id = client.get(f"/api/evaluations/{r1}").get_json()["upload_id"]
    assert link in client.get(f"/uploads/{upload_id}").get_data(as_text=True)


def test_runs_finished_before_datasets_existed_get_theirs(client, app, dataset_runs):
    r1, r2, r3, _other = dataset_runs
    store = app.extensions["store"]
    store._write("UPDATE evaluations SET dataset = NULL, intervals = NULL")
    body = client.get(f"/api/datasets/{expected_dataset()}").get_json()
    assert [run["id"] for run in body["runs"]] == [r1, r2, r3]
    assert body["ranking"][0]["ci95"] == ci_of(client, r2, "C")


@pytest.fixture
def auth_client(make_app, judge_env):
    """An app with accounts on and a client signed in as its administrator."""
    app = make_app(judge_env, AUTH="on")
    accounts.create_user(app.extensions["store"], "ada", PASSWORD, is_admin=True)
    return app, signed_in(app, "ada")


def test_a_share_link_opens_the_leaderboard_without_an_account(auth_client):
    app, client = auth_client
    r1 = evaluate(client, dialogue_file({"A": 50, "B": 40}), "one.jsonl")
    evaluate(client, dialogue_file({"A": 60, "B": 40}, marker="x"), "two.jsonl")
    dataset = client.get(f"/api/evaluations/{r1}/dataset").get_json()["dataset"]
    stranger = app.test_client()
    assert stranger.get(f"/datasets/{dataset}").status_code == 302  # to sign in
    assert stranger.get(f"/api/datasets/{dataset}").status_code == 401
    created = client.post(f"/api/datasets/{dataset}/shares")
    assert created.status_code == 201
    share = created.get_json()
    page = stranger.get(f"/share/datasets/{share['token']}")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and 'data-figure="trend"' in html and "66.5" in html
    assert page.headers["Referrer-Policy"] == "no-referrer" and "noindex" in page.headers["X-Robots-Tag"]
    assert f"/evaluations/{r1}" not in html and "/compare" not in html and 'id="share"' not in html
    assert f'/share/datasets/{share["token"]}.json' in html and f'/share/datasets/{share["token"]}.csv' in html
    shared_json = stranger.get(f"/share/datasets/{share['token']}.json").get_json()
    assert [row["value"] for row in shared_json["ranking"]] == [pytest.approx(66.5), pytest.approx(46.5)]
    rows = stranger.get(f"/share/datasets/{share['token']}.csv").get_data(as_text=True).lstrip("\ufeff").splitlines()
    assert rows[1].startswith("1,A,66.5")
    assert client.post(f"/api/datasets/{dataset}/shares/{share['id']}/revoke").get_json()["active"] is False
    assert stranger.get(f"/share/datasets/{share['token']}").status_code == 404
    listed = client.get(f"/api/datasets/{dataset}/shares").get_json()
    assert [s["id"] for s in listed] == [share["id"]] and listed[0]["revoked_at"]


def test_runs_of_a_kind_without_sample_ids_form_a_dataset_by_their_file(client):
    # AgentBench names no sample ids: two runs of one file (uploaded twice) are a dataset, another file is not
    from tests.kinds.agentbench.test_agentbench_pipeline import outputs_zip

    data = outputs_zip()
    first, second = (evaluate(client, data, name) for name in ("outputs.zip", "again.zip"))
    datasets = {run: client.get(f"/api/evaluations/{run}/dataset").get_json()["dataset"] for run in (first, second)}
    sha = hashlib.sha256(data).hexdigest()
    assert datasets[first] == datasets[second] == hashlib.sha256(
        f"agentbench\nupload\n{sha}".encode()).hexdigest()[:16]
    body = client.get(f"/api/datasets/{datasets[first]}").get_json()
    agents = client.get(f"/api/evaluations/{second}").get_json()["result"]["agents"]
    expected = sorted(((name, agent["oa"]) for name, agent in agents.items()), key=lambda item: (-item[1], item[0]))
    assert [(row["method"], row["value"]) for row in body["ranking"]] == expected
    assert all(row["ci95"] is None and row["run"] == second and row["runs"] == 2 for row in body["ranking"])
    html = client.get(f"/datasets/{datasets[first]}").get_data(as_text=True)
    # no interval: a dash in the ranking's 95% CI column
    assert re.search(r'<th scope="row">agent-a</th>\s*<td class="num">[\d.]+</td><td class="num">—</td>', html)


def test_a_lower_is_better_figure_ranks_the_lowest_first_and_best_is_the_lowest():
    from web.leaderboard_table import leaderboard

    runs = [{"id": "r1", "created_at": "1", "headline": [["", 0.30]], "intervals": {}, "tags": []},
            {"id": "r2", "created_at": "2", "headline": [["", 0.10]], "intervals": {}, "tags": ["x"]},
            {"id": "r3", "created_at": "3", "headline": [["", 0.20]], "intervals": {}, "tags": []}]
    assert [row["run"] for row in leaderboard(runs, "best", higher_is_better=False)["ranking"]] == ["r2"]
    assert [row["run"] for row in leaderboard(runs, "best", higher_is_better=True)["ranking"]] == ["r1"]
    two = [{"id": "r1", "created_at": "1", "headline": [["a", 0.3], ["b", 0.1], ["c", 0.1]], "intervals": {},
            "tags": []}]
    ranking = leaderboard(two, higher_is_better=False)["ranking"]
    assert [(row["rank"], row["method"]) for row in ranking] == [(1, "b"), (1, "c"), (3, "a")]

"""The list of evaluations at scale (issue 41, item 1): search, filters, sort and pages over HTTP, on SQLite and on
PostgreSQL (the queries differ: case-sensitive tags, LIKE), through GET /api/evaluations, the page /evaluations and
the compare picker; a wrong parameter is a 400 naming it; default titles; the list's forms on the ticked runs; who
started a run with accounts on; schema step 22 on a database that had runs before it."""
from __future__ import annotations

import io
import json
import re

import pytest
from markupsafe import escape
from sqlalchemy import create_engine, text

from kinds import registry
from storage import migrations as store_migrations
from storage.database import database_url
from storage.store import Store
from tests.conftest import jsonl, session_line
from web import accounts

# id -> (file, kind, settings, methods, status, headline, created_at, title, tags, started_by)
RUNS = {
    "r1": ("alpha.jsonl", "dialogue", {"model": "gpt-4o"}, ["A", "B"], "done", [["A", 60.0], ["B", 40.0]],
           "2026-01-01T10:00:00+00:00", None, ["v1"], None),
    "r2": ("alpha.jsonl", "dialogue", {"model": "claude-3"}, ["A", "B"], "done", [["A", 70.0], ["B", 20.0]],
           "2026-01-02T10:00:00+00:00", "Zeta run", ["v2", "final"], None),
    "r3": ("beta.jsonl", "dialogue", {"model": "gpt-4o", "rubric": {"id": "helpful", "version": "2", "sha256": "x"}},
           ["A"], "failed", None, "2026-01-03T10:00:00+00:00", None, [], "ann"),
    "r4": ("beta.jsonl", "dialogue", {"model": "gpt-4o-mini"}, ["A"], "done", [["A", 55.0]],
           "2026-01-04T23:59:59+00:00", None, ["V1"], "bob"),
    "r5": ("moves.jsonl", "mobility", {"reference_name": "beijing"}, [], "done", [["", 0.42]],
           "2026-01-05T10:00:00+00:00", None, [], None),
}


def seed(store: Store, runs: dict = RUNS) -> None:
    """Store each run as the pipeline leaves it (an upload per file; status, headline, title and tags, the time it
    was created), without judging anything."""
    uploads: dict[str, str] = {}
    for run_id, (filename, kind, settings, methods, status, headline, created, title, tags, who) in runs.items():
        if filename not in uploads:
            uploads[filename] = f"u-{len(uploads)}"
            store.add_upload({"id": uploads[filename], "sha256": filename, "kind": kind, "filename": filename,
                              "size": 1, "summary": {}, "warnings": []})
        store.add_evaluation({"id": run_id, "upload_id": uploads[filename], "kind": kind, "methods": methods,
                              "settings": settings, "total": 0, "started_by": who})
        store.set_status(run_id, status)
        if headline is not None:
            store.set_headline(run_id, headline)
        store.set_labels("evaluations", run_id, title, tags)
        store.execute("UPDATE evaluations SET created_at = :at WHERE id = :id", {"at": created, "id": run_id})


@pytest.fixture(params=["sqlite", "postgresql"])
def listed(request, make_app):
    """A client of an app whose store holds RUNS, once on each database."""
    config = {} if request.param == "sqlite" else {"DATABASE_URL": request.getfixturevalue("postgres_server").url()}
    app = make_app(**config)
    seed(app.extensions["store"])
    return app.test_client()


def ids(client, query: str = "") -> list[str]:
    resp = client.get(f"/api/evaluations{query}")
    assert resp.status_code == 200, resp.get_json()
    return [e["id"] for e in resp.get_json()]


def test_search_matches_title_file_tag_method_judge_model_and_rubric(listed):
    assert ids(listed) == ["r5", "r4", "r3", "r2", "r1"]  # newest first
    assert ids(listed, "?q=zeta") == ["r2"]  # the title
    assert ids(listed, "?q=BETA") == ["r4", "r3"]  # the file name, any case
    assert ids(listed, "?q=final") == ["r2"]  # a tag
    assert ids(listed, "?q=gpt") == ["r4", "r3", "r1"]  # the judge model
    assert ids(listed, "?q=gpt%204o%20mini") == ["r4"]  # every word must be there
    assert ids(listed, "?q=helpful") == ["r3"]  # the rubric
    assert ids(listed, "?q=beijing") == ["r5"]  # the reference set
    assert ids(listed, "?q=%25") == [] and ids(listed, "?q=_") == []  # LIKE's wildcards are taken literally
    assert ids(listed, "?q=claude%20beta") == []


def test_each_filter(listed):
    assert ids(listed, "?kind=mobility") == ["r5"]
    assert ids(listed, "?status=failed") == ["r3"]
    assert ids(listed, "?status=done&kind=dialogue") == ["r4", "r2", "r1"]
    assert ids(listed, "?tag=v1") == ["r1"] and ids(listed, "?tag=V1") == ["r4"]  # a tag's case counts
    assert ids(listed, "?tag=v") == []  # a whole tag, not a part of one
    assert ids(listed, "?started_by=ann") == ["r3"]
    assert ids(listed, "?since=2026-01-02&until=2026-01-04") == ["r4", "r3", "r2"]  # both days included
    assert ids(listed, "?until=2026-01-01") == ["r1"] and ids(listed, "?since=2026-01-05") == ["r5"]
    assert ids(listed, "?since=9999-12-31") == [] and ids(listed, "?until=9999-12-31") == ["r5", "r4", "r3", "r2", "r1"]


def test_sorts(listed):
    assert ids(listed, "?sort=oldest") == ["r1", "r2", "r3", "r4", "r5"]
    # A given title, else the file name: alpha (r1), beta (r4 then r3: newest first), moves (r5), zeta run (r2).
    assert ids(listed, "?sort=title") == ["r1", "r4", "r3", "r5", "r2"]
    # Method A's average: 70, 60, 55; runs without one last, newest first.
    assert ids(listed, "?sort=figure-high&figure=A") == ["r2", "r1", "r4", "r5", "r3"]
    assert ids(listed, "?sort=figure-low&figure=A") == ["r4", "r1", "r2", "r5", "r3"]
    assert ids(listed, "?sort=figure-high&figure=B") == ["r1", "r2", "r5", "r4", "r3"]
    assert ids(listed, "?sort=figure-high") == ["r5", "r4", "r3", "r2", "r1"]  # the unnamed figure: mobility's


def test_pages_and_their_count(listed):
    resp = listed.get("/api/evaluations?per_page=2&page=2")
    assert [e["id"] for e in resp.get_json()] == ["r3", "r2"]
    assert (resp.headers["X-Total-Count"], resp.headers["X-Page"], resp.headers["X-Per-Page"]) == ("5", "2", "2")
    links = dict((rel, url) for url, rel in re.findall(r'<([^>]+)>; rel="(\w+)"', resp.headers["Link"]))
    assert links["next"].endswith("/api/evaluations?per_page=2&page=3")
    assert links["prev"].endswith("/api/evaluations?per_page=2&page=1")
    last = listed.get("/api/evaluations?per_page=2&page=3")
    assert [e["id"] for e in last.get_json()] == ["r1"] and last.headers["X-Total-Count"] == "5"
    assert 'rel="next"' not in last.headers["Link"]
    beyond = listed.get("/api/evaluations?per_page=2&page=4")
    assert beyond.get_json() == [] and beyond.headers["X-Total-Count"] == "5"
    filtered = listed.get("/api/evaluations?kind=dialogue&per_page=2")
    assert filtered.headers["X-Total-Count"] == "4" and "Link" in filtered.headers

    page = listed.get("/evaluations?per_page=2&page=2&sort=oldest")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "3–4 of 5" in html and "Page 2 of 3" in html
    assert re.findall(r'name="ids" value="(\w+)"', html) == ["r3", "r4"]
    assert 'href="/evaluations?per_page=2&amp;page=3&amp;sort=oldest" rel="next"' in html
    past = listed.get("/evaluations?per_page=2&page=9").get_data(as_text=True)  # past the end: the last page
    assert "5–5 of 5" in past and re.findall(r'name="ids" value="(\w+)"', past) == ["r1"]


def test_the_page_filters_and_searches_like_the_api(listed):
    html = listed.get("/evaluations?q=gpt&status=done&tag=").get_data(as_text=True)
    assert re.findall(r'name="ids" value="(\w+)"', html) == ["r4", "r1"] and "1–2 of 2" in html
    assert 'value="gpt"' in html  # the search stays in its box
    nothing = listed.get("/evaluations?q=nothing-like-it").get_data(as_text=True)
    assert "No evaluation matches these filters." in nothing and "Evaluations none</p>" in nothing


def test_wrong_parameters_are_a_400_naming_them(listed):
    for query, words in (("page=0", "'page'"), ("per_page=501", "'per_page'"), ("sort=best", "'sort'"),
                         ("since=2026-13-01", "'since'"), ("status=lost", "'status'"), ("kind=nope", "Unknown kind"),
                         ("kind=personas", "Unknown kind"), ("q=" + "x" * 201, "'q'"), ("colour=red", "'colour'"),
                         ("page=x", "'page'")):
        resp = listed.get(f"/api/evaluations?{query}")
        assert resp.status_code == 400 and words in resp.get_json()["error"], (query, resp.get_json())
        page = listed.get(f"/evaluations?{query}")
        if query != "colour=red":  # the page reads only its own parameters
            assert page.status_code == 400 and str(escape(words)) in page.get_data(as_text=True), query


def test_runs_without_a_title_are_named_by_file_judge_rubric_and_date(listed):
    listed_runs = {e["id"]: e for e in listed.get("/api/evaluations").get_json()}
    assert listed_runs["r1"]["display_title"] == "alpha.jsonl · gpt-4o · 2026-01-01 10:00"
    assert listed_runs["r3"]["display_title"] == "beta.jsonl · gpt-4o · helpful 2 · 2026-01-03 10:00"
    assert listed_runs["r5"]["display_title"] == "moves.jsonl · beijing · 2026-01-05 10:00"
    assert listed_runs["r2"]["display_title"] == "Zeta run" and listed_runs["r2"]["title"] == "Zeta run"
    assert listed_runs["r3"]["started_by"] == "ann" and listed_runs["r1"]["started_by"] is None
    html = listed.get("/evaluations").get_data(as_text=True)
    assert ">alpha.jsonl · gpt-4o · 2026-01-01 10:00</a>" in html and ">Zeta run</a>" in html


def test_titles_two_runs_would_share_get_their_short_ids(make_app):
    app = make_app()
    store = app.extensions["store"]
    same = {f"run{i}abc": ("one.jsonl", "dialogue", {"model": "m"}, ["A"], "done", [["A", 50.0]],
                           "2026-02-01T09:30:00+00:00", None, [], None) for i in range(2)}
    seed(store, same)
    html = app.test_client().get("/evaluations").get_data(as_text=True)
    assert "one.jsonl · m · 2026-02-01 09:30 · run0ab" in html and "one.jsonl · m · 2026-02-01 09:30 · run1ab" in html


def test_the_compare_picker_searches_finished_runs(listed):
    html = listed.get("/compare?q=gpt").get_data(as_text=True)
    assert re.findall(r'name="ids" value="(\w+)"', html) == ["r4", "r1"]  # r3 failed: not offered
    assert "1–2 of 2" in html and 'value="gpt"' in html
    assert re.findall(r'name="ids" value="(\w+)"', listed.get("/compare?kind=mobility").get_data(as_text=True)) == ["r5"]
    assert "No finished evaluation matches" in listed.get("/compare?q=zzz").get_data(as_text=True)
    assert listed.get("/compare?page=0").status_code == 400


def test_tagging_and_deleting_the_ticked_runs(listed):
    back = "/evaluations?q=alpha"
    resp = listed.post("/evaluations/selected", data={"ids": ["r1", "r2"], "action": "tag", "tags": "sweep, v1",
                                                      "back": back})
    assert resp.status_code == 303 and resp.headers["Location"] == back
    tags = {e["id"]: e["tags"] for e in listed.get("/api/evaluations").get_json()}
    assert tags["r1"] == ["v1", "sweep"] and tags["r2"] == ["v2", "final", "sweep", "v1"]
    assert ids(listed, "?tag=sweep") == ["r2", "r1"] and ids(listed, "?q=sweep") == ["r2", "r1"]  # searchable at once
    assert listed.post("/evaluations/selected", data={"ids": ["r1"], "action": "tag", "tags": " "}).status_code == 400
    assert listed.post("/evaluations/selected", data={"action": "tag", "tags": "x"}).status_code == 400

    # Deleting asks first: the page names what goes, then the confirmed form deletes it.
    ask = listed.post("/evaluations/selected", data={"ids": ["r1", "r3"], "action": "delete", "back": back})
    html = ask.get_data(as_text=True)
    assert ask.status_code == 200 and "Delete 2 evaluations?" in html and "alpha.jsonl · gpt-4o" in html
    assert ids(listed) == ["r5", "r4", "r3", "r2", "r1"]  # nothing deleted yet
    done = listed.post("/evaluations/delete", data={"ids": ["r1", "r3"], "back": "https://elsewhere.example/"})
    assert done.status_code == 303 and done.headers["Location"] == "/evaluations"  # never off the site
    assert ids(listed) == ["r5", "r4", "r2"]


def test_a_running_run_is_kept_when_the_ticked_are_deleted(make_app):
    app = make_app()
    store = app.extensions["store"]
    seed(store, {k: RUNS[k] for k in ("r1", "r2")})
    store.set_status("r2", "running")
    client = app.test_client()
    html = client.post("/evaluations/selected", data={"ids": ["r1", "r2"], "action": "delete"}).get_data(as_text=True)
    assert "Delete 1 evaluation?" in html and "still running: kept" in html
    assert re.findall(r'type="hidden" name="ids" value="(\w+)"', html) == ["r1"]
    refused = client.post("/evaluations/delete", data={"ids": ["r1", "r2"]})
    assert refused.status_code == 409 and "r2" in refused.get_data(as_text=True)
    assert ids(client) == ["r2"]


def test_the_user_who_started_a_run_is_kept_and_filtered_by(make_app, judge_env):
    app = make_app(judge_env, AUTH="on")
    store = app.extensions["store"]
    user = accounts.create_user(store, "carol", "correct horse battery staple")
    _record, token = accounts.create_token(store, user["id"], "t")
    headers = {"Authorization": f"Bearer {token}"}
    client = app.test_client()
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line("s1", 2))), "log.jsonl")},
                         headers=headers).get_json()
    started = client.post("/api/evaluations", json={"upload_id": upload["id"]}, headers=headers).get_json()
    listed_runs = client.get("/api/evaluations?started_by=carol", headers=headers).get_json()
    assert [e["id"] for e in listed_runs] == [started["id"]] and listed_runs[0]["started_by"] == "carol"
    assert client.get("/api/evaluations?started_by=dave", headers=headers).get_json() == []


def test_step_22_keeps_the_headline_figures_of_runs_made_before_it(store_url):
    engine = create_engine(database_url(store_url))
    store_migrations.migrate(engine, up_to=21, tables=registry.tables())
    with engine.begin() as con:
        con.execute(text("INSERT INTO uploads (id, sha256, kind, filename, size, summary, warnings, created_at)"
                         " VALUES ('u', 's', 'dialogue', 'old.jsonl', 1, '{}', '[]', '2025-01-01T00:00:00+00:00')"))
        for run_id, headline in (("old1", [["A", 61.5], ["B", None]]), ("old2", None), ("old3", [["", 3]])):
            con.execute(text("INSERT INTO evaluations (id, upload_id, kind, status, methods, settings, created_at,"
                             " headline) VALUES (:id, 'u', 'dialogue', 'done', '[\"A\"]', '{\"model\": \"m1\"}',"
                             " '2025-01-01T00:00:00+00:00', :h)"),
                        {"id": run_id, "h": None if headline is None else json.dumps(headline)})
    engine.dispose()
    store = Store(store_url, registry.tables())
    assert 22 in store.migrated
    figures = store.rows("SELECT evaluation_id, name, value FROM evaluation_figures ORDER BY evaluation_id, name")
    assert figures == [{"evaluation_id": "old1", "name": "A", "value": 61.5},
                       {"evaluation_id": "old3", "name": "", "value": 3.0}]
    from pipeline.housekeeping import make_search_texts
    make_search_texts(store)  # what the first list does: runs from before get their search texts
    assert store.rows("SELECT search_text, sort_title FROM evaluations WHERE id = 'old1'") == [
        {"search_text": "old.jsonl\na\nm1", "sort_title": "old.jsonl"}]
    store.close()

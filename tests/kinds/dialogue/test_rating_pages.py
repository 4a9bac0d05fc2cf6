"""Rating in the browser (issue 40, item 1) through the Flask test client: "Ask people" draws the slice and suggests
its size, raters rate through links (accounts off) or as their account (accounts on), skip, go back, see their saved
ratings and their progress; a rating link opens its evaluation's rating pages and nothing else, stops at once when
revoked and is kept only as a hash; forms need their CSRF token; "Update the figures" scores the evaluation again."""
from __future__ import annotations

import hashlib
import html
import json
import re
from urllib.parse import urlsplit

import pytest

from kinds.dialogue import rating_slice, rating_store
from tests.conftest import jsonl, wait_for, wait_rescored
from tests.web.test_api import upload
from tests.web.test_auth import PASSWORD, signed_in
from web import accounts

METHODS = ("MethodAlpha", "MethodBeta")
DIMENSIONS = ("style", "content", "naturalness", "personalization", "conversation")
# MethodAlpha's totals alternate 40 and 60, MethodBeta's are all 50 (the local judge reads the [[score=]] marks).
ALPHA = [40, 60, 40, 60, 40, 60]


def session(i: int) -> dict:
    """Session s<i>: two rounds; replies that do not name their method, one with markup that must stay text."""
    return {"session_id": f"s{i}", "user_profile": f"Profile of s{i}: a nurse who <b>runs</b> marathons.",
            "user_personality": "Cheerful and direct.",
            "rounds": [{"round": k, "user_message": f"s{i} asks question {k} <i>now</i>",
                        "responses": {METHODS[0]: f"first reply {i}.{k} <script>alert(1)</script> [[score={ALPHA[i]}]]",
                                      METHODS[1]: f"second reply {i}.{k} [[score=50]]"}} for k in (1, 2)]}


def evaluate(client) -> str:
    upload_id = upload(client, jsonl(*(session(i) for i in range(6)))).get_json()["id"]
    body = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    assert body["status"] == "done", body
    return body["id"]


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def draw(client, evaluation_id: str, size: int = 10, seed: int = 3):
    return client.post(f"/evaluations/{evaluation_id}/rating/slice", data={"size": str(size), "seed": str(seed)})


def make_link(client, evaluation_id: str, name: str) -> str:
    """A rating link made on the Ask people page: its path, as the page shows it this once."""
    resp = client.post(f"/evaluations/{evaluation_id}/rating/links", data={"name": name})
    assert resp.status_code == 302 and resp.headers["Location"].endswith(f"/evaluations/{evaluation_id}/rating#links")
    page = client.get(f"/evaluations/{evaluation_id}/rating")
    assert "no-store" in page.headers["Cache-Control"]
    address = re.search(r'value="(http://localhost/rate/[^"]+)"', page.get_data(as_text=True)).group(1)
    assert address not in client.get(f"/evaluations/{evaluation_id}/rating").get_data(as_text=True)  # once
    return urlsplit(address).path


def form_of(html: str) -> dict:
    """The rating form's hidden fields and the values it shows (radio buttons checked, number fields filled)."""
    form = re.search(r'<form method="post" id="rating-form".*?</form>', html, re.S).group(0)
    values = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
    values.update(re.findall(r'name="([^"]+)" value="([^"]+)" required checked', form))
    values.update((n, v) for n, v in re.findall(r'type="number" name="([^"]+)"[^>]*value="([^"]*)"', form) if v)
    return values


def rating(*dims: int, verdict: int = 1) -> dict:
    return {**{f"dim-{key}": str(v) for key, v in zip(DIMENSIONS, dims)}, "binary": str(verdict)}


def rate(client, path: str, values: dict):
    page = client.get(path)
    assert page.status_code == 200, text(page.get_data(as_text=True))
    return client.post(path, data={**form_of(page.get_data(as_text=True)), **values})


def kept(app, evaluation_id: str, rater: str | None = None) -> list[dict]:
    with app.app_context():
        return rating_store.people_ratings(app.extensions["store"], evaluation_id, rater)


def items(app, evaluation_id: str) -> list[tuple]:
    with app.app_context():
        return rating_slice.slice_of(app.extensions["store"], evaluation_id)["items"]


# -- Ask people ---------------------------------------------------------------------------------------------------

def test_ask_people_draws_the_slice_per_stratum_and_suggests_its_size(client):
    evaluation_id = evaluate(client)
    result = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert f'href="/evaluations/{evaluation_id}/rating"' in result  # from the Agreement with people card
    page = text(client.get(f"/evaluations/{evaluation_id}/rating").get_data(as_text=True))
    assert "24 replies have a valid judgment." in page and "No slice has been drawn yet." in page
    # MethodAlpha: twelve totals of 40 and 60, mean 50, variance 12 x 100 / 11 = 109.09, s = 10.445 (MethodBeta: 0).
    # Width 10: (2 x 1.96 x 10.445 / 10)^2 = 16.76 -> 17 per method, 34 for two: more than the 24 judged.
    assert "Suggested: 17 ratings per method for an interval on each method's mean about 10.0 points wide, more " \
           "than the replies judged: rate all 24." in page
    # Width 20: (3.92 x 10.445 / 20)^2 = 4.19 -> 5 per method, 10 in all.
    wide = text(client.get(f"/evaluations/{evaluation_id}/rating?width=20").get_data(as_text=True))
    assert "Suggested: 5 ratings per method, 10 in all, for an interval on each method's mean about 20.0" in wide

    resp = draw(client, evaluation_id, 10, 3)
    assert resp.status_code == 302 and resp.headers["Location"].endswith(f"/evaluations/{evaluation_id}/rating#slice")
    page = text(client.get(f"/evaluations/{evaluation_id}/rating").get_data(as_text=True))
    assert "The slice holds 10 replies (seed 3)" in page
    # four strata of six: 10 // 4 = 2 each, the remainder to the first two (MethodAlpha's rounds 1 and 2)
    assert "MethodAlpha 1 6 3 MethodAlpha 2 6 3 MethodBeta 1 6 2 MethodBeta 2 6 2" in page
    first = items(client.application, evaluation_id)
    assert len(set(first)) == 10
    draw(client, evaluation_id, 10, 3)
    assert items(client.application, evaluation_id) == first  # the same seed, the same slice
    draw(client, evaluation_id, 30, 4)  # more than the strata hold: all of them
    assert sorted(items(client.application, evaluation_id)) == sorted(
        (f"s{i}", k, m) for i in range(6) for k in (1, 2) for m in METHODS)


@pytest.mark.parametrize("form, words", [
    ({"size": "0", "seed": "1"}, "The number of replies must be a whole number from 1 to 100000."),
    ({"size": "ten", "seed": "1"}, "The number of replies must be a whole number from 1 to 100000."),
    ({"size": "5", "seed": "-1"}, "The seed must be a whole number from 0 to 2147483647."),
    ({"size": "5"}, "The seed must be a whole number from 0 to 2147483647.")])
def test_a_bad_size_or_seed_is_explained(client, form, words):
    evaluation_id = evaluate(client)
    resp = client.post(f"/evaluations/{evaluation_id}/rating/slice", data=form)
    assert resp.status_code == 400 and words in resp.get_data(as_text=True)
    assert "No slice has been drawn yet." in text(resp.get_data(as_text=True))


# -- rating through links (accounts off) --------------------------------------------------------------------------

def test_raters_rate_skip_go_back_and_see_their_progress(client, app):
    evaluation_id = evaluate(client)
    draw(client, evaluation_id, 10, 3)
    slice_items = items(app, evaluation_id)
    alice, bob = make_link(client, evaluation_id, "alice"), make_link(client, evaluation_id, "bob")
    guest = app.test_client()
    start = text(guest.get(alice).get_data(as_text=True))
    assert "You rate as alice." in start and "You have rated 0 of 10." in start
    assert f'href="{alice}/0"' in guest.get(alice).get_data(as_text=True)

    page = guest.get(f"{alice}/0").get_data(as_text=True)
    assert "Reply 1 of 10" in text(page) and "You (alice) have rated 0 of 10." in text(page)
    session_id, number, method = slice_items[0]
    assert f"<code>{session_id}</code>" in page and f"{session_id} asks question {number}" in page
    for name in METHODS:
        assert name not in page  # rated blind
    assert f'href="{alice}/1"' in page and 'data-back=""' in page  # skip; no way back from the first

    resp = rate(guest, f"{alice}/0", rating(12, 13, 14, 15, 16, verdict=1))
    assert resp.status_code == 302 and resp.headers["Location"].endswith(f"{alice}/1")
    [row] = kept(app, evaluation_id, "alice")
    assert (row["session_id"], row["round"], row["method"]) == slice_items[0]
    # the total is the rubric's headline of the dimensions: personasteer sums them, 12 + 13 + 14 + 15 + 16 = 70
    assert (row["total"], row["verdict"], row["source"]) == (70, 1, "browser")
    assert [row[k] for k in DIMENSIONS] == [12, 13, 14, 15, 16]

    # skip reply 2 (a link, nothing saved), rate reply 3: the next not rated is 4
    second = guest.get(f"{alice}/1").get_data(as_text=True)
    assert f'href="{alice}/2"' in second and f'href="{alice}/0"' in second  # skip, and back
    resp = rate(guest, f"{alice}/2", rating(1, 2, 3, 4, 5, verdict=0))
    assert resp.headers["Location"].endswith(f"{alice}/3")
    assert len(kept(app, evaluation_id, "alice")) == 2
    # back to the first: the saved rating is shown
    back = guest.get(f"{alice}/0").get_data(as_text=True)
    assert "Your saved rating is filled in" in back
    assert form_of(back) | rating(12, 13, 14, 15, 16) == form_of(back)
    # rate every other reply: after the last, the skipped one comes back; after it, the queue's first page
    for position in range(3, 10):
        resp = rate(guest, f"{alice}/{position}", rating(10, 10, 10, 10, 10))
    assert resp.headers["Location"].endswith(f"{alice}/1")
    resp = rate(guest, f"{alice}/1", rating(20, 20, 20, 20, 20))
    assert urlsplit(resp.headers["Location"]).path == alice
    assert "You have rated every reply of the slice." in text(guest.get(alice).get_data(as_text=True))

    # a second rater on the same reply: kept apart
    other = app.test_client()
    assert "1 other person rated this reply." in text(other.get(f"{bob}/0").get_data(as_text=True))
    rate(other, f"{bob}/0", rating(5, 5, 5, 5, 5, verdict=0))
    assert [(r["rater"], r["total"]) for r in kept(app, evaluation_id) if (r["session_id"], r["round"], r["method"])
            == slice_items[0]] == [("alice", 70), ("bob", 25)]
    overview = text(client.get(f"/evaluations/{evaluation_id}/rating").get_data(as_text=True))
    assert "Rater Rated Of alice 10 10 bob 1 10" in overview
    # forgetting a rating
    resp = other.post(f"{bob}/0/forget", data={})
    assert resp.status_code == 302 and resp.headers["Location"].endswith(f"{bob}/0")
    assert kept(app, evaluation_id, "bob") == []


@pytest.mark.parametrize("values, words", [
    (rating(12, 13, 14, 15, 21), "Conversation must be a whole number from 0 to 20."),
    (rating(12, 13, 14.5, 15, 16), "Naturalness must be a whole number from 0 to 20."),
    (rating(12, 13, 14, 15, 16) | {"dim-style": "twelve"}, "Style must be a whole number from 0 to 20."),
    (rating(12, 13, 14, 15, 16) | {"dim-content": ""}, "Give Content a value."),
    (rating(12, 13, 14, 15, 16, verdict=2), "Answer Keep chatting with yes or no."),
    ({k: v for k, v in rating(12, 13, 14, 15, 16).items() if k != "binary"}, "Give Keep chatting a value."),
])
def test_a_rating_out_of_the_rubric_is_refused_naming_the_question(client, app, values, words):
    evaluation_id = evaluate(client)
    draw(client, evaluation_id, 4, 1)
    link = make_link(client, evaluation_id, "carol")
    resp = rate(client, f"{link}/0", values)
    assert resp.status_code == 400 and words in resp.get_data(as_text=True)
    assert 'role="alert"' in resp.get_data(as_text=True)
    assert kept(app, evaluation_id) == []


def test_a_form_of_an_earlier_draw_saves_nothing(client, app):
    evaluation_id = evaluate(client)
    draw(client, evaluation_id, 4, 1)
    link = make_link(client, evaluation_id, "dan")
    stale = form_of(client.get(f"{link}/0").get_data(as_text=True))
    draw(client, evaluation_id, 4, 2)
    resp = client.post(f"{link}/0", data={**stale, **rating(1, 1, 1, 1, 1)})
    assert resp.status_code == 409 and "The slice was drawn again" in resp.get_data(as_text=True)
    assert kept(app, evaluation_id) == []


def test_replies_and_the_persona_are_shown_as_text(client):
    evaluation_id = evaluate(client)
    draw(client, evaluation_id, 24, 1)
    link = make_link(client, evaluation_id, "erin")
    position = next(p for p, item in enumerate(items(client.application, evaluation_id))
                    if item[2] == METHODS[0] and item[1] == 2)
    page = client.get(f"{link}/{position}").get_data(as_text=True)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>runs</b>" not in page and "&lt;b&gt;runs&lt;/b&gt;" in page
    assert "<i>now</i>" not in page and "&lt;i&gt;now&lt;/i&gt;" in page
    # the earlier round of this session and this method, as the judge saw it (personasteer's context has history)
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 2 and "Round 1, reply" in page
    # the rubric's words for its levels, low to high
    assert "0-4: poor or harmful · 5-9: weak · 10-14: adequate · 15-17: good · 18-20: excellent" in page


# -- who may rate ---------------------------------------------------------------------------------------------------

@pytest.fixture
def auth_app(make_app, judge_env):
    app = make_app(judge_env, AUTH="on")
    accounts.create_user(app.extensions["store"], "ada", PASSWORD, is_admin=True)
    accounts.create_user(app.extensions["store"], "max", PASSWORD)
    return app


def test_a_rating_link_opens_its_queue_and_nothing_else(auth_app):
    ada = signed_in(auth_app, "ada")
    evaluation_id = evaluate(ada)
    other_evaluation = evaluate(ada)
    draw(ada, evaluation_id, 4, 1)
    link = make_link(ada, evaluation_id, "guest")
    token = link.rsplit("/", 1)[1]

    visitor = auth_app.test_client()  # not signed in
    start = visitor.get(link)
    assert start.status_code == 200 and "You rate as guest." in text(start.get_data(as_text=True))
    assert start.headers["Referrer-Policy"] == "no-referrer" and "no-store" in start.headers["Cache-Control"]
    assert start.headers["X-Robots-Tag"] == "noindex, nofollow"
    page = visitor.get(f"{link}/0")
    assert page.status_code == 200
    for address in re.findall(r'(?:href|src|action)="([^"]*)"', page.get_data(as_text=True)):
        assert address == link or address.startswith((link + "/", "/static/", "/lang/")), address  # nowhere else
    assert rate(visitor, f"{link}/0", rating(9, 9, 9, 9, 9)).status_code == 302
    assert [r["rater"] for r in kept(auth_app, evaluation_id)] == ["guest"]

    # the same browser, with the link's pages open, reaches nothing else: pages send it to sign in, the API says 401
    for path in (f"/evaluations/{evaluation_id}", f"/evaluations/{evaluation_id}/rating",
                 f"/evaluations/{evaluation_id}/rating/0", f"/evaluations/{other_evaluation}", "/evaluations", "/"):
        resp = visitor.get(path)
        assert resp.status_code == 302 and urlsplit(resp.headers["Location"]).path == "/login", path
    for path in (f"/api/evaluations/{evaluation_id}", f"/evaluations/{evaluation_id}.json",
                 f"/evaluations/{evaluation_id}/human-ratings.csv"):
        assert visitor.get(path).status_code == 401, path
    assert visitor.post(f"/evaluations/{evaluation_id}/rating/links", data={"name": "x"}).status_code == 302
    assert visitor.post(f"/evaluations/{evaluation_id}/rating/slice", data={"size": "1", "seed": "1"}).status_code \
        == 302
    assert len(items(auth_app, evaluation_id)) == 4  # not drawn again
    # the token is not a key to anything else: not an API token, not another evaluation's queue
    assert visitor.get(f"/api/evaluations/{evaluation_id}", headers={"Authorization": f"Bearer {token}"}) \
        .status_code == 401

    # kept as its SHA-256 only
    with auth_app.app_context():
        rows = auth_app.extensions["store"].rows("SELECT * FROM rating_links")
    assert [r["token_hash"] for r in rows] == [hashlib.sha256(token.encode()).hexdigest()]
    assert token not in json.dumps(rows)

    # revoked: stops at once, reading and saving alike
    overview = ada.get(f"/evaluations/{evaluation_id}/rating").get_data(as_text=True)
    revoke = re.search(r'action="(/evaluations/[^"]+/revoke)"', overview).group(1)
    assert revoke == f"/evaluations/{evaluation_id}/rating/links/{rows[0]['token_hash']}/revoke"
    resp = ada.post(revoke)
    assert resp.status_code == 302 and resp.headers["Location"].endswith("/rating#links")
    for resp in (visitor.get(link), visitor.get(f"{link}/1"), visitor.post(f"{link}/1", data=rating(1, 1, 1, 1, 1))):
        assert resp.status_code == 404 and "This rating link was revoked or never existed." in resp.get_data(as_text=True)
        assert 'href="/"' not in resp.get_data(as_text=True)
    assert len(kept(auth_app, evaluation_id)) == 1
    assert ada.post(revoke).status_code == 404  # once


def test_accounts_rate_as_themselves(auth_app):
    ada = signed_in(auth_app, "ada")
    evaluation_id = evaluate(ada)
    draw(ada, evaluation_id, 4, 1)
    you = text(ada.get(f"/evaluations/{evaluation_id}/rating").get_data(as_text=True))
    assert "You rate as ada and have rated 0 of 4." in you
    resp = rate(ada, f"/evaluations/{evaluation_id}/rating/0", rating(20, 20, 20, 20, 20))
    assert resp.headers["Location"].endswith(f"/evaluations/{evaluation_id}/rating/1")
    maxi = signed_in(auth_app, "max")
    rate(maxi, f"/evaluations/{evaluation_id}/rating/0", rating(0, 0, 0, 0, 0, verdict=0))
    assert [(r["rater"], r["total"]) for r in kept(auth_app, evaluation_id)] == [("ada", 100), ("max", 0)]
    assert "You rate as max and have rated 1 of 4." in text(maxi.get(f"/evaluations/{evaluation_id}/rating")
                                                              .get_data(as_text=True))


def test_without_accounts_people_rate_through_links(client):
    evaluation_id = evaluate(client)
    draw(client, evaluation_id, 4, 1)
    resp = client.get(f"/evaluations/{evaluation_id}/rating/0")
    assert resp.status_code == 400 and "Without accounts, people rate through rating links" in resp.get_data(as_text=True)
    assert client.get("/rate/not-a-token").status_code == 404
    link = make_link(client, evaluation_id, "fay")
    resp = client.post(f"/evaluations/{evaluation_id}/rating/links", data={"name": " fay "})
    assert resp.status_code == 400 and "An active link already rates as fay" in resp.get_data(as_text=True)
    for name, words in (("", "Give the rater's name"), ("x" * 81, "at most 80 characters"),
                        ("a\u0007b", "no control characters")):
        resp = client.post(f"/evaluations/{evaluation_id}/rating/links", data={"name": name})
        assert resp.status_code == 400 and words in html.unescape(resp.get_data(as_text=True)), name
    assert client.get(link).status_code == 200


def test_the_forms_need_their_csrf_token(make_app, judge_env):
    app = make_app(judge_env, WTF_CSRF_ENABLED=True)
    client = app.test_client()
    evaluation_id = evaluate(client)
    page = client.get(f"/evaluations/{evaluation_id}/rating").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    assert draw(client, evaluation_id).status_code == 400
    assert client.post(f"/evaluations/{evaluation_id}/rating/slice",
                       data={"size": "4", "seed": "1", "csrf_token": token}).status_code == 302
    assert client.post(f"/evaluations/{evaluation_id}/rating/links", data={"name": "gus"}).status_code == 400
    made = client.post(f"/evaluations/{evaluation_id}/rating/links", data={"name": "gus", "csrf_token": token},
                       follow_redirects=True)
    link = urlsplit(re.search(r'value="(http://localhost/rate/[^"]+)"', made.get_data(as_text=True)).group(1)).path

    guest = app.test_client()  # another browser: its own session and token
    form = form_of(guest.get(f"{link}/0").get_data(as_text=True))
    assert "csrf_token" in form
    without = {k: v for k, v in form.items() if k != "csrf_token"}
    resp = guest.post(f"{link}/0", data={**without, **rating(3, 3, 3, 3, 3)})
    assert resp.status_code == 400 and "The form expired" in resp.get_data(as_text=True)
    assert guest.post(f"{link}/0", data={**form, "csrf_token": token, **rating(3, 3, 3, 3, 3)}).status_code == 400
    assert kept(app, evaluation_id) == []
    assert guest.post(f"{link}/0", data={**form, **rating(3, 3, 3, 3, 3)}).status_code == 302
    assert [r["rater"] for r in kept(app, evaluation_id)] == ["gus"]
    assert client.post(f"/evaluations/{evaluation_id}/rating/rescore").status_code == 400


def test_update_the_figures_scores_the_evaluation_again(client, app):
    evaluation_id = evaluate(client)
    store = app.extensions["store"]
    before = store.get_evaluation(evaluation_id)["result"]
    store.set_result(evaluation_id, {**before, "stale": True})  # what scoring again replaces
    resp = client.post(f"/evaluations/{evaluation_id}/rating/rescore")
    assert resp.status_code == 302 and resp.headers["Location"].endswith(f"/evaluations/{evaluation_id}#human")
    assert wait_rescored(client, evaluation_id)["status"] == "done"  # a rescore job, in the background
    after = store.get_evaluation(evaluation_id)["result"]
    assert "stale" not in after and after["methods"] == before["methods"]
    assert store.get_evaluation(evaluation_id)["status"] == "done"


# -- the rubric's own questions -------------------------------------------------------------------------------------

def test_a_rubric_of_one_digit_scale_is_rated_with_radio_buttons_and_its_total_computed(client, app):
    lines = [{**session(i), "rounds": [{**r, "responses": {m: f"reply {i}.{r['round']} [[score1to5={1 + i % 5}]]"
                                                          for m in METHODS}} for r in session(i)["rounds"]]}
             for i in range(3)]
    upload_id = upload(client, jsonl(*lines)).get_json()["id"]
    done = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id, "rubric": "aloe"})
                    .get_json()["id"])
    assert done["status"] == "done" and done["result"]["rubric"]["id"] == "aloe"
    draw(client, done["id"], 4, 1)
    link = make_link(client, done["id"], "hana")
    page = client.get(f"{link}/0").get_data(as_text=True)
    assert re.findall(r'type="radio" name="dim-alignment" value="(\d)"', page) == ["1", "2", "3", "4", "5"]
    assert 'name="total"' not in page and 'name="binary"' not in page  # aloe asks no yes/no question
    assert "1: the least tailored to the user · 5: the most user-aligned" in page
    assert "The fine score (0-100) is made from your dimensions" in page
    assert rate(client, f"{link}/0", {"dim-alignment": "4"}).status_code == 302
    [row] = kept(app, done["id"])
    # aloe's headline: 100 x (mean - 1) / 4 of its one dimension, 100 x 3 / 4 = 75
    assert (row["alignment"], row["total"], row["verdict"]) == (4, 75, None)


def test_imported_bare_totals_are_rated_on_the_total(client, app):
    from tests.kinds.dialogue.test_imported_scores import attach, dialogue, replies
    from tests.kinds.dialogue.test_imported_scores import upload as upload_dialogue

    record = upload_dialogue(client, dialogue())
    rows = ["session_id,round,method,total", *(f"{s},{k},{m},{40 + 5 * i}" for i, s, k, m in replies())]
    attached = attach(client, record["id"], "\n".join(rows).encode(), "totals.csv").get_json()
    done = wait_for(client, client.post("/api/evaluations", json={"upload_id": record["id"], "scores": attached["id"]})
                    .get_json()["id"])
    assert done["result"]["rubric"]["dimensions"] == []
    draw(client, done["id"], 4, 1)
    link = make_link(client, done["id"], "ivan")
    page = client.get(f"{link}/0").get_data(as_text=True)
    assert re.search(r'<legend>Fine score <span class="hint">\(0-100\)</span></legend>', page)
    assert 'type="number" name="total" min="0" max="100" step="any"' in page
    assert "dim-" not in page and 'name="binary"' not in page
    assert "made from your dimensions" not in page
    # imported totals declare no context: the whole session is shown
    assert "Profile" in page and "Personality" in page
    resp = rate(client, f"{link}/0", {"total": "101"})
    assert resp.status_code == 400 and "Fine score must be a number from 0 to 100." in resp.get_data(as_text=True)
    assert rate(client, f"{link}/0", {"total": "37.5"}).status_code == 302
    [row] = kept(app, done["id"])
    assert (row["total"], row["verdict"]) == (37.5, None)

"""Read-only share links: creation (page and API), the shared page and its exports, revocation."""
from __future__ import annotations

import csv
import io
import re
from urllib.parse import urlsplit

from tests.conftest import jsonl, session_line, wait_for
from tests.web.test_api import scored_session, upload
from tests.web.test_pages import XSS

API_KEY = "sk-test-secret-key"  # the judge_env fixture's key: it must never reach a share page
TOKEN = re.compile(r"[A-Za-z0-9_-]{32,}")


def evaluate(client, data: bytes, name: str = "log.jsonl") -> str:
    """Upload and score a file through the API; returns the finished evaluation's id."""
    upload_id = upload(client, data, name=name).get_json()["id"]
    evaluation_id = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"]
    assert wait_for(client, evaluation_id)["status"] == "done"
    return evaluation_id


def create_share(client, evaluation_id: str) -> dict:
    resp = client.post(f"/api/evaluations/{evaluation_id}/shares")
    assert resp.status_code == 201, resp.get_data(as_text=True)
    return resp.get_json()


def share_path(share: dict) -> str:
    return urlsplit(share["url"]).path


def links(html: str) -> list[str]:
    return re.findall(r'(?:href|src|action)="([^"]*)"', html)


def test_create_share_via_api(client):
    evaluation_id = evaluate(client, jsonl(scored_session("s1", [60, 70], 40)))
    first, second = create_share(client, evaluation_id), create_share(client, evaluation_id)
    assert set(first) >= {"id", "token", "url"}
    assert TOKEN.fullmatch(first["token"]) and TOKEN.fullmatch(second["token"])
    assert first["token"] != second["token"] and first["id"] != second["id"]
    assert share_path(first) == f"/share/{first['token']}" and first["url"].startswith("http")
    listed = client.get(f"/api/evaluations/{evaluation_id}/shares").get_json()
    assert [(s["id"], s["token"], s["active"]) for s in listed] == [(first["id"], first["token"], True),
                                                                     (second["id"], second["token"], True)]


def test_tokens_are_random_and_long():
    from web.share import new_token
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    assert all(TOKEN.fullmatch(t) and len(t) >= 32 for t in tokens)


def test_create_and_revoke_share_via_page(make_app, judge_env):
    client = make_app(judge_env, WTF_CSRF_ENABLED=True).test_client()
    evaluation_id = evaluate(client, jsonl(scored_session("s1", [60, 70], 40)))
    html = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "Create share link" in html and 'id="share"' in html
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    assert client.post(f"/evaluations/{evaluation_id}/shares").status_code == 400  # no CSRF token
    resp = client.post(f"/evaluations/{evaluation_id}/shares", data={"csrf_token": token})
    assert resp.status_code == 302 and resp.headers["Location"].endswith(f"/evaluations/{evaluation_id}#share")
    [share] = client.get(f"/api/evaluations/{evaluation_id}/shares").get_json()
    html = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert f'value="{share["url"]}"' in html and "readonly" in html and "Revoke" in html
    assert client.get(share_path(share)).status_code == 200
    revoke = f"/evaluations/{evaluation_id}/shares/{share['id']}/revoke"
    assert f'action="{revoke}"' in html
    assert client.post(revoke).status_code == 400  # no CSRF token
    resp = client.post(revoke, data={"csrf_token": token})
    assert resp.status_code == 302 and resp.headers["Location"].endswith(f"/evaluations/{evaluation_id}#share")
    assert client.get(share_path(share)).status_code == 404
    assert share["url"] not in client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)


def test_share_page_shows_the_result_and_nothing_else(client):
    evaluation_id = evaluate(client, jsonl(scored_session("s1", [60, 70], 40), scored_session("s2", [50, 80], 30)))
    share = create_share(client, evaluation_id)
    resp = client.get(share_path(share))
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    # the result: metrics, charts, sessions with replies
    assert 'id="chart-al"' in html and '<script id="figures"' in html and "/vendor/plotly.min.js" in html
    assert "Pairwise differences" in html and "s1" in html and "log.jsonl" in html
    # a session's detail is loaded from under the share link too
    assert f'data-src="{share_path(share)}/view/session?index=0"' in html
    assert "A says hi" in client.get(f"{share_path(share)}/view/session?index=0").get_data(as_text=True)
    # not to be indexed, no Referer with the token in it, not cached
    assert '<meta name="robots" content="noindex, nofollow">' in html
    assert resp.headers["X-Robots-Tag"] == "noindex, nofollow"
    assert resp.headers["Referrer-Policy"] == "no-referrer"
    assert "no-store" in resp.headers["Cache-Control"]
    # nowhere else to go, nothing to do
    for forbidden in ("/evaluations/", "/settings", "/api/", "/uploads", "<form", 'href="#"', "csrf_token",
                      "Create share link", API_KEY):
        assert forbidden not in html, forbidden
    for link in links(html):
        assert link.startswith((share_path(share), "/static/", "/vendor/", "/lang/")), link
    assert f'href="{share_path(share)}.json"' in html and f'href="{share_path(share)}.csv"' in html
    # the evaluation's own page still has everything
    own = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "noindex" not in own and 'href="/settings"' in own and "Create share link" in own
    assert "X-Robots-Tag" not in client.get(f"/evaluations/{evaluation_id}").headers


def test_share_page_language_switch_comes_back(client):
    evaluation_id = evaluate(client, jsonl(scored_session("s1", [60, 70], 40)))
    path = share_path(create_share(client, evaluation_id))
    html = client.get(path).get_data(as_text=True)
    # the page sends no Referer, except to its own language switch, which needs it to come back
    assert re.search(r'href="/lang/zh"[^>]*referrerpolicy="same-origin"', html)
    resp = client.get("/lang/zh", headers={"Referer": f"http://localhost{path}"})
    assert urlsplit(resp.headers["Location"]).path == path
    assert '<html lang="zh">' in client.get(path).get_data(as_text=True)


def test_share_page_pagination_stays_under_the_share(client):
    sessions = [session_line(f"p{i:02d}", rounds=1) for i in range(23)]
    evaluation_id = evaluate(client, jsonl(*sessions))
    path = share_path(create_share(client, evaluation_id))
    first = client.get(path).get_data(as_text=True)
    assert "p00" in first and "p22" not in first
    assert f'href="{path}?page=2#sessions"' in first
    second = client.get(f"{path}?page=2").get_data(as_text=True)
    assert "p22" in second and "p00" not in second
    assert f'href="{path}?page=1#sessions"' in second and "/evaluations/" not in second
    assert "p03" in client.get(f"{path}?q=p03").get_data(as_text=True)  # state in the query string


def test_exports_under_the_token(client):
    evaluation_id = evaluate(client, jsonl(scored_session("s1", [60, 70], 40)))
    path = share_path(create_share(client, evaluation_id))
    as_json = client.get(f"{path}.json")
    assert as_json.status_code == 200 and as_json.headers["X-Robots-Tag"] == "noindex, nofollow"
    assert as_json.get_json() == client.get(f"/evaluations/{evaluation_id}.json").get_json()
    as_csv = client.get(f"{path}.csv")
    assert as_csv.status_code == 200 and as_csv.data == client.get(f"/evaluations/{evaluation_id}.csv").data
    assert as_csv.data.decode("utf-8").startswith("\ufeffmethod,avg,")
    for body in (as_json.get_data(as_text=True), as_csv.get_data(as_text=True)):
        assert API_KEY not in body


def test_revoked_link_is_404(client):
    evaluation_id = evaluate(client, jsonl(scored_session("s1", [60, 70], 40)))
    kept, revoked = create_share(client, evaluation_id), create_share(client, evaluation_id)
    resp = client.post(f"/api/evaluations/{evaluation_id}/shares/{revoked['id']}/revoke")
    assert resp.status_code == 200 and resp.get_json()["active"] is False and resp.get_json()["revoked_at"]
    page = client.get(share_path(revoked))
    assert page.status_code == 404 and "This link was revoked or never existed." in page.get_data(as_text=True)
    assert page.headers["X-Robots-Tag"] == "noindex, nofollow"
    assert "/evaluations" not in page.get_data(as_text=True) and 'href="/"' not in page.get_data(as_text=True)
    assert client.get(f"{share_path(revoked)}.json").status_code == 404
    assert client.get(f"{share_path(revoked)}.json").get_json()["error"] == "This link was revoked or never existed."
    assert client.get(f"{share_path(revoked)}.csv").status_code == 404
    assert client.get(share_path(kept)).status_code == 200  # the other link still works
    # revoking again changes nothing; the list tells active and revoked links apart
    again = client.post(f"/api/evaluations/{evaluation_id}/shares/{revoked['id']}/revoke").get_json()
    assert again["revoked_at"] == resp.get_json()["revoked_at"]
    listed = {s["id"]: s["active"] for s in client.get(f"/api/evaluations/{evaluation_id}/shares").get_json()}
    assert listed == {kept["id"]: True, revoked["id"]: False}


def test_unknown_token_and_unknown_evaluation_are_404(client):
    for path in ("/share/nope", "/share/" + "A" * 32, "/share/nope.csv"):
        resp = client.get(path)
        assert resp.status_code == 404 and "revoked or never existed" in resp.get_data(as_text=True), path
        assert resp.headers["X-Robots-Tag"] == "noindex, nofollow"
    assert client.get("/share/nope.json").get_json() == {"error": "This link was revoked or never existed."}
    assert client.post("/api/evaluations/nope/shares").status_code == 404
    assert "error" in client.post("/api/evaluations/nope/shares").get_json()
    assert client.get("/api/evaluations/nope/shares").status_code == 404
    assert client.post("/evaluations/nope/shares").status_code == 404
    evaluation_id = evaluate(client, jsonl(scored_session("s1", [60, 70], 40)))
    assert client.post(f"/api/evaluations/{evaluation_id}/shares/nope/revoke").status_code == 404
    assert client.post(f"/evaluations/{evaluation_id}/shares/nope/revoke").status_code == 404
    share = create_share(client, evaluation_id)
    other = evaluate(client, jsonl(scored_session("s2", [30, 40], 20)))
    # a share is revoked through its own evaluation only
    assert client.post(f"/api/evaluations/{other}/shares/{share['id']}/revoke").status_code == 404
    assert client.get(share_path(share)).status_code == 200


def test_no_share_before_there_is_a_result(client, judge_server):
    judge_server.latency_s = 0.5
    upload_id = upload(client, jsonl(session_line("slow", 4))).get_json()["id"]
    evaluation_id = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"]
    resp = client.post(f"/api/evaluations/{evaluation_id}/shares")
    assert resp.status_code == 409 and "no result" in resp.get_json()["error"]
    assert "Create share link" not in client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    client.post(f"/api/evaluations/{evaluation_id}/cancel")
    wait_for(client, evaluation_id)


def test_user_text_is_escaped_on_the_share_page(client):
    s = session_line(XSS, 2)
    s["user_profile"] = XSS
    s["user_personality"] = XSS
    s["rounds"][0]["user_message"] = XSS
    s["rounds"][0]["responses"]["A"] = XSS
    evaluation_id = evaluate(client, jsonl(s), name="<script>alert(1)</script>.jsonl")
    path = share_path(create_share(client, evaluation_id))
    html = client.get(path).get_data(as_text=True)
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)" in html and API_KEY not in html


def test_judge_errors_on_the_share_page_carry_no_key(client, judge_server):
    judge_server.fail_next(1, "401")  # the local judge echoes the key back in its 401 message
    upload_id = upload(client, jsonl(scored_session("s1", [60, 70], 40))).get_json()["id"]
    evaluation_id = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"]
    body = wait_for(client, evaluation_id)
    # a refused key stops the run (judge/breaker.py), naming the 401 without the key
    assert body["status"] == "failed" and "HTTP 401" in body["error"] and API_KEY not in body["error"]
    judge_server.fail_next(1, "400")  # resumed, one judgment is refused: a failed judgment, listed with its reason
    assert client.post(f"/api/evaluations/{evaluation_id}/resume").status_code == 202
    body = wait_for(client, evaluation_id)
    assert body["result"] and body["result"]["judge"]["failed"] == 1
    path = share_path(create_share(client, evaluation_id))
    html = client.get(path).get_data(as_text=True)
    assert "Failed and unparsed judgments" in html and "HTTP 400" in html
    for text in (html, *(client.get(path + ext).get_data(as_text=True) for ext in (".json", ".csv"))):
        assert API_KEY not in text


def test_every_download_of_the_result_page_works_under_the_share_link(client):
    evaluation_id = evaluate(client, jsonl(scored_session("d1", [60, 70], 40)))
    share = create_share(client, evaluation_id)
    html = client.get(share_path(share)).get_data(as_text=True)
    for suffix in (".json", ".csv", "/judgments.csv", "/report.html"):
        link = share_path(share) + suffix
        assert f'href="{link}"' in html, suffix
        assert client.get(link).status_code == 200, suffix


def test_pairwise_differences_after_holm_on_the_page_and_as_csv_through_the_share_link(client):
    sessions = [scored_session(f"s{i}", [60 + i, 70 + 2 * i], 40 + i) for i in range(6)]
    evaluation_id = evaluate(client, jsonl(*sessions))
    share = create_share(client, evaluation_id)
    html = client.get(share_path(share)).get_data(as_text=True)
    assert "Holm" in html and "*†</td>" in html  # A - B (26.25 on average) marked both ways
    resp = client.get(f"{share_path(share)}/comparisons.csv")
    assert resp.status_code == 200
    rows = list(csv.DictReader(io.StringIO(resp.get_data(as_text=True).lstrip("\ufeff"))))
    fine = next(r for r in rows if r["metric"] == "fine")
    assert (fine["a"], fine["b"], fine["significant"], fine["significant_holm"]) == ("A", "B", "True", "True")
    assert float(fine["p_holm"]) == float(fine["p_value"]) < 0.05  # one pair: Holm changes nothing


def test_a_visitor_is_never_sent_to_pages_they_cannot_reach(client):
    evaluation_id = evaluate(client, jsonl(session_line("s1", 2)))
    own = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "set prices on the settings page to see the cost" in own  # no prices: the owner is told where to set them
    shared = client.get(share_path(create_share(client, evaluation_id))).get_data(as_text=True)
    assert "not known: no prices were set" in shared and "settings page" not in shared

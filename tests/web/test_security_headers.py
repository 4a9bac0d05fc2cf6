"""Security headers, cookie flags, the reverse-proxy setting, the offline report's own policy, and CSV exports
that a spreadsheet cannot turn into code (web/security_headers.py, common/safe_csv.py)."""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
from pathlib import Path

import pytest

from common import safe_csv
from tests.conftest import ROOT, jsonl, session_line, wait_for
from tests.kinds.agentbench.test_agentbench import make_zip, tree
from tests.kinds.conversation.test_conversation_annotation import items as annotated_conversations
from tests.kinds.mobility.test_mobility_pipeline import synthetic
from tests.web.test_api import upload
from tests.web.test_share import create_share, evaluate, share_path
from web import accounts

# Every cell a spreadsheet would read as a formula (OWASP CSV injection), as method, session, agent, task names.
HOSTILE = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(1)", "-2+3", "\tx", "\rx"]
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")
PASSWORD = "correct horse battery"


# -- helpers ---------------------------------------------------------------------------------------

def directives(policy: str) -> dict[str, list[str]]:
    """A Content-Security-Policy as {directive: [sources]}."""
    parts = (p.split() for p in policy.split(";") if p.strip())
    return {p[0]: p[1:] for p in parts}


def assert_page_headers(resp, referrer: str = "same-origin") -> None:
    """The headers every response carries (share pages: no-referrer)."""
    policy = directives(resp.headers["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"], policy  # no unsafe-inline, no unsafe-eval, no other site
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    assert policy["form-action"] == ["'self'"] and policy["connect-src"] == ["'self'"]
    assert "'unsafe-eval'" not in resp.headers["Content-Security-Policy"]
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.headers["X-Frame-Options"] == "DENY"
    assert resp.headers["Referrer-Policy"] == referrer


def set_cookies(resp) -> dict[str, list[str]]:
    """The Set-Cookie headers of a response as {name: [flags, lowercased]}."""
    cookies = {}
    for header in resp.headers.getlist("Set-Cookie"):
        name, *flags = [part.strip() for part in header.split(";")]
        cookies[name.split("=", 1)[0]] = [flag.lower() for flag in flags]
    return cookies


def csv_rows(resp) -> list[list[str]]:
    """A CSV download read back the way a program reads it."""
    assert resp.status_code == 200 and resp.mimetype == "text/csv", resp.status_code
    return list(csv.reader(io.StringIO(resp.data.decode("utf-8-sig"), newline="")))


def is_number(cell: str) -> bool:
    """Whether a CSV cell reads as a number."""
    try:
        float(cell)
    except ValueError:
        return False
    return True


def assert_neutralised(rows: list[list[str]], *names: str) -> None:
    """No cell starts a formula (numbers such as -0.5 excepted), and each name is there behind its quote."""
    cells = [cell for row in rows for cell in row]
    unsafe = [cell for cell in cells if cell.startswith(DANGEROUS) and not is_number(cell)]
    assert unsafe == [], unsafe
    for name in names:
        assert "'" + name in cells, (name, rows)


def finished(client, upload_id: str, **payload) -> str:
    """Start an evaluation of an upload through the API and wait until it is done."""
    created = client.post("/api/evaluations", json={"upload_id": upload_id, **payload})
    assert created.status_code == 202, created.get_json()
    body = wait_for(client, created.get_json()["id"])
    assert body["status"] == "done", body
    return body["id"]


# -- headers -----------------------------------------------------------------------------------------

def test_pages_api_errors_and_static_files_carry_every_header(client):
    for path in ("/", "/evaluations", "/settings", "/references", "/compare", "/no-such-page"):
        assert_page_headers(client.get(path))
    api = client.get("/api/evaluations")
    assert api.status_code == 200 and api.is_json
    assert_page_headers(api)
    assert_page_headers(client.post("/api/evaluations", json={"upload_id": "nope"}))
    for path in ("/static/js/result.js", "/vendor/plotly.min.js"):
        resp = client.get(path)
        assert resp.mimetype == "text/javascript"  # nosniff: a script is only run when it says it is one
        assert_page_headers(resp)


def test_every_page_of_a_result_and_its_share_link(client):
    evaluation_id = evaluate(client, jsonl(session_line("s1", 2)))
    assert_page_headers(client.get(f"/evaluations/{evaluation_id}"))
    assert_page_headers(client.get(f"/evaluations/{evaluation_id}.json"))
    assert_page_headers(client.get(f"/evaluations/{evaluation_id}.csv"))
    share = share_path(create_share(client, evaluation_id))
    for suffix in ("", ".json", ".csv", "/judgments.csv"):
        resp = client.get(share + suffix)
        assert resp.status_code == 200, suffix
        assert_page_headers(resp, referrer="no-referrer")
        assert resp.headers["X-Robots-Tag"] == "noindex, nofollow"
    assert_page_headers(client.get("/share/" + "x" * 32), referrer="no-referrer")  # its 404 too


def test_no_template_has_inline_script_or_event_handler():
    """Pages run only the app's own script files; data rides in <script type="application/json"> blocks."""
    for path in (ROOT / "templates").glob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\son[a-z]+\s*=", text, re.I), path.name
        assert "javascript:" not in text.lower(), path.name
        if path.name in ("report.html", "_figure_scripts.html"):  # the offline report's inline scripts, under its own
            continue                                               # hash policy (below)
        for attrs in re.findall(r"<script\b([^>]*)>", text, re.I):
            assert "src=" in attrs or 'type="application/json"' in attrs, (path.name, attrs)


def test_offline_report_allows_exactly_its_own_inline_scripts_by_hash(client):
    evaluation_id = evaluate(client, jsonl(session_line("s1", 2)))
    share = share_path(create_share(client, evaluation_id))
    for path in (f"/evaluations/{evaluation_id}/report.html", share + "/report.html"):
        resp = client.get(path)
        assert resp.status_code == 200
        html = resp.get_data(as_text=True)
        meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html).group(1)
        meta = meta.replace("&#39;", "'")
        header = resp.headers["Content-Security-Policy"]
        assert header == meta + "; frame-ancestors 'none'"  # frame-ancestors is ignored in a <meta> policy
        assert html.index("Content-Security-Policy") < min(html.index("<script"), html.index("<style"))
        policy = directives(meta)
        assert policy["default-src"] == ["'none'"] and policy["object-src"] == ["'none'"]
        assert policy["base-uri"] == ["'none'"] and policy["form-action"] == ["'none'"]
        # every inline script that runs, hashed here independently of the app; the JSON data block does not run
        running = [body for attrs, body in re.findall(r"<script\b([^>]*)>(.*?)</script", html, re.S | re.I)
                   if "application/json" not in attrs]
        assert len(running) == 2 and "plotly" in running[0].lower()
        hashes = ["'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
                  for body in running]
        assert policy["script-src"] == hashes
        assert resp.headers["X-Content-Type-Options"] == "nosniff" and resp.headers["X-Frame-Options"] == "DENY"


# -- cookies -------------------------------------------------------------------------------------------

def test_session_and_language_cookies_are_httponly_and_samesite_lax(make_app, monkeypatch):
    monkeypatch.delenv("SECURE_COOKIES", raising=False)
    client = make_app().test_client()
    session = set_cookies(client.get("/"))["session"]  # the CSRF token of the upload form lives in the session
    assert "httponly" in session and "samesite=lax" in session and "secure" not in session
    lang = set_cookies(client.get("/lang/zh"))["lang"]
    assert "httponly" in lang and "samesite=lax" in lang and "secure" not in lang


def test_signed_in_session_cookie_flags_and_secure_setting(make_app):
    app = make_app(AUTH="on", SECURE_COOKIES=True)
    accounts.create_user(app.extensions["store"], "ada", PASSWORD, is_admin=True)
    client = app.test_client()
    resp = client.post("/login", data={"name": "ada", "password": PASSWORD})
    assert resp.status_code == 302
    session = set_cookies(resp)["session"]
    assert {"httponly", "samesite=lax", "secure"} <= set(session), session
    lang = set_cookies(client.get("/lang/ko"))["lang"]
    assert {"httponly", "samesite=lax", "secure"} <= set(lang), lang
    assert app.config["REMEMBER_COOKIE_SECURE"] and app.config["REMEMBER_COOKIE_SAMESITE"] == "Lax"


@pytest.mark.parametrize("env, config, secure", [
    ({"SECURE_COOKIES": "1"}, {}, True),
    ({"SECURE_COOKIES": "on"}, {}, True),
    ({}, {"PREFERRED_URL_SCHEME": "https"}, True),
    ({"SECURE_COOKIES": "0"}, {"PREFERRED_URL_SCHEME": "https"}, False),  # said explicitly: off
    ({"SECURE_COOKIES": ""}, {}, False),
    ({}, {}, False),
])
def test_secure_cookies_setting(make_app, monkeypatch, env, config, secure):
    monkeypatch.delenv("SECURE_COOKIES", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    client = make_app(**config).test_client()
    assert ("secure" in set_cookies(client.get("/"))["session"]) is secure
    assert ("secure" in set_cookies(client.get("/lang/en"))["lang"]) is secure


@pytest.mark.parametrize("name, value", [("SECURE_COOKIES", "maybe"), ("TRUSTED_PROXIES", "two"),
                                         ("TRUSTED_PROXIES", "-1")])
def test_a_bad_setting_stops_the_app_naming_it(make_app, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        make_app()


# -- behind a reverse proxy --------------------------------------------------------------------------------

FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "bench.example.org"}


def test_trusted_proxies_reads_the_forwarded_scheme_host_and_client(make_app, judge_env, monkeypatch):
    monkeypatch.delenv("TRUSTED_PROXIES", raising=False)
    plain = make_app(judge_env).test_client()
    evaluation_id = evaluate(plain, jsonl(session_line("s1", 2)))
    # without the setting the headers are ignored: anyone could send them
    assert create_share_with(plain, evaluation_id).startswith("http://localhost/share/")
    assert plain.get("/", headers={"X-Forwarded-For": "203.0.113.7"}).status_code == 200

    proxied = make_app(judge_env, TRUSTED_PROXIES=1, SECURE_COOKIES=True).test_client()
    url = create_share_with(proxied, evaluation_id, FORWARDED)
    assert url.startswith("https://bench.example.org/share/"), url
    # the client's own address: another machine, so the loopback-only mode (no accounts) turns it away
    assert proxied.get("/", headers={"X-Forwarded-For": "203.0.113.7"}).status_code == 403
    resp = proxied.get("/", headers={**FORWARDED, "X-Forwarded-For": "127.0.0.1"})
    assert resp.status_code == 200 and "secure" in set_cookies(resp)["session"]
    assert_page_headers(resp)


def create_share_with(client, evaluation_id: str, headers: dict | None = None) -> str:
    """Create a share link through the API with these request headers; returns its address."""
    resp = client.post(f"/api/evaluations/{evaluation_id}/shares", headers=headers or {})
    assert resp.status_code == 201, resp.get_data(as_text=True)
    return resp.get_json()["url"]


def test_trusted_proxies_from_the_environment(make_app, monkeypatch):
    monkeypatch.setenv("TRUSTED_PROXIES", "2")
    app = make_app()
    assert app.config["TRUSTED_PROXIES"] == 2 and app.wsgi_app.x_for == 2 and app.wsgi_app.x_proto == 2


# -- CSV exports -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, written", [
    ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'), ("+1", "'+1"), ("-2+3", "'-2+3"),
    ("@SUM(1)", "'@SUM(1)"), ("\tx", "'\tx"), ("\rx", "'\rx"), ("\nx", "'\nx"), ("＝1+1", "'＝1+1"),
    ("-0.5", "'-0.5"),  # text that looks like a number is still text
    ("plain", "plain"), ("a=b", "a=b"), ("'quoted", "'quoted"), ("", ""), (None, ""),
    (-0.5, -0.5), (-3, -3), (0.25, 0.25), (True, True),  # numbers stay numbers
])
def test_csv_cell(value, written):
    assert safe_csv.csv_cell(value) == written


def test_csv_line_keeps_negative_numbers_and_quotes_text():
    line = safe_csv.csv_line(["=1+1", -0.5, -2, "-2", None, 'say "hi"'])
    assert line == "'=1+1,-0.5,-2,'-2,,\"say \"\"hi\"\"\"\r\n"
    assert next(csv.reader(io.StringIO(line))) == ["'=1+1", "-0.5", "-2", "'-2", "", 'say "hi"']


def test_dialogue_csvs_neutralise_method_names_and_session_ids(client):
    sessions = [session_line(name, 2, methods=HOSTILE) for name in HOSTILE]
    evaluation_id = evaluate(client, jsonl(*sessions))
    share = share_path(create_share(client, evaluation_id))
    for path in (f"/evaluations/{evaluation_id}.csv", share + ".csv"):
        rows = csv_rows(client.get(path))
        assert [row[0] for row in rows[1:]] == ["'" + name for name in HOSTILE]
        assert_neutralised(rows, *HOSTILE)
    for path in (f"/evaluations/{evaluation_id}/judgments.csv", share + "/judgments.csv"):
        rows = csv_rows(client.get(path))
        assert len(rows) == 1 + len(HOSTILE) * 2 * len(HOSTILE) * 2  # sessions x rounds x methods x modes
        assert {row[0] for row in rows[1:]} == {"'" + name for name in HOSTILE}  # session ids
        assert {row[2] for row in rows[1:]} == {"'" + name for name in HOSTILE}  # methods
        assert_neutralised(rows, *HOSTILE)


def test_conversation_csvs_neutralise_task_names_and_paths(client, judge_server):
    conversations = annotated_conversations()
    for item, task in zip(conversations, ("=HYPERLINK(\"http://x\",\"y\")", "@SUM(1)") * 2):
        item["task"] = task
    resp = upload(client, json.dumps(conversations).encode(), name="-2+3.json")
    assert resp.status_code == 201, resp.get_json()
    evaluation_id = finished(client, resp.get_json()["id"], annotate=True)
    rows = csv_rows(client.get(f"/evaluations/{evaluation_id}.csv"))
    assert_neutralised(rows, '=HYPERLINK("http://x","y")', "@SUM(1)")
    rows = csv_rows(client.get(f"/evaluations/{evaluation_id}/annotations.csv"))
    assert len(rows) == 1 + len(conversations)
    assert_neutralised(rows, '=HYPERLINK("http://x","y")', "@SUM(1)")


def test_agentbench_csv_neutralises_agent_and_task_names(client):
    agents = {"=1+1": {"os-std": 0.4}, "@SUM(1)": {"os-std": 0.2}}  # folder names: no "/"
    members = tree(agents)
    members["outputs/2024-01-01-00-00-00/@SUM(1)/-2+3/overall.json"] = \
        next(iter(members.values()))  # a task of its own name, kept as a custom task
    resp = upload(client, make_zip(members).getvalue(), name="outputs.zip")
    assert resp.status_code == 201, resp.get_json()
    evaluation_id = finished(client, resp.get_json()["id"])
    rows = csv_rows(client.get(f"/evaluations/{evaluation_id}.csv"))
    assert_neutralised(rows, "=1+1", "@SUM(1)", "-2+3")

    lone = upload(client, json.dumps({"total": 10, "validation": {"completed": 1.0}, "custom": {}}).encode(),
                  name="overall.json", agent="+cmd|' /C calc'!A0", task="\tx")
    assert lone.status_code == 201, lone.get_json()
    rows = csv_rows(client.get(f"/evaluations/{finished(client, lone.get_json()['id'])}.csv"))
    assert_neutralised(rows, "+cmd|' /C calc'!A0")


def test_mobility_csv_is_written_the_same_way(client):
    reference = client.post("/api/references", data={"file": (io.BytesIO(json.dumps(synthetic()).encode()), "r.json"),
                                                     "name": "=ref"}, content_type="multipart/form-data")
    assert reference.status_code == 201, reference.get_json()
    resp = upload(client, json.dumps(synthetic(seed=2)).encode(), name="@gen.json")
    evaluation_id = finished(client, resp.get_json()["id"], reference="=ref")
    rows = csv_rows(client.get(f"/evaluations/{evaluation_id}.csv"))
    assert [row[0] for row in rows] == ["variant", "official", "strict"]
    assert_neutralised(rows)


def test_every_csv_the_app_writes_goes_through_safe_csv():
    """One writer for every CSV: no module writes CSV with the csv module (or pandas) directly."""
    for folder in ("web", "kinds", "common"):
        for path in (ROOT / folder).glob("*.py"):
            if path.name == "safe_csv.py":
                continue
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"csv\.(writer|DictWriter)|\.to_csv\(", text), path
    for path in Path(ROOT).glob("*.py"):
        assert not re.search(r"csv\.(writer|DictWriter)|\.to_csv\(", path.read_text(encoding="utf-8")), path

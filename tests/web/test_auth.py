"""Accounts: who may see what with AUTH on, off and unset; sign-in, rate limit, API tokens, roles, the CLI."""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import ROOT, jsonl
from tests.services import free_port
from tests.web.test_api import scored_session, upload
from tests.web.test_share import create_share, evaluate, share_path
from web import accounts

PASSWORD = "correct horse battery"
ELSEWHERE = {"REMOTE_ADDR": "10.0.0.5"}  # a client on another machine (the test client sends nothing anywhere)


@pytest.fixture
def auth_app(make_app, judge_env):
    """An app with accounts on, an admin `ada` and a member `max`, judging with the local server."""
    app = make_app(judge_env, AUTH="on")
    accounts.create_user(app.extensions["store"], "ada", PASSWORD, is_admin=True)
    accounts.create_user(app.extensions["store"], "max", PASSWORD)
    return app


def signed_in(app, name: str):
    """A test client signed in through the form as `name`."""
    client = app.test_client()
    resp = client.post("/login", data={"name": name, "password": PASSWORD})
    assert resp.status_code == 302, resp.get_data(as_text=True)
    return client


def new_token(client, name: str = "script") -> str:
    """Create an API token on the account page; returns it as shown (once)."""
    resp = client.post("/account/tokens", data={"name": name})
    assert resp.status_code == 200
    return re.search(r"psb_[A-Za-z0-9_-]{43}", resp.get_data(as_text=True)).group(0)


def bearer(app, token: str):
    """A test client that sends `token` on every request."""
    client = app.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client


# -- when accounts are needed ---------------------------------------------------------------------

@pytest.mark.parametrize("auth, host, mode", [
    (None, None, "local"), (None, "127.0.0.1", "local"), ("", "localhost", "local"), (None, "::1", "local"),
    (None, "0.0.0.0", "on"), (None, "192.168.1.20", "on"), (None, "::", "on"), (None, "lab-server", "on"),
    ("on", "127.0.0.1", "on"), (" ON ", None, "on"), ("off", "0.0.0.0", "off"), ("Off", "127.0.0.1", "off")])
def test_auth_mode_from_auth_and_host(auth, host, mode):
    assert accounts.auth_mode(auth, host) == mode


@pytest.mark.parametrize("value", ["yes", "true", "1", "disabled"])
def test_any_other_auth_value_is_refused(value):
    with pytest.raises(accounts.AuthConfigError, match="AUTH must be 'on'.*or 'off'"):
        accounts.auth_mode(value, "127.0.0.1")


def test_loopback_addresses():
    assert all(map(accounts.is_loopback, ["127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"]))
    assert not any(map(accounts.is_loopback, ["0.0.0.0", "::", "10.0.0.5", "", None, "example.org"]))


def test_startup_refused_on_non_loopback_without_accounts():
    with pytest.raises(accounts.AuthConfigError, match="Refusing to serve on 0.0.0.0 without accounts.*AUTH=off"):
        accounts.check_serving("local", "0.0.0.0", users=0)
    assert accounts.check_serving("local", "127.0.0.1", users=0) == []
    assert accounts.check_serving("on", "0.0.0.0", users=2) == []
    [warning] = accounts.check_serving("off", "0.0.0.0", users=0)
    assert warning.startswith("WARNING: AUTH=off on 0.0.0.0") and "anyone" in warning
    [hint] = accounts.check_serving("on", "127.0.0.1", users=0)
    assert "users create NAME --admin" in hint


def test_python_app_py_refuses_an_unknown_auth_value():
    env = {**os.environ, "AUTH": "maybe", "HOST": "127.0.0.1", "PORT": "1"}
    done = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "AUTH must be 'on'" in done.stderr and "'maybe'" in done.stderr


def test_create_app_reads_auth_and_host_from_the_environment(make_app, monkeypatch):
    monkeypatch.delenv("AUTH", raising=False)
    monkeypatch.delenv("HOST", raising=False)
    assert make_app().config["AUTH"] == "local"
    monkeypatch.setenv("HOST", "0.0.0.0")
    assert make_app().config["AUTH"] == "on"
    monkeypatch.setenv("AUTH", "off")
    assert make_app().config["AUTH"] == "off"
    monkeypatch.setenv("AUTH", "sometimes")
    with pytest.raises(accounts.AuthConfigError):
        make_app()


def test_loopback_default_stays_open(make_app):
    client = make_app(AUTH="local").test_client()
    assert client.get("/").status_code == 200
    assert client.get("/api/evaluations").status_code == 200
    assert client.get("/settings").status_code == 200
    assert "Sign out" not in client.get("/").get_data(as_text=True)
    assert client.get("/login").status_code == 302 and client.get("/account").status_code == 404


def test_without_accounts_other_machines_get_403(make_app):
    client = make_app(AUTH="local").test_client()
    page = client.get("/evaluations", environ_base=ELSEWHERE)
    assert page.status_code == 403 and "only answers on the machine it runs on" in page.get_data(as_text=True)
    api = client.get("/api/evaluations", environ_base=ELSEWHERE)
    assert api.status_code == 403 and "AUTH=on" in api.get_json()["error"]
    assert client.get("/static/css/style.css", environ_base=ELSEWHERE).status_code == 403
    assert client.get("/api/evaluations", environ_base={"REMOTE_ADDR": "::1"}).status_code == 200


def test_auth_off_explicitly_runs_open_for_everyone(make_app):
    client = make_app(AUTH="off").test_client()
    assert client.get("/api/evaluations", environ_base=ELSEWHERE).status_code == 200
    assert client.post("/settings", data={}, environ_base=ELSEWHERE).status_code == 200


# -- AUTH=on: anonymous callers ---------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", "/evaluations", "/compare", "/references", "/settings", "/account",
                                  "/uploads/abc", "/sample_data.jsonl", "/no-such-page"])
def test_anonymous_pages_redirect_to_sign_in(auth_app, path):
    resp = auth_app.test_client().get(path + "?page=2")
    assert resp.status_code == 302
    location = urlsplit(resp.location)
    assert location.path == "/login" and parse_qs(location.query) == {"next": [path + "?page=2"]}


@pytest.mark.parametrize("method, path", [("GET", "/api/evaluations"), ("POST", "/api/uploads"),
                                          ("POST", "/api/evaluations"), ("GET", "/api/references"),
                                          ("GET", "/evaluations/abc.json"), ("GET", "/evaluations/abc.csv"),
                                          ("GET", "/api/evaluations/abc/shares")])
def test_anonymous_api_gets_401_json(auth_app, method, path):
    resp = auth_app.test_client().open(path, method=method)
    assert resp.status_code == 401 and resp.is_json
    assert "Authorization: Bearer" in resp.get_json()["error"]
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")


def test_anonymous_posts_to_pages_are_not_carried_out(auth_app):
    client = auth_app.test_client()
    resp = client.post("/uploads", data={})
    assert resp.status_code == 302 and resp.location == "/login"
    assert client.post("/settings", data={"model": "evil"}).status_code == 302
    assert auth_app.extensions["judge_settings"].saved().get("model") in (None, "")


def test_public_endpoints_need_no_account(auth_app):
    client = auth_app.test_client()
    assert client.get("/login").status_code == 200
    assert client.get("/static/css/style.css").status_code == 200
    assert client.get("/vendor/plotly.min.js").status_code == 200
    assert client.get("/lang/zh").status_code == 302


def test_share_link_readable_anonymously_while_the_evaluation_is_not(auth_app):
    member = signed_in(auth_app, "max")
    evaluation_id = evaluate(member, jsonl(scored_session("s1", [60, 70], 40)))
    share = create_share(member, evaluation_id)
    anonymous = auth_app.test_client()
    page = anonymous.get(share_path(share))
    assert page.status_code == 200 and "Sign out" not in page.get_data(as_text=True)
    assert anonymous.get(share_path(share) + ".json").status_code == 200
    assert anonymous.get(share_path(share) + ".csv").status_code == 200
    assert anonymous.get(f"/evaluations/{evaluation_id}").status_code == 302
    assert anonymous.get(f"/evaluations/{evaluation_id}.json").status_code == 401
    assert anonymous.get(f"/api/evaluations/{evaluation_id}/shares").status_code == 401
    assert anonymous.post(f"/api/evaluations/{evaluation_id}/shares").status_code == 401


# -- signing in -------------------------------------------------------------------------------------

def test_sign_in_goes_to_next_and_shows_who_is_signed_in(auth_app):
    client = auth_app.test_client()
    assert 'name="csrf_token"' in client.get("/login?next=/evaluations").get_data(as_text=True)
    resp = client.post("/login", data={"name": "MAX", "password": PASSWORD, "next": "/evaluations?page=2"})
    assert resp.status_code == 302 and resp.location == "/evaluations?page=2"
    html = client.get("/").get_data(as_text=True)
    assert ">max</a>" in html and "Sign out" in html and 'action="/logout"' in html


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:x",
                                    "evil.example"])
def test_next_only_leads_to_local_paths(auth_app, target):
    resp = auth_app.test_client().post("/login", data={"name": "max", "password": PASSWORD, "next": target})
    assert resp.status_code == 302 and resp.location == "/"


def test_wrong_password_or_unknown_user_is_refused(auth_app):
    client = auth_app.test_client()
    for name, password in (("max", "wrong password"), ("nobody", PASSWORD), ("max", "")):
        resp = client.post("/login", data={"name": name, "password": password})
        assert resp.status_code == 200 and "Wrong user name or password." in resp.get_data(as_text=True)
    assert client.get("/").status_code == 302


def test_sign_out(auth_app):
    client = signed_in(auth_app, "max")
    assert client.get("/").status_code == 200
    assert client.post("/logout").location == "/login"
    assert client.get("/").status_code == 302


def test_new_password_or_deleted_user_ends_sessions(auth_app):
    client = signed_in(auth_app, "max")
    accounts.set_password(auth_app.extensions["store"], "max", "another password")
    assert client.get("/").status_code == 302
    client = signed_in(auth_app, "ada")
    accounts.delete_user(auth_app.extensions["store"], "ada")
    assert client.get("/").status_code == 302


def test_sign_in_form_needs_its_csrf_token(make_app):
    app = make_app(AUTH="on", WTF_CSRF_ENABLED=True)
    accounts.create_user(app.extensions["store"], "max", PASSWORD)
    client = app.test_client()
    assert client.post("/login", data={"name": "max", "password": PASSWORD}).status_code == 400
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").get_data(as_text=True)).group(1)
    resp = client.post("/login", data={"name": "max", "password": PASSWORD, "csrf_token": token})
    assert resp.status_code == 302
    # a signed-in browser writes through the API only with the CSRF token (the API skips it for API tokens)
    refused = client.post("/api/evaluations", json={})
    assert refused.status_code == 400 and "did not come from this site" in refused.get_json()["error"]
    checked = client.post("/api/evaluations", json={}, headers={"X-CSRFToken": token})
    assert checked.status_code == 400 and "The field 'upload_id' is wrong: Field required" in checked.get_json()["error"]


def test_sign_in_is_rate_limited_per_address(auth_app):
    client = auth_app.test_client()
    for _ in range(5):
        assert "Wrong user name" in client.post("/login", data={"name": "max", "password": "wrong"}).get_data(True)
    resp = client.post("/login", data={"name": "ada", "password": PASSWORD})  # even the right one, for a while
    assert resp.status_code == 429 and "Too many sign-in attempts" in resp.get_data(as_text=True)
    assert 1 <= int(resp.headers["Retry-After"]) <= 60  # the rest of the minute
    other = auth_app.test_client()
    other.environ_base.update(ELSEWHERE)
    assert other.post("/login", data={"name": "ada", "password": PASSWORD}).status_code == 302


def test_sign_in_is_rate_limited_per_user_name(auth_app):
    for i in range(5):
        resp = auth_app.test_client().post("/login", data={"name": "max", "password": "wrong"},
                                           environ_base={"REMOTE_ADDR": f"10.0.0.{i + 1}"})
        assert resp.status_code == 200 and "Wrong user name" in resp.get_data(as_text=True)
    resp = auth_app.test_client().post("/login", data={"name": " MAX", "password": PASSWORD},
                                       environ_base={"REMOTE_ADDR": "10.0.1.1"})
    assert resp.status_code == 429
    assert auth_app.test_client().get("/login").status_code == 200  # the form itself is not limited


def test_sign_in_works_while_the_attempts_storage_is_unreachable(make_app, judge_env, caplog):
    # a Redis being restarted: the attempt is let through and logged, not answered with an error page
    app = make_app(judge_env, AUTH="on", RATELIMIT_STORAGE_URI=f"redis://:secret@127.0.0.1:{free_port()}/0")
    accounts.create_user(app.extensions["store"], "ada", PASSWORD)
    client = app.test_client()
    wrong = client.post("/login", data={"name": "ada", "password": "wrong"})
    assert wrong.status_code == 200 and "Wrong user name" in wrong.get_data(as_text=True)
    assert client.post("/login", data={"name": "ada", "password": PASSWORD}).status_code == 302
    warnings = [r.getMessage() for r in caplog.records if r.name == "web.attempts"]
    assert len(warnings) == 2 and "sign-in attempts not counted" in warnings[0] and "secret" not in warnings[0]


def test_a_wrong_storage_address_is_named_without_its_password(make_app):
    with pytest.raises(ValueError, match=r"RATELIMIT_STORAGE_URI='redsi://127.0.0.1:6379'") as refused:
        make_app(AUTH="on", RATELIMIT_STORAGE_URI="redsi://:secret@127.0.0.1:6379")
    assert "secret" not in str(refused.value) and refused.value.__cause__ is None and refused.value.__suppress_context__


@pytest.mark.parametrize("setting", [{"RATELIMIT_STORAGE_URI": "redsi://127.0.0.1:6379"},
                                     {"LOGIN_RATE_LIMIT": "5 per fortnight"}])
def test_a_wrong_sign_in_limit_setting_stops_the_app_naming_it(make_app, setting):
    (name, value), = setting.items()
    with pytest.raises(ValueError, match=f"{name}={value!r}"):
        make_app(AUTH="on", **setting)


def test_passwords_are_hashed_with_scrypt(auth_app):
    with auth_app.extensions["store"].engine.connect() as con:  # SQLite or PostgreSQL alike
        hashes = [row[0] for row in con.exec_driver_sql("SELECT password_hash FROM users")]
    assert len(hashes) == 2 and all(h.startswith("scrypt:") for h in hashes)
    assert not any(PASSWORD in h for h in hashes)


def test_the_product_hashes_at_werkzeugs_full_scrypt_cost(auth_app, monkeypatch, cheap_password_hashes):
    # the suite hashes at a lower cost (tests/conftest.py); the product's own setting is scrypt at N=2**15
    monkeypatch.setattr(accounts, "PASSWORD_METHOD", cheap_password_hashes)
    store = auth_app.extensions["store"]
    accounts.create_user(store, "grace", PASSWORD)
    with store.engine.connect() as con:
        stored = con.exec_driver_sql("SELECT password_hash FROM users WHERE name = 'grace'").scalar_one()
    assert stored.startswith("scrypt:32768:8:1$")
    assert accounts.check_password(store, "grace", PASSWORD)["name"] == "grace"
    assert accounts.check_password(store, "grace", PASSWORD + "!") is None


def test_user_names_and_passwords_are_checked(auth_app):
    store = auth_app.extensions["store"]
    with pytest.raises(ValueError, match="already a user named Max"):
        accounts.create_user(store, "Max", PASSWORD)
    with pytest.raises(ValueError, match="at least 8 characters"):
        accounts.create_user(store, "eve", "short")
    with pytest.raises(ValueError, match="1 to 64 letters"):
        accounts.create_user(store, "eve smith", PASSWORD)


# -- API tokens -------------------------------------------------------------------------------------

def test_token_create_use_and_revoke(auth_app):
    member = signed_in(auth_app, "max")
    token = new_token(member, "nightly")
    client = bearer(auth_app, token)
    resp = client.get("/api/evaluations")
    assert resp.status_code == 200 and "Set-Cookie" not in resp.headers  # no session for a token
    resp = upload(client, jsonl(scored_session("s1", [60], 40)))
    assert resp.status_code == 201  # no CSRF token needed with an API token
    assert client.get("/").status_code == 200
    page = member.get("/account").get_data(as_text=True)
    assert "nightly" in page and token not in page and page.count(">Revoke</button>") == 1
    token_id = accounts.list_tokens(auth_app.extensions["store"], 2)[0]["id"]
    assert member.post(f"/account/tokens/{token_id}/revoke").status_code == 302
    resp = client.get("/api/evaluations")
    assert resp.status_code == 401 and resp.is_json
    assert client.get("/").status_code == 401  # a request with a token is judged by the token alone


def test_tokens_are_stored_hashed(auth_app):
    token = new_token(signed_in(auth_app, "max"))
    assert token.startswith("psb_")
    with auth_app.extensions["store"].engine.connect() as con:
        rows = con.exec_driver_sql("SELECT * FROM api_tokens").fetchall()
    assert len(rows) == 1 and hashlib.sha256(token.encode()).hexdigest() in rows[0]
    assert not any(token in str(value) or token[4:] in str(value) for value in rows[0])


def test_bad_tokens_get_401(auth_app):
    for token in ("psb_not-a-real-token", "sk-whatever", ""):
        resp = bearer(auth_app, token).get("/api/evaluations")
        assert resp.status_code == 401 and resp.is_json


def test_a_token_cannot_revoke_another_users_token(auth_app):
    token = new_token(signed_in(auth_app, "max"))
    token_id = accounts.list_tokens(auth_app.extensions["store"], 2)[0]["id"]
    assert signed_in(auth_app, "ada").post(f"/account/tokens/{token_id}/revoke").status_code == 404
    assert bearer(auth_app, token).get("/api/evaluations").status_code == 200


def test_token_needs_a_name(auth_app):
    resp = signed_in(auth_app, "max").post("/account/tokens", data={"name": " "})
    assert resp.status_code == 400 and "Give the token a name" in resp.get_data(as_text=True)


# -- roles ------------------------------------------------------------------------------------------

SETTINGS_POSTS = [("/settings", {"model": "judge-x"}), ("/settings/test", {}),
                  ("/settings/endpoints", {"name": "lab", "base_url": "http://127.0.0.1:9/v1"}),
                  ("/settings/endpoints/lab/remove", {}), ("/settings/anything-added-later", {})]


@pytest.mark.parametrize("path, form", SETTINGS_POSTS)
def test_members_cannot_change_judge_settings(auth_app, path, form):
    resp = signed_in(auth_app, "max").post(path, data=form)
    assert resp.status_code == 403 and "Only an administrator" in resp.get_data(as_text=True)


def test_member_settings_change_through_a_token_is_403_json(auth_app):
    token = new_token(signed_in(auth_app, "max"))
    resp = bearer(auth_app, token).post("/settings", data={"model": "judge-x"})
    assert resp.status_code == 403 and resp.get_json()["error"].startswith("Only an administrator")
    assert bearer(auth_app, token).post("/api/settings").status_code == 403


def test_admins_change_judge_settings_members_read_them(auth_app):
    page = signed_in(auth_app, "max").get("/settings").get_data(as_text=True)
    assert "Only an administrator can change the judge settings." in page
    # the settings, the new endpoint and the connection test forms (the header's sign-out form stays usable)
    assert page.count("<fieldset class=\"bare\" disabled>") == page.count("<form method=\"post\"") - 1 == 3
    admin_page = signed_in(auth_app, "ada").get("/settings").get_data(as_text=True)
    assert "Only an administrator" not in admin_page and " disabled>" not in admin_page
    resp = signed_in(auth_app, "ada").post("/settings", data={"model": "judge-x"})
    assert resp.status_code == 200 and "Settings saved" in resp.get_data(as_text=True)
    assert auth_app.extensions["judge_settings"].saved()["model"] == "judge-x"


def test_members_upload_and_add_reference_sets(auth_app):
    member = signed_in(auth_app, "max")
    assert upload(member, jsonl(scored_session("s1", [60], 40))).status_code == 201
    assert member.post("/references", data={}).status_code == 400  # reached the form's own validation


# -- the CLI ----------------------------------------------------------------------------------------

def test_cli_users_create_list_set_password_delete(make_app):
    app = make_app()
    runner, store = app.test_cli_runner(), app.extensions["store"]
    result = runner.invoke(args=["users", "create", "alice", "--admin", "--password-stdin"], input=PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    assert "created admin alice" in result.output
    assert accounts.check_password(store, "alice", PASSWORD)["is_admin"] is True
    result = runner.invoke(args=["users", "create", "bob"], input="bob password\nbob password\n")
    assert result.exit_code == 0 and accounts.check_password(store, "bob", "bob password")["is_admin"] is False
    assert "bob password" not in result.output
    assert runner.invoke(args=["users", "create", "carl"], input="one password\nanother one\n").exit_code != 0
    result = runner.invoke(args=["users", "create", "alice", "--password-stdin"], input=PASSWORD + "\n")
    assert result.exit_code == 1 and "already a user named alice" in result.output
    result = runner.invoke(args=["users", "create", "dan", "--password-stdin"], input="short\n")
    assert result.exit_code == 1 and "at least 8 characters" in result.output
    listed = runner.invoke(args=["users", "list"]).output.splitlines()
    assert [line.split("\t")[:2] for line in listed] == [["alice", "admin"], ["bob", "member"]]
    result = runner.invoke(args=["users", "set-password", "bob", "--password-stdin"], input="new password\n")
    assert result.exit_code == 0 and accounts.check_password(store, "bob", "new password")
    assert runner.invoke(args=["users", "delete", "bob", "--yes"]).exit_code == 0
    assert [u["name"] for u in accounts.list_users(store)] == ["alice"]
    result = runner.invoke(args=["users", "delete", "bob", "--yes"])
    assert result.exit_code == 1 and "no user named bob" in result.output

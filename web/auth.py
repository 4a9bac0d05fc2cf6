"""Sign-in, API tokens and the one rule that decides who may see what (web/accounts.py holds the logic).

`guard` runs before every request. With `AUTH=on`, every endpoint needs a signed-in user or an
`Authorization: Bearer psb_...` token, except the PUBLIC_ENDPOINTS below (the sign-in page, static files,
Plotly's JavaScript, the language switch and the read-only share links) and the pages a kind opens to a link's
token (`Kind.link_endpoints`: the dialogue kind's rating links, which check their token themselves): a new route
is protected by default. Changing anything under ADMIN_PREFIXES (the judge settings) or under a path a kind declares
(`Kind.admin_paths`: the dialogue kind's rubrics) needs an admin. Without accounts and without an explicit
`AUTH=off`, only requests from this machine are answered.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, Flask, abort, current_app, g, jsonify, redirect, render_template, request, url_for
from flask_login import LoginManager, UserMixin, current_user, login_user, logout_user

from kinds import registry
from kinds.kind import OwnPages
from translations import _
from web import accounts, errors, get_csrf, get_store, share
from web.attempts import Attempts

PUBLIC_ENDPOINTS = frozenset({"static", "pages.plotly_js", "pages.set_language", "auth.login", "api.openapi_document",
                              *share.SHARED_ENDPOINTS.values(),
                              *share.DATASET_SHARED_ENDPOINTS.values(), "row_diff.shared_rows", "row_diff.shared_rows_csv"})
ADMIN_PREFIXES = ("/settings", "/api/settings")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
LOGIN_RATE_LIMIT = "5 per minute"  # per client address and per user name

bp = Blueprint("auth", __name__)
login_manager = LoginManager()


class User(UserMixin):
    """The signed-in user, as Flask-Login wants it."""

    def __init__(self, user: dict) -> None:
        self.id, self.name, self.is_admin = user["id"], user["name"], user["is_admin"]

    def get_id(self) -> str | None:
        """The session key (changes with the password, so a new password ends old sessions)."""
        return accounts.session_key(get_store(), self.id)


def register(app: Flask) -> None:
    """Install sign-in, the account pages, the rate limit on sign-in and the guard in front of every request."""
    app.config.setdefault("LOGIN_RATE_LIMIT", LOGIN_RATE_LIMIT)
    if app.config["AUTH"] not in accounts.MODES:
        raise accounts.AuthConfigError(_("Unknown AUTH mode %(mode)r.", mode=app.config["AUTH"]))
    login_manager.init_app(app)
    app.register_blueprint(bp)
    # one count per app, kept where every web process sees it (app.py: RATELIMIT_STORAGE_URI)
    attempts = app.extensions["sign_in_attempts"] = Attempts(app.config["LOGIN_RATE_LIMIT"],
                                                             app.config["RATELIMIT_STORAGE_URI"])
    if app.config["AUTH"] == "on":
        attempts.check()  # a wrong setting stops the server here, not at the first sign-in
    app.before_request(guard)


@bp.app_context_processor
def auth_context() -> dict:
    """`auth_on` for the templates (the header shows who is signed in only then), and `can_admin`: whether
    the visitor may change the judge settings (the settings page disables its forms otherwise)."""
    auth_on = current_app.config["AUTH"] == "on"
    return {"auth_on": auth_on, "can_admin": not auth_on or bool(getattr(current_user, "is_admin", False))}


@login_manager.user_loader
def _from_session(key: str) -> User | None:
    if _bearer() is not None:  # a request that carries a token is judged by the token alone
        return None
    user = accounts.user_for_session(get_store(), key)
    return User(user) if user else None


@login_manager.request_loader
def _from_token(_request) -> User | None:
    user = accounts.verify_token(get_store(), _bearer() or "")
    g.auth_by_token = user is not None
    return User(user) if user else None


def _bearer() -> str | None:
    scheme, _sep, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _api_request() -> bool:
    """Whether the caller is a program: the API, the JSON and CSV exports, or any request with a token."""
    return (request.path.startswith("/api/") or request.path.endswith((".json", ".csv"))
            or "Authorization" in request.headers)


def _deny(status: int, message: str):
    if _api_request():
        return jsonify({"error": message}), status
    return errors.respond(status, message)


def _is_admin_path(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in ADMIN_PREFIXES)


def _is_kinds_admin_path(path: str) -> bool:
    """Whether a path is under one a kind declares its administrators' (`Kind.admin_paths`: dialogue's rubrics)."""
    return any(path == prefix or path.startswith(prefix + "/")
               for kind in registry.having(OwnPages) for prefix in kind.admin_paths)


def _is_link_endpoint(endpoint: str | None) -> bool:
    """Whether an endpoint is a page a kind opens to a link's token (`Kind.link_endpoints`: dialogue's rating links)."""
    return any(endpoint in kind.link_endpoints for kind in registry.having(OwnPages))


def guard():
    """Before every request: answer 403, 401 or a redirect to sign-in when the caller may not go on."""
    mode = current_app.config["AUTH"]
    if mode == "local" and not accounts.is_loopback(request.remote_addr):
        return _deny(403, _("This dashboard runs without accounts, so it only answers on the machine it runs on. "
                            "To share it, start it with AUTH=on and create users (flask --app app users create "
                            "NAME --admin)."))
    if mode != "on" or request.endpoint in PUBLIC_ENDPOINTS or _is_link_endpoint(request.endpoint):
        return None
    if not current_user.is_authenticated:
        if _api_request():
            return (jsonify({"error": _("Sign-in required: send an API token as 'Authorization: Bearer psb_...' "
                                        "(create one on your account page).")}),
                    401, {"WWW-Authenticate": 'Bearer realm="PersonaSteer Bench"'})
        return redirect(url_for("auth.login", next=request.full_path.rstrip("?") if request.method == "GET" else None))
    if request.method in SAFE_METHODS:
        return None
    if _is_kinds_admin_path(request.path) and not current_user.is_admin:
        return _deny(403, _("Only an administrator can change this."))
    if _is_admin_path(request.path) and not current_user.is_admin:
        return _deny(403, _("Only an administrator can change the judge settings."))
    if request.path.startswith("/api/") and not g.get("auth_by_token") and current_app.config["WTF_CSRF_ENABLED"]:
        get_csrf().protect()  # the API skips CSRF for tokens, not for a browser's session
    return None


def safe_next(target: str | None) -> str:
    """`target` when it is a path on this site, else the upload page (no open redirects)."""
    target = (target or "").strip().rstrip("?")
    parts = urlsplit(target)
    if not target.startswith("/") or target.startswith(("//", "/\\")) or parts.scheme or parts.netloc:
        return url_for("pages.index")
    return target


def _accounts_on() -> None:
    if current_app.config["AUTH"] != "on":
        abort(404)


@bp.route("/login", methods=["GET", "POST"])
def login():
    """The sign-in form; on success, go to `next` (a local path) or the upload page."""
    if current_app.config["AUTH"] != "on":
        return redirect(url_for("pages.index"))
    target = safe_next(request.values.get("next"))
    if request.method == "GET":
        return render_template("login.html", next=target)
    wait_s = current_app.extensions["sign_in_attempts"].refused(
        "address:" + (request.remote_addr or ""), "name:" + request.form.get("name", "").strip().lower())
    if wait_s is not None:
        body, status = errors.respond(429, _("Too many sign-in attempts. Wait a minute and try again."))
        return body, status, {"Retry-After": str(wait_s)}
    user = accounts.check_password(get_store(), request.form.get("name", ""), request.form.get("password", ""))
    if user is None:
        return render_template("login.html", next=target, name=request.form.get("name", ""),
                               error=_("Wrong user name or password."))
    login_user(User(user))
    return redirect(target)


@bp.post("/logout")
def logout():
    """Sign out and go back to the sign-in page."""
    logout_user()
    return redirect(url_for("auth.login"))


def _account_page(status: int = 200, **extra):
    page = render_template("account.html", tokens=accounts.list_tokens(get_store(), current_user.id), **extra)
    return page, status, {"Cache-Control": "no-store"}  # a new token must not stay in a cache


@bp.get("/account")
def account():
    """The signed-in user's page: their API tokens."""
    _accounts_on()
    return _account_page()


@bp.post("/account/tokens")
def create_token():
    """Create an API token and show it, this once (only its hash is kept)."""
    _accounts_on()
    try:
        _record, token = accounts.create_token(get_store(), current_user.id, request.form.get("name", ""))
    except ValueError as exc:
        return _account_page(400, error=str(exc))
    return _account_page(new_token=token)


@bp.post("/account/tokens/<int:token_id>/revoke")
def revoke_token(token_id: int):
    """Revoke one of the signed-in user's API tokens."""
    _accounts_on()
    accounts.revoke_token(get_store(), current_user.id, token_id) or abort(404)
    return redirect(url_for("auth.account"))

"""Security headers on every response, cookie flags, and the reverse-proxy setting.

- Every response gets PAGE_POLICY as its Content-Security-Policy: scripts only from this server's own files
  (no inline script, no eval; the pages keep their data in `<script type="application/json">` blocks that
  static scripts read), inline styles allowed (Plotly sets them), nothing loaded from another site, no
  plugins, no `<base>`, forms only to this server, and no framing. Plus `X-Content-Type-Options: nosniff`,
  `X-Frame-Options: DENY` and `Referrer-Policy: same-origin` (share pages set `no-referrer`, web/share.py).
  A response that already carries a header keeps it: the offline report (web/exports.py) sends its own
  hash-based policy (`report_policy`), since its scripts are inline so that it opens without a server.
- Cookies: the session cookie (and Flask-Login's remember cookie) is HttpOnly and SameSite=Lax; the language
  cookie gets the same flags through `cookie_flags`. All of them are Secure when `SECURE_COOKIES` is on, or,
  when it is unset, when the app's PREFERRED_URL_SCHEME is https.
- `TRUSTED_PROXIES=N` (default 0) puts werkzeug's ProxyFix in front of the app, trusting the last N values of
  X-Forwarded-For, X-Forwarded-Proto and X-Forwarded-Host: the client's real address (for the loopback-only mode
  and the sign-in rate limit), https, and the public host name (in share links).

Both settings come from the environment unless create_app's config names them.
"""
from __future__ import annotations

import base64
import hashlib
import os

from flask import Flask, Response, current_app
from werkzeug.middleware.proxy_fix import ProxyFix

from translations import _

PAGE_POLICY = "; ".join((
    "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data: blob:",
    "font-src 'self' data:", "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'",
    "frame-ancestors 'none'"))
# The offline report: its own inline scripts (by hash) and inline styles, nothing else from anywhere.
REPORT_POLICY = ("default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data: blob:; "
                 "font-src data:; object-src 'none'; base-uri 'none'; form-action 'none'")
FRAME_POLICY = "frame-ancestors 'none'"  # header only: browsers ignore (and warn about) it in a <meta> policy
HEADERS = {"Content-Security-Policy": PAGE_POLICY, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
           "Referrer-Policy": "same-origin"}
ON, OFF = ("1", "on", "true", "yes"), ("0", "off", "false", "no")


def register(app: Flask) -> None:
    """Add the headers to every response, set the cookie flags and, when asked, trust a reverse proxy."""
    secure = _switch(app.config.get("SECURE_COOKIES", os.environ.get("SECURE_COOKIES")), "SECURE_COOKIES")
    if secure is None:
        secure = app.config.get("PREFERRED_URL_SCHEME") == "https"
    app.config.update(SECURE_COOKIES=secure, SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax",
                      SESSION_COOKIE_SECURE=secure, REMEMBER_COOKIE_HTTPONLY=True, REMEMBER_COOKIE_SAMESITE="Lax",
                      REMEMBER_COOKIE_SECURE=secure)
    proxies = _count(app.config.get("TRUSTED_PROXIES", os.environ.get("TRUSTED_PROXIES", "0")), "TRUSTED_PROXIES")
    app.config["TRUSTED_PROXIES"] = proxies
    if proxies:
        # how Flask's documentation adds WSGI middleware; its type hints declare wsgi_app a method, never assigned
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)
    app.after_request(add_headers)


def add_headers(response: Response) -> Response:
    """The security headers, on every response that does not set its own."""
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def cookie_flags() -> dict:
    """The flags of every cookie the app sets itself (for `response.set_cookie`)."""
    return {"httponly": True, "samesite": "Lax", "secure": current_app.config["SESSION_COOKIE_SECURE"]}


def script_hash(script: str) -> str:
    """The CSP source that allows one inline script: 'sha256-...' of its text as the browser reads it."""
    text = script.replace("\r\n", "\n").replace("\r", "\n")  # HTML parsing normalises line ends
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def report_policy(*scripts: str) -> tuple[str, str]:
    """The offline report's policy for its <meta> tag and for its HTTP header (which also forbids framing)."""
    policy = REPORT_POLICY.format(hashes=" ".join(script_hash(s) for s in scripts))
    return policy, f"{policy}; {FRAME_POLICY}"


def _switch(value, name: str) -> bool | None:
    """An on/off setting; None when it is not set (or empty)."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if not text:
        return None
    if text not in ON + OFF:
        raise ValueError(_("%(name)s must be 1 or 0 (on or off), not %(value)r.", name=name, value=value))
    return text in ON


def _count(value, name: str) -> int:
    """A whole number >= 0 setting."""
    try:
        number = int(str(value).strip() or "0")
    except ValueError:
        number = -1
    if number < 0:
        raise ValueError(_("%(name)s must be a whole number of proxies (0 or more), not %(value)r.",
                           name=name, value=value))
    return number

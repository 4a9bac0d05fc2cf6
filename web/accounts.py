"""Accounts: users with hashed passwords, API tokens stored hashed, and when the dashboard needs them.

Knows nothing of Flask (web/auth.py applies it to requests). Three modes, `AUTH` in the app's config:

- `on`: every page and API call needs a signed-in user or an API token (share links excepted);
- `off`: open to whoever can reach the server (`AUTH=off`, chosen explicitly);
- `local`: no accounts, and only requests from this machine are answered (the default when `AUTH` is unset
  and `HOST` is a loopback address; an unset `AUTH` with any other `HOST` means `on`).

Passwords are hashed with scrypt (werkzeug). API tokens are `psb_` + 32 random bytes, shown once at creation
and stored as their SHA-256 hex digest only.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import re
import secrets
from datetime import datetime, timedelta, timezone

from werkzeug.security import check_password_hash, generate_password_hash

from storage.access import Duplicate
from storage.store import Store
from translations import _

MODES = ("on", "off", "local")
TOKEN_PREFIX = "psb_"
PASSWORD_METHOD = "scrypt"
MIN_PASSWORD_LENGTH = 8
NAME_PATTERN = re.compile(r"[\w.@-]{1,64}")
TOKEN_NAME_MAX = 80
TOUCH_EVERY = timedelta(minutes=1)  # how often a token's last use is written down


class AuthConfigError(ValueError):
    """The server must not start with these settings; the message says why and what to do."""


def is_loopback(host: str | None) -> bool:
    """Whether an address (or `localhost`) is this machine only."""
    host = (host or "").strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def auth_mode(auth: str | None, host: str | None) -> str:
    """The mode for the `AUTH` and `HOST` settings: `on`, `off` or `local`; AuthConfigError on any other AUTH."""
    value = (auth or "").strip().lower()
    if value in ("on", "off"):
        return value
    if value:
        raise AuthConfigError(_("AUTH must be 'on' (accounts required) or 'off' (open to anyone who can reach "
                                "the server), or be left unset; it is %(value)r.", value=auth))
    return "local" if is_loopback(host or "127.0.0.1") else "on"


def check_serving(mode: str, host: str, users: int) -> list[str]:
    """Warnings for serving on `host` in `mode` with `users` accounts; AuthConfigError when it must not start."""
    warnings = []
    if not is_loopback(host):
        if mode == "local":
            raise AuthConfigError(_(
                "Refusing to serve on %(host)s without accounts: anyone who can reach this address could read every "
                "evaluation, change the judge settings and spend the judge's budget. Set AUTH=on and create users "
                "(flask --app app users create NAME --admin), or set AUTH=off to run it open on purpose.", host=host))
        if mode == "off":
            warnings.append(_(
                "WARNING: AUTH=off on %(host)s: the dashboard is open to anyone who can reach this address, with no "
                "sign-in. Anyone can read every evaluation, change the judge settings and spend the judge's budget.",
                host=host))
    if mode == "on" and not users:
        warnings.append(_("Accounts are on but there are no users yet: create one with "
                          "flask --app app users create NAME --admin"))
    return warnings


# users ---------------------------------------------------------------------------------------------

def _valid_password(password: str) -> str:
    if len(password or "") < MIN_PASSWORD_LENGTH:
        raise ValueError(_("The password must have at least %(n)s characters.", n=MIN_PASSWORD_LENGTH))
    return password


def hash_password(password: str) -> str:
    """A scrypt hash of a password (after checking its length)."""
    return generate_password_hash(_valid_password(password), method=PASSWORD_METHOD)


@functools.cache
def _dummy_hash() -> str:
    return generate_password_hash(secrets.token_hex(16), method=PASSWORD_METHOD)


def public_user(user: dict) -> dict:
    """A user without the password hash, `is_admin` as a bool."""
    return {"id": user["id"], "name": user["name"], "is_admin": bool(user["is_admin"]),
            "created_at": user["created_at"]}


def create_user(store: Store, name: str, password: str, is_admin: bool = False) -> dict:
    """Add a user; ValueError when the name is invalid or taken, or the password too short."""
    name = (name or "").strip()
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(_("A user name has 1 to 64 letters, digits, dots, dashes, underscores or @."))
    try:
        return public_user(store.add_user(name, hash_password(password), is_admin))
    except Duplicate:
        raise ValueError(_("There is already a user named %(name)s.", name=name)) from None


def get_user(store: Store, name: str) -> dict:
    """A user by name; ValueError when there is none."""
    user = store.get_user(name=name)
    if user is None:
        raise ValueError(_("There is no user named %(name)s.", name=name))
    return public_user(user)


def list_users(store: Store) -> list[dict]:
    """Every user, by name, without password hashes."""
    return [public_user(u) for u in store.list_users()]


def check_password(store: Store, name: str, password: str) -> dict | None:
    """The user when the name and password match, else None (as slow either way, so names do not leak)."""
    user = store.get_user(name=(name or "").strip())
    if user is None:
        check_password_hash(_dummy_hash(), password or "")
        return None
    return public_user(user) if check_password_hash(user["password_hash"], password or "") else None


def set_password(store: Store, name: str, password: str) -> None:
    """Give a user a new password; ValueError for an unknown user or a short password."""
    store.set_password_hash(get_user(store, name)["id"], hash_password(password))


def delete_user(store: Store, name: str) -> None:
    """Delete a user and their API tokens; ValueError for an unknown user."""
    store.delete_user(get_user(store, name)["id"])


def _session_key(user: dict) -> str:
    return f"{user['id']}.{hashlib.sha256(user['password_hash'].encode()).hexdigest()[:16]}"


def session_key(store: Store, user_id: int) -> str | None:
    """What a session remembers of a user: id and a digest of the password hash (a new password ends sessions)."""
    user = store.get_user(user_id=user_id)
    return _session_key(user) if user else None


def user_for_session(store: Store, key: str) -> dict | None:
    """The user a session key stands for, or None when it no longer matches."""
    user_id = (key or "").partition(".")[0]
    user = store.get_user(user_id=int(user_id)) if user_id.isdigit() else None
    return public_user(user) if user and hmac.compare_digest(_session_key(user), key) else None


# API tokens ----------------------------------------------------------------------------------------

def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(store: Store, user_id: int, name: str) -> tuple[dict, str]:
    """A new API token for a user: (its record, the token itself, which is never available again)."""
    name = (name or "").strip()
    if not name or len(name) > TOKEN_NAME_MAX:
        raise ValueError(_("Give the token a name of 1 to %(n)s characters, such as the script that will use it.",
                           n=TOKEN_NAME_MAX))
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    return public_token(store.add_token(user_id, name, _digest(token))), token


def public_token(record: dict) -> dict:
    """A token's record without its hash."""
    return {k: record[k] for k in ("id", "name", "created_at", "last_used_at", "revoked_at")} | {
        "active": record["revoked_at"] is None}


def verify_token(store: Store, token: str) -> dict | None:
    """The user an unrevoked API token belongs to (noting its use), or None."""
    if not (token or "").startswith(TOKEN_PREFIX):
        return None
    record = store.active_token(_digest(token))
    user = store.get_user(user_id=record["user_id"]) if record else None
    if not record or not user:
        return None
    last = record["last_used_at"]
    if last is None or datetime.now(timezone.utc) - datetime.fromisoformat(last) >= TOUCH_EVERY:
        store.touch_token(record["id"])
    return public_user(user)


def list_tokens(store: Store, user_id: int) -> list[dict]:
    """A user's API tokens, newest first, without hashes."""
    return [public_token(t) for t in store.list_tokens(user_id)]


def revoke_token(store: Store, user_id: int, token_id: int) -> dict | None:
    """Revoke one of a user's tokens; its record, or None when the user has no such token."""
    record = store.revoke_token(user_id, token_id)
    return public_token(record) if record else None

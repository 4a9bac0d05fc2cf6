"""Rating links: an address /rate/<token> that lets one named guest rate one evaluation's slice, and nothing else.

Kept in the kind's own table `rating_links` (schema step 21) by the SHA-256 hex digest of the token, never the token
itself: the token (`secrets.token_urlsafe(24)`, 192 bits) is shown once, when the link is made. A revoked link stops
working at once (every request looks its token up)."""
from __future__ import annotations

import hashlib
import secrets
import unicodedata
from datetime import datetime, timezone

from kinds.host import Step, Store, Table
from translations import _

# the pages a link's token opens (kinds/dialogue/rating_routes.py), which the guard lets through without signing in
ENDPOINTS = ("rating.guest_start", "rating.guest_page", "rating.guest_save", "rating.guest_forget")
TOKEN_BYTES = 24
MAX_NAME = 80  # characters of a rater's name
COLUMNS = "token_hash, evaluation_id, name, created_by, created_at, revoked_at"


class LinkError(ValueError):
    """A link that cannot be made as asked; the message says what to change."""


def _create(con, ddl: dict) -> None:
    # A guest's rating link of one evaluation: only the token's hash is kept.
    con.exec_driver_sql("""CREATE TABLE IF NOT EXISTS rating_links (
    token_hash TEXT PRIMARY KEY,
    evaluation_id TEXT NOT NULL REFERENCES evaluations (id),
    name TEXT NOT NULL,
    created_by TEXT,
    created_at TEXT NOT NULL,
    revoked_at TEXT
)""")


TABLE = Table("rating_links", (Step(21, "rating_links: guests' links to rate an evaluation's slice", _create),),
              evaluation_column="evaluation_id")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def digest(token: str) -> str:
    """The SHA-256 hex digest a token is kept as."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def rater_name(text: object) -> str:
    """A rater's name as typed (spaces around it dropped); LinkError when empty, too long or holding control
    characters."""
    name = str(text or "").strip()
    if not name:
        raise LinkError(_("Give the rater's name: their ratings are kept under it."))
    if len(name) > MAX_NAME or any(unicodedata.category(c).startswith("C") for c in name):
        raise LinkError(_("A rater's name has at most %(limit)s characters and no control characters.",
                          limit=MAX_NAME))
    return name


def create(store: Store, evaluation_id: str, name: str, created_by: str | None) -> tuple[dict, str]:
    """A new link for the guest `name` (rater_name's rules; not one an active link of the evaluation has):
    (its record, the token, which is never available again)."""
    name = rater_name(name)
    if any(link["name"] == name for link in active(store, evaluation_id)):
        raise LinkError(_("An active link already rates as %(name)s: revoke it first, or give another name.",
                          name=name))
    token = secrets.token_urlsafe(TOKEN_BYTES)
    record = {"token_hash": digest(token), "evaluation_id": evaluation_id, "name": name, "created_by": created_by,
              "created_at": _now(), "revoked_at": None}
    store.execute(f"INSERT INTO rating_links ({COLUMNS}) VALUES (:token_hash, :evaluation_id, :name, :created_by,"
                  " :created_at, :revoked_at)", record)
    return record, token


def active(store: Store, evaluation_id: str) -> list[dict]:
    """The evaluation's links not revoked, oldest first."""
    return store.rows(f"SELECT {COLUMNS} FROM rating_links WHERE evaluation_id = :eid AND revoked_at IS NULL"
                      " ORDER BY created_at, name", {"eid": evaluation_id})


def of_token(store: Store, token: str) -> dict | None:
    """The active link of a token, or None (unknown or revoked)."""
    return store.row(f"SELECT {COLUMNS} FROM rating_links WHERE token_hash = :hash AND revoked_at IS NULL",
                     {"hash": digest(token)})


def revoke(store: Store, evaluation_id: str, token_hash: str) -> bool:
    """Revoke one of the evaluation's active links (named by its hash); False when it has no such link."""
    return store.execute("UPDATE rating_links SET revoked_at = :now WHERE evaluation_id = :eid"
                         " AND token_hash = :hash AND revoked_at IS NULL",
                         {"now": _now(), "eid": evaluation_id, "hash": token_hash}) > 0

"""The store's share links, users and API tokens (web/accounts.py and web/share.py hold the rules)."""
from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from storage.database import Database, first_dict, now, one_dict, text_query

SHARE = "id, evaluation_id, token, created_at, revoked_at"
USER = "id, name, password_hash, is_admin, created_at"
TOKEN = "id, user_id, name, token_hash, created_at, last_used_at, revoked_at"


class Duplicate(Exception):
    """The name is taken (user names compare case-insensitively)."""


class Access(Database):
    """The share links, users and API tokens section of the Store, on the connections of storage.database.Database."""

    # shares ------------------------------------------------------------------
    # Read-only links to one result (web/share.py). The token is stored as it is, not hashed: the result
    # page shows it again for copying, and whoever can read this database can read every result anyway.
    def add_share(self, share_id: str, evaluation_id: str, token: str) -> dict:
        """Record a new share link of an evaluation; returns it."""
        with self._writing() as con:
            return one_dict(con.execute(text_query(f"INSERT INTO shares (id, evaluation_id, token, created_at)"
                                           f" VALUES (:id, :eid, :token, :now) RETURNING {SHARE}"),
                                      {"id": share_id, "eid": evaluation_id, "token": token, "now": now()}))

    def active_share(self, token: str) -> dict | None:
        """The share link with this token unless it was revoked, else None."""
        return self._one(f"SELECT {SHARE} FROM shares WHERE token = :token AND revoked_at IS NULL", {"token": token})

    def list_shares(self, evaluation_id: str, include_revoked: bool = False) -> list[dict]:
        """Share links of an evaluation, oldest first (active ones only unless asked)."""
        sql = f"SELECT {SHARE} FROM shares WHERE evaluation_id = :eid" + (
            "" if include_revoked else " AND revoked_at IS NULL")
        return self._all(sql + " ORDER BY created_at, seq", {"eid": evaluation_id})

    def revoke_share(self, evaluation_id: str, share_id: str) -> dict | None:
        """Revoke a share link of an evaluation (revoking twice keeps the first time); None when unknown."""
        params = {"now": now(), "id": share_id, "eid": evaluation_id}
        with self._writing() as con:
            con.execute(text_query("UPDATE shares SET revoked_at = COALESCE(revoked_at, :now)"
                             " WHERE id = :id AND evaluation_id = :eid"), params)
            return first_dict(con.execute(text_query(f"SELECT {SHARE} FROM shares WHERE id = :id AND evaluation_id = :eid"),
                                      params))

    # users and API tokens (web/accounts.py) ----------------------------------------
    def add_user(self, name: str, password_hash: str, is_admin: bool) -> dict:
        """Insert a user; returns it (Duplicate when the name is taken, whatever its case)."""
        try:
            with self._writing() as con:
                return one_dict(con.execute(text_query(f"INSERT INTO users (name, password_hash, is_admin, created_at)"
                                               f" VALUES (:name, :hash, :admin, :now) RETURNING {USER}"),
                                          {"name": name, "hash": password_hash, "admin": int(is_admin),
                                           "now": now()}))
        except IntegrityError:
            raise Duplicate(name) from None

    def get_user(self, user_id: int | None = None, name: str | None = None) -> dict | None:
        """A user by id or by name (names compare case-insensitively), or None."""
        where = [w for w, value in (("id = :id", user_id), ("lower(name) = lower(:name)", name)) if value is not None]
        if not where:
            return None
        return self._one(f"SELECT {USER} FROM users WHERE {' OR '.join(where)} ORDER BY id LIMIT 1",
                         {"id": user_id, "name": name})

    def list_users(self) -> list[dict]:
        """Every user, by name."""
        return self._all(f"SELECT {USER} FROM users ORDER BY lower(name), id")

    def set_password_hash(self, user_id: int, password_hash: str) -> None:
        """Replace a user's password hash."""
        self._write("UPDATE users SET password_hash = :hash WHERE id = :id", {"hash": password_hash, "id": user_id})

    def delete_user(self, user_id: int) -> None:
        """Delete a user and their API tokens."""
        with self._writing() as con:
            con.execute(text_query("DELETE FROM api_tokens WHERE user_id = :id"), {"id": user_id})
            con.execute(text_query("DELETE FROM users WHERE id = :id"), {"id": user_id})

    def add_token(self, user_id: int, name: str, token_hash: str) -> dict:
        """Record an API token by its hash; returns the record."""
        with self._writing() as con:
            return one_dict(con.execute(text_query(f"INSERT INTO api_tokens (user_id, name, token_hash, created_at)"
                                           f" VALUES (:user_id, :name, :hash, :now) RETURNING {TOKEN}"),
                                      {"user_id": user_id, "name": name, "hash": token_hash, "now": now()}))

    def active_token(self, token_hash: str) -> dict | None:
        """The unrevoked API token with this hash, or None."""
        return self._one(f"SELECT {TOKEN} FROM api_tokens WHERE token_hash = :hash AND revoked_at IS NULL",
                         {"hash": token_hash})

    def touch_token(self, token_id: int) -> None:
        """Note that an API token was just used."""
        self._write("UPDATE api_tokens SET last_used_at = :now WHERE id = :id", {"now": now(), "id": token_id})

    def list_tokens(self, user_id: int) -> list[dict]:
        """A user's API tokens, newest first, revoked ones included."""
        return self._all(f"SELECT {TOKEN} FROM api_tokens WHERE user_id = :user_id ORDER BY created_at DESC, id DESC",
                         {"user_id": user_id})

    def revoke_token(self, user_id: int, token_id: int) -> dict | None:
        """Revoke one of a user's API tokens (the first time counts); None when the user has no such token."""
        params = {"now": now(), "id": token_id, "user_id": user_id}
        with self._writing() as con:
            con.execute(text_query("UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, :now)"
                             " WHERE id = :id AND user_id = :user_id"), params)
            return first_dict(con.execute(text_query(f"SELECT {TOKEN} FROM api_tokens WHERE id = :id AND user_id = :user_id"),
                                      params))

"""Named reference sets for the mobility benchmark: uploaded once, kept as arrays, picked per evaluation.

The records are the kind's own table, `reference_sets` (declared as `TABLE`, read and written through the store's
generic API); the arrays are stored files named by their hash.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import inspect

from kinds.host import Files, Step, Store, Table, new_id
from kinds.mobility import reference_files as mobility_reference
from kinds.mobility.format import KEYS, MobilityData
from translations import _

MAX_NAME = 80
COLUMNS = "id, name, sha256, source, summary, created_at"


def _create(con, ddl: dict) -> None:
    # Created by the store's step 1 and numbered (seq) by its step 4 until the kind kept it: databases made then
    # have it already, and get here only the numbering if they stopped before step 4; new ones get the same table
    # by the same statements.
    con.exec_driver_sql("""CREATE TABLE IF NOT EXISTS reference_sets (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    sha256 TEXT NOT NULL,
    source TEXT NOT NULL,
    summary TEXT NOT NULL,
    created_at TEXT NOT NULL
)""")
    if "seq" not in {column["name"] for column in inspect(con).get_columns("reference_sets")}:
        for statement in ddl["ordering"]:
            con.exec_driver_sql(statement.format(table="reference_sets"))


TABLE = Table("reference_sets", (Step(13, "reference_sets: the mobility kind's named reference sets", _create),))


class ReferenceProblem(ValueError):
    """A reference set that cannot be added or found; the message says why."""


def key_of(sha256: str) -> str:
    """Where a reference set's arrays are kept among the stored files (by content hash, never by a user's name)."""
    return f"references/{sha256}.npz"


def content_hash(data: MobilityData) -> str:
    """sha256 over the four arrays (dtype, shape and bytes), so the same set is recognised however it came."""
    digest = hashlib.sha256()
    for key in KEYS:
        array = getattr(data, key)
        digest.update(f"{key}:{array.dtype.str}:{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def add(store: Store, files: Files, data: MobilityData, name: str, source: str) -> dict:
    """Keep a reference set under a name; the same arrays under the same name are returned as they are."""
    name = (name or "").strip()[:MAX_NAME]
    if not name:
        raise ReferenceProblem(_("Give the reference set a name."))
    sha256 = content_hash(data)
    existing = get(store, name)
    if existing:
        if existing["sha256"] == sha256:
            return existing
        raise ReferenceProblem(_("A reference set named '%(name)s' already exists; choose another name.", name=name))
    if not files.exists(key_of(sha256)):
        fd, tmp = tempfile.mkstemp(dir=files.scratch(), prefix=".tmp-", suffix=".npz")
        os.close(fd)
        try:
            mobility_reference.save_npz(data, Path(tmp))
            files.put_file(key_of(sha256), Path(tmp))  # whole or not at all
        finally:
            Path(tmp).unlink(missing_ok=True)
    reference_id = new_id()
    store.execute("INSERT INTO reference_sets (id, name, sha256, source, summary, created_at)"
                  " VALUES (:id, :name, :sha256, :source, :summary, :created_at)",
                  {"id": reference_id, "name": name, "sha256": sha256, "source": source[:200],
                   "summary": json.dumps(data.summary()),
                   "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    found = get(store, reference_id)
    assert found is not None  # inserted just above
    return found


def _decoded(row: dict | None) -> dict | None:
    if row is not None:
        row["summary"] = json.loads(row["summary"])
    return row


def get(store: Store, id_or_name: str) -> dict | None:
    """A reference set by id or by name, or None."""
    return _decoded(store.row(f"SELECT {COLUMNS} FROM reference_sets WHERE id = :key OR name = :key"
                              " ORDER BY seq LIMIT 1", {"key": id_or_name}))


def records(store: Store) -> list[dict]:
    """Every reference set, newest first."""
    return [row for row in map(_decoded, store.rows(f"SELECT {COLUMNS} FROM reference_sets"
                                                    " ORDER BY created_at DESC, seq DESC")) if row is not None]


def users_of(store: Store, reference_id: str) -> list[str]:
    """The evaluations scored against a reference set."""
    return [e["id"] for e in store.list_evaluations(limit=100_000, kind="mobility")
            if (e["settings"] or {}).get("reference") == reference_id]


def delete(store: Store, files: Files, id_or_name: str) -> dict:
    """Delete a reference set no evaluation uses, and its arrays' file unless another set has the same arrays;
    ReferenceProblem when it is missing or in use (naming the evaluations)."""
    record = get(store, id_or_name)
    if record is None:
        raise ReferenceProblem(_("There is no reference set '%(name)s'.", name=id_or_name))
    users = users_of(store, record["id"])
    if users:
        raise ReferenceProblem(_("The reference set '%(name)s' is used by %(count)s evaluations (%(ids)s); delete "
                                 "them first.", name=record["name"], count=len(users), ids=", ".join(users)))
    store.execute("DELETE FROM reference_sets WHERE id = :id", {"id": record["id"]})
    if not any(r["sha256"] == record["sha256"] for r in records(store)):
        files.delete(key_of(record["sha256"]))
    return record


def load(files: Files, record: dict) -> MobilityData:
    """The arrays of a stored reference set."""
    return mobility_reference.load_npz(files.file(key_of(record["sha256"])))


def resolve(store: Store, files: Files, path_or_name: str) -> dict:
    """A reference set by name or id, or else loaded from a path (folder, ZIP or JSON) and kept under its name."""
    record = get(store, path_or_name)
    if record:
        return record
    path = Path(path_or_name)
    if not path.exists():
        names = ", ".join(r["name"] for r in records(store)) or _("none yet")
        raise ReferenceProblem(_("No reference set is named '%(name)s' and no such file or folder exists. Known "
                                 "reference sets: %(names)s.", name=path_or_name, names=names))
    try:
        data = mobility_reference.load_any(path, path.name)
    except mobility_reference.ReferenceError as exc:
        raise ReferenceProblem(str(exc)) from exc
    return add(store, files, data, path.stem if path.is_file() else path.name, f"file:{path.name}")

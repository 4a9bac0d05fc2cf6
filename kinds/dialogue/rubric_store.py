"""The rubrics people add, kept in the dialogue kind's own table `rubrics`, and how an evaluation finds its rubric.

A rubric is kept by the SHA-256 of its canonical form, whole (an evaluation judged under it can always be shown and
judged again, even after the rubric is deleted from the list: deleting only hides it). The built-ins
(kinds/rubrics/builtin/) are not in the table; an id names the built-in first, then the newest rubric added
under it. The same id and version with other content is refused: a changed rubric needs a new version.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone

from kinds import rubrics
from kinds.host import Step, Store, Table
from kinds.kind import JobFailed, StartError
from kinds.rubrics import Rubric
from translations import _

COLUMNS = "sha256, id, version, document, created_at, deleted"


def _create(con, ddl: dict) -> None:
    # Each rubric added, whole, by the hash of its canonical form; `deleted` hides it from the list.
    con.exec_driver_sql("""CREATE TABLE IF NOT EXISTS rubrics (
    sha256 TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    version TEXT NOT NULL,
    document TEXT NOT NULL,
    created_at TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
)""")
    con.exec_driver_sql("CREATE INDEX IF NOT EXISTS rubrics_id ON rubrics (id, created_at)")


TABLE = Table("rubrics", (Step(15, "rubrics: the judging protocols people add", _create),))


# Scores imported as bare 0-100 totals (imported.py) are read under no rubric: this stands for one in their
# evaluations, a headline without dimensions, question or prompts. It is never listed nor chosen for a judge.
BARE_TOTALS = rubrics.make({
    "id": "total", "version": "1", "context": [], "dimensions": [], "prompts": {}, "headline": {"combine": "sum"},
    "answer": {"format": "json"},
    "title": {"en": "Imported totals", "zh": "导入的总分", "ko": "가져온 총점"},
    "description": {"en": "Scores another judge gave, imported as 0-100 totals: the headline alone, no dimensions.",
                    "zh": "另一位评审给出的分数，以 0-100 总分导入：只有总分，没有维度。",
                    "ko": "다른 심사자가 매긴 점수를 0-100 총점으로 가져온 것: 총점만 있고 차원은 없습니다."}})


class RubricProblem(ValueError):
    """A rubric that cannot be added, found or deleted; the message says why."""


def _rubric(row: dict | None) -> Rubric | None:
    return rubrics.make(json.loads(row["document"])) if row else None


def add(store: Store, rubric: Rubric) -> Rubric:
    """Keep a checked rubric (the same content again is kept once, and shown again if it was deleted);
    RubricProblem when its id is a built-in's, or its id and version are kept with other content."""
    if rubric.id in rubrics.builtins():
        raise RubricProblem(_("%(id)s is the id of a built-in rubric; give yours another id.", id=rubric.id))
    clash = store.row("SELECT sha256 FROM rubrics WHERE id = :id AND version = :version AND sha256 <> :sha256",
                      {"id": rubric.id, "version": rubric.version, "sha256": rubric.sha256})
    if clash:
        raise RubricProblem(_("A rubric %(id)s version %(version)s is kept already, with other content: change its "
                              "version to add this one.", id=rubric.id, version=rubric.version))
    if store.execute("UPDATE rubrics SET deleted = 0 WHERE sha256 = :sha256", {"sha256": rubric.sha256}) == 0:
        store.execute("INSERT INTO rubrics (sha256, id, version, document, created_at, deleted)"
                      " VALUES (:sha256, :id, :version, :document, :created_at, 0)",
                      {"sha256": rubric.sha256, "id": rubric.id, "version": rubric.version,
                       "document": rubrics.canonical(rubric.document),
                       "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    return rubric


def find(store: Store | None, name: str) -> Rubric | None:
    """A rubric by id (a built-in, else the newest kept under it and not deleted) or by SHA-256 (any kept)."""
    name = (name or "").strip()
    found = rubrics.builtins().get(name) or next((r for r in rubrics.builtins().values() if r.sha256 == name), None)
    if found or store is None:
        return found
    return _rubric(store.row(f"SELECT {COLUMNS} FROM rubrics WHERE (id = :name AND deleted = 0) OR sha256 = :name"
                             " ORDER BY sha256 = :name DESC, created_at DESC LIMIT 1", {"name": name}))


def listed(store: Store | None) -> list[Rubric]:
    """The built-ins, then every rubric added and not deleted, newest first."""
    kept = store.rows(f"SELECT {COLUMNS} FROM rubrics WHERE deleted = 0 ORDER BY created_at DESC, id") if store else []
    return [*rubrics.builtins().values(), *(r for r in map(_rubric, kept) if r is not None)]


def delete(store: Store, name: str) -> int:
    """Hide the rubrics kept under an id (or one by its SHA-256) from the list: evaluations judged under them keep
    them. RubricProblem for a built-in or a rubric that is not kept; the number hidden otherwise."""
    if find(None, name):
        raise RubricProblem(_("%(id)s is a built-in rubric; it cannot be deleted.", id=name))
    hidden = store.execute("UPDATE rubrics SET deleted = 1 WHERE (id = :name OR sha256 = :name) AND deleted = 0",
                           {"name": name})
    if not hidden:
        raise RubricProblem(_("No rubric is kept under %(name)s.", name=name))
    return hidden


def chosen(store: Store | None, name: object) -> Rubric:
    """The rubric an evaluation asks for by id or SHA-256 (the default when none); StartError naming the rubrics
    there are otherwise."""
    if name in (None, ""):
        return rubrics.builtin()
    found = find(store, name) if isinstance(name, str) else None
    if found is None:
        known = ", ".join(r.id for r in listed(store))
        raise StartError(_("Unknown rubric %(name)s; the rubrics are: %(names)s.", name=repr(name), names=known))
    return found


def of_evaluation(store: Store | None, evaluation: dict) -> Rubric:
    """The rubric an evaluation was judged under (the default for evaluations made before rubrics; BARE_TOTALS for
    imported bare totals); JobFailed when it is no longer kept."""
    reference = (evaluation.get("settings") or {}).get("rubric")
    if not reference:
        return rubrics.builtin()
    if reference["sha256"] == BARE_TOTALS.sha256:
        return BARE_TOTALS
    found = find(store, reference["sha256"])
    if found is None:
        raise JobFailed(_("The rubric %(id)s (%(sha)s) of this evaluation is not kept here.", id=reference["id"],
                          sha=reference["sha256"][:12]))
    return found

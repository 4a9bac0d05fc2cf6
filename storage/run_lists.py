"""The list of evaluations at scale: search, filters, sort and pages answered by the database (WHERE, ORDER BY,
LIMIT, OFFSET over indexed columns of step 22), never by reading every run and its result document.

What a search matches is each run's `search_text`, which the pipeline makes (pipeline/run_search.py) and this
module only keeps: NULL until made, and again when the run's title or tags change. A sort by a method's headline
figure reads `evaluation_figures`, the headline's numbers as rows, kept with the headline.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

from sqlalchemy.engine import Connection

from storage.database import Database, dict_rows, text_query
from storage.migrations import headline_figures

SORTS = ("newest", "oldest", "title", "figure-high", "figure-low")
NEWEST = "e.created_at DESC, e.seq DESC"
ORDER = {"newest": NEWEST, "oldest": "e.created_at, e.seq", "title": f"e.sort_title, {NEWEST}",
         "figure-high": f"(f.value IS NULL), f.value DESC, {NEWEST}",
         "figure-low": f"(f.value IS NULL), f.value, {NEWEST}"}
LISTED = ("e.id, e.upload_id, e.kind, e.status, e.methods, e.settings, e.total, e.error, e.created_at, e.finished_at,"
          " e.title, e.tags, e.headline, e.started_by, u.filename")


@dataclass(frozen=True)
class RunQuery:
    """Which runs a list shows, and in what order. `words`: each must be in the run's search text (lowercase);
    `since`/`before`: created at or after, and before, these ISO dates; `statuses`: any of them; `figure`: the
    headline figure (a method's name, "" for a run's unnamed one) the figure sorts read."""

    words: tuple[str, ...] = ()
    kind: str | None = None
    statuses: tuple[str, ...] = ()
    tag: str | None = None
    started_by: str | None = None
    since: str | None = None
    before: str | None = None
    sort: str = "newest"
    figure: str = ""


def like_pattern(text: str) -> str:
    """A LIKE pattern (ESCAPE '\\') that matches `text` anywhere, its own % and _ taken literally."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _where(query: RunQuery, dialect: str) -> tuple[str, dict]:
    """The WHERE clause of a query and its parameters (for the database's `dialect`)."""
    clauses, params = ["1 = 1"], {}
    for i, word in enumerate(query.words):
        clauses.append(f"e.search_text LIKE :w{i} ESCAPE '\\'")
        params[f"w{i}"] = like_pattern(word)
    if query.statuses:
        names = {f"s{i}": status for i, status in enumerate(query.statuses)}
        clauses.append(f"e.status IN ({', '.join(':' + n for n in names)})")
        params.update(names)
    if query.tag:  # tags are a JSON list: the tag as JSON writes it, quotes included, is a whole tag (case counts)
        position = "instr" if dialect == "sqlite" else "strpos"  # both case-sensitive, unlike SQLite's LIKE
        clauses.append(f"{position}(e.tags, :tag) > 0")
        params["tag"] = json.dumps(query.tag, ensure_ascii=False)
    for column, name, operator in (("e.kind", "kind", "="), ("e.started_by", "started_by", "="),
                                   ("e.created_at", "since", ">="), ("e.created_at", "before", "<")):
        if getattr(query, name):
            clauses.append(f"{column} {operator} :{name}")
            params[name] = getattr(query, name)
    return " AND ".join(clauses), params


def write_figures(con: Connection, evaluation_id: str, headline: list | None) -> None:
    """Replace an evaluation's headline figures (the rows a sort by a method's figure reads)."""
    con.execute(text_query("DELETE FROM evaluation_figures WHERE evaluation_id = :id"), {"id": evaluation_id})
    rows = [{"id": evaluation_id, "name": name, "value": value}
            for name, value in headline_figures(headline).items()]
    if rows:
        con.execute(text_query("INSERT INTO evaluation_figures (evaluation_id, name, value)"
                               " VALUES (:id, :name, :value)"), rows)


class RunLists(Database):
    """The list of evaluations section of the Store: pages of runs that match a RunQuery, and the search texts."""

    def find_evaluations(self, query: RunQuery, limit: int, offset: int) -> tuple[list[dict], int]:
        """One page of the runs that match (without their result documents), and how many match in all. The page's
        ids are found first from indexed columns only; then its rows are read, `limit` of them at most."""
        where, params = _where(query, self.dialect)
        figures = (" LEFT JOIN evaluation_figures f ON f.evaluation_id = e.id AND f.name = :figure"
                   if query.sort.startswith("figure") else "")
        with self._connection() as con:
            total = con.execute(text_query(f"SELECT COUNT(*) FROM evaluations e WHERE {where}"), params).scalar_one()
            ids = list(con.execute(text_query(
                f"SELECT e.id FROM evaluations e{figures} WHERE {where} ORDER BY {ORDER[query.sort]}"
                " LIMIT :limit OFFSET :offset"),
                {**params, "figure": query.figure, "limit": limit, "offset": offset}).scalars())
            names = {f"id{i}": evaluation_id for i, evaluation_id in enumerate(ids)}
            found = dict_rows(con.execute(text_query(
                f"SELECT {LISTED} FROM evaluations e JOIN uploads u ON u.id = e.upload_id"
                f" WHERE e.id IN ({', '.join(':' + n for n in names)})"), names)) if ids else []
        by_id = {row["id"]: row for row in found}
        page = [by_id[evaluation_id] for evaluation_id in ids if evaluation_id in by_id]
        for row in page:
            for column in ("methods", "settings", "tags", "headline"):
                row[column] = None if row[column] is None else json.loads(row[column])
        return page, int(total)

    def unsearchable_evaluations(self, limit: int) -> list[dict]:
        """Runs whose search text is not made yet (new, or relabelled), with what it is made of."""
        rows = self._all("SELECT e.id, e.kind, e.methods, e.settings, e.title, e.tags, u.filename"
                         " FROM evaluations e JOIN uploads u ON u.id = e.upload_id WHERE e.search_text IS NULL"
                         " ORDER BY e.id LIMIT :limit", {"limit": limit})
        for row in rows:
            for column in ("methods", "settings", "tags"):
                row[column] = json.loads(row[column]) if row[column] else None
        return rows

    def set_search_texts(self, rows: Iterable[dict]) -> None:
        """Keep runs' search texts and sort titles (`id`, `search_text`, `sort_title`), in one transaction."""
        with self._writing() as con:
            self._many(con, "UPDATE evaluations SET search_text = :search_text, sort_title = :sort_title"
                            " WHERE id = :id", rows)

    def figure_names(self) -> list[str]:
        """The names of the headline figures runs have (methods, agents; "" for an unnamed one), sorted."""
        return [row["name"] for row in self._all("SELECT DISTINCT name FROM evaluation_figures ORDER BY name")]

    def tag_lists(self) -> list[list[str]]:
        """Each different list of tags runs have."""
        return [json.loads(row["tags"]) for row in self._all("SELECT DISTINCT tags FROM evaluations")]

    def starters(self) -> list[str]:
        """Who started runs (with accounts on), sorted."""
        return [row["started_by"] for row in self._all(
            "SELECT DISTINCT started_by FROM evaluations WHERE started_by IS NOT NULL ORDER BY started_by")]

"""The list of evaluations as the page, the compare picker and `GET /api/evaluations` ask for it: the query string
read into a search (storage/run_lists.py's RunQuery) and a page, checked as the API's ListQuery checks it, and a
page of runs with their titles (web/run_labels.py), found by the database (pipeline/housekeeping.py).

Parameters: `q` (words, each in the run's title, file name, tags, methods, judge model or rubric), `kind`, `status`,
`tag`, `started_by`, `since` and `until` (days, UTC, both included), `sort` (newest, oldest, title, figure-high,
figure-low), `figure` (the method whose headline figure the figure sorts read), `page` and `per_page`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Mapping

from common.contract import parsed
from kinds import registry
from kinds.kind import Scored
from pipeline import housekeeping
from storage.run_lists import RunQuery
from translations import _, number
from web import get_store
from web import schemas as S
from web.run_labels import display_titles, run_labels

PAGE_SIZES = (20, 50, 100)  # what the page offers; the API takes up to schemas.MAX_PER_PAGE
PARAMETERS = tuple(S.ListQuery.model_fields)


@dataclass(frozen=True)
class Listing:
    """A search and one page of it; `args`, the parameters as given, blank ones left out (for links)."""

    query: RunQuery
    page: int
    per_page: int
    args: dict[str, str]

    @property
    def offset(self) -> int:
        """How many matching runs come before this page."""
        return (self.page - 1) * self.per_page

    def link(self, **changes) -> dict[str, str]:
        """The parameters of this listing with some changed (a value None or "" leaves the parameter out)."""
        merged = {**self.args, **{k: str(v) for k, v in changes.items() if v not in (None, "")}}
        return {k: v for k, v in merged.items() if k not in changes or changes[k] not in (None, "")}


def read_listing(args: Mapping[str, str], per_page: int) -> Listing:
    """The listing a query string asks for (`per_page` when it names none; blank and other parameters left out);
    ValueError saying which parameter is wrong and why."""
    given = {key: value for key, value in args.items() if key in PARAMETERS and value.strip() != ""}
    values = parsed(S.ListQuery, given)
    scored: list[Scored] = registry.having(Scored)
    kinds = [kind.name for kind in scored]
    if values.kind and values.kind not in kinds:
        raise ValueError(_("Unknown kind %(kind)s; the kinds are %(kinds)s.", kind=repr(values.kind),
                           kinds=", ".join(kinds)))
    before = values.until + timedelta(days=1) if values.until and values.until.year < 9999 else None
    query = RunQuery(words=tuple((values.q or "").casefold().split()), kind=values.kind or None,
                     statuses=(values.status,) if values.status else (), tag=(values.tag or "").strip() or None,
                     started_by=values.started_by or None, since=values.since.isoformat() if values.since else None,
                     before=before.isoformat() if before else None, sort=values.sort or "newest",
                     figure=(values.figure or "").strip())
    return Listing(query, values.page or 1, values.per_page or per_page, given)


def finished_only(listing: Listing, statuses: tuple[str, ...]) -> Listing:
    """The same listing of runs in these statuses only (the compare picker's finished runs): none when it asked
    for another status."""
    chosen = tuple(s for s in statuses if not listing.query.statuses or s in listing.query.statuses)
    return replace(listing, query=replace(listing.query, statuses=chosen or ("",)))  # "": a status no run has


def runs(listing: Listing) -> tuple[list[dict], int]:
    """The runs of a listing's page, each with its `display_title` and `label` (what else tells it apart from the
    others on the page), and how many runs match in all."""
    rows, total = housekeeping.evaluation_page(get_store(), listing.query, listing.per_page, listing.offset)
    for row, title, label in zip(rows, display_titles(rows), run_labels(rows, names=False)):
        row["display_title"] = title
        row["label"] = label
    return rows, total


def shown(listing: Listing, count: int, total: int) -> str:
    """Which runs of how many a page shows: "41–60 of 1,204" ("none" when none matches)."""
    if not total:
        return _("none")
    if not count:
        return _("none of %(total)s", total=number(total, 0))
    first = listing.offset + 1
    return _("%(first)s–%(last)s of %(total)s", first=number(first, 0), last=number(first + count - 1, 0),
             total=number(total, 0))


def last_page(listing: Listing, total: int) -> int:
    """The number of the last page (1 when nothing matches)."""
    return max(1, -(-total // listing.per_page))

"""The row-level diff page: the samples two finished runs share, side by side, and the same rows as CSV.

`GET /compare/rows?ids=A&ids=B&baseline=A&metric=avg&changed=1&threshold=5&direction=improved&q=re&sort=delta&page=2`
(every parameter but `ids` optional); the address is the permalink. `GET /compare/rows.csv` with the same query gives
every row the filters keep. The logic is kinds/row_diff.py's; this module parses the request and renders it.

Under a share link, `GET /share/<token>/compare/rows?other=<token>` (and `.../rows.csv`): the first link's
evaluation is the baseline, the second link's the other run. Both must be active share links, so a visitor sees
rows only of evaluations shared with them; the sample links lead to each share link's own views.

Each request reads both runs' samples whole (`Kind.paired_samples`); a cache keyed by the two evaluation ids would be
the next step if large runs make this page slow.
"""
from __future__ import annotations

from typing import Callable, Mapping
from urllib.parse import urlencode

from flask import Blueprint, Flask, render_template, request, url_for

from kinds import registry, search
from kinds import row_diff as logic
from kinds.host import csv_response
from kinds.kind import Metric, Paired
from kinds.paired_rows import align
from translations import _
from web import errors, get_site, get_store
from web.compare import CompareError, load_runs, requested_ids
from web.paired_view import earliest

bp = Blueprint("row_diff", __name__)
MAX_THRESHOLD = 1e9


def register(app: Flask) -> None:
    """Register the row-level diff pages (they only read: nothing to exempt from CSRF)."""
    app.register_blueprint(bp)


def link_label(name: str) -> str:
    """A sample link's label: the kinds' usual link names translated, any other name as it is."""
    labels = {"session": _("Session"), "fine": _("Prompt and answer (score)"),
              "binary": _("Prompt and answer (verdict)")}
    return labels.get(name, name)


def _threshold(text: str) -> float:
    """The threshold of |Δ| (0 when blank); BadQuery unless a number from 0 to MAX_THRESHOLD."""
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise search.BadQuery(_("The threshold must be a number from 0 to %(max)s.", max=int(MAX_THRESHOLD))) from None
    if not 0 <= value <= MAX_THRESHOLD:  # also false for nan
        raise search.BadQuery(_("The threshold must be a number from 0 to %(max)s.", max=int(MAX_THRESHOLD)))
    return value


def query_of(args: Mapping, metrics: tuple[Metric, ...]) -> dict:
    """The view's state from the query string, checked (BadQuery says what is wrong)."""
    names = [m.name for m in metrics]
    metric = args.get("metric") or names[0]
    if metric not in names:
        raise search.BadQuery(_("Unknown metric %(metric)s; choose one of %(metrics)s.", metric=metric,
                               metrics=", ".join(names)))
    direction = args.get("direction", "")
    if direction and direction not in logic.DIRECTIONS:
        direction = ""
    sort = args.get("sort", "key")
    threshold = (args.get("threshold") or "").strip()
    try:
        page = int(args.get("page", "1"))
    except ValueError:
        page = 1
    return {"metric": metric, "changed": args.get("changed") in ("1", "on", "true"), "direction": direction,
            "threshold": _threshold(threshold), "q": (args.get("q") or "")[:1000],
            "sort": sort if sort in logic.SORTS else "key", "page": page}


class Pair:
    """Two finished runs of one kind, the baseline first, with the addresses of their sample views."""

    def __init__(self, baseline: dict, other: dict, view_base: tuple[str, str]) -> None:
        store = get_store()
        self.runs = [baseline, other]
        records = [store.get_evaluation(run["id"], with_result=False) for run in self.runs]
        self.records: list[dict] = [r for r in records if r is not None]
        if len(self.records) < 2:  # deleted since load_runs read it
            raise CompareError(_("No evaluation has the id %(ids)s.", ids=", ".join(r["id"] for r in self.runs)))
        kind = registry.get(self.records[0]["kind"])
        if not isinstance(kind, Paired):
            raise CompareError(_("Evaluations of kind %(kind)s are not compared sample by sample: their runs share no "
                                 "samples (the compare page compares their distributions).", kind=kind.label))
        self.kind = kind
        self.metrics = kind.paired_metrics_for([run["result"] for run in self.runs])  # those both runs pair on
        self.view_base = view_base

    def rows(self, query: dict) -> tuple[list[logic.Row], list[logic.Row]]:
        """Every row of the two runs for the query's metric and threshold, and those the filters keep, sorted."""
        pattern = search.compile_pattern(query["q"])  # a bad pattern fails before the runs are read
        site = get_site()
        base, other = (self.kind.paired_samples(record, site) for record in self.records)
        metric = next(m for m in self.metrics if m.name == query["metric"])
        rows = logic.make_rows(align(base, other), metric, query["threshold"])
        return rows, logic.select(rows, changed=query["changed"], direction=query["direction"], pattern=pattern,
                                  sort=query["sort"])

    def links(self, row: logic.Row) -> list[list[tuple[str, str]]]:
        """Each run's labelled links to its views of the row's sample."""
        return [[(link_label(name), base + link) for name, link in sample.links.items()]
                for sample, base in zip((row.baseline, row.other), self.view_base)]


def _run_pair(ids: list[str], baseline: str | None, view_base: Callable[[str], str]) -> Pair:
    if len(ids) != 2:
        raise CompareError(_("Choose exactly two finished evaluations for the row-level diff."))
    runs = load_runs(ids)
    if baseline == ids[1]:
        runs.reverse()
    return Pair(runs[0], runs[1], (view_base(runs[0]["id"]), view_base(runs[1]["id"])))


def _render(pair: Pair | None, error: str | None, state: dict, csv_url: str, shared: bool, status: int = 400):
    if pair is None:
        return render_template("row_diff.html", error=error, pair=None, shared=shared), status
    try:
        query = query_of(request.args, pair.metrics)
        every, rows = pair.rows(query)
    except search.BadQuery as exc:
        query = {**query_of({}, pair.metrics), "q": request.args.get("q", "")}
        return render_template("row_diff.html", error=str(exc), pair=pair, query=query, rows=[], state=state,
                               metrics=pair.metrics, counts=None, shared=shared), 400
    shown, page, pages = logic.page_of(rows, query["page"])
    shown_rows = [(r, logic.word_diff(r.baseline.text or "", r.other.text or "") if r.texts_differ else None)
                  for r in shown]
    args = [(k, v) for k, v in request.args.items(multi=True) if k != "page"]

    def page_url(number: int) -> str:
        return request.path + "?" + urlencode([*args, ("page", str(number))])

    metric = next(m for m in pair.metrics if m.name == query["metric"])
    return render_template("row_diff.html", pair=pair, query=query, rows=shown_rows, page=page, pages=pages,
                           count=len(rows), counts=logic.summary(every), metric=metric, state=state,
                           metrics=pair.metrics, key_text=logic.key_text, page_url=page_url,
                           csv_url=csv_url + ("?" + urlencode(args) if args else ""),
                           shared=shared, error=None)


def _csv(pair: Pair):
    try:
        query = query_of(request.args, pair.metrics)
        _every, rows = pair.rows(query)
    except search.BadQuery as exc:
        return errors.respond(400, str(exc))
    keys = max((len(r.baseline.key) for r in rows), default=1)
    header = ("method", *(f"key_{i + 1}" for i in range(keys)), "baseline_value", "other_value", "diff", "changed",
              "baseline_text", "other_text")
    body = ([r.baseline.method, *r.baseline.key, *[""] * (keys - len(r.baseline.key)), _cell(r.before),
             _cell(r.after), _cell(r.diff), r.change, r.baseline.text or "", r.other.text or ""] for r in rows)
    name = f"rows-{pair.runs[0]['id'][:6]}-{pair.runs[1]['id'][:6]}-{query['metric']}.csv"
    return csv_response(header, body, name)


def _cell(value: float | None) -> float | str:
    """A value as a number (a number cell is never neutralised, so "-1" stays a number), blank when there is none."""
    return "" if value is None else round(value, 6)


def _app_pair() -> tuple[Pair | None, str | None]:
    ids = requested_ids(request.args)
    try:
        # the compare page's rule: `baseline`, else the earlier created of the two
        baseline = request.args.get("baseline") if request.args.get("baseline") in ids else earliest(ids)
        return _run_pair(ids, baseline, lambda i: url_for("pages.kind_view", evaluation_id=i, name="x")[:-1]), None
    except CompareError as exc:
        return None, str(exc)


def shared_address(pair: Pair) -> str | None:
    """The address of this view under share links, when both runs have an active one (their oldest), else None."""
    shares = [get_store().list_shares(run["id"]) for run in pair.runs]
    if not all(shares):
        return None
    kept = [(k, v) for k, v in request.args.items(multi=True) if k not in ("ids", "baseline", "page")]
    return url_for("row_diff.shared_rows", token=shares[0][0]["token"], _external=True) + "?" + urlencode(
        [("other", shares[1][0]["token"]), *kept])


@bp.get("/compare/rows")
def rows():
    """Two runs' samples side by side, filtered, sorted and paged by the query string."""
    pair, error = _app_pair()
    state = {"ids": requested_ids(request.args), "baseline": pair.runs[0]["id"] if pair else "",
             "share_url": shared_address(pair) if pair else None}
    return _render(pair, error, state, url_for("row_diff.rows_csv"), shared=False)


@bp.get("/compare/rows.csv")
def rows_csv():
    """The rows the same query keeps, as CSV."""
    pair, error = _app_pair()
    return _csv(pair) if pair else errors.respond(400, error or "")


def _shared_pair(token: str) -> tuple[Pair | None, str | None]:
    """The pair of a share link (the baseline) and the `other` share link; both must be active."""
    store = get_store()
    shares: list[dict] = []
    for text in (token, request.args.get("other", "")):
        share = store.active_share(text[:64])
        if share is None or store.get_evaluation(share["evaluation_id"], with_result=False) is None:
            return None, _("A share link of this comparison was revoked or never existed.")
        shares.append(share)
    tokens = {s["evaluation_id"]: s["token"] for s in shares}
    try:
        return _run_pair([s["evaluation_id"] for s in shares], None,
                         lambda i: url_for("share.kind_view", token=tokens[i], name="x")[:-1]), None
    except CompareError as exc:
        return None, str(exc)


@bp.get("/share/<token>/compare/rows")
def shared_rows(token: str):
    """The row-level diff of two shared evaluations: this link's (the baseline) and the `other` link's."""
    pair, error = _shared_pair(token)
    state = {"other": request.args.get("other", "")}
    return _render(pair, error, state, url_for("row_diff.shared_rows_csv", token=token), shared=True, status=404)


@bp.get("/share/<token>/compare/rows.csv")
def shared_rows_csv(token: str):
    """The row-level diff of two shared evaluations as CSV."""
    pair, error = _shared_pair(token)
    return _csv(pair) if pair else errors.respond(404, error or "")

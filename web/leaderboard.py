"""A dataset's leaderboard (docs/leaderboard.md): the page, its JSON and CSV, the API, its share links.

`GET /datasets/<dataset>` ranks the methods of a dataset's runs (pipeline/datasets.py says which runs form one) by
their kind's headline figure with its interval, each method's figure from its latest run (`?choice=latest`, the
default), its best (`?choice=best`) or its latest run tagged `?choice=tag&tag=T` (web/leaderboard_table.py), and draws
each method's trend over its runs. `/datasets/<dataset>/compare?a=<run>&b=<run>` leads to the paired comparison of
two of its points (the compare page, the older run the baseline). A share link (`/share/datasets/<token>`) shows the
page read-only without signing in, as a result's share link does (web/share.py).
"""
from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Flask, Response, abort, g, jsonify, redirect, render_template, request, url_for

from common.contract import Error, operation
from common.downloads import attachment
from kinds import registry
from kinds.figures import AXIS, LEGEND_BELOW, method_colours, plain
from kinds.host import csv_response, new_id
from pipeline import datasets
from translations import _, status_label
from web import errors, get_store, share
from web import schemas as S
from web.leaderboard_table import (
    RANKING_COLUMNS,
    TREND_COLUMNS,
    LeaderboardError,
    leaderboard,
    methods_in_order,
    ranking_rows,
    trend_rows,
)
from web.run_labels import run_labels

bp = Blueprint("leaderboard", __name__)
api_bp = Blueprint("leaderboard_api", __name__, url_prefix="/api")


def register(app: Flask, csrf) -> None:
    """Register the leaderboard pages and API (the API exempt from CSRF like the rest of the API)."""
    app.register_blueprint(bp)
    app.register_blueprint(api_bp)
    csrf.exempt(api_bp)


@bp.app_template_global()
def dataset_of(evaluation: dict) -> str | None:
    """The dataset of a finished evaluation, for its result page's link to the leaderboard (None before it ends)."""
    return datasets.dataset_of(get_store(), evaluation)


@bp.app_template_global()
def upload_datasets(upload_id: str) -> list[str]:
    """The datasets of an upload's finished evaluations, for its page's links to their leaderboards."""
    store = get_store()
    datasets.fill_missing(store)
    return store.datasets_of_upload(upload_id)


def _runs_or_404(dataset: str) -> list[dict]:
    """The dataset's finished runs, labelled by what tells them apart; 404 when it has none."""
    store = get_store()
    datasets.fill_missing(store)
    runs = [run for run in store.dataset_runs(dataset) if run["kind"] in registry.names()]
    if not runs:
        abort(404)
    for run, label in zip(runs, run_labels(runs)):
        run["label"] = label
    return runs


def board_of(dataset: str, args) -> dict[str, Any]:
    """The leaderboard of a dataset as the query string chooses (`choice`, `tag`); 404 when there is no such dataset,
    LeaderboardError for a choice it cannot answer."""
    runs = _runs_or_404(dataset)
    kind = registry.scored(runs[0]["kind"])
    choice = (args.get("choice") or "latest").strip()
    board = leaderboard(runs, choice, (args.get("tag") or "").strip() or None, kind.headline_higher_is_better)
    files = sorted({run["filename"] for run in runs})
    return {"dataset": dataset, "kind": kind.name, "headline": str(kind.headline_label),
            "higher_is_better": kind.headline_higher_is_better, "files": files,
            "runs": [{"id": run["id"], "label": run["label"], "created_at": run["created_at"],
                      "finished_at": run["finished_at"], "filename": run["filename"], "title": run["title"],
                      "tags": run["tags"] or []} for run in runs], **board}


def trend_figure(board: dict) -> dict:
    """Each method's headline figure over its runs (x: the run's place in the dataset), with its 95% interval as
    error bars; each point carries its run's id (customdata) for picking two to compare."""
    place = {run["id"]: number for number, run in enumerate(board["runs"], start=1)}
    labels = {run["id"]: run["label"] for run in board["runs"]}
    names = methods_in_order(board)
    colours = method_colours(names)
    traces = []
    for name in names:
        trend = board["trends"][name]
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": plain(name or board["headline"]),
            "x": [place[p["run"]] for p in trend], "y": [p["value"] for p in trend],
            "customdata": [p["run"] for p in trend],
            "text": [plain(labels[p["run"]]) for p in trend],
            "hovertemplate": "%{text}<br>" + plain(board["headline"]) + ": %{y}<extra>" + plain(name) + "</extra>",
            "line": {"color": colours[name]}, "marker": {"color": colours[name], "size": 8},
            "error_y": {"type": "data", "symmetric": False, "color": colours[name], "thickness": 1.5, "width": 4,
                        "array": [(p["ci95"][1] - p["value"]) if p["ci95"] else 0 for p in trend],
                        "arrayminus": [(p["value"] - p["ci95"][0]) if p["ci95"] else 0 for p in trend]}})
    return {"data": traces, "layout": {
        "title": {"text": _("Each method over its runs, with 95% CI")},
        "xaxis": {**AXIS, "title": {"text": _("Run (in the order they were made)")}, "dtick": 1},
        "yaxis": {**AXIS, "title": {"text": plain(board["headline"])}},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50}, "legend": LEGEND_BELOW, "height": 460,
        "paper_bgcolor": "#fff", "plot_bgcolor": "#fff", "font": {"family": "system-ui, sans-serif"},
        "hovermode": "closest", "clickmode": "event"}}


def _page(dataset: str):
    args = request.args
    try:
        board = board_of(dataset, args)
    except LeaderboardError as exc:
        return errors.respond(400, str(exc))
    return render_template("leaderboard.html", board=board, figures={"trend": trend_figure(board)},
                           chart_methods=methods_in_order(board),
                           digits=registry.scored(board["kind"]).headline_digits,
                           shares=[share_json(s) for s in get_store().list_dataset_shares(dataset)])


@bp.get("/datasets/<dataset>")
def page(dataset: str):
    """A dataset's leaderboard: the methods ranked, their trend, two points to compare, downloads, share links."""
    return _page(dataset)


def _json_download(dataset: str):
    try:
        board = board_of(dataset, request.args)
    except LeaderboardError as exc:
        return errors.respond(400, str(exc))
    return Response(json.dumps(board, ensure_ascii=False, indent=1), mimetype="application/json",
                    headers={"Content-Disposition": attachment(f"leaderboard-{dataset}.json")})


def _csv_download(dataset: str, table: str):
    try:
        board = board_of(dataset, request.args)
    except LeaderboardError as exc:
        return Response(str(exc), status=400, mimetype="text/plain")
    if table == "trend":
        return csv_response(TREND_COLUMNS, trend_rows(board), f"leaderboard-{dataset}-trend.csv")
    return csv_response(RANKING_COLUMNS, ranking_rows(board), f"leaderboard-{dataset}.csv")


@bp.get("/datasets/<dataset>.json")
@operation("A dataset's leaderboard as a download (the same as GET /api/datasets/{dataset})",
           {200: S.Leaderboard, 400: Error}, query=S.LeaderboardQuery, tags=("datasets",))
def export_json(dataset: str):
    """The leaderboard (ranking, trends, runs) as a JSON download."""
    return _json_download(dataset)


@bp.get("/datasets/<dataset>.csv")
def export_csv(dataset: str):
    """The ranking as CSV."""
    return _csv_download(dataset, "ranking")


@bp.get("/datasets/<dataset>/trend.csv")
def export_trend(dataset: str):
    """Every method's trend, point by point, as CSV."""
    return _csv_download(dataset, "trend")


@bp.get("/datasets/<dataset>/compare")
def compare_points(dataset: str):
    """The paired comparison of two points: the compare page of their runs (the older the baseline), or the result
    page when both are of one run (its methods side by side); 400 naming a run that is not the dataset's."""
    runs = [run["id"] for run in _runs_or_404(dataset)]
    chosen = [(request.args.get(name) or "").strip() for name in ("a", "b")]
    strangers = [run for run in chosen if run not in runs]
    if strangers:
        return errors.respond(400, _("Choose two points of this leaderboard to compare; not one of its runs: "
                                     "%(ids)s.", ids=", ".join(s or "—" for s in strangers)))
    older, newer = sorted(set(chosen), key=runs.index) if chosen[0] != chosen[1] else (chosen[0], None)
    if newer is None:
        return redirect(url_for("pages.evaluation", evaluation_id=older))
    return redirect(url_for("compare.compare", ids=f"{older},{newer}", baseline=older))


# share links ------------------------------------------------------------------------------------------------
def share_json(found: dict) -> dict:
    """What the API and the share panel say about a dataset's share link."""
    return {"id": found["id"], "dataset": found["dataset"], "token": found["token"],
            "url": url_for("leaderboard.shared_page", token=found["token"], _external=True),
            "created_at": found["created_at"], "revoked_at": found["revoked_at"],
            "active": found["revoked_at"] is None}


def _create_share(dataset: str) -> dict:
    _runs_or_404(dataset)
    return get_store().add_dataset_share(new_id(), dataset, share.new_token())


def _revoke_share(dataset: str, share_id: str) -> dict:
    return get_store().revoke_dataset_share(dataset, share_id) or abort(404)


@bp.post("/datasets/<dataset>/shares")
def create_share_page(dataset: str):
    """Create a share link from the leaderboard and go back to it."""
    _create_share(dataset)
    return redirect(url_for("leaderboard.page", dataset=dataset, _anchor="share"))


@bp.post("/datasets/<dataset>/shares/<share_id>/revoke")
def revoke_share_page(dataset: str, share_id: str):
    """Revoke a share link from the leaderboard and go back to it."""
    _revoke_share(dataset, share_id)
    return redirect(url_for("leaderboard.page", dataset=dataset, _anchor="share"))


def _active_share(token: str) -> dict:
    """The active share link of this token (kept in g for shared_url_for), else a 404 that says why."""
    found = get_store().active_dataset_share(token)
    if found is None:
        share.link_gone()
    g.dataset_share = found
    return found


@bp.get("/share/datasets/<token>")
def shared_page(token: str):
    """The read-only leaderboard of a share link; its choice is in the query string."""
    return _page(_active_share(token)["dataset"])


@bp.get("/share/datasets/<token>.json")
@operation("A shared leaderboard as a download (no sign-in: the token is the key)", {200: S.Leaderboard, 400: Error},
           query=S.LeaderboardQuery, tags=("share",))
def shared_json(token: str):
    """The shared leaderboard as a JSON download."""
    return _json_download(_active_share(token)["dataset"])


@bp.get("/share/datasets/<token>.csv")
def shared_csv(token: str):
    """The shared leaderboard's ranking as CSV."""
    return _csv_download(_active_share(token)["dataset"], "ranking")


@bp.get("/share/datasets/<token>/trend.csv")
def shared_trend(token: str):
    """The shared leaderboard's trends as CSV."""
    return _csv_download(_active_share(token)["dataset"], "trend")


# API ----------------------------------------------------------------------------------------------------------
@api_bp.get("/datasets/<dataset>")
@operation("A dataset's leaderboard: methods ranked by their headline figure with its 95% interval, each method's "
           "trend over its runs", {200: S.Leaderboard, 400: Error}, query=S.LeaderboardQuery, tags=("datasets",))
def api_leaderboard(dataset: str):
    """The leaderboard as JSON (the same as the page's JSON download)."""
    try:
        return jsonify(board_of(dataset, request.args))
    except LeaderboardError as exc:
        return jsonify({"error": str(exc)}), 400


@api_bp.get("/evaluations/<evaluation_id>/dataset")
@operation("The dataset of a finished evaluation: its id and the address of its leaderboard",
           {200: S.DatasetOf, 404: Error}, tags=("datasets",))
def api_dataset_of(evaluation_id: str):
    """{dataset, url} of a finished evaluation; 404 when there is none yet."""
    record = get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    found = datasets.dataset_of(get_store(), record)
    if found is None:
        return jsonify({"error": _("The evaluation %(id)s has not finished (%(status)s): it has no dataset yet.",
                                   id=evaluation_id, status=status_label(record["status"]))}), 404
    return jsonify({"dataset": found, "url": url_for("leaderboard.page", dataset=found, _external=True)})


@api_bp.post("/datasets/<dataset>/shares")
@operation("Create a read-only share link of a dataset's leaderboard", {201: S.DatasetShare}, tags=("datasets",))
def api_create_share(dataset: str):
    """Create a share link: 201 {id, token, url, ...}."""
    return jsonify(share_json(_create_share(dataset))), 201


@api_bp.get("/datasets/<dataset>/shares")
@operation("A dataset's share links, revoked ones included", {200: S.DatasetShareList}, tags=("datasets",))
def api_list_shares(dataset: str):
    """Every share link of a dataset's leaderboard, revoked ones included (`active` tells them apart)."""
    return jsonify([share_json(s) for s in get_store().list_dataset_shares(dataset, include_revoked=True)])


@api_bp.post("/datasets/<dataset>/shares/<share_id>/revoke")
@operation("Revoke a dataset's share link: its address answers 404 from now on", {200: S.DatasetShare},
           tags=("datasets",))
def api_revoke_share(dataset: str, share_id: str):
    """Revoke a share link of a dataset's leaderboard."""
    return jsonify(share_json(_revoke_share(dataset, share_id)))

"""A static bundle of several evaluations, like `inspect view bundle`: an index page, each evaluation's offline report
and its result document, as a folder or a ZIP that any static host can publish (nothing in it calls the app)."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import BinaryIO

from flask import Blueprint, Response, abort, render_template, request

from kinds import registry
from pipeline import housekeeping
from translations import _
from web import get_store
from web.exports import offline_css, report_html

bp = Blueprint("bundle", __name__)
INDEX_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


class BundleError(ValueError):
    """Evaluations that cannot be bundled; the message says which."""


def finished(ids: list[str]) -> list[dict]:
    """The evaluations with these ids, each with its result; BundleError naming those missing or unfinished."""
    store = get_store()
    records = [store.get_evaluation(evaluation_id) for evaluation_id in dict.fromkeys(ids)]
    missing = [i for i, r in zip(dict.fromkeys(ids), records) if r is None or not r.get("result")]
    if not ids or missing:
        raise BundleError(_("Pick finished evaluations to bundle; these have no result: %(ids)s.",
                            ids=", ".join(missing)) if missing else _("Pick the evaluations to bundle."))
    return [r for r in records if r is not None]  # all of them, now that none is missing


def files(records: list[dict]) -> dict[str, str]:
    """Name -> text of every file of the bundle: index.html, <id>.html and <id>.json per evaluation."""
    rows = {row["id"]: row for row in housekeeping.evaluation_list(get_store(), limit=100_000)}
    out = {}
    for record in records:
        out[f"{record['id']}.html"] = report_html(record)[0]
        out[f"{record['id']}.json"] = json.dumps(record["result"], ensure_ascii=False, indent=1)
    out["index.html"] = render_template(
        "bundle_index.html", rows=[rows[r["id"]] for r in records if r["id"] in rows], policy=INDEX_POLICY,
        css=offline_css(), by_kind={k.name: k for k in registry.kinds()})
    return out


def write_zip(records: list[dict], target: BinaryIO) -> None:
    """The bundle as a ZIP (a folder `bundle/` inside)."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files(records).items():
            archive.writestr(f"bundle/{name}", text)


def write_folder(records: list[dict], folder: Path) -> list[Path]:
    """The bundle's files written into a folder; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files(records).items():
        (folder / name).write_text(text, encoding="utf-8")
        written.append(folder / name)
    return written


@bp.get("/bundle.zip")
def download():
    """The evaluations ticked on the list (`ids`) as a static bundle ZIP."""
    try:
        records = finished(request.args.getlist("ids"))
    except BundleError as exc:
        abort(400, str(exc))
    buffer = io.BytesIO()
    write_zip(records, buffer)
    return Response(buffer.getvalue(), mimetype="application/zip",
                    headers={"Content-Disposition": "attachment; filename=personasteer-bundle.zip"})

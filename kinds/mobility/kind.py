"""The mobility kind: AgentSociety DailyMobility outputs scored by Jensen-Shannon against a reference set."""
from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Mapping

import click

from kinds.figures import run_style
from kinds.kind import (
    Job,
    JobFailed,
    OwnPages,
    Plan,
    Scored,
    Site,
    StartError,
    StartRequest,
    open_file,
    upload_as,
    upload_stem,
)
from kinds.mobility import figures, reference_sets
from kinds.mobility.format import KEYS
from kinds.mobility.lone_arrays import lone_array_hint
from kinds.mobility.result import MobilityResult, build_result
from kinds.mobility.upload_files import CSV_HEAD, PARQUET_MAGIC, is_zip, load_upload, read_upload
from kinds.problems import Report
from kinds.readers import zip as zips
from translations import _
from translations import lazy_gettext as _l


class MobilityKind(Scored[MobilityResult], OwnPages):
    """The four mobility arrays of generated users (JSON, .npz or the dataset's layout); no judge, one scoring step."""

    name = "mobility"
    label = _l("Mobility (DailyMobility)")
    formats = _l("the four arrays in one .json, .npz, .parquet or .csv file (a table with a header row, one row per "
                 "user), or a .zip of a groundtruth folder")
    headline_label = _l("Final score (official)")
    extension = ".json"
    tables = (reference_sets.TABLE,)
    start_fields = ("reference",)
    start_types = {"reference": str}
    cli_options = (click.Option(["--reference"], help="Mobility: the reference set, by name or id, or the path of "
                                                      "a groundtruth folder, a ZIP or a JSON file."),)

    def sniff(self, head: bytes, filename: str, path: Path | None) -> bool:
        """An object with the mobility arrays, a .npz, a ZIP holding the dataset's intentions file, or a table
        (CSV or Parquet) with one row per user."""
        if is_zip(head):
            return filename.lower().endswith(".npz") or (path is not None and zips.zip_has(
                path, "daily_intentions_2d.npy", "daily_intentions_2d.csv", "intention_sequences.npy"))
        return (b'"gyration_radius"' in head or b'"intention_sequences"' in head or head.startswith(CSV_HEAD)
                or head.startswith(PARQUET_MAGIC))

    def upload_hint(self, head: bytes, filename: str, path: Path) -> str | None:
        """A mobility file another kind refused, and one array of the dataset's groundtruth folder on its own (a
        .npy, a headerless .csv): how to upload the set."""
        return upload_as(self, recognised=True) if self.sniff(head, filename, path) else lone_array_hint(head, filename)

    def validate(self, stream: BinaryIO, filename: str, options: Mapping[str, str]) -> Report:
        """Check the four arrays (JSON, .npz, the dataset's layout in a ZIP, a CSV or Parquet table): types, lengths,
        codes."""
        return read_upload(stream)[0]

    def start(self, upload: dict, request: StartRequest) -> Plan:
        """Scored against the reference set named (by name or id) in `reference`."""
        name = request.options.get("reference")
        if name is not None and not isinstance(name, str):
            raise StartError(_("'reference' must be the name or id of a reference set."))
        record = reference_sets.get(request.store, name) if name and request.store else None
        if record is None:
            names = ", ".join(r["name"] for r in reference_sets.records(request.store)) if request.store else ""
            raise StartError(_("Pick the reference set to score against (by name or id). Known reference sets: "
                               "%(names)s.", names=names or _("none yet; add one on the reference sets page")))
        return Plan([upload_stem(upload)], {"reference": record["id"], "reference_name": record["name"]})

    def score(self, job: Job) -> MobilityResult:
        """Both variants of the official score against the reference set."""
        record = reference_sets.get(job.store, job.evaluation["settings"]["reference"])
        if record is None:
            raise JobFailed(_("The reference set of this evaluation was removed."))
        with open_file(job.path) as f:
            generated = load_upload(f)
        return build_result(job.evaluation, job.upload, record, reference_sets.load(job.site.files, record),
                            generated)

    def provenance(self, job: Job) -> dict:
        """The reference set scored against: its name and the SHA-256 of its arrays."""
        record = reference_sets.get(job.store, job.evaluation["settings"]["reference"])
        return {"reference": {"name": record["name"], "sha256": record["sha256"]}} if record else {}

    def upload_context(self, upload: dict, site: Site) -> dict:
        """The reference sets to pick from."""
        return {"references": reference_sets.records(site.store)}

    def result_context(self, record: dict, args: Mapping, site: Site) -> dict:
        """The metrics' names."""
        return {"metric_labels": figures.metric_labels()}

    def figures(self, result: MobilityResult, record: dict, args: Mapping) -> dict:
        """Distributions of the reference against the generated users."""
        return figures.mobility_figures(result)

    def csv(self, result: MobilityResult) -> tuple[tuple, list[tuple]]:
        """One row per variant: the four JSDs and the final score."""
        return ("variant", *KEYS, "final_score"), [
            (variant, *(result[variant]["jsd"][k] for k in KEYS), result[variant]["final_score"])
            for variant in ("official", "strict")]

    def headline(self, result: MobilityResult) -> list[list]:
        """The official final score."""
        return [[result.get("method") or "", result["official"]["final_score"]]]

    def run_label(self, result: MobilityResult) -> str:
        """The reference set."""
        return result["reference"]["name"]

    def compare(self, runs: list[dict]) -> dict:
        """Both variants' JSDs and final scores side by side, with their charts."""
        for position, run in enumerate(runs):
            run["style"] = run_style(position)
        return {"runs": runs, "metric_labels": figures.metric_labels(),
                "figures": figures.compare_figures(runs, figures.metric_labels())}

    def cli_start(self, values: Mapping, site: Site) -> dict:
        """--reference as a name, an id, or a path to add as a reference set."""
        if not values.get("reference"):
            raise StartError(_("Mobility outputs are scored against a reference set: add --reference with its name, "
                               "or the path of the groundtruth folder, a ZIP or a JSON file."))
        try:
            return {"reference": reference_sets.resolve(site.store, site.files, values["reference"])["id"]}
        except reference_sets.ReferenceProblem as exc:
            raise StartError(str(exc)) from exc

    def blueprints(self) -> list:
        """The reference-set page and API."""
        from kinds.mobility import routes  # Flask is only needed by the web app

        return [routes.bp, routes.api_bp]

    nav = (("references.page", _l("Reference sets")),)

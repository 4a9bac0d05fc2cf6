"""A generated mobility set as uploaded: the four-key JSON, a .npz of the four arrays, or a ZIP of the dataset's
layout (a `groundtruth/` folder of .npy or headerless .csv files). Every format is checked by the same
vectorised checks, with the same messages and paths (`intention_sequences[3][12]`)."""
from __future__ import annotations

from typing import BinaryIO

from benchmarks.mobility import format as mobility
from benchmarks.mobility.format import MobilityData
from benchmarks.mobility.reference_files import ReferenceError, zip_arrays
from benchmarks.problems import Problem, Report

ZIP_MAGIC = b"PK\x03\x04"
EXTENSIONS = {"json": ".json", "zip": ".zip"}  # the stored file's extension by format


def is_zip(head: bytes) -> bool:
    """Whether a file starting with these bytes is a ZIP (a .npz is one)."""
    return head.startswith(ZIP_MAGIC)


def read_upload(stream: BinaryIO) -> tuple[Report, MobilityData | None]:
    """Check an uploaded set in any of the formats; the report (its summary names the stored extension) and the
    arrays, None when there are errors."""
    start = stream.tell()
    head = stream.read(4)
    stream.seek(start)
    if not is_zip(head):
        report, data = mobility.read(stream)
        report.summary["extension"] = EXTENSIONS["json"]
        return report, data
    try:
        arrays, _sources = zip_arrays(stream)
    except ReferenceError as exc:
        report = Report()
        report.add(Problem(None, "", str(exc)))
        return report, None
    report, data = mobility.check_arrays(arrays)
    report.summary["extension"] = EXTENSIONS["zip"]
    return report, data


def load_upload(stream: BinaryIO) -> MobilityData:
    """The arrays of a validated upload; ValueError with the first problem otherwise."""
    report, data = read_upload(stream)
    if data is None:
        raise ValueError(report.problems[0].message)
    return data

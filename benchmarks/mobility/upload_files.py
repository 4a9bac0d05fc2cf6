"""A generated mobility set as uploaded: the four-key JSON, a .npz of the four arrays, a ZIP of the dataset's
layout (a `groundtruth/` folder of .npy or headerless .csv files), or a CSV with one row per user. Every format is
checked by the same vectorised checks, with the same messages and paths (`intention_sequences[3][12]`).

The CSV's header names `gyration_radius`, `daily_location_numbers`, then `intention_sequences_1` .. `_N` (one
column per half-hour slot) and `intention_proportions_1` .. `_7`."""
from __future__ import annotations

from typing import BinaryIO

import numpy as np

from benchmarks.mobility import format as mobility
from benchmarks.mobility.format import KEYS, MobilityData
from benchmarks.mobility.reference_files import ReferenceError, zip_arrays
from benchmarks.problems import Problem, Report
from translations import _

ZIP_MAGIC = b"PK\x03\x04"
EXTENSIONS = {"json": ".json", "zip": ".zip", "csv": ".csv"}  # the stored file's extension by format
CSV_HEAD = b"gyration_radius,"


def is_zip(head: bytes) -> bool:
    """Whether a file starting with these bytes is a ZIP (a .npz is one)."""
    return head.startswith(ZIP_MAGIC)


def read_upload(stream: BinaryIO) -> tuple[Report, MobilityData | None]:
    """Check an uploaded set in any of the formats; the report (its summary names the stored extension) and the
    arrays, None when there are errors."""
    start = stream.tell()
    head = stream.read(len(CSV_HEAD) + 3).removeprefix(b"\xef\xbb\xbf")
    stream.seek(start)
    if head.startswith(CSV_HEAD):
        report, data = _read_user_rows(stream)
        report.summary["extension"] = EXTENSIONS["csv"]
        return report, data
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


def _read_user_rows(stream: BinaryIO) -> tuple[Report, MobilityData | None]:
    """The four arrays of a CSV with one row per user, checked as every format is; a cell that is not a number is
    named by its line and column."""
    report = Report()
    try:
        text = stream.read().decode("utf-8-sig")
    except UnicodeDecodeError:
        report.add(Problem(None, "", _("The file is not UTF-8 text; save it as UTF-8.")))
        return report, None
    lines = text.splitlines()
    header = [name.strip() for name in lines[0].split(",")]
    columns = {key: [i for i, name in enumerate(header) if name == key or name.startswith(f"{key}_")] for key in KEYS}
    missing = [key for key in KEYS if not columns[key]]
    if missing:
        report.add(Problem(1, "", _("The header has no %(missing)s column; name the columns gyration_radius, "
                                    "daily_location_numbers, intention_sequences_1 .. _48 and intention_proportions_1 "
                                    ".. _7.", missing=", ".join(missing))))
        return report, None
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) != len(header):
            report.add(Problem(number, "", _("Line %(line)s has %(found)s values; the header has %(count)s columns.",
                                             line=number, found=len(cells), count=len(header))))
            continue
        try:
            rows.append([float(cell) for cell in cells])
        except ValueError:
            column = next(i for i, cell in enumerate(cells) if not _is_number(cell))
            report.add(Problem(number, header[column], _("Line %(line)s, column %(column)s: %(value)s is not a "
                                                         "number.", line=number, column=header[column],
                                                         value=repr(cells[column].strip()[:40]))))
    if not report.ok:
        return report, None
    table = np.array(rows, dtype=np.float64).reshape(len(rows), len(header))
    arrays = {key: table[:, columns[key]] for key in KEYS}
    for key in ("gyration_radius", "daily_location_numbers"):
        arrays[key] = arrays[key][:, 0]
    return mobility.check_arrays(arrays, report)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True

"""A generated mobility set as uploaded: the four-key JSON, a .npz of the four arrays, a ZIP of the dataset's
layout (a `groundtruth/` folder of .npy or headerless .csv files), or a CSV or Parquet table with one row per user.
Every format is checked by the same vectorised checks, with the same messages and paths
(`intention_sequences[3][12]`).

The table's columns are `gyration_radius`, `daily_location_numbers`, then `intention_sequences_1` .. `_N` (one
column per half-hour slot) and `intention_proportions_1` .. `_7`."""
from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO

from common.lazy_modules import ARROW_LOCK, lazy
from kinds.mobility import format as mobility
from kinds.mobility.format import KEYS, MobilityData
from kinds.mobility.reference_files import ReferenceError, zip_arrays
from kinds.problems import Problem, Report
from translations import _

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

ZIP_MAGIC = b"PK\x03\x04"
EXTENSIONS = {"json": ".json", "zip": ".zip", "csv": ".csv", "parquet": ".parquet"}  # stored file's, by format
CSV_HEAD = b"gyration_radius,"
PARQUET_MAGIC = b"PAR1"


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
    if head.startswith(PARQUET_MAGIC):
        report, data = _read_parquet(stream)
        report.summary["extension"] = EXTENSIONS["parquet"]
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
    columns = _columns(header, report)
    if columns is None:
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
    return _checked(np.array(rows, dtype=np.float64).reshape(len(rows), len(header)), columns, report)


def _columns(header: list[str], report: Report) -> dict[str, list[int]] | None:
    """Each array's column positions in a table's header; None (and a problem) when one has none."""
    columns = {key: [i for i, name in enumerate(header) if name == key or name.startswith(f"{key}_")] for key in KEYS}
    missing = [key for key in KEYS if not columns[key]]
    if missing:
        report.add(Problem(1, "", _("The header has no %(missing)s column; name the columns gyration_radius, "
                                    "daily_location_numbers, intention_sequences_1 .. _48 and intention_proportions_1 "
                                    ".. _7.", missing=", ".join(missing))))
        return None
    return columns


def _checked(table: np.ndarray, columns: dict[str, list[int]], report: Report) -> tuple[Report, MobilityData | None]:
    """The four arrays cut from a users x columns table, checked as every format is."""
    arrays = {key: table[:, columns[key]] for key in KEYS}
    for key in ("gyration_radius", "daily_location_numbers"):
        arrays[key] = arrays[key][:, 0]
    return mobility.check_arrays(arrays, report)


def _read_parquet(stream: BinaryIO) -> tuple[Report, MobilityData | None]:
    """The four arrays of a Parquet table with one row per user (columns as the CSV's header); a column that is
    not numeric, or an empty cell, is named by its column (and row: line 1 is the first user)."""
    with ARROW_LOCK:  # large: only when a Parquet file comes (and not while pandas is imported without it)
        import pyarrow.parquet as parquet
        from pyarrow import ArrowException, types

    report = Report()
    try:
        table = parquet.read_table(stream)
    except (ArrowException, OSError) as exc:
        report.add(Problem(None, "", _("The Parquet file cannot be read (%(reason)s).", reason=str(exc)[:200])))
        return report, None
    header = list(table.column_names)
    columns = _columns(header, report)
    if columns is None:
        return report, None
    used = sorted(i for positions in columns.values() for i in positions)
    for i in used:
        column = table.column(i)
        if not (types.is_integer(column.type) or types.is_floating(column.type)):
            report.add(Problem(None, header[i], _("Column %(column)s holds %(type)s values; every column must be "
                                                  "numbers.", column=header[i], type=str(column.type))))
        elif column.null_count:
            row = next(n for n, value in enumerate(column.is_null().to_pylist()) if value)
            report.add(Problem(row + 1, header[i], _("User %(row)s has no %(column)s value; every cell must hold a "
                                                     "number.", row=row + 1, column=header[i])))
    if not report.ok:
        return report, None
    matrix = np.empty((table.num_rows, len(header)))
    for i in used:
        matrix[:, i] = table.column(i).to_numpy()
    del table
    return _checked(matrix, columns, report)



def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True

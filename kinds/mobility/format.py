"""The mobility benchmark (AgentSociety DailyMobility): upload format and validation.

A mobility upload is one JSON object with four arrays, one entry per simulated user (docs/formats.md):
`gyration_radius` (metres), `daily_location_numbers`, `intention_sequences` (a code 1-7
per half-hour slot) and `intention_proportions` (the share of each intention). It is scored against a
reference set by Jensen-Shannon in two variants (docs/metrics.md), computed in metrics.py.

Validation parses the whole file with json (the file is arrays), converts each array with numpy in one
call and checks it with vectorised operations; only when that fast path fails does a per-element scan
locate the bad items, so a million-user file validates in seconds.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Final, TypeGuard

from common.lazy_modules import lazy
from kinds.problems import MAX_PROBLEMS, Problem, Report, describe, short_json
from kinds.readers import json_text
from kinds.readers import limits as hard_limits
from kinds.readers.jsonl import UTF8_BOM, format_size, json_reason, wrong_encoding
from translations import _, ngettext

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

KEYS: Final = ("gyration_radius", "daily_location_numbers", "intention_sequences", "intention_proportions")
INTENTIONS = {1: "sleep", 2: "home activity", 3: "other", 4: "work", 5: "shopping", 6: "eating out",
              7: "leisure and entertainment"}
FIRST_CODE = min(INTENTIONS)
LAST_CODE = max(INTENTIONS)
SUM_TOLERANCE = 0.01  # a proportions row whose sum is further than this from 1 gets a warning

ONE_D = ("gyration_radius", "daily_location_numbers")  # the arrays with one value per user
_LITERALS = (b"true", b"false", b"null")  # JSON values numpy would read as numbers (or NaN) without a trace
_MISSING = object()
_FAILED = object()


@dataclass
class MobilityData:
    """The four arrays of a generated or reference set (one row or value per user)."""

    gyration_radius: np.ndarray  # float64, (users,)
    daily_location_numbers: np.ndarray  # float64, (users,)
    intention_sequences: np.ndarray  # smallest fitting int (int8 for codes 1-7), (users, slots)
    intention_proportions: np.ndarray  # float64, (users, intentions)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MobilityData):
            return NotImplemented
        return all(np.array_equal(getattr(self, key), getattr(other, key)) for key in KEYS)

    def summary(self) -> dict:
        """Sizes and ranges for the upload page (plain ints and floats)."""
        return {
            "users": int(len(self.gyration_radius)),
            "sequence_shape": [int(n) for n in self.intention_sequences.shape],
            "proportion_shape": [int(n) for n in self.intention_proportions.shape],
            "radius": _spread(self.gyration_radius),
            "locations": _spread(self.daily_location_numbers),
        }


def _spread(values: np.ndarray) -> dict:
    if not values.size:
        return {"min": None, "median": None, "max": None}
    return {"min": float(values.min()), "median": float(np.median(values)), "max": float(values.max())}


# --- validation --------------------------------------------------------------------------------

def validate(stream: BinaryIO, max_bytes: int | None = None) -> Report:
    """Check a mobility JSON stream: every problem (up to the cap) with its JSON path, warnings, summary."""
    return read(stream, max_bytes)[0]


def load(stream: BinaryIO) -> MobilityData:
    """The arrays of a validated file; raise ValueError with the first problem otherwise."""
    report, data = read(stream)
    if data is None:
        raise ValueError(report.problems[0].message)
    return data


def read(stream: BinaryIO, max_bytes: int | None = None) -> tuple[Report, MobilityData | None]:
    """Validate a mobility JSON stream; return the report and the data (None when there are errors)."""
    report = Report()
    raw = _read_bytes(stream, max_bytes, report)
    if raw is None:
        return report, None
    obj = _parse(raw, report)
    if obj is _FAILED:
        return report, None
    # numpy reads true and false as 1 and 0 without a trace, so when the file holds any of these tokens
    # (or null) the values are checked one by one instead of by the fast conversion.
    exact = any(token in raw for token in _LITERALS)
    del raw
    if type(obj) is not dict:
        report.add(Problem(None, "", _(
            "The file is %(found)s, not a JSON object. A mobility file is one object with the keys "
            "'gyration_radius', 'daily_location_numbers', 'intention_sequences' and "
            "'intention_proportions', each a list with one entry per user.", found=describe(obj))))
        return report, None
    unknown = [key for key in obj if key not in KEYS]
    if unknown:
        report.warn(Problem(None, "", _(
            "Unknown keys are ignored: %(names)s.", names=", ".join(short_json(key) for key in unknown[:10]))))
    arrays: dict[str, np.ndarray] = {}
    for key in KEYS:
        values = obj.get(key, _MISSING)
        if values is _MISSING:
            report.add(Problem(None, key, _(
                "'%(key)s' is missing; add it as %(expected)s.", key=key, expected=_expected(key))))
        elif type(values) is not list:
            report.add(Problem(None, key, _(
                "'%(key)s' must be %(expected)s, found %(found)s.",
                key=key, expected=_expected(key), found=describe(values))))
        elif not values:
            report.add(Problem(None, key, _(
                "'%(key)s' is an empty list; add %(expected)s.", key=key, expected=_expected(key))))
        else:
            array = _to_array(key, values, exact, report)
            if array is not None:
                array = _check_array(key, array, report)
            if array is not None:
                arrays[key] = array
        if report.truncated:
            break
    return report, _finish(arrays, report)


def _expected(key: str) -> str:
    """What a key must hold, for messages."""
    if key == "gyration_radius":
        return _("a list with one radius of gyration per user (metres, 0 or more)")
    if key == "daily_location_numbers":
        return _("a list with one number of locations visited per day per user (0 or more)")
    if key == "intention_sequences":
        return _("a list with one row per user of intention codes 1-7, one code per half-hour slot")
    return _("a list with one row per user of intention shares (each 0-1, the row summing to 1)")


def _read_bytes(stream: BinaryIO, max_bytes: int | None, report: Report) -> bytes | None:
    raw = stream.read() if max_bytes is None else stream.read(max_bytes + 1)
    if max_bytes is not None and len(raw) > max_bytes:
        report.add(Problem(None, "", _(
            "The file is larger than the limit of %(limit)s; upload fewer users.", limit=format_size(max_bytes))))
        return None
    return raw


def _parse(raw: bytes, report: Report) -> object:
    """The JSON value of the file, or _FAILED after recording why it cannot be read."""
    problem = wrong_encoding(raw[:4])
    if problem is not None:
        report.add(problem)
        return _FAILED
    if raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM):]
    if not raw.strip():
        report.add(Problem(None, "", _(
            "The file is empty. Upload one JSON object with the keys 'gyration_radius', "
            "'daily_location_numbers', 'intention_sequences' and 'intention_proportions'.")))
        return _FAILED
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.add(Problem(raw.count(b"\n", 0, exc.start) + 1, "", _(
            "The file is not valid UTF-8: byte 0x%(byte)s at byte offset %(offset)s cannot be decoded. "
            "Save it as UTF-8 and upload it again.", byte=f"{raw[exc.start]:02X}", offset=exc.start)))
        return _FAILED
    try:
        return json_text.loads(text, hard_limits.current())
    except hard_limits.LimitError as exc:
        report.add(exc.problem())
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            reason = _("there is more text after the JSON object; the file must hold exactly one object")
        else:
            reason = json_reason(exc)
        report.add(Problem(exc.lineno, "", _(
            "The file is not valid JSON at line %(line)s, column %(column)s: %(reason)s.",
            line=exc.lineno, column=exc.colno, reason=reason)))
    return _FAILED


# --- from JSON lists to arrays -----------------------------------------------------------------

def _to_array(key: str, values: list, exact: bool, report: Report) -> np.ndarray | None:
    """The list as a numeric array (1-D or 2-D by key), or None after reporting the items in the way."""
    ndim = 1 if key in ONE_D else 2
    if not exact:
        array = _fast_array(values, ndim)
        if array is not None:
            return array
    scan = _scan_values if ndim == 1 else _scan_rows
    if not scan(key, values, report, precise=False):
        return None if report.truncated else _stand_ins(key, values, ndim)
    try:
        return np.asarray(values, dtype=np.float64)  # every item is an int or a float, the rows of one length
    except OverflowError:  # an integer beyond the float range: find it
        scan(key, values, report, precise=True)
        return None


def _fast_array(values: list, ndim: int) -> np.ndarray | None:
    """numpy's own conversion; None unless it gives a numeric array of the right rank (and non-empty rows)."""
    try:
        array = np.asarray(values)
    except (ValueError, TypeError, OverflowError):
        return None  # ragged rows, or items numpy cannot convert
    if array.ndim != ndim or array.dtype.kind not in "iuf" or (ndim == 2 and array.shape[1] == 0):
        return None  # strings, null, booleans alone, nested lists, big integers (object dtype) or empty rows
    return array


_NUMBER_TYPES = {int, float}


def _is_number(value: object) -> TypeGuard[float]:
    """An int or a float, and an int that fits in a float."""
    if type(value) is float:
        return True
    if type(value) is not int:
        return False
    if -(1 << 53) <= value <= 1 << 53:
        return True
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _numbers_only(items: list, precise: bool) -> bool:
    """Whether every item is a number: by the set of their types (fast), or one by one when precise."""
    if precise:
        return all(map(_is_number, items))
    return set(map(type, items)) <= _NUMBER_TYPES


def _scan_values(key: str, values: list, report: Report, precise: bool) -> bool:
    """Report every item of a 1-D list that is not a number; True when there is none."""
    if _numbers_only(values, precise):
        return True
    for index, value in enumerate(values):
        if not _is_number(value):
            _not_a_number(f"{key}[{index}]", value, report)
            if report.truncated:
                break
    return False


def _stand_ins(key: str, values: list, ndim: int) -> np.ndarray:
    """The list as an array whose unusable items (1-D) or rows (2-D), already reported, are replaced by valid
    stand-ins, so that one pass also reports the problems of every other value (a short row must not hide a bad
    code elsewhere). Only ever checked, never scored: the file has errors."""
    if ndim == 1:
        return np.array([value if _is_number(value) else 0.0 for value in values], dtype=np.float64)
    width = _common_width(values)
    filler = float(FIRST_CODE) if key == "intention_sequences" else 1.0 / width
    return np.array([[v if _is_number(v) else filler for v in row] if type(row) is list and len(row) == width
                     else [filler] * width for row in values], dtype=np.float64)


def _common_width(rows: list) -> int:
    """The most common length of the non-empty list rows (the shorter one on a tie), 0 when there is none."""
    lengths: dict[int, int] = {}
    for row in rows:
        if type(row) is list and row:
            lengths[len(row)] = lengths.get(len(row), 0) + 1
    return max(lengths, key=lambda n: (lengths[n], -n)) if lengths else 0


def _scan_rows(key: str, rows: list, report: Report, precise: bool) -> bool:
    """Report rows that are not lists, empty or of another length than most, and items that are not numbers."""
    width = _common_width(rows)
    width_row = next((r for r, row in enumerate(rows) if type(row) is list and len(row) == width), 0)
    ok = True
    for r, row in enumerate(rows):
        if type(row) is list and len(row) == width and _numbers_only(row, precise):
            continue
        ok = False
        path = f"{key}[{r}]"
        if type(row) is not list:
            report.add(Problem(None, path, _row_not_a_list(key, path, row)))
        elif not row:
            report.add(Problem(None, path, _empty_row(key, path)))
        else:
            if len(row) != width:
                report.add(Problem(None, path, _ragged_row(key, path, len(row), f"{key}[{width_row}]", width)))
            for c, value in enumerate(row):
                if not _is_number(value):
                    _not_a_number(f"{path}[{c}]", value, report)
                    if report.truncated:
                        return False
        if report.truncated:
            return False
    return ok


def _row_not_a_list(key: str, path: str, row: object) -> str:
    if key == "intention_sequences":
        return _("'%(path)s' must be a list of intention codes (one per half-hour slot), found %(found)s.",
                 path=path, found=describe(row))
    return _("'%(path)s' must be a list of intention shares, found %(found)s.", path=path, found=describe(row))


def _empty_row(key: str, path: str) -> str:
    if key == "intention_sequences":
        return _("'%(path)s' is an empty row; give one intention code per half-hour slot.", path=path)
    return _("'%(path)s' is an empty row; give one share per intention.", path=path)


def _ragged_row(key: str, path: str, length: int, other: str, width: int) -> str:
    if key == "intention_sequences":
        return _("'%(path)s' has %(length)s codes but '%(other)s' has %(width)s; every user needs a code for "
                 "each of the same half-hour slots.", path=path, length=length, other=other, width=width)
    return _("'%(path)s' has %(length)s values but '%(other)s' has %(width)s; every row needs one share per "
             "intention, in the same order.", path=path, length=length, other=other, width=width)


def _not_a_number(path: str, value: object, report: Report) -> None:
    if type(value) is str:
        try:
            numeric = bool(value.strip()) and math.isfinite(float(value))
        except ValueError:
            numeric = False
        if numeric:
            message = _("'%(path)s' must be a number, found a string (%(value)s); write the number without quotes.",
                        path=path, value=short_json(value))
        else:
            message = _("'%(path)s' must be a number, found %(found)s.", path=path, found=describe(value))
    elif type(value) is int:
        message = _("'%(path)s' is too large to be a number (%(value)s).", path=path, value=short_json(value))
    else:
        message = _("'%(path)s' must be a number, found %(found)s.", path=path, found=describe(value))
    report.add(Problem(None, path, message))


# --- checks on arrays (uploads and reference sets) ---------------------------------------------

def check_arrays(arrays: Mapping[str, np.ndarray], report: Report | None = None) -> tuple[Report, MobilityData | None]:
    """Check four arrays as validation checks a file (shapes, finite values, ranges, codes) and convert them.

    Returns the report (errors, warnings, summary) and the data, with float64 amounts and shares and
    int8 codes, or None when there are errors.
    """
    report = Report() if report is None else report
    data: dict[str, np.ndarray] = {}
    for key in KEYS:
        if key not in arrays:
            report.add(Problem(None, key, _(
                "'%(key)s' is missing; add it as %(expected)s.", key=key, expected=_expected(key))))
            continue
        array = _check_array(key, np.asarray(arrays[key]), report)
        if array is not None:
            data[key] = array
        if report.truncated:
            break
    return report, _finish(data, report)


def _check_array(key: str, given: np.ndarray, report: Report) -> np.ndarray | None:
    """One array checked and converted to its stored dtype, or None after reporting its problems."""
    array = _checked_shape(key, given, report)
    if array is None:
        return None
    if key in ONE_D:
        return _check_amounts(key, array, report)
    if key == "intention_sequences":
        return _check_codes(array, report)
    return _check_shares(array, report)


def _finish(data: dict[str, np.ndarray], report: Report) -> MobilityData | None:
    """The data with the whole-set warnings and the summary, when there are no errors."""
    if not report.ok:
        return None
    _warn_sums(data["intention_proportions"], report)
    _warn_users(data, report)
    result = MobilityData(**data)
    report.summary = result.summary()
    return result


def _checked_shape(key: str, array: np.ndarray, report: Report) -> np.ndarray | None:
    ndim = 1 if key in ONE_D else 2
    if array.dtype.kind not in "iuf":
        report.add(Problem(None, key, _(
            "'%(key)s' must hold numbers, found values of type %(dtype)s.", key=key, dtype=str(array.dtype))))
        return None
    if array.ndim != ndim:
        if ndim == 1:
            message = _("'%(key)s' must be one value per user, found an array of shape %(shape)s.",
                        key=key, shape=shape_text(array.shape))
        else:
            message = _("'%(key)s' must be a table with one row per user, found an array of shape %(shape)s.",
                        key=key, shape=shape_text(array.shape))
        report.add(Problem(None, key, message))
        return None
    if array.size == 0:
        report.add(Problem(None, key, _(
            "'%(key)s' is empty (shape %(shape)s); add %(expected)s.",
            key=key, shape=shape_text(array.shape), expected=_expected(key))))
        return None
    return array


def _positions(key: str, mask: np.ndarray) -> list[tuple[str, int]]:
    """JSON paths and flat indices of the first true items of a mask (one more than the report holds, so
    that it marks itself truncated when there are more)."""
    flat = np.flatnonzero(mask)[:MAX_PROBLEMS + 1]
    if mask.ndim == 1:
        return [(f"{key}[{i}]", int(i)) for i in flat]
    rows, cols = np.unravel_index(flat, mask.shape)
    return [(f"{key}[{r}][{c}]", int(i)) for r, c, i in zip(rows.tolist(), cols.tolist(), flat.tolist())]


def _report_non_finite(key: str, values: np.ndarray, report: Report) -> None:
    for path, i in _positions(key, ~np.isfinite(values)):
        report.add(Problem(None, path, _(
            "'%(path)s' is %(value)s; only finite numbers are allowed (NaN and Infinity are not numbers "
            "in JSON). Give a real value or leave the user out.", path=path, value=_number_text(values.flat[i]))))


def _all_finite(values: np.ndarray) -> tuple[bool, float, float]:
    """Whether every value is finite (NaN and infinities carry into min and max), with the min and max."""
    low, high = float(values.min()), float(values.max())
    return math.isfinite(low) and math.isfinite(high), low, high


def _check_amounts(key: str, array: np.ndarray, report: Report) -> np.ndarray | None:
    """Radius or location numbers: finite and not negative; returned as float64."""
    values = array.astype(np.float64, copy=False)
    finite, low, _high = _all_finite(values)
    if finite and low >= 0:
        return values
    if not finite:
        _report_non_finite(key, values, report)
    with np.errstate(invalid="ignore"):
        negative = np.isfinite(values) & (values < 0)
    for path, i in _positions(key, negative):
        value = _number_text(values.flat[i])
        if key == "gyration_radius":
            message = _("'%(path)s' is %(value)s; a radius of gyration is a distance and cannot be negative.",
                        path=path, value=value)
        else:
            message = _("'%(path)s' is %(value)s; a number of locations cannot be negative.",
                        path=path, value=value)
        report.add(Problem(None, path, message))
    return None


def _check_codes(array: np.ndarray, report: Report) -> np.ndarray | None:
    """Intention codes: whole numbers 1-7; returned as int8, the smallest integer type that holds them."""
    key = "intention_sequences"
    low, high = array.min(), array.max()  # NaN carries into both
    whole = array.dtype.kind in "iu" or bool(np.all(np.floor(array) == array))
    if whole and low >= FIRST_CODE and high <= LAST_CODE:
        return array.astype(np.int8)
    with np.errstate(invalid="ignore"):
        if array.dtype.kind == "f":
            _report_non_finite(key, array, report)
            finite = np.isfinite(array)
            fraction = finite & (np.floor(array) != array)
            for path, i in _positions(key, fraction):
                report.add(Problem(None, path, _(
                    "'%(path)s' is %(value)s; intention codes are whole numbers from 1 to 7 (%(codes)s).",
                    path=path, value=_number_text(array.flat[i]), codes=_code_list())))
            outside = finite & ~fraction & ((array < FIRST_CODE) | (array > LAST_CODE))
        else:
            outside = (array < FIRST_CODE) | (array > LAST_CODE)
    for path, i in _positions(key, outside):
        report.add(Problem(None, path, _(
            "'%(path)s' is %(value)s, not an intention code; codes go from 1 to 7 (%(codes)s).",
            path=path, value=_number_text(array.flat[i]), codes=_code_list())))
    return None


def _check_shares(array: np.ndarray, report: Report) -> np.ndarray | None:
    """Intention proportions: finite numbers in [0, 1]; returned as float64."""
    key = "intention_proportions"
    values = array.astype(np.float64, copy=False)
    finite, low, high = _all_finite(values)
    if not finite:
        _report_non_finite(key, values, report)
    if not finite or low < 0 or high > 1:
        with np.errstate(invalid="ignore"):
            outside = (values < 0) | (values > 1)
        outside &= np.isfinite(values)
        for path, i in _positions(key, outside):
            report.add(Problem(None, path, _(
                "'%(path)s' is %(value)s; a proportion must be between 0 and 1.",
                path=path, value=_number_text(values.flat[i]))))
        return None
    return values


def _warn_sums(shares: np.ndarray, report: Report) -> None:
    totals = shares.sum(axis=1)
    off = np.flatnonzero(np.abs(totals - 1.0) > SUM_TOLERANCE)
    if not off.size:
        return
    row = int(off[0])
    count = int(off.size)
    report.warn(Problem(None, f"intention_proportions[{row}]" if count == 1 else "intention_proportions", ngettext(
        "%(num)s row of 'intention_proportions' does not sum to 1: 'intention_proportions[%(row)s]' sums to "
        "%(total)s. Each row should give the share of the day spent on each intention.",
        "%(num)s rows of 'intention_proportions' do not sum to 1 (the first is 'intention_proportions[%(row)s]', "
        "summing to %(total)s). Each row should give the share of the day spent on each intention.",
        count, row=row, total=f"{totals[row]:.4g}")))


def _warn_users(data: Mapping[str, np.ndarray], report: Report) -> None:
    counts = {key: len(data[key]) for key in KEYS}
    if len(set(counts.values())) > 1:
        report.warn(Problem(None, "", _(
            "The four arrays describe different numbers of users: %(counts)s. The official score compares "
            "distributions and does not need equal counts, but check that no users were lost.",
            counts=", ".join(f"{key} {count}" for key, count in counts.items()))))


# --- comparing with a reference (the scores are in metrics.py) -----------------------------------

def shape_text(shape: tuple[int, ...]) -> str:
    """A shape for messages: '100' or '100 × 48'."""
    return " × ".join(str(int(n)) for n in shape) or "0"


def shape_warnings(reference: MobilityData, generated: MobilityData) -> list[Problem]:
    """One warning for each array whose shape differs from the reference's, naming both shapes."""
    warnings = []
    for key in KEYS:
        ref_shape = getattr(reference, key).shape
        gen_shape = getattr(generated, key).shape
        if ref_shape == gen_shape:
            continue
        args = dict(key=key, generated=shape_text(gen_shape), reference=shape_text(ref_shape))
        if key == "intention_sequences" and ref_shape[1:] != gen_shape[1:]:
            message = _(
                "'%(key)s' has shape %(generated)s (users × half-hour slots), different from the reference's "
                "%(reference)s: the days have a different number of slots. The strict variant counts the "
                "slots missing from one set as empty.", **args)
        elif key == "intention_proportions" and ref_shape[1:] != gen_shape[1:]:
            message = _(
                "'%(key)s' has shape %(generated)s (users × intentions), different from the reference's "
                "%(reference)s: the number of intentions differs. The strict variant compares only the "
                "first %(num)s intentions.", num=min(ref_shape[1], gen_shape[1]), **args)
        else:
            message = _(
                "'%(key)s' has shape %(generated)s, different from the reference's %(reference)s: another "
                "number of users. The scores compare distributions, so this is allowed.", **args)
        warnings.append(Problem(None, key, message))
    return warnings


# --- helpers -----------------------------------------------------------------------------------

def intention_labels() -> dict[int, str]:
    """The intention names of INTENTIONS in the current language."""
    return {1: _("sleep"), 2: _("home activity"), 3: _("other"), 4: _("work"), 5: _("shopping"),
            6: _("eating out"), 7: _("leisure and entertainment")}


def _code_list() -> str:
    return ", ".join(f"{code} {label}" for code, label in intention_labels().items())


def _number_text(value) -> str:
    """A number for messages: whole values without '.0', NaN and infinities as JSON would name them."""
    value = value.item() if isinstance(value, np.generic) else value
    if type(value) is float and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return short_json(value)

"""One array of a DailyMobility groundtruth folder uploaded on its own (a .npy, or a headerless .csv named as the
dataset names it): recognised, and told how to upload the set it belongs to."""
from __future__ import annotations

import re
from pathlib import PurePath

from kinds.mobility.reference_files import FILES, NPY_MAGIC
from translations import _

_NUMBER = rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBERS_ROW = re.compile(rb"%s(?:\s*[,;]\s*%s|\s+%s)*" % (_NUMBER, _NUMBER, _NUMBER))


def lone_array_hint(head: bytes, filename: str) -> str | None:
    """How to upload the set when a file starting with `head` is one array of a groundtruth folder; else None."""
    numpy = head.startswith(NPY_MAGIC)
    stem = PurePath(filename.replace("\\", "/")).stem.lower()
    array = next((key for key, name in FILES.items() if name == stem), None)
    if array is not None and (numpy or only_numbers(head)):
        what = _("It holds one of the four arrays of a DailyMobility groundtruth folder (%(array)s), which the kind "
                 "reads together.", array=array)
    elif numpy:
        what = _("It is a lone NumPy array (.npy), as each of the four arrays of a DailyMobility groundtruth folder "
                 "is.")
    else:  # numbers alone say too little: a file no kind claims is told what each kind takes instead
        return None
    return what + " " + _(
        "Upload the whole folder as a .zip (its four .npy or headerless .csv files), or the four arrays together in "
        "one .json, .npz, .csv or .parquet file; to add the folder as a reference set, upload its .zip on the "
        "Reference sets page.")


def only_numbers(head: bytes) -> bool:
    """Whether every whole line of a file's start is a row of numbers (separated by commas, semicolons or blanks)."""
    lines = head.splitlines()
    if len(lines) > 1 and not head.endswith((b"\n", b"\r")):
        lines = lines[:-1]  # cut off where the start ends
    rows = [line.strip() for line in lines if line.strip()]
    return bool(rows) and all(_NUMBERS_ROW.fullmatch(row) for row in rows)

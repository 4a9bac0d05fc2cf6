"""Reference sets of the mobility benchmark: the official dataset layout, the four-key JSON, downloads.

The AgentSociety DailyMobility dataset keeps its reference ("ground truth") as four NumPy files in a
`groundtruth/` folder (docs/formats.md); the same arrays may come as headerless CSV files, as a ZIP
of such a folder, or as the four-key JSON of an upload. Every loader checks the arrays as an upload's
are checked (kinds.mobility.check_arrays) and raises ReferenceError with a readable message.
"""
from __future__ import annotations

import io
import os
import struct
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zipfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from common.lazy_modules import lazy
from kinds.kind import StoredFile, open_file
from kinds.mobility import format as mobility
from kinds.mobility.format import KEYS, MobilityData
from kinds.readers import limits as hard_limits
from kinds.readers import zip as zips
from kinds.readers.jsonl import UTF8_BOM, format_size
from kinds.readers.limits import LimitError
from kinds.readers.zip import ZIP_MAGIC, ZipReader
from translations import _

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

HF_DATASET = "tsinghua-fib-lab/daily-mobility-generation-benchmark"
HF_BASE_URL = f"https://huggingface.co/datasets/{HF_DATASET}/resolve/main"
FILES = {"gyration_radius": "gyration_radius", "daily_location_numbers": "daily_location_numbers",
         "intention_sequences": "daily_intentions_2d", "intention_proportions": "intention_proportions_2d"}
FOLDER = "groundtruth"
MAX_DOWNLOAD = 1 << 30  # bytes over the four downloaded files
MAX_REPORTED = 5  # problems quoted in a ReferenceError
NPY_MAGIC = b"\x93NUMPY"


class ReferenceError(ValueError):  # noqa: A001  (the name other modules use)
    """A reference set that cannot be loaded; the message says what is wrong and where."""

    def __init__(self, message: str, problems: list | None = None):
        super().__init__(message)
        self.problems = problems or []


# --- loaders -----------------------------------------------------------------------------------

def load_folder(path: Path) -> MobilityData:
    """The reference in <path>/groundtruth/ (or directly in path): .npy files, else headerless .csv."""
    path = Path(path)
    if not path.is_dir():
        raise ReferenceError(_("%(path)s is not a folder.", path=str(path)))
    folders = [folder for folder in (path / FOLDER, path) if folder.is_dir()]
    arrays: dict[str, np.ndarray] = {}
    sources: dict[str, str] = {}
    missing = []
    for key, name in FILES.items():
        found = next((folder / f"{name}{ext}" for folder in folders for ext in (".npy", ".csv")
                      if (folder / f"{name}{ext}").is_file()), None)
        if found is None:
            missing.append(name)
            continue
        sources[key] = found.name
        arrays[key] = _read_array(found.read_bytes(), found.name, key)
    if missing:
        raise ReferenceError(_(
            "%(folder)s has no %(missing)s (.npy or .csv), in %(folder)s/groundtruth/ or in the folder itself. A "
            "reference set needs gyration_radius, daily_location_numbers, daily_intentions_2d and "
            "intention_proportions_2d.", folder=str(path), missing=", ".join(missing)))
    return _checked(arrays, sources)


def load_zip(stream: BinaryIO, max_uncompressed: int | None = None) -> MobilityData:
    """The reference in a ZIP of the dataset's folder, at any depth (members are found by file name)."""
    return _checked(*zip_arrays(stream, max_uncompressed))


def zip_arrays(stream: BinaryIO, max_uncompressed: int | None = None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The four arrays in a ZIP, unchecked, with the member each came from: the dataset's layout (a folder
    `groundtruth/` of .npy or headerless .csv files, at any depth) or a .npz of the four keys.

    Refuses archives past the ZIP limits (kinds.readers.limits; max_uncompressed, in bytes, replaces
    LIMIT_ZIP_EXPANDED_MB) and member names that are absolute or climb out with '..'. Nothing is extracted
    to disk; .npy members are read with allow_pickle=False.
    """
    limits = hard_limits.current()
    with _open_zip_file(_seekable(stream), limits) as archive:
        members = [info for info in archive.infolist() if not info.is_dir()]
        for info in members:
            if _unsafe_name(info.filename):
                raise ReferenceError(_(
                    "The ZIP holds a member with an unsafe path (%(name)s): absolute paths and '..' are "
                    "refused.", name=info.filename))
        reader = ZipReader(archive, limits, max_uncompressed)
        try:
            reader.check_declared([(info.filename, info) for info in members])
        except LimitError as exc:
            raise ReferenceError(str(exc)) from exc
        chosen = _choose_members(members)
        missing = [f"{name}.npy" for key, name in FILES.items() if key not in chosen]
        if missing:
            raise ReferenceError(_(
                "The ZIP has no %(missing)s (nor the .csv of the same name). A mobility set needs "
                "groundtruth/gyration_radius.npy, daily_location_numbers.npy, daily_intentions_2d.npy and "
                "intention_proportions_2d.npy, or a .npz of the arrays gyration_radius, daily_location_numbers, "
                "intention_sequences and intention_proportions.", missing=", ".join(missing)))
        arrays: dict[str, np.ndarray] = {}
        sources: dict[str, str] = {}
        for key, info in chosen.items():
            sources[key] = info.filename
            if info.filename.lower().endswith(".npy"):  # read straight from the member: no copy of its bytes
                arrays[key] = _one_value_per_user(_read_npy_member(reader, info), key)
            else:
                arrays[key] = _read_array(_read_member(reader, info), info.filename, key)
    return arrays, sources


def load_json(stream: BinaryIO) -> MobilityData:
    """The reference as the four-key JSON of an upload, validated the same way."""
    report, data = mobility.read(stream)
    if data is None:
        raise ReferenceError(_("The reference JSON is not usable: %(problems)s",
                               problems=_problem_list(report.problems)), report.problems)
    return data


def load_any(path_or_stream, filename: str) -> MobilityData:
    """A reference from a folder, a ZIP, a four-key JSON or a saved .npz, by path type, content and extension."""
    if isinstance(path_or_stream, (str, os.PathLike)):
        path = Path(path_or_stream)
        if path.is_dir():
            return load_folder(path)
        if not path.is_file():
            raise ReferenceError(_("%(path)s does not exist.", path=str(path)))
        with path.open("rb") as stream:
            return _load_stream(stream, filename or path.name)
    return _load_stream(path_or_stream, filename)


def _load_stream(stream: BinaryIO, filename: str) -> MobilityData:
    stream = _seekable(stream)
    start = stream.tell()
    head = stream.read(16)
    stream.seek(start)
    extension = PurePosixPath((filename or "").replace("\\", "/")).suffix.lower()
    if extension == ".npz":
        return _checked(*zip_arrays(stream))  # an uploaded .npz: read like a ZIP, within the limits
    if extension == ".zip" or head.startswith(ZIP_MAGIC):
        return load_zip(stream)
    if extension == ".json" or head.removeprefix(UTF8_BOM).lstrip()[:1] == b"{":
        return load_json(stream)
    raise ReferenceError(_(
        "%(name)s is not a reference set. Upload a ZIP of the dataset's groundtruth folder (the four .npy or "
        ".csv files) or a JSON object with the four arrays.", name=filename or _("The file")))


def download(base_url: str = HF_BASE_URL, timeout: float = 60) -> MobilityData:
    """Fetch groundtruth/<name>.npy of the four files (by default from the Hugging Face dataset) and load them."""
    base = base_url.rstrip("/")
    arrays: dict[str, np.ndarray] = {}
    sources: dict[str, str] = {}
    budget = MAX_DOWNLOAD
    for key, name in FILES.items():
        url = f"{base}/{FOLDER}/{name}.npy"
        data = _fetch(url, timeout, budget)
        budget -= len(data)
        sources[key] = url
        arrays[key] = _read_array(data, url, key)
    return _checked(arrays, sources)


def save_npz(data: MobilityData, path: Path) -> None:
    """Keep a reference set as one compressed .npz file (written to exactly this path)."""
    with open(path, "wb") as out:
        np.savez_compressed(out, **{key: getattr(data, key) for key in KEYS})


def load_npz(path: "Path | StoredFile") -> MobilityData:
    """A reference set kept by save_npz (a path or a stored file)."""
    try:
        with open_file(path) as stream, np.load(stream, allow_pickle=False) as archive:
            missing = [key for key in KEYS if key not in archive.files]
            if missing:
                raise ReferenceError(_("The saved reference set has no %(missing)s.", missing=", ".join(missing)))
            arrays = {key: archive[key] for key in KEYS}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, ReferenceError):
            raise
        raise ReferenceError(_("The saved reference set cannot be read (%(reason)s).", reason=str(exc))) from exc
    return _checked(arrays, {key: f"{key}.npy" for key in KEYS})


# --- reading one file --------------------------------------------------------------------------

def _read_array(data: bytes, name: str, key: str) -> np.ndarray:
    """The array in a .npy or headerless .csv file's bytes; 1-D for radius and location numbers."""
    return _one_value_per_user(_read_csv(data, name) if name.lower().endswith(".csv") else _read_npy(data, name), key)


def _one_value_per_user(array: np.ndarray, key: str) -> np.ndarray:
    """Radius and location numbers as 1-D arrays, also when given as a one-value-per-line CSV or an (n, 1) array."""
    if key in ("gyration_radius", "daily_location_numbers") and array.ndim == 2 and array.shape[1] == 1:
        return array[:, 0]
    return array


def _read_npy_member(reader: ZipReader, info: zipfile.ZipInfo) -> np.ndarray:
    """A .npy member read by numpy from the decompressing stream, within the ZIP limits; no Python objects."""
    name = info.filename
    try:
        with reader.stream(name, info) as member:
            if member.read(len(NPY_MAGIC)) != NPY_MAGIC:
                raise ReferenceError(_("%(name)s is not a NumPy .npy file (it does not start with the .npy "
                                       "signature).", name=name))
            version = (member.read(1)[0], member.read(1)[0])
            header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                      else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = header(member)
            if dtype.hasobject:
                raise ValueError(_("it holds Python objects, which are not loaded"))
            count = int(np.prod(shape, dtype=np.int64))
            data = member.read(count * dtype.itemsize)
            if len(data) < count * dtype.itemsize:
                raise ValueError(_("the file is shorter than its header says (truncated?)"))
            array = np.frombuffer(data, dtype=dtype, count=count)
            return array.reshape(shape[::-1]).T if fortran else array.reshape(shape)
    except LimitError as exc:
        raise ReferenceError(str(exc)) from exc
    except (ValueError, OSError, EOFError, IndexError, zipfile.BadZipFile) as exc:
        if isinstance(exc, ReferenceError):
            raise
        raise ReferenceError(_("%(name)s cannot be read as a .npy file: %(reason)s.", name=name, reason=str(exc))) \
            from exc


def _read_npy(data: bytes, name: str) -> np.ndarray:
    if not data.startswith(NPY_MAGIC):
        raise ReferenceError(_("%(name)s is not a NumPy .npy file (it does not start with the .npy signature).",
                               name=name))
    stream = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, _fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        else:
            shape, _fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        if dtype.hasobject:
            raise ValueError(_("it holds Python objects, which are not loaded"))
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if len(data) - stream.tell() < size:
            raise ValueError(_("the file is shorter than its header says (truncated?)"))
        stream.seek(0)
        return np.load(stream, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ReferenceError(_("%(name)s cannot be read as a .npy file: %(reason)s.", name=name, reason=str(exc))) \
            from exc


def _read_csv(data: bytes, name: str) -> np.ndarray:
    """A headerless comma-separated table of numbers, one row per line (always 2-D)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReferenceError(_("%(name)s is not UTF-8 text.", name=name)) from exc
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy warns about an empty file; the checks say it better
            return np.loadtxt(io.StringIO(text), delimiter=",", ndmin=2, dtype=np.float64, comments=None)
    except ValueError:
        pass
    # numpy's parser failed: find the first bad line to say what is wrong.
    width = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cells = line.split(",")
        for column, cell in enumerate(cells, start=1):
            try:
                float(cell)
            except ValueError:
                raise ReferenceError(_(
                    "%(name)s, line %(line)s, column %(column)s: %(value)s is not a number. The file must be "
                    "comma-separated numbers without a header line.",
                    name=name, line=number, column=column, value=repr(cell.strip()[:40]))) from None
        if width is None:
            width, width_line = len(cells), number
        elif len(cells) != width:
            raise ReferenceError(_(
                "%(name)s, line %(line)s has %(length)s values but line %(first)s has %(width)s; every line needs "
                "the same number of values.", name=name, line=number, length=len(cells), first=width_line,
                width=width))
    raise ReferenceError(_("%(name)s cannot be read as comma-separated numbers.", name=name))


def _checked(arrays: dict[str, np.ndarray], sources: dict[str, str]) -> MobilityData:
    """The arrays checked like an upload's; ReferenceError naming the files of the problems."""
    report, data = mobility.check_arrays(arrays)
    if data is None:
        problems = report.problems
        lines = []
        for problem in problems[:MAX_REPORTED]:
            key = problem.path.split("[")[0]
            source = sources.get(key)
            lines.append(_("%(file)s: %(message)s", file=source, message=problem.message) if source
                         else problem.message)
        more = len(problems) - MAX_REPORTED
        text = " ".join(lines) + (" " + _("(%(num)s more problems)", num=more) if more > 0 else "")
        raise ReferenceError(_("The reference set is not usable: %(problems)s", problems=text), problems)
    return data


def _problem_list(problems: list) -> str:
    text = " ".join(problem.message for problem in problems[:MAX_REPORTED])
    more = len(problems) - MAX_REPORTED
    return text + (" " + _("(%(num)s more problems)", num=more) if more > 0 else "")


# --- ZIP and HTTP --------------------------------------------------------------------------------

def _seekable(stream: BinaryIO) -> BinaryIO:
    try:
        if stream.seekable():
            return stream
    except (AttributeError, ValueError):
        pass
    return io.BytesIO(stream.read())


def _open_zip_file(stream: BinaryIO, limits: hard_limits.Limits) -> zipfile.ZipFile:
    """The ZIP in a seekable file, opened within LIMIT_ZIP_MEMBERS without reading it whole; ReferenceError
    otherwise."""
    try:
        return zips.open_zip_file(stream, limits)
    except LimitError as exc:
        raise ReferenceError(str(exc)) from exc
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, struct.error) as exc:
        raise ReferenceError(_("The file is not a valid ZIP archive (%(reason)s).", reason=str(exc))) from exc


def _unsafe_name(name: str) -> bool:
    parts = name.replace("\\", "/").split("/")
    return name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":")


def _choose_members(members: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
    """Per key, the best member by file name: in a 'groundtruth' folder first, .npy before .csv, shallowest."""
    # The dataset's file names, and the keys themselves (the member names of a .npz of the four arrays).
    wanted = {f"{name}{ext}": key for key, name in [*FILES.items(), *((k, k) for k in KEYS)] for ext in (".npy", ".csv")}
    best: dict[str, tuple[tuple, zipfile.ZipInfo]] = {}
    for info in members:
        parts = PurePosixPath(info.filename.replace("\\", "/")).parts
        if not parts or parts[0] == "__MACOSX" or parts[-1].startswith("._"):
            continue  # macOS resource forks
        key = wanted.get(parts[-1])
        if key is None:
            continue
        rank = (len(parts) < 2 or parts[-2] != FOLDER, not parts[-1].endswith(".npy"), len(parts))
        if key in best and best[key][0] == rank:
            raise ReferenceError(_(
                "The ZIP holds %(name)s twice (%(first)s and %(second)s); put a single reference set in the ZIP.",
                name=parts[-1], first=best[key][1].filename, second=info.filename))
        if key not in best or rank < best[key][0]:
            best[key] = (rank, info)
    return {key: info for key, (_rank, info) in best.items()}


def _read_member(reader: ZipReader, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes, within the ZIP limits whatever its header claims."""
    try:
        return reader.read(info.filename, info)
    except LimitError as exc:
        raise ReferenceError(str(exc)) from exc
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
        raise ReferenceError(_("%(name)s in the ZIP cannot be read (%(reason)s).",
                               name=info.filename, reason=str(exc))) from exc


def _fetch(url: str, timeout: float, budget: int) -> bytes:
    if urllib.parse.urlsplit(url).scheme not in ("https", "http"):
        raise ReferenceError(_("Cannot download %(url)s: only https:// (or http://) addresses are supported.",
                               url=url))
    request = urllib.request.Request(url, headers={"User-Agent": "PersonaSteer-Bench"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = response.read(budget + 1)
    except urllib.error.HTTPError as exc:
        reason = _("HTTP %(status)s %(reason)s", status=exc.code, reason=exc.reason)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = str(getattr(exc, "reason", None) or exc)
    else:
        if len(data) > budget:
            raise ReferenceError(_("%(url)s is larger than the download limit of %(limit)s.",
                                   url=url, limit=format_size(MAX_DOWNLOAD)))
        return data
    raise ReferenceError(_(
        "Could not download %(url)s: %(reason)s. Check the internet connection (this machine may be offline), or "
        "upload the dataset's groundtruth folder as a ZIP instead.", url=url, reason=reason))

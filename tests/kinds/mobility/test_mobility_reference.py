"""Reference sets of the mobility benchmark: folders, ZIPs, JSON, downloads and saved sets."""
from __future__ import annotations

import functools
import http.server
import io
import json
import shutil
import socket
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kinds.mobility import metrics
from kinds.mobility import reference_files as mobility_reference
from kinds.mobility.format import KEYS, MobilityData
from kinds.mobility.reference_files import FILES, ReferenceError
from kinds.readers.limits import Limits
from kinds.readers.zip import ZipReader

DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "dailymobility"
GROUNDTRUTH = DATA / "groundtruth"
needs_data = pytest.mark.skipif(not GROUNDTRUTH.is_dir(), reason=f"the real reference set is not at {GROUNDTRUTH}")


def small_set(users: int = 12, slots: int = 6, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"gyration_radius": rng.gamma(2.0, 1500.0, users), "daily_location_numbers": rng.integers(1, 7, users) * 1.0,
            "intention_sequences": rng.integers(1, 8, (users, slots)),
            "intention_proportions": rng.dirichlet(np.ones(7), users)}


def write_folder(folder: Path, arrays: dict[str, np.ndarray], ext: str = ".npy") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for key, name in FILES.items():
        if ext == ".npy":
            np.save(folder / f"{name}.npy", arrays[key])
        else:
            np.savetxt(folder / f"{name}.csv", arrays[key], delimiter=",")
    return folder


def zip_of(members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    buffer.seek(0)
    return buffer


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def npy_members(arrays: dict[str, np.ndarray], prefix: str = "groundtruth/") -> dict[str, bytes]:
    return {f"{prefix}{name}.npy": npy_bytes(arrays[key]) for key, name in FILES.items()}


def assert_same(data: MobilityData, arrays: dict[str, np.ndarray]) -> None:
    for key in KEYS:
        assert np.array_equal(getattr(data, key), arrays[key]), key
    assert data.intention_sequences.dtype == np.int8 and data.gyration_radius.dtype == np.float64


# --- the real dataset --------------------------------------------------------------------------

@needs_data
def test_real_folder_npy_and_csv(tmp_path):
    from_npy = mobility_reference.load_folder(DATA)
    assert from_npy.summary()["users"] == 100
    assert from_npy.intention_sequences.shape == (100, 48) and from_npy.intention_proportions.shape == (100, 7)
    assert from_npy == mobility_reference.load_folder(GROUNDTRUTH)  # the groundtruth folder itself
    csv_only = tmp_path / "set" / "groundtruth"
    csv_only.mkdir(parents=True)
    for path in GROUNDTRUTH.glob("*.csv"):
        shutil.copy(path, csv_only)
    from_csv = mobility_reference.load_folder(tmp_path / "set")
    assert np.array_equal(from_csv.intention_sequences, from_npy.intention_sequences)
    for key in ("gyration_radius", "daily_location_numbers", "intention_proportions"):
        assert np.allclose(getattr(from_csv, key), getattr(from_npy, key), rtol=0, atol=1e-6)  # CSV keeps 6 decimals
    for reference in (from_npy, from_csv):
        result = metrics.score(reference, reference)
        assert result["official"]["final_score"] == pytest.approx(100.0, abs=1e-9)
        assert all(value == 0.0 for value in result["official"]["jsd"].values())
        assert all(value == 0.0 for value in result["strict"]["jsd"].values())
    # Rounded to 6 decimals, the CSV set is still nearly the same distribution.
    assert metrics.score(from_npy, from_csv)["official"]["final_score"] > 99.99


@needs_data
def test_real_zip_with_a_nested_folder():
    members = {f"dataset/v1/groundtruth/{path.name}": path.read_bytes() for path in GROUNDTRUTH.glob("*")}
    members["dataset/README.md"] = b"# DailyMobility"
    assert mobility_reference.load_zip(zip_of(members)) == mobility_reference.load_folder(DATA)


# --- folders -----------------------------------------------------------------------------------

def test_folder_npy_and_files_directly_in_it(tmp_path):
    arrays = small_set()
    assert_same(mobility_reference.load_folder(write_folder(tmp_path / "a" / "groundtruth", arrays).parent), arrays)
    assert_same(mobility_reference.load_folder(write_folder(tmp_path / "b", arrays)), arrays)


def test_folder_csv_only(tmp_path):
    arrays = small_set()
    data = mobility_reference.load_folder(write_folder(tmp_path / "groundtruth", arrays, ".csv").parent)
    assert np.array_equal(data.intention_sequences, arrays["intention_sequences"])
    assert np.allclose(data.gyration_radius, arrays["gyration_radius"])


def test_folder_prefers_npy_over_csv(tmp_path):
    arrays = small_set()
    folder = write_folder(tmp_path / "groundtruth", arrays)
    (folder / "gyration_radius.csv").write_text("not,a,number\n")
    assert_same(mobility_reference.load_folder(tmp_path), arrays)


def test_folder_missing_file_is_named(tmp_path):
    folder = write_folder(tmp_path / "groundtruth", small_set())
    (folder / "daily_intentions_2d.npy").unlink()
    with pytest.raises(ReferenceError, match="has no daily_intentions_2d"):
        mobility_reference.load_folder(tmp_path)
    with pytest.raises(ReferenceError, match="is not a folder"):
        mobility_reference.load_folder(tmp_path / "nowhere")


CSV_PROBLEMS = {
    "header line": ("gyration_radius", "radius\n1.0\n2.0\n", "gyration_radius.csv, line 1, column 1: 'radius' is not "
                                                               "a number"),
    "empty cell": ("daily_intentions_2d", "1,2,3\n1,,3\n", "daily_intentions_2d.csv, line 2, column 2"),
    "ragged lines": ("daily_intentions_2d", "1,2,3\n1,2\n", "line 2 has 2 values but line 1 has 3"),
    "several values on a line": ("gyration_radius", "1.0,2.0\n3.0,4.0\n", "'gyration_radius' must be one value per "
                                                                            "user, found an array of shape 2 × 2"),
    "NaN": ("daily_location_numbers", "1\nnan\n", "daily_location_numbers.csv: 'daily_location_numbers[1]' is NaN"),
    "code 9": ("daily_intentions_2d", "1,9\n1,1\n", "daily_intentions_2d.csv: 'intention_sequences[0][1]' is 9"),
    "empty file": ("intention_proportions_2d", "", "'intention_proportions' is empty"),
}


@pytest.mark.parametrize("name", CSV_PROBLEMS)
def test_csv_problems_are_explained(tmp_path, name):
    file, text, fragment = CSV_PROBLEMS[name]
    arrays = small_set(users=2, slots=2)
    write_folder(tmp_path, arrays, ".csv")
    (tmp_path / f"{file}.csv").write_text(text)
    with pytest.raises(ReferenceError) as caught:
        mobility_reference.load_folder(tmp_path)
    assert fragment in str(caught.value), str(caught.value)


def test_reference_problems_name_the_file(tmp_path):
    arrays = small_set()
    arrays["intention_proportions"][3, 2] = 1.5
    arrays["gyration_radius"][0] = -1.0
    write_folder(tmp_path, arrays)
    with pytest.raises(ReferenceError) as caught:
        mobility_reference.load_folder(tmp_path)
    message = str(caught.value)
    assert message.startswith("The reference set is not usable: gyration_radius.npy: 'gyration_radius[0]' is -1;")
    assert "intention_proportions_2d.npy: 'intention_proportions[3][2]' is 1.5" in message
    assert [p.path for p in caught.value.problems] == ["gyration_radius[0]", "intention_proportions[3][2]"]


def test_npy_that_is_not_usable(tmp_path):
    arrays = small_set()
    folder = write_folder(tmp_path, arrays)
    np.save(folder / "gyration_radius.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ReferenceError, match="gyration_radius.npy cannot be read as a .npy file: it holds Python "
                                             "objects"):
        mobility_reference.load_folder(tmp_path)
    data = npy_bytes(arrays["gyration_radius"])
    (folder / "gyration_radius.npy").write_bytes(data[:-16])
    with pytest.raises(ReferenceError, match="shorter than its header says"):
        mobility_reference.load_folder(tmp_path)
    np.save(folder / "gyration_radius.npy", np.array(["a", "b"]))
    with pytest.raises(ReferenceError, match="'gyration_radius' must hold numbers"):
        mobility_reference.load_folder(tmp_path)


# --- ZIPs --------------------------------------------------------------------------------------

def test_zip_nested_with_junk():
    arrays = small_set()
    members = npy_members(arrays, "export/2025/groundtruth/")
    members.update({"export/README.txt": b"hello", "export/2025/groundtruth/notes.csv": b"a,b\n",
                    "__MACOSX/export/2025/groundtruth/._gyration_radius.npy": b"\x00\x05junk",
                    "export/2025/other/gyration_radius.npy": npy_bytes(np.zeros(3))})  # not in a groundtruth folder
    assert_same(mobility_reference.load_zip(zip_of(members)), arrays)


def test_zip_of_csv_files():
    arrays = small_set()
    members = {}
    for key, name in FILES.items():
        text = io.StringIO()
        np.savetxt(text, arrays[key], delimiter=",")
        members[f"groundtruth/{name}.csv"] = text.getvalue().encode()
    data = mobility_reference.load_zip(zip_of(members))
    assert np.array_equal(data.intention_sequences, arrays["intention_sequences"])


def test_zip_missing_file_is_named():
    members = npy_members(small_set())
    del members["groundtruth/intention_proportions_2d.npy"]
    del members["groundtruth/gyration_radius.npy"]
    with pytest.raises(ReferenceError, match="The ZIP has no gyration_radius.npy, intention_proportions_2d.npy"):
        mobility_reference.load_zip(zip_of(members))


def test_zip_member_that_is_not_npy():
    members = npy_members(small_set())
    members["groundtruth/daily_location_numbers.npy"] = b"PK junk that is no array"
    with pytest.raises(ReferenceError, match="groundtruth/daily_location_numbers.npy is not a NumPy .npy file"):
        mobility_reference.load_zip(zip_of(members))


def test_zip_with_two_sets_is_ambiguous():
    arrays = small_set()
    members = {**npy_members(arrays, "a/groundtruth/"), **npy_members(arrays, "b/groundtruth/")}
    with pytest.raises(ReferenceError, match="holds gyration_radius.npy twice"):
        mobility_reference.load_zip(zip_of(members))


def test_zip_bomb_is_refused(monkeypatch):
    members = npy_members(small_set())
    members["groundtruth/padding.bin"] = bytes(8 * 1024 * 1024)  # 8 MiB of zeros: a few KB compressed
    archive = zip_of(members)
    assert len(archive.getvalue()) < 100_000
    with pytest.raises(ReferenceError, match="The ZIP expands to 8.0 MB, more than the limit of 1.0 MB"):
        mobility_reference.load_zip(archive, max_uncompressed=1024 * 1024)
    monkeypatch.setenv("LIMIT_ZIP_EXPANDED_MB", "4")
    archive.seek(0)
    with pytest.raises(ReferenceError, match="more than the limit of 4.0 MB"):
        mobility_reference.load_zip(archive)


def test_zip_member_claiming_a_huge_size_is_refused():
    raw = bytearray(zip_of(npy_members(small_set())).getvalue())
    central = raw.find(b"PK\x01\x02")  # the first central directory entry; its uncompressed size is at +24
    raw[central + 24:central + 28] = (0xFFFFFFF0).to_bytes(4, "little")
    with pytest.raises(ReferenceError, match="expands to more than 100.0 MB, the limit for one file"):
        mobility_reference.load_zip(io.BytesIO(bytes(raw)))


def test_member_larger_than_its_header_is_cut_off():
    archive = zip_of(npy_members(small_set()))
    with zipfile.ZipFile(archive) as opened:
        info = opened.getinfo("groundtruth/gyration_radius.npy")
        with pytest.raises(ReferenceError, match="takes the ZIP past the limit of 10 bytes expanded"):
            mobility_reference._read_member(ZipReader(opened, Limits(), expanded=10), info)


@pytest.mark.parametrize("name", ["../escape/gyration_radius.npy", "/etc/gyration_radius.npy",
                                  "C:/data/gyration_radius.npy", "groundtruth/../../x.npy"])
def test_zip_path_tricks_are_refused(name):
    members = npy_members(small_set())
    members[name] = b"x"
    with pytest.raises(ReferenceError, match="unsafe path"):
        mobility_reference.load_zip(zip_of(members))


def test_not_a_zip():
    with pytest.raises(ReferenceError, match="not a valid ZIP archive"):
        mobility_reference.load_zip(io.BytesIO(b"PK\x03\x04 and then nothing"))


# --- JSON, load_any, npz -----------------------------------------------------------------------

def four_key_json(arrays: dict[str, np.ndarray]) -> bytes:
    return json.dumps({key: arrays[key].tolist() for key in KEYS}).encode()


def test_json_reference():
    arrays = small_set()
    assert_same(mobility_reference.load_json(io.BytesIO(four_key_json(arrays))), arrays)
    bad = json.loads(four_key_json(arrays))
    bad["intention_sequences"][2][1] = "4"
    with pytest.raises(ReferenceError) as caught:
        mobility_reference.load_json(io.BytesIO(json.dumps(bad).encode()))
    assert "The reference JSON is not usable: 'intention_sequences[2][1]' must be a number" in str(caught.value)
    assert caught.value.problems[0].path == "intention_sequences[2][1]"


def test_load_any(tmp_path):
    arrays = small_set()
    folder = write_folder(tmp_path / "set" / "groundtruth", arrays).parent
    assert_same(mobility_reference.load_any(folder, "set"), arrays)
    assert_same(mobility_reference.load_any(str(folder), ""), arrays)
    archive = zip_of(npy_members(arrays, "set/groundtruth/"))
    assert_same(mobility_reference.load_any(archive, "reference.zip"), arrays)
    archive.seek(0)
    assert_same(mobility_reference.load_any(archive, "upload"), arrays)  # recognised by content
    assert_same(mobility_reference.load_any(io.BytesIO(four_key_json(arrays)), "ref.json"), arrays)
    assert_same(mobility_reference.load_any(io.BytesIO(b"\xef\xbb\xbf " + four_key_json(arrays)), "ref"), arrays)
    (tmp_path / "ref.json").write_bytes(four_key_json(arrays))
    assert_same(mobility_reference.load_any(tmp_path / "ref.json", "ref.json"), arrays)
    with pytest.raises(ReferenceError, match="notes.txt is not a reference set"):
        mobility_reference.load_any(io.BytesIO(b"hello"), "notes.txt")
    with pytest.raises(ReferenceError, match="does not exist"):
        mobility_reference.load_any(tmp_path / "missing.zip", "missing.zip")


class _Unseekable(io.RawIOBase):
    def __init__(self, data: bytes):
        self._data = io.BytesIO(data)

    def readable(self):
        return True

    def seekable(self):
        return False

    def readinto(self, buffer):
        chunk = self._data.read(len(buffer))
        buffer[:len(chunk)] = chunk
        return len(chunk)


def test_load_any_from_an_unseekable_stream():
    arrays = small_set()
    data = zip_of(npy_members(arrays)).getvalue()
    assert_same(mobility_reference.load_any(_Unseekable(data), "r.zip"), arrays)


def test_npz_round_trip(tmp_path):
    arrays = small_set()
    data = mobility_reference.load_json(io.BytesIO(four_key_json(arrays)))
    path = tmp_path / "kept.tmp.npz"
    mobility_reference.save_npz(data, path)
    assert [p.name for p in tmp_path.iterdir()] == ["kept.tmp.npz"]  # written exactly where asked
    again = mobility_reference.load_npz(path)
    assert again == data and again.intention_sequences.dtype == np.int8
    with path.open("rb") as stream:
        assert mobility_reference.load_any(stream, "kept.npz") == data
    with pytest.raises(ReferenceError, match="cannot be read"):
        mobility_reference.load_npz(tmp_path / "nothing.npz")


# --- download ----------------------------------------------------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def dataset_server(tmp_path):
    """A local HTTP server with the Hugging Face layout: /resolve/main/groundtruth/<name>.npy."""
    arrays = small_set(users=30, slots=48)
    write_folder(tmp_path / "site" / "resolve" / "main" / "groundtruth", arrays)
    handler = functools.partial(_QuietHandler, directory=str(tmp_path / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tmp_path / "site" / "resolve" / "main"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_download_from_a_local_server(dataset_server):
    root, folder = dataset_server
    downloaded = mobility_reference.download(f"{root}/resolve/main", timeout=10)
    assert downloaded == mobility_reference.load_folder(folder)
    assert downloaded.summary()["sequence_shape"] == [30, 48]


def test_download_of_a_missing_file_says_which(dataset_server):
    root, folder = dataset_server
    (folder / "groundtruth" / "daily_intentions_2d.npy").unlink()
    with pytest.raises(ReferenceError) as caught:
        mobility_reference.download(f"{root}/resolve/main/", timeout=10)
    message = str(caught.value)
    assert f"Could not download {root}/resolve/main/groundtruth/daily_intentions_2d.npy: HTTP 404" in message


def test_download_from_a_closed_port_names_the_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}/resolve/main"
    with pytest.raises(ReferenceError) as caught:
        mobility_reference.download(base, timeout=5)
    message = str(caught.value)
    assert message.startswith(f"Could not download {base}/groundtruth/gyration_radius.npy: ")
    assert "offline" in message


def test_download_refuses_other_schemes(tmp_path):
    with pytest.raises(ReferenceError, match="only https://"):
        mobility_reference.download(f"file://{tmp_path}", timeout=1)


def test_default_source_is_the_hugging_face_dataset():
    assert mobility_reference.HF_BASE_URL == \
        "https://huggingface.co/datasets/tsinghua-fib-lab/daily-mobility-generation-benchmark/resolve/main"

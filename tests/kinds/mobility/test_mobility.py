"""The mobility benchmark: validation of uploads, the official and strict scores, and chart data."""
from __future__ import annotations

import io
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from kinds import stats
from kinds.mobility import format as mobility
from kinds.mobility import metrics
from kinds.mobility.format import KEYS, MobilityData
from kinds.problems import MAX_PROBLEMS, Problem, Report

DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "dailymobility"
GROUNDTRUTH = DATA / "groundtruth"
FILES = {"gyration_radius": "gyration_radius", "daily_location_numbers": "daily_location_numbers",
         "intention_sequences": "daily_intentions_2d", "intention_proportions": "intention_proportions_2d"}
needs_data = pytest.mark.skipif(not GROUNDTRUTH.is_dir(), reason=f"the real reference set is not at {GROUNDTRUTH}")


# --- helpers -----------------------------------------------------------------------------------

def good(users: int = 6, slots: int = 4, seed: int = 0) -> dict:
    """A valid four-key mobility object of plain Python lists."""
    rng = np.random.default_rng(seed)
    shares = rng.dirichlet(np.ones(7), size=users)
    return {
        "gyration_radius": rng.gamma(2.0, 1500.0, users).round(3).tolist(),
        "daily_location_numbers": rng.integers(1, 7, users).tolist(),
        "intention_sequences": rng.integers(1, 8, (users, slots)).tolist(),
        "intention_proportions": shares.tolist(),
    }


def encode(obj) -> bytes:
    return json.dumps(obj).encode("utf-8") if not isinstance(obj, (bytes, str)) else \
        (obj.encode("utf-8") if isinstance(obj, str) else obj)


def check(obj, **kwargs) -> Report:
    return mobility.validate(io.BytesIO(encode(obj)), **kwargs)


def load(obj) -> MobilityData:
    return mobility.load(io.BytesIO(encode(obj)))


def the_problem(report: Report) -> Problem:
    assert len(report.problems) == 1, [p.message for p in report.problems]
    return report.problems[0]


def changed(**changes) -> dict:
    data = good()
    data.update(changes)
    return data


def set_item(key: str, index: tuple, value) -> dict:
    """good() with one item replaced (index into the nested lists)."""
    data = good()
    target = data[key]
    for i in index[:-1]:
        target = target[i]
    target[index[-1]] = value
    return data


def real_reference() -> MobilityData:
    return MobilityData(**{key: np.load(GROUNDTRUTH / f"{name}.npy") for key, name in FILES.items()})


def reference_lists() -> dict:
    return {key: np.load(GROUNDTRUTH / f"{name}.npy").tolist() for key, name in FILES.items()}


# --- a valid file ------------------------------------------------------------------------------

def test_valid_file_summary_and_dtypes():
    data = good(users=5, slots=3)
    report = check(data)
    assert report.ok and not report.warnings, report.to_dict()
    summary = report.summary
    assert summary["users"] == 5 and summary["sequence_shape"] == [5, 3] and summary["proportion_shape"] == [5, 7]
    radius = sorted(data["gyration_radius"])
    assert summary["radius"] == {"min": radius[0], "median": radius[2], "max": radius[-1]}
    assert all(type(v) is float for v in summary["locations"].values())
    loaded = load(data)
    assert loaded.gyration_radius.dtype == np.float64 and loaded.daily_location_numbers.dtype == np.float64
    assert loaded.intention_sequences.dtype == np.int8 and loaded.intention_proportions.dtype == np.float64
    assert loaded.intention_sequences.tolist() == data["intention_sequences"]
    assert loaded.summary() == summary


def test_bom_whole_floats_as_codes_and_unknown_keys():
    data = good()
    data["intention_sequences"] = [[float(c) for c in row] for row in data["intention_sequences"]]
    data["model"] = "gpt"
    report = check(b"\xef\xbb\xbf" + encode(data))
    assert report.ok, report.to_dict()
    assert [w.message for w in report.warnings] == ["Unknown keys are ignored: \"model\"."]
    assert load(data).intention_sequences.dtype == np.int8


def test_good_files_take_the_vectorised_path(monkeypatch):
    def fail(*args):
        raise AssertionError("the per-item scan ran on a valid file")
    monkeypatch.setattr(mobility, "_scan_rows", fail)
    monkeypatch.setattr(mobility, "_scan_values", fail)
    assert check(good(users=50)).ok


def test_true_elsewhere_in_the_file_only_slows_it_down():
    data = good()
    data["notes"] = {"ok": True, "seed": None}
    assert check(data).ok


def test_many_users_validate_fast():
    rng = np.random.default_rng(1)
    users = 100_000
    data = {"gyration_radius": rng.gamma(2.0, 1500.0, users).round(2).tolist(),
            "daily_location_numbers": rng.integers(1, 9, users).tolist(),
            "intention_sequences": rng.integers(1, 8, (users, 48)).tolist(),
            "intention_proportions": rng.dirichlet(np.ones(7), users).round(6).tolist()}
    raw = encode(data)
    start = time.perf_counter()
    json.loads(raw)
    parse_only = time.perf_counter() - start
    start = time.perf_counter()
    report = mobility.validate(io.BytesIO(raw))
    elapsed = time.perf_counter() - start
    assert report.summary["users"] == users
    # json itself dominates; the checks on top of it are vectorised.
    assert elapsed < 3 * parse_only + 1.0, (elapsed, parse_only)


# --- one bad thing per file --------------------------------------------------------------------

BAD = {
    "missing key": ({k: v for k, v in good().items() if k != "intention_sequences"}, "intention_sequences",
                    "'intention_sequences' is missing; add it as a list with one row per user"),
    "key not a list": (changed(gyration_radius="1,2,3"), "gyration_radius",
                       "'gyration_radius' must be a list with one radius of gyration per user (metres, 0 or "
                       "more), found a string (\"1,2,3\")"),
    "key an object": (changed(intention_proportions={"a": 1}), "intention_proportions",
                      "found an object"),
    "empty list": (changed(daily_location_numbers=[]), "daily_location_numbers",
                   "'daily_location_numbers' is an empty list"),
    "number as string": (set_item("gyration_radius", (1,), "12"), "gyration_radius[1]",
                         "'gyration_radius[1]' must be a number, found a string (\"12\"); write the number "
                         "without quotes."),
    "word": (set_item("daily_location_numbers", (2,), "many"), "daily_location_numbers[2]",
             "must be a number, found a string (\"many\")."),
    "null": (set_item("gyration_radius", (0,), None), "gyration_radius[0]", "must be a number, found null."),
    "boolean": (set_item("daily_location_numbers", (3,), True), "daily_location_numbers[3]",
                "must be a number, found a boolean (true)."),
    "nested list": (set_item("gyration_radius", (4,), [1.0]), "gyration_radius[4]", "found a list"),
    "huge integer": (set_item("gyration_radius", (1,), 10 ** 400), "gyration_radius[1]", "too large to be a number"),
    "negative radius": (set_item("gyration_radius", (2,), -3.5), "gyration_radius[2]",
                        "'gyration_radius[2]' is -3.5; a radius of gyration is a distance and cannot be negative."),
    "negative locations": (set_item("daily_location_numbers", (0,), -1), "daily_location_numbers[0]",
                           "'daily_location_numbers[0]' is -1; a number of locations cannot be negative."),
    "ragged sequences": (set_item("intention_sequences", (3,), [1, 2, 3]), "intention_sequences[3]",
                         "'intention_sequences[3]' has 3 codes but 'intention_sequences[0]' has 4"),
    "empty sequence row": (set_item("intention_sequences", (2,), []), "intention_sequences[2]",
                           "'intention_sequences[2]' is an empty row"),
    "sequence row not a list": (set_item("intention_sequences", (1,), 4), "intention_sequences[1]",
                                "must be a list of intention codes (one per half-hour slot), found a number (4)"),
    "code 0": (set_item("intention_sequences", (3, 2), 0), "intention_sequences[3][2]",
               "'intention_sequences[3][2]' is 0, not an intention code; codes go from 1 to 7 (1 sleep,"),
    "code 8": (set_item("intention_sequences", (0, 0), 8), "intention_sequences[0][0]", "is 8, not an intention code"),
    "code 2.5": (set_item("intention_sequences", (5, 1), 2.5), "intention_sequences[5][1]",
                 "'intention_sequences[5][1]' is 2.5; intention codes are whole numbers from 1 to 7"),
    "code as string": (set_item("intention_sequences", (4, 3), "3"), "intention_sequences[4][3]",
                       "found a string (\"3\"); write the number without quotes."),
    "huge integer code": (set_item("intention_sequences", (1, 1), 10 ** 400), "intention_sequences[1][1]",
                          "too large to be a number"),
    "code true": (set_item("intention_sequences", (4, 0), True), "intention_sequences[4][0]",
                  "found a boolean (true)"),
    "proportions of unequal length": (set_item("intention_proportions", (2,), [0.5, 0.5]), "intention_proportions[2]",
                                      "'intention_proportions[2]' has 2 values but 'intention_proportions[0]' has 7"),
    "empty proportions row": (set_item("intention_proportions", (1,), []), "intention_proportions[1]",
                              "is an empty row; give one share per intention"),
    "proportion above 1": (set_item("intention_proportions", (1, 6), 1.5), "intention_proportions[1][6]",
                           "'intention_proportions[1][6]' is 1.5; a proportion must be between 0 and 1."),
    "proportion below 0": (set_item("intention_proportions", (0, 0), -0.1), "intention_proportions[0][0]",
                           "is -0.1; a proportion must be between 0 and 1."),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_input(name):
    obj, path, fragment = BAD[name]
    problem = the_problem(check(obj))
    assert problem.path == path, problem
    assert fragment in problem.message, problem.message
    with pytest.raises(ValueError, match="."):
        load(obj)


NON_FINITE = {
    "NaN radius": ("gyration_radius", "NaN", "gyration_radius[1]", "'gyration_radius[1]' is NaN; only finite numbers"),
    "Infinity locations": ("daily_location_numbers", "Infinity", "daily_location_numbers[1]", "is Infinity;"),
    "-Infinity proportion": ("intention_proportions", "-Infinity", "intention_proportions[1][0]", "is -Infinity;"),
    "NaN code": ("intention_sequences", "NaN", "intention_sequences[1][0]", "is NaN;"),
    "overflowing number": ("gyration_radius", "1e999", "gyration_radius[1]", "is Infinity;"),
}


@pytest.mark.parametrize("name", NON_FINITE)
def test_non_finite_numbers_are_rejected(name):
    key, token, path, fragment = NON_FINITE[name]
    data = good()
    placeholder = 123456.25
    if key in ("gyration_radius", "daily_location_numbers"):
        data[key][1] = placeholder
    else:
        data[key][1][0] = placeholder
    text = json.dumps(data).replace(str(placeholder), token)  # Python's json reads NaN and Infinity
    problem = the_problem(check(text))
    assert problem.path == path and fragment in problem.message, problem
    assert "NaN and Infinity are not numbers in JSON" in problem.message


def test_several_problems_in_one_file_are_all_reported():
    data = good()
    data["gyration_radius"][0] = "7"
    data["daily_location_numbers"][1] = -2
    data["intention_sequences"][2][3] = 9
    data["intention_proportions"][3][0] = 2.0
    report = check(data)
    assert [p.path for p in report.problems] == ["gyration_radius[0]", "daily_location_numbers[1]",
                                                 "intention_sequences[2][3]", "intention_proportions[3][0]"]


def test_ragged_rows_are_measured_against_the_common_length():
    data = good(users=5, slots=4)
    data["intention_sequences"][0] = [1, 2]  # the odd one is the first row
    problem = the_problem(check(data))
    assert problem.path == "intention_sequences[0]"
    assert "has 2 codes but 'intention_sequences[1]' has 4" in problem.message


FILE_LEVEL = {
    "not an object": ("[1, 2, 3]", "The file is a list, not a JSON object."),
    "a number": ("42", "The file is a number (42), not a JSON object."),
    "invalid JSON": ('{"gyration_radius": [1, 2,]}', "The file is not valid JSON at line 1, column "),
    "two objects": ('{"a": 1}\n{"b": 2}', "more text after the JSON object"),
    "empty": ("  \n", "The file is empty."),
    "UTF-16": ('{"gyration_radius": []}'.encode("utf-16"), "UTF-16"),
    "Latin-1": ('{"gyration_radius": ["caf\u00e9"]}'.encode("latin-1"), "not valid UTF-8: byte 0xE9"),
}


@pytest.mark.parametrize("name", FILE_LEVEL)
def test_file_level_problems(name):
    raw, fragment = FILE_LEVEL[name]
    problem = the_problem(check(raw))
    assert problem.path == "" and fragment in problem.message, problem.message


def test_size_limit():
    raw = encode(good())
    assert check(raw, max_bytes=len(raw)).ok
    problem = the_problem(check(raw, max_bytes=len(raw) - 1))
    assert "larger than the limit" in problem.message


def test_problems_stop_at_the_cap():
    data = good(users=300, slots=4)
    for row in data["intention_sequences"]:
        row[0] = 0
    report = check(data)
    assert len(report.problems) == MAX_PROBLEMS and report.truncated
    assert report.problems[0].path == "intention_sequences[0][0]"
    assert report.problems[-1].path == f"intention_sequences[{MAX_PROBLEMS - 1}][0]"
    data = good(users=300)
    data["gyration_radius"] = ["1"] * 300
    report = check(data)
    assert len(report.problems) == MAX_PROBLEMS and report.truncated


# --- warnings ----------------------------------------------------------------------------------

def test_rows_not_summing_to_one_warn():
    data = good()
    data["intention_proportions"][2] = [0.1] * 7  # sums to 0.7
    data["intention_proportions"][4] = [0.2] * 7  # sums to 1.4
    data["intention_proportions"][5] = [0.5, 0.5, 0.005, 0, 0, 0, 0]  # 1.005: within the tolerance
    report = check(data)
    assert report.ok
    warning, = report.warnings
    assert warning.path == "intention_proportions"
    assert warning.message.startswith("2 rows of 'intention_proportions' do not sum to 1 (the first is "
                                      "'intention_proportions[2]', summing to 0.7)")
    data["intention_proportions"][4] = data["intention_proportions"][0]
    warning, = check(data).warnings
    assert warning.path == "intention_proportions[2]"
    assert warning.message.startswith("1 row of 'intention_proportions' does not sum to 1: "
                                      "'intention_proportions[2]' sums to 0.7.")


def test_different_user_counts_warn():
    data = good(users=6)
    data["intention_sequences"] = data["intention_sequences"][:4]
    report = check(data)
    assert report.ok and report.summary["users"] == 6
    warning, = report.warnings
    assert ("different numbers of users: gyration_radius 6, daily_location_numbers 6, intention_sequences 4, "
            "intention_proportions 6") in warning.message


def test_shape_warnings_name_both_shapes():
    reference = load(good(users=6, slots=4))
    assert mobility.shape_warnings(reference, reference) == []
    data = good(users=6, slots=8)
    data["intention_proportions"] = [row[:5] for row in data["intention_proportions"]]
    data["gyration_radius"] = data["gyration_radius"][:5]
    warnings = {w.path: w.message for w in mobility.shape_warnings(reference, load(data))}
    assert set(warnings) == {"gyration_radius", "intention_sequences", "intention_proportions"}
    assert "'gyration_radius' has shape 5, different from the reference's 6" in warnings["gyration_radius"]
    assert "has shape 6 × 8 (users × half-hour slots), different from the reference's 6 × 4" \
        in warnings["intention_sequences"]
    assert "has shape 6 × 5 (users × intentions), different from the reference's 6 × 7" \
        in warnings["intention_proportions"]
    assert "compares only the first 5 intentions" in warnings["intention_proportions"]


# --- scores: the official variant against independent computations -----------------------------

def manual_official_jsd(data1, data2) -> float:
    """The published algorithm written out: 50 equal bins over each array's own range (edges by linspace,
    bin by searchsorted, the last bin closed), density, + 1e-10, normalised, JS distance from the KL sums
    with natural logs."""
    def density(values):
        x = np.asarray(values, dtype=float).ravel()
        low, high = x.min(), x.max()
        if low == high:
            low, high = low - 0.5, high + 0.5
        edges = np.linspace(low, high, 51)
        index = np.searchsorted(edges, x, side="right") - 1
        index[x == edges[-1]] = 49
        counts = np.bincount(index, minlength=50)
        return counts / np.diff(edges) / counts.sum()

    p = density(data1) + 1e-10
    q = density(data2) + 1e-10
    p = [v / math.fsum(p) for v in p]
    q = [v / math.fsum(q) for v in q]
    m = [(a + b) / 2 for a, b in zip(p, q)]
    kl_pm = math.fsum(a * math.log(a / c) for a, c in zip(p, m))
    kl_qm = math.fsum(b * math.log(b / c) for b, c in zip(q, m))
    return math.sqrt(max((kl_pm + kl_qm) / 2, 0.0))


def scipy_official_jsd(data1, data2) -> float:
    """AgentSociety's calculate_jsd_1d, as published."""
    hist1, _ = np.histogram(np.asarray(data1).flatten(), bins=50, density=True)
    hist2, _ = np.histogram(np.asarray(data2).flatten(), bins=50, density=True)
    hist1 = hist1 + 1e-10
    hist2 = hist2 + 1e-10
    hist1 = hist1 / np.sum(hist1)
    hist2 = hist2 / np.sum(hist2)
    with np.errstate(invalid="ignore"):
        return jensenshannon(hist1, hist2)


def generated_sets() -> dict[str, dict]:
    """Plain-list generated sets derived from the real reference (as an agent's JSON would hold them)."""
    ref = {key: np.load(GROUNDTRUTH / f"{name}.npy") for key, name in FILES.items()}
    rng = np.random.default_rng(42)
    users = len(ref["gyration_radius"])

    def variant(**arrays):
        out = {key: np.asarray(arrays.get(key, ref[key])) for key in KEYS}
        return {key: value.tolist() for key, value in out.items()}

    noisy_shares = np.clip(ref["intention_proportions"] + rng.normal(0, 0.03, ref["intention_proportions"].shape), 0, 1)
    perm = rng.permutation(users)
    random_codes = rng.integers(1, 8, (80, 48))
    return {
        "shifted": variant(gyration_radius=ref["gyration_radius"] + 800.0,
                           daily_location_numbers=ref["daily_location_numbers"] + 1.0),
        "scaled": variant(gyration_radius=ref["gyration_radius"] * 1.7),
        "noisy": variant(gyration_radius=np.abs(ref["gyration_radius"] + rng.normal(0, 900, users)),
                         daily_location_numbers=np.abs(ref["daily_location_numbers"] + rng.normal(0, 0.7, users)),
                         intention_proportions=noisy_shares / noisy_shares.sum(axis=1, keepdims=True)),
        "permuted": variant(**{key: ref[key][perm] for key in KEYS}),
        "fewer users": variant(**{key: ref[key][:37] for key in KEYS}),
        "24 slots": variant(intention_sequences=ref["intention_sequences"][:, ::2]),
        "96 slots": variant(intention_sequences=np.repeat(ref["intention_sequences"], 2, axis=1)),
        "random": variant(gyration_radius=rng.uniform(0, 30000, 80), daily_location_numbers=rng.integers(1, 12, 80),
                          intention_sequences=random_codes, intention_proportions=rng.dirichlet(np.ones(7), 80)),
        "all sleep": variant(intention_sequences=np.ones_like(ref["intention_sequences"])),
        "no sleep": variant(intention_sequences=np.where(ref["intention_sequences"] == 1, 2,
                                                         ref["intention_sequences"])),
        "integer radius": variant(gyration_radius=np.round(ref["gyration_radius"]).astype(int)),
    }


@needs_data
def test_official_identical_reference_scores_100():
    reference = real_reference()
    result = metrics.score(reference, reference)
    assert result["official"]["final_score"] == pytest.approx(100.0, abs=1e-9)
    assert all(value == 0.0 for value in result["official"]["jsd"].values())
    assert result["strict"]["final_score"] == 100.0
    assert all(value == 0.0 for value in result["strict"]["jsd"].values())
    # The same arrays through the upload path (JSON lists, int8 codes) score the same.
    loaded = load(reference_lists())
    assert metrics.score(reference, loaded) == result


@needs_data
@pytest.mark.parametrize("name", list(generated_sets()) if GROUNDTRUTH.is_dir() else [])
def test_official_matches_independent_computations(name):
    gen_lists = generated_sets()[name]
    ref_arrays = {key: np.load(GROUNDTRUTH / f"{file}.npy") for key, file in FILES.items()}
    result = metrics.score(real_reference(), load(gen_lists))["official"]
    gen_arrays = {key: np.array(gen_lists[key]) for key in KEYS}  # as AgentSociety's code builds them
    manual = {key: manual_official_jsd(ref_arrays[key], gen_arrays[key]) for key in KEYS}
    published = {key: scipy_official_jsd(ref_arrays[key], gen_arrays[key]) for key in KEYS}
    noise = []
    for key in KEYS:
        # Where the two histograms are (almost) equal the JS distance is the square root of rounding noise
        # in the divergence (1e-18 gives 1e-9), so there the two computations can only agree as divergences.
        if result["jsd"][key] != manual[key] and max(result["jsd"][key], manual[key]) < 1e-7:
            noise.append(key)
            assert abs(result["jsd"][key] ** 2 - manual[key] ** 2) <= 1e-16, key
        else:
            assert result["jsd"][key] == pytest.approx(manual[key], abs=1e-11), key
        if math.isnan(published[key]):  # scipy's sqrt of a divergence rounded below 0
            assert result["jsd"][key] == 0.0 and key in noise
        else:
            assert result["jsd"][key] == published[key], key  # the same operations: the same bits
    jsd_gyration, jsd_locations, jsd_sequences, jsd_proportions = (
        0.0 if math.isnan(published[key]) else published[key] for key in KEYS)
    final_score = ((1-jsd_gyration + 1-jsd_locations + 1-jsd_sequences + 1-jsd_proportions) / 4) * 100
    assert result["final_score"] == final_score
    assert result["final_score"] == pytest.approx(100 * (1 - math.fsum(manual.values()) / 4),
                                                  abs=1e-7 if noise else 1e-9)


def test_code_counts_give_the_same_density_as_the_flattened_codes():
    rng = np.random.default_rng(3)
    for low, high in ((1, 8), (3, 4), (2, 6), (7, 8)):
        codes = rng.integers(low, high, (500, 13))
        for dtype in (np.int8, np.int64):
            typed = codes.astype(dtype)
            expected = np.histogram(codes.ravel(), bins=50, density=True)[0]
            assert np.array_equal(metrics.code_density(metrics.slot_counts(typed), typed.dtype), expected)


# --- known transformations move the scores the expected way -----------------------------------

def synthetic_reference(users: int = 2000, seed: int = 5) -> MobilityData:
    rng = np.random.default_rng(seed)
    slots = 48
    hours = np.arange(slots) / 2
    home = (hours < 7) | (hours >= 22)
    codes = np.where(home, 1, rng.choice([2, 3, 4, 5, 6, 7], size=(users, slots), p=[.2, .1, .4, .1, .1, .1]))
    shares = np.stack([np.bincount(row, minlength=8)[1:] / slots for row in codes])
    return MobilityData(rng.lognormal(7.5, 0.9, users), rng.poisson(2.5, users).astype(float) + 1.0,
                        codes.astype(np.int8), shares)


def with_(data: MobilityData, **changes) -> MobilityData:
    return MobilityData(**{key: changes.get(key, getattr(data, key)) for key in KEYS})


def test_scaling_the_radius_more_scores_worse():
    reference = synthetic_reference()
    mild = metrics.score(reference, with_(reference, gyration_radius=reference.gyration_radius * 1.1))
    strong = metrics.score(reference, with_(reference, gyration_radius=reference.gyration_radius * 3))
    assert strong["strict"]["jsd"]["gyration_radius"] > mild["strict"]["jsd"]["gyration_radius"] > 0
    assert strong["strict"]["final_score"] < mild["strict"]["final_score"] < 100
    # The official variant bins each array over its own range, so it cannot see a change of scale.
    for result in (mild, strong):
        assert result["official"]["jsd"]["gyration_radius"] < 1e-3


def test_all_sleep_is_worse_than_permuted_users():
    reference = synthetic_reference()
    rng = np.random.default_rng(0)
    permuted = with_(reference, intention_sequences=reference.intention_sequences[rng.permutation(2000)])
    asleep = with_(reference, intention_sequences=np.ones_like(reference.intention_sequences))
    kept = metrics.score(reference, permuted)
    lost = metrics.score(reference, asleep)
    for variant in ("official", "strict"):
        assert kept[variant]["jsd"]["intention_sequences"] == 0.0
        assert lost[variant]["jsd"]["intention_sequences"] > 0.3
        assert lost[variant]["final_score"] < kept[variant]["final_score"] == 100.0


def test_shifting_location_numbers():
    reference = synthetic_reference()
    locations = reference.daily_location_numbers
    everyone = metrics.score(reference, with_(reference, daily_location_numbers=locations + 2))
    some = metrics.score(reference, with_(reference, daily_location_numbers=np.where(locations > 3, locations + 2,
                                                                                       locations)))
    assert everyone["strict"]["jsd"]["daily_location_numbers"] > 0.1
    assert some["strict"]["jsd"]["daily_location_numbers"] > 0.05
    assert some["official"]["jsd"]["daily_location_numbers"] > 0.05
    # Shifting every user moves the official histogram's own range along: it cannot see the shift.
    assert everyone["official"]["jsd"]["daily_location_numbers"] < 1e-6


def test_strict_values_stay_in_0_1():
    rng = np.random.default_rng(9)
    reference = synthetic_reference(300)
    far = MobilityData(rng.uniform(1e6, 2e6, 50), rng.uniform(50, 60, 50), np.full((50, 48), 7, np.int8),
                       np.tile(np.eye(7)[6], (50, 1)))
    for generated in (far, synthetic_reference(100, seed=1), reference):
        result = metrics.score(reference, generated)
        for value in result["strict"]["jsd"].values():
            assert 0.0 <= value <= 1.0
        assert 0.0 <= result["strict"]["final_score"] <= 100.0
    far_result = metrics.score(reference, far)["strict"]
    assert far_result["jsd"]["gyration_radius"] == 1.0 and far_result["jsd"]["daily_location_numbers"] == 1.0


# --- the strict variant by hand ----------------------------------------------------------------

def tiny(radius, locations=(1.0, 2.0), codes=((1, 2), (1, 1)), shares=((1.0, 0.0), (0.5, 0.5))) -> MobilityData:
    return MobilityData(np.array(radius, float), np.array(locations, float), np.array(codes, np.int8),
                        np.array(shares, float))


# H(1/4, 3/4) - (H(1/2, 1/2) + H(1)) / 2 = 0.811278... - 0.5: the divergence of [1/2, 1/2] against [0, 1]
THREE_QUARTERS = -(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75)) - 0.5


def test_strict_radius_by_hand():
    # Reference [0, 1], generated [1, 1]: the joint range [0, 1] in 50 bins of 0.02; 0 falls in bin 0 and
    # 1 in the last bin (closed on the right). p = [1/2, 0, ..., 0, 1/2], q = [0, ..., 0, 1],
    # m = [1/4, 0, ..., 0, 3/4]: KL(p||m) = 1/2 log2 2 + 1/2 log2 (2/3) = 0.2075, KL(q||m) = log2 (4/3) =
    # 0.4150, JS = (0.2075 + 0.4150) / 2 = 0.31128 bits.
    result = metrics.score(tiny([0.0, 1.0]), tiny([1.0, 1.0]))["strict"]
    assert result["jsd"]["gyration_radius"] == pytest.approx(0.5 * (0.5 + 0.5 * math.log2(2 / 3) + math.log2(4 / 3)))
    assert result["jsd"]["gyration_radius"] == pytest.approx(THREE_QUARTERS)
    assert [result["jsd"][k] for k in KEYS[1:]] == [0.0, 0.0, 0.0]
    assert result["final_score"] == pytest.approx((1 - THREE_QUARTERS + 3) / 4 * 100)
    edges, ref_counts, gen_counts = stats.shared_histograms([0.0, 1.0], [1.0, 1.0])
    assert len(edges) == 51 and edges[0] == 0.0 and edges[-1] == 1.0
    assert ref_counts[0] == ref_counts[-1] == 1 and gen_counts[-1] == 2 and ref_counts.sum() == gen_counts.sum() == 2


def test_strict_equal_values_share_one_widened_bin():
    result = metrics.score(tiny([5.0, 5.0]), tiny([5.0, 5.0]))["strict"]
    assert result["jsd"]["gyration_radius"] == 0.0


def test_strict_sequences_by_hand():
    # Reference [[1, 2]]: (slot 0, sleep) and (slot 1, home), 1/2 each. Generated [[1, 1]]: (0, sleep) and
    # (1, sleep). m = (0, sleep) 1/2, (1, sleep) 1/4, (1, home) 1/4; KL(p||m) = KL(q||m) = 1/2 log2 2 = 1/2.
    one = dict(radius=[1.0], locations=[1.0], shares=[[1.0, 0.0]])
    result = metrics.score(tiny(codes=[[1, 2]], **one), tiny(codes=[[1, 1]], **one))["strict"]
    assert result["jsd"]["intention_sequences"] == pytest.approx(0.5)
    # Different slot counts: the generated day [[1]] has nothing in slot 1. p = (0, sleep) 1/2, (1, home) 1/2,
    # q = (0, sleep) 1: the same divergence as the radius example.
    result = metrics.score(tiny(codes=[[1, 2]], **one), tiny(codes=[[1]], **one))["strict"]
    assert result["jsd"]["intention_sequences"] == pytest.approx(THREE_QUARTERS)


def test_strict_proportions_by_hand():
    # Column 0: reference 0.5, 0.5 (bin 25 twice); generated 0.5 and 0.0 (bins 25 and 0): p = [1], q = [1/2, 1/2]
    # on two bins, the three-quarters case again; column 1 (0.5 against 1.0) the same. Mean: 0.31128.
    reference = tiny([1.0, 2.0], shares=[[0.5, 0.5], [0.5, 0.5]])
    generated = tiny([1.0, 2.0], shares=[[0.5, 0.5], [0.0, 1.0]])
    assert metrics.score(reference, generated)["strict"]["jsd"]["intention_proportions"] == \
        pytest.approx(THREE_QUARTERS)
    # Opposite corners: no overlap at all in either column, the maximum of 1 bit.
    reference = tiny([1.0, 2.0], shares=[[1.0, 0.0], [1.0, 0.0]])
    generated = tiny([1.0, 2.0], shares=[[0.0, 1.0], [0.0, 1.0]])
    assert metrics.score(reference, generated)["strict"]["jsd"]["intention_proportions"] == 1.0
    # Only the columns present in both count: a third generated column is ignored.
    generated = tiny([1.0, 2.0], shares=[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    assert metrics.score(reference, generated)["strict"]["jsd"]["intention_proportions"] == 0.0


def test_js_divergence_bits_matches_scipy():
    rng = np.random.default_rng(2)
    for _ in range(20):
        p, q = rng.random(12), rng.random(12)
        p[rng.random(12) < 0.3] = 0
        assert stats.js_divergence_bits(p, q) == pytest.approx(jensenshannon(p, q, base=2) ** 2, abs=1e-12)
    assert stats.js_divergence_bits([1, 0], [0, 1]) == 1.0
    assert stats.js_divergence_bits([3, 1], [6, 2]) == 0.0
    with pytest.raises(ValueError):
        stats.js_divergence_bits([0, 0], [1, 1])
    with pytest.raises(ValueError):
        stats.js_divergence_bits([1, 2], [1, 2, 3])


def test_official_js_distance_of_rounding_twins_is_zero_not_nan():
    a = np.array([0.3, 0.2, 0.5]) / 1.0000000000000002
    assert stats.official_js_distance(a, np.array([0.3, 0.2, 0.5])) == pytest.approx(0.0, abs=1e-7)


def test_score_needs_codes_1_to_7():
    reference = tiny([0.0, 1.0])
    with pytest.raises(ValueError):
        metrics.score(reference, tiny([0.0, 1.0], codes=[[0, 1], [1, 1]]))


# --- chart data --------------------------------------------------------------------------------

def test_distributions_are_small_shares_on_shared_bins():
    reference = synthetic_reference(500)
    generated = with_(synthetic_reference(300, seed=8), intention_sequences=synthetic_reference(300, 8)
                      .intention_sequences[:, :24])
    result = metrics.distributions(reference, generated)
    assert set(result) == {"gyration_radius", "daily_location_numbers", "slots", "proportions"}
    for key in ("gyration_radius", "daily_location_numbers"):
        part = result[key]
        assert len(part["edges"]) == 51 and len(part["reference"]) == len(part["generated"]) == 50
        assert part["edges"][0] == min(getattr(reference, key).min(), getattr(generated, key).min())
        assert part["edges"][-1] == max(getattr(reference, key).max(), getattr(generated, key).max())
        assert math.fsum(part["reference"]) == pytest.approx(1) and math.fsum(part["generated"]) == pytest.approx(1)
    slots = result["slots"]
    assert len(slots["reference"]) == 48 and len(slots["generated"]) == 24
    assert all(len(row) == 7 and math.fsum(row) == pytest.approx(1) for row in slots["reference"] + slots["generated"])
    assert slots["reference"][0][0] == 1.0  # everyone sleeps at midnight
    assert result["proportions"]["reference"] == pytest.approx(reference.intention_proportions.mean(axis=0).tolist())
    assert len(result["proportions"]["generated"]) == 7
    assert all(type(v) is float for v in result["gyration_radius"]["reference"])
    json.dumps(result)


def test_score_document_is_plain_json():
    reference = synthetic_reference(200)
    result = metrics.score(reference, synthetic_reference(150, seed=3))
    assert set(result) == {"official", "strict"}
    for variant in result.values():
        assert set(variant) == {"jsd", "final_score"} and set(variant["jsd"]) == set(KEYS)
        assert type(variant["final_score"]) is float
        assert all(type(v) is float and math.isfinite(v) for v in variant["jsd"].values())
    json.dumps(result)


def test_every_problem_is_reported_in_one_pass():
    """A short row, a row that is not a list or an item that is not a number do not hide the bad values elsewhere."""
    from tests.kinds.mobility.test_mobility_pipeline import synthetic

    data = synthetic()
    data["gyration_radius"][4], data["gyration_radius"][8] = "far", -3
    data["intention_sequences"][2] = data["intention_sequences"][2][:40]
    data["intention_sequences"][6] = "x"
    data["intention_sequences"][5][7] = 9
    data["intention_proportions"][3] = [0.5, "a", 0, 0, 0, 0, 1.5]
    report, result = mobility.read(io.BytesIO(json.dumps(data).encode()))
    assert result is None
    assert [p.path for p in report.problems] == [
        "gyration_radius[4]", "gyration_radius[8]", "intention_sequences[2]", "intention_sequences[6]",
        "intention_sequences[5][7]", "intention_proportions[3][1]", "intention_proportions[3][6]"]
    assert "is 9, not an intention code" in report.problems[4].message

"""Benchmark mobility scoring: score() against the bare numpy/scipy computation, and its memory.

    python bench/bench_mobility.py [--users 1000000] [--repeat 3] [--validate-users 1000000]

Generates a set of a million users with numpy (48 half-hour slots of int8 codes 1-7, radius, location
numbers, 7 intention proportions); the reference is the real DailyMobility set from ../shared/data when
present, else a generated 100-user set. Then, in one run:
(a) the bare computation of the same numbers: the official four JSDs exactly as AgentSociety's code
    does them (np.histogram(bins=50, density=True) + scipy's jensenshannon on flattened arrays), and the
    strict ones written plainly (shared bins, per-slot code counts, per-column histograms);
(b) metrics.score() on the same arrays, whose numbers must equal (a)'s;
checks that score() takes at most 2x the time of (a) and that its peak traced memory (tracemalloc)
stays below 3x the total size of the input arrays; and
(c) validates a JSON file of --validate-users users (0 to skip) and reports its time next to a bare
    json.loads of the same bytes (for information: the checks are vectorised, json dominates).
Exits 1 when a check fails.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from scipy.spatial.distance import jensenshannon

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kinds.mobility import format as mobility  # noqa: E402
from kinds.mobility import metrics  # noqa: E402
from kinds.mobility.format import KEYS, MobilityData  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "dailymobility"
MAX_TIME_RATIO = 2.0
MAX_MEMORY_RATIO = 3.0
SLOTS = 48
MB = 1024 * 1024


def generate(users: int, seed: int = 11) -> MobilityData:
    """A plausible generated set: sleep at night, a mix of activities by day."""
    rng = np.random.default_rng(seed)
    codes = rng.choice(np.arange(1, 8, dtype=np.int8), size=(users, SLOTS), p=[.15, .25, .1, .25, .08, .08, .09])
    codes[:, :14] = 1
    codes[:, 46:] = 1
    shares = rng.dirichlet(np.ones(7), size=users)
    return MobilityData(rng.lognormal(7.8, 1.0, users), rng.gamma(3.0, 0.9, users) + 1.0, codes, shares)


def reference_set() -> tuple[MobilityData, str]:
    if (DATA / "groundtruth").is_dir():
        from kinds.mobility.reference_files import load_folder
        return load_folder(DATA), "real DailyMobility groundtruth"
    return generate(100, seed=1), "generated (the real set is absent)"


# --- (a) the bare computation ------------------------------------------------------------------

def official_jsd(data1: np.ndarray, data2: np.ndarray) -> float:
    hist1, _ = np.histogram(data1.ravel(), bins=50, density=True)
    hist2, _ = np.histogram(data2.ravel(), bins=50, density=True)
    hist1 = hist1 + 1e-10
    hist2 = hist2 + 1e-10
    hist1 = hist1 / np.sum(hist1)
    hist2 = hist2 / np.sum(hist2)
    return float(jensenshannon(hist1, hist2))


def strict_js(p: np.ndarray, q: np.ndarray) -> float:
    return float(jensenshannon(p.ravel() / p.sum(), q.ravel() / q.sum(), base=2) ** 2)


def strict_shared(a: np.ndarray, b: np.ndarray) -> float:
    low, high = min(a.min(), b.min()), max(a.max(), b.max())
    return strict_js(np.histogram(a, bins=50, range=(low, high))[0], np.histogram(b, bins=50, range=(low, high))[0])


def strict_sequences(a: np.ndarray, b: np.ndarray) -> float:
    slots = max(a.shape[1], b.shape[1])
    tables = []
    for codes in (a, b):
        table = np.zeros((slots, 7))
        for slot in range(codes.shape[1]):
            table[slot] = np.bincount(codes[:, slot], minlength=8)[1:]
        tables.append(table)
    return strict_js(*tables)


def strict_proportions(a: np.ndarray, b: np.ndarray) -> float:
    columns = min(a.shape[1], b.shape[1])
    return sum(strict_js(np.histogram(a[:, c], bins=50, range=(0, 1))[0],
                         np.histogram(b[:, c], bins=50, range=(0, 1))[0]) for c in range(columns)) / columns


def bare(reference: MobilityData, generated: MobilityData) -> dict:
    official = {key: official_jsd(getattr(reference, key), getattr(generated, key)) for key in KEYS}
    strict = {
        "gyration_radius": strict_shared(reference.gyration_radius, generated.gyration_radius),
        "daily_location_numbers": strict_shared(reference.daily_location_numbers, generated.daily_location_numbers),
        "intention_sequences": strict_sequences(reference.intention_sequences, generated.intention_sequences),
        "intention_proportions": strict_proportions(reference.intention_proportions, generated.intention_proportions),
    }
    return {"official": official, "strict": strict}


# --- measuring ---------------------------------------------------------------------------------

def best_time(function, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def peak_memory(function) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def json_bytes(data: MobilityData) -> bytes:
    """The four-key JSON of a set, written quickly (numbers formatted by numpy, rows joined as text)."""
    def numbers(values: np.ndarray, fmt: str) -> str:
        return ",".join(np.char.mod(fmt, values).tolist())

    rows = "],[".join(",".join(map(str, row)) for row in data.intention_sequences.tolist())
    shares = "],[".join(numbers(row, "%.6f") for row in data.intention_proportions)
    text = (f'{{"gyration_radius": [{numbers(data.gyration_radius, "%.3f")}], '
            f'"daily_location_numbers": [{numbers(data.daily_location_numbers, "%.4f")}], '
            f'"intention_sequences": [[{rows}]], "intention_proportions": [[{shares}]]}}')
    return text.encode()


def verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000, help="users in the generated set")
    parser.add_argument("--repeat", type=int, default=3, help="timing runs; the best is kept")
    parser.add_argument("--validate-users", type=int, default=1_000_000,
                        help="users in the JSON file of (c); 0 skips it")
    args = parser.parse_args(argv)

    reference, source = reference_set()
    generated = generate(args.users)
    arrays = [getattr(data, key) for data in (reference, generated) for key in KEYS]
    input_bytes = sum(a.nbytes for a in arrays)
    print(f"reference: {source}, {len(reference.gyration_radius)} users; generated: {args.users:,} users x "
          f"{SLOTS} slots ({generated.intention_sequences.dtype} codes); input arrays {input_bytes / MB:.1f} MB")

    bare_s, expected = best_time(lambda: bare(reference, generated), args.repeat)
    score_s, result = best_time(lambda: metrics.score(reference, generated), args.repeat)
    same = all(result["official"]["jsd"][key] == expected["official"][key] for key in KEYS) and all(
        abs(result["strict"]["jsd"][key] - expected["strict"][key]) <= 1e-12 for key in KEYS)
    ratio = score_s / bare_s
    time_ok = ratio <= MAX_TIME_RATIO and same
    print(f"(a) bare numpy/scipy:  {bare_s:.3f} s")
    print(f"(b) metrics.score():   {score_s:.3f} s  official {result['official']['final_score']:.4f}, "
          f"strict {result['strict']['final_score']:.4f}")
    print(f"    same numbers as (a): {same}; time ratio score/bare = {ratio:.2f} (need <= {MAX_TIME_RATIO:.1f}): "
          f"{verdict(time_ok)}")

    peak = peak_memory(lambda: metrics.score(reference, generated))
    memory_ratio = peak / input_bytes
    memory_ok = memory_ratio < MAX_MEMORY_RATIO
    print(f"    peak traced memory of score(): {peak / MB:.1f} MB = {memory_ratio:.2f}x the input arrays "
          f"(need < {MAX_MEMORY_RATIO:.0f}x): {verdict(memory_ok)}")

    if args.validate_users:
        raw = json_bytes(generate(args.validate_users, seed=5))
        parse_s, _ = best_time(lambda: json.loads(raw), 1)
        validate_s, report = best_time(lambda: mobility.validate(io.BytesIO(raw)), 1)
        print(f"(c) validate() of a {len(raw) / MB:.0f} MB file of {report.summary['users']:,} users: "
              f"{validate_s:.1f} s (json.loads alone {parse_s:.1f} s; ok={report.ok})")

    passed = time_ok and memory_ok
    print(verdict(passed))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

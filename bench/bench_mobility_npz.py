"""Benchmark a million-user mobility set uploaded as .npz through the CLI, against a bare numpy/scipy run.

    python bench/bench_mobility_npz.py [--users 1000000]

Writes a generated set (bench_mobility.generate) as an uncompressed .npz, then in one run, each in a fresh
process so that the peak resident memory (ru_maxrss) is its own:
(a) bare: np.load of the .npz and of the reference's .npy files, and the official four JSDs and final score
    exactly as AgentSociety's code computes them (np.histogram(bins=50, density=True) + scipy's jensenshannon);
(b) `flask --app app score gen.npz --reference <groundtruth folder>`: the whole product (start-up, copy and hash
    the file, validate, store, score, write the result), with its bytecode cached as an installed app's is.
Checks that (b) takes at most 2x the wall time and 3x the peak memory of (a), and that its official final score
equals (a)'s to 1e-9. The reference is the real DailyMobility set from ../shared/data when present, else a
generated 100-user set. Exits 1 on a miss.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_mobility import DATA, generate  # noqa: E402
from kinds.mobility.format import KEYS  # noqa: E402

MAX_TIME_RATIO = 2.0
MAX_MEMORY_RATIO = 3.0
FILES = {"gyration_radius": "gyration_radius", "daily_location_numbers": "daily_location_numbers",
         "intention_sequences": "daily_intentions_2d", "intention_proportions": "intention_proportions_2d"}

# The bare run: AgentSociety's evaluation of the four arrays, nothing else. It prints its final score.
BARE = """
import sys, numpy as np
from scipy.spatial.distance import jensenshannon
gen = np.load(sys.argv[1])
ref = {k: np.load(f"{sys.argv[2]}/{n}.npy") for k, n in %r.items()}
def jsd(a, b):
    h1, _ = np.histogram(a.ravel(), bins=50, density=True)
    h2, _ = np.histogram(b.ravel(), bins=50, density=True)
    h1, h2 = h1 + 1e-10, h2 + 1e-10
    return float(jensenshannon(h1 / h1.sum(), h2 / h2.sum()))
values = [jsd(ref[k], gen[k]) for k in %r]
print(repr(100 * (1 - sum(values) / len(values))))
""" % (FILES, KEYS)


WRITE = """
import sys, numpy as np
sys.path.insert(0, %r)
from bench.bench_mobility import generate
from kinds.mobility.format import KEYS
data = generate(int(sys.argv[2]))
np.savez(sys.argv[1], **{key: getattr(data, key) for key in KEYS})
""" % str(ROOT)


def run(command: list[str], env: dict | None = None) -> tuple[float, int, str]:
    """Wall seconds, peak resident memory (bytes) and stdout of a command in a new process."""
    before = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - before
    out, err = process.stdout.read(), process.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{err[-3000:]}")
    return wall, usage.ru_maxrss * 1024, out


def reference_folder(work: Path) -> tuple[Path, str]:
    """The reference's groundtruth folder: the real one when present, else a generated one."""
    if (DATA / "groundtruth").is_dir() and all((DATA / "groundtruth" / f"{n}.npy").exists() for n in FILES.values()):
        return DATA / "groundtruth", "real DailyMobility groundtruth"
    folder = work / "groundtruth"
    folder.mkdir()
    data = generate(100, seed=1)
    for key, name in FILES.items():
        np.save(folder / f"{name}.npy", getattr(data, key))
    return folder, "generated (the real set is absent)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000, help="users in the generated set")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        reference, source = reference_folder(work)
        generated = work / "generated.npz"
        # Written by another process: a child forked from this one would inherit its peak memory (ru_maxrss).
        run([sys.executable, "-c", WRITE, str(generated), str(args.users)])
        size = generated.stat().st_size
        print(f"generated: {args.users:,} users, {size / 2**20:.0f} MB .npz; reference: {source}")

        bare_s, bare_rss, bare_out = run([sys.executable, "-c", BARE, str(generated), str(reference)])
        env = {**os.environ, "DATABASE": str(work / "db.sqlite"), "UPLOAD_FOLDER": str(work / "uploads"),
               "RESULTS_FOLDER": str(work / "results"), "CELERY_BROKER_URL": "", "DATABASE_URL": ""}
        # As an installed app runs: with its modules' bytecode cached (written by one `flask --help` first).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        run([sys.executable, "-m", "flask", "--app", "app", "--help"], env)
        out = work / "result.json"
        cli_s, cli_rss, _ = run([sys.executable, "-m", "flask", "--app", "app", "score", str(generated),
                                 "--reference", str(reference.parent if reference.name == "groundtruth" else reference),
                                 "--out", str(out)], env)
        expected = float(bare_out.strip())
        score = json.loads(out.read_text("utf-8"))["official"]["final_score"]

    time_ratio, memory_ratio = cli_s / bare_s, cli_rss / bare_rss
    same = abs(score - expected) <= 1e-9
    print(f"(a) bare numpy/scipy: {bare_s:.2f} s, peak {bare_rss / 2**20:.0f} MB, final score {expected!r}")
    print(f"(b) flask score:      {cli_s:.2f} s, peak {cli_rss / 2**20:.0f} MB, final score {score!r}")
    print(f"time ratio {time_ratio:.2f} (need <= {MAX_TIME_RATIO}), memory ratio {memory_ratio:.2f} "
          f"(need <= {MAX_MEMORY_RATIO}), same final score to 1e-9: {same}")
    passed = time_ratio <= MAX_TIME_RATIO and memory_ratio <= MAX_MEMORY_RATIO and same
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

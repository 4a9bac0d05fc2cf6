"""Peak memory of a 1,000,000-judgment dialogue evaluation, run end to end as the dashboard runs it.

Run: python bench/bench_evaluation_memory.py [--sessions 12500]. Writes a dialogue file of 12,500 sessions x 10
rounds x 4 methods (x 2 questions = 1,000,000 judgments), uploads it and creates its evaluation, then runs it in a
fresh child process through the thread backend (pipeline/thread_backend.py: planning, judging against
tests/judge_server.py in another process, the result document) and reads the child's peak resident memory
(ru_maxrss). Prints the peak against 500 MB and against the uploaded file's size, and the judgments per second.
Exits 1 on FAIL (peak over 500 MB, or the evaluation did not end done with every judgment made). Takes about a
quarter of an hour on two cores.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_result_page import METHODS, ROUNDS, write_file  # noqa: E402
from bench.local_judge import judge_process  # noqa: E402
from kinds import registry  # noqa: E402
from pipeline.evaluations import Evaluations, create_evaluation  # noqa: E402
from pipeline.ingest import ingest  # noqa: E402
from pipeline.thread_backend import ThreadBackend  # noqa: E402
from storage.store import Store  # noqa: E402

MAX_PEAK_MB = 500


def environment(url: str) -> dict:
    """The judge settings of the run: the local judge, as many requests in flight as a real endpoint allows."""
    return {"JUDGE_BASE_URL": url, "JUDGE_API_KEY": "bench", "JUDGE_MODEL": "bench", "JUDGE_CONCURRENCY": "64"}


def child(folder: Path, evaluation_id: str, url: str) -> None:
    """Run the evaluation in this process and print its wall time and peak memory as JSON."""
    store = Store(folder / "db.sqlite", registry.tables())
    runner = ThreadBackend(Evaluations(store, folder / "uploads", folder / "results", lambda: environment(url)))
    start = time.perf_counter()
    runner.run(evaluation_id)
    wall = time.perf_counter() - start
    record = store.get_evaluation(evaluation_id, with_result=False)
    print(json.dumps({"wall": wall, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "status": record["status"], "error": record["error"], **store.progress(evaluation_id)}))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=12_500, help="80 judgments each (default 12,500)")
    parser.add_argument("--child", nargs=3, metavar=("FOLDER", "EVALUATION", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(Path(args.child[0]), args.child[1], args.child[2])
        return 0
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp, judge_process(0.0) as url:
        folder = Path(tmp)
        source = folder / "log.jsonl"
        write_file(source, args.sessions)
        store = Store(folder / "db.sqlite", registry.tables())
        with source.open("rb") as f:
            upload = ingest(f, "log.jsonl", store, folder / "uploads")
        evaluation = create_evaluation(store, upload["id"], environ=environment(url))
        store.close()
        run = subprocess.run([sys.executable, __file__, "--child", str(folder), evaluation["id"], url],
                             cwd=ROOT, capture_output=True, text=True, check=False)
        if run.returncode:
            print(run.stderr, file=sys.stderr)
            return 1
        measured = json.loads(run.stdout.strip().splitlines()[-1])
        size_mb = source.stat().st_size / 1024 / 1024
    expected = args.sessions * ROUNDS * len(METHODS) * 2
    complete = measured["status"] == "done" and measured["done"] == measured["total"] == expected
    peak_ok = measured["peak_mb"] <= MAX_PEAK_MB
    print(f"evaluation: {args.sessions} sessions x {ROUNDS} rounds x {len(METHODS)} methods x 2 questions = "
          f"{expected:,} judgments; ended {measured['status']} with {measured['done']:,} of {measured['total']:,} made"
          f" ({measured['failed']} failed) in {measured['wall']:.0f} s "
          f"({measured['done'] / measured['wall']:.0f} judgments/s){': PASS' if complete else ': FAIL'}")
    print(f"peak memory of the run: {measured['peak_mb']:.0f} MB = {measured['peak_mb'] / MAX_PEAK_MB:.2f}x the "
          f"{MAX_PEAK_MB} MB limit, {measured['peak_mb'] / size_mb:.2f}x the {size_mb:.0f} MB file: "
          f"{'PASS' if peak_ok else 'FAIL'}")
    passed = complete and peak_ok
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

"""A fully cached re-run of 10,000 judgments against the time of the uncached run, whole pipeline.

Run: python bench/bench_cache.py [--sessions 500] [--repeat 3]. Uploads a dialogue file (500 sessions x 5 rounds x
2 methods x 2 modes = 10,000 judgments), runs one evaluation against the local judge server (0.1 s
latency, concurrency 32, in a child process), then a second evaluation of the same file with the same
settings, which must be answered from the cache: zero calls, and under 3% of the first run's time (the fastest of
--repeat such re-runs, as timeit does: other processes on the machine only ever add time).
Both runs go through the same code as the dashboard (planning, judging, storing every judgment,
computing the result document). Exits 1 on FAIL.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_judge import judge_process  # noqa: E402
from kinds import registry  # noqa: E402
from pipeline.evaluations import Evaluations, create_evaluation  # noqa: E402
from pipeline.ingest import ingest  # noqa: E402
from pipeline.thread_backend import ThreadBackend  # noqa: E402
from storage.store import Store  # noqa: E402

MAX_RATIO = 0.03


def write_file(path: Path, sessions: int, tag: str = "") -> None:
    """A dialogue file whose every reply is distinct (and distinct from those of a file with another tag)."""
    with path.open("w", encoding="utf-8") as f:
        for s in range(sessions):
            rounds = [{"round": k, "user_message": f"Session {s}, message {k}: I went hiking again today.",
                       "responses": {m: f"{m} reply {k} in session {s}{tag}: which trail was it this time?"
                                     for m in ("Base", "Ours")}} for k in range(1, 6)]
            f.write(json.dumps({"session_id": f"s{s}", "user_profile": "A nurse who runs marathons.",
                                "user_personality": "cheerful", "rounds": rounds}) + "\n")


def timed_run(store: Store, runner: ThreadBackend, upload_id: str, env: dict) -> tuple[float, dict]:
    """Create and run one evaluation; its wall time and result document."""
    evaluation = create_evaluation(store, upload_id, environ=env)
    start = time.perf_counter()
    runner.run(evaluation["id"])
    elapsed = time.perf_counter() - start
    record = store.get_evaluation(evaluation["id"])
    if record["status"] != "done":
        raise SystemExit(f"evaluation ended {record['status']}: {record['error']}")
    return elapsed, record["result"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3, help="cached re-runs; the fastest is judged (default 3)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_cache_") as tmp, judge_process(0.1) as url:
        folder = Path(tmp)
        env = {"JUDGE_BASE_URL": url, "JUDGE_API_KEY": "bench", "JUDGE_MODEL": "bench", "JUDGE_CONCURRENCY": "32"}
        store = Store(folder / "db.sqlite", registry.tables())
        runner = ThreadBackend(Evaluations(store, folder / "uploads", folder / "results", lambda: env))
        source = folder / "log.jsonl"
        write_file(source, args.sessions)
        with source.open("rb") as f:
            upload = ingest(f, "log.jsonl", store, folder / "uploads")
        first_s, first = timed_run(store, runner, upload["id"], env)
        second_s, second = min((timed_run(store, runner, upload["id"], env) for _run in range(max(1, args.repeat))),
                               key=lambda run: run[0])

    judgments = first["judge"]["calls"]
    ratio = second_s / first_s
    passed = second["judge"]["calls"] == 0 and second["judge"]["cache_hits"] == judgments and ratio < MAX_RATIO
    print(f"judgments:     {judgments} (second run: {second['judge']['calls']} calls, "
          f"{second['judge']['cache_hits']} cache hits)")
    print(f"uncached run:  {first_s:.2f} s")
    print(f"cached re-run: {second_s:.3f} s")
    print(f"ratio:         {ratio:.4f} (limit {MAX_RATIO})")
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

"""How far one process judges: a dialogue evaluation against a judge answering in 0.1 s, at concurrency 32 and 128.

Run: python bench/bench_judge.py [--sessions 200] [--repeat 3] [--profile]. Each run uploads a dialogue file (200
sessions x 5 rounds x 2 methods x 2 modes = 4,000 judgments) and evaluates it through the same code as the
dashboard and the CLI (the thread backend, pipeline/thread_backend.py: planning, the judge, the cache, storing every
judgment, the result document) against tests/judge_server.py in a child process (a real judge is another process too). Prints, per concurrency,
the wall time against the ideal (judgments x latency / concurrency) and the CPU this process spent per judgment, of
the best of --repeat runs (as timeit does: other processes on the machine only ever add time). PASS: at
concurrency 128 within 1.3x of the ideal and under 0.7 ms of CPU per judgment; exits 1 on FAIL.

--profile adds where this process's CPU went at concurrency 128, by layer (cProfile's own CPU time per function,
summed over the files of each layer; the profiler slows everything down, so read shares, not times).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_cache import write_file  # noqa: E402
from bench.local_judge import judge_process  # noqa: E402
from kinds import registry  # noqa: E402
from pipeline.evaluations import Evaluations, create_evaluation  # noqa: E402
from pipeline.ingest import ingest  # noqa: E402
from pipeline.thread_backend import ThreadBackend  # noqa: E402
from storage.store import Store  # noqa: E402

LATENCY_S = 0.1
CONCURRENCIES = (32, 128)
MAX_RATIO = 1.3
MAX_CPU_MS = 0.7
# Layer name -> substrings of the file paths whose functions' own time counts for it (the first match wins).
LAYERS = (
    ("HTTP client (aiohttp, judge/http.py)", ("aiohttp", "yarl", "multidict", "judge/http.py", "http/cookies")),
    ("event loop (asyncio, sockets)", ("asyncio", "selectors", "socket", "_socket", "select.epoll")),
    ("database (SQLAlchemy, sqlite3, storage/store.py)", ("sqlalchemy", "sqlite3", "storage/store.py")),
    ("judge engine (judge/, json, hashing)", ("judge/", "json", "hashlib", "_hashlib")),
    ("dialogue kind (prompts, parsing, scoring)", ("kinds",)),
    ("pipeline/ (the evaluation's steps, its job type, the thread backend)",
     ("pipeline/evaluation_steps.py", "pipeline/evaluations.py", "pipeline/thread_backend.py")),
)


def run_once(url: str, sessions: int, concurrency: int, profile: bool) -> dict:
    """Upload and evaluate the file once, in a new store; wall time, CPU time, judgments and (when asked) the
    profile."""
    with tempfile.TemporaryDirectory(prefix="bench_judge_") as tmp:
        folder = Path(tmp)
        env = {"JUDGE_BASE_URL": url, "JUDGE_API_KEY": "bench", "JUDGE_MODEL": "bench",
               "JUDGE_CONCURRENCY": str(concurrency)}
        store = Store(folder / "db.sqlite", registry.tables())
        runner = ThreadBackend(Evaluations(store, folder / "uploads", folder / "results", lambda: env))
        source = folder / "log.jsonl"
        write_file(source, sessions)
        with source.open("rb") as f:
            upload = ingest(f, "log.jsonl", store, folder / "uploads")
        evaluation = create_evaluation(store, upload["id"], environ=env)
        profiler = cProfile.Profile(time.process_time) if profile else None  # CPU time: waiting counts for nothing
        cpu, wall = time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        runner.run(evaluation["id"])
        if profiler:
            profiler.disable()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        record = store.get_evaluation(evaluation["id"])
        store.close()
    if record["status"] != "done":
        raise SystemExit(f"evaluation ended {record['status']}: {record['error']}")
    return {"wall": wall, "cpu": cpu, "judgments": record["result"]["judge"]["calls"], "profiler": profiler}


def layers(profiler: cProfile.Profile) -> list[tuple[str, float]]:
    """Each layer's share of the profiled time (functions' own time, summed by file), largest first."""
    totals: dict[str, float] = {}
    for (filename, _line, name), (_calls, _primitive, own, _cumulative, _callers) in \
            pstats.Stats(profiler).stats.items():  # type: ignore[attr-defined]
        where = f"{filename}:{name}"
        layer = next((label for label, marks in LAYERS if any(m in where for m in marks)), "other")
        totals[layer] = totals.get(layer, 0.0) + own
    everything = sum(totals.values()) or 1.0
    return sorted(((layer, seconds / everything) for layer, seconds in totals.items()), key=lambda x: -x[1])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200, help="20 judgments each (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per concurrency; the best is judged (default 3)")
    parser.add_argument("--profile", action="store_true", help="also show where the CPU went at concurrency 128")
    args = parser.parse_args(argv)
    results = {}
    with judge_process(LATENCY_S) as url:
        for concurrency in CONCURRENCIES:
            runs = [run_once(url, args.sessions, concurrency, profile=False) for _run in range(max(1, args.repeat))]
            results[concurrency] = min(runs, key=lambda r: r["wall"])
        profiled = run_once(url, args.sessions, CONCURRENCIES[-1], profile=True) if args.profile else None
    judgments = results[CONCURRENCIES[0]]["judgments"]
    print(f"judge: child process, {LATENCY_S:g} s per answer; {judgments} judgments per run")
    passed = True
    for concurrency, r in results.items():
        ideal = r["judgments"] * LATENCY_S / concurrency
        ratio = r["wall"] / ideal
        cpu_ms = r["cpu"] / r["judgments"] * 1000
        print(f"concurrency {concurrency:>3}: wall {r['wall']:.2f} s, ideal {ideal:.2f} s, ratio {ratio:.2f}; "
              f"CPU {cpu_ms:.2f} ms per judgment ({r['judgments'] / r['wall']:.0f} judgments/s)")
        if concurrency == CONCURRENCIES[-1]:
            passed = ratio <= MAX_RATIO and cpu_ms <= MAX_CPU_MS
    print(f"limits at concurrency {CONCURRENCIES[-1]}: ratio {MAX_RATIO}, CPU {MAX_CPU_MS} ms per judgment")
    if profiled:
        print("where this process's CPU went (profiled run, shares of profiled time):")
        for layer, share in layers(profiled["profiler"]):
            print(f"  {share:6.1%}  {layer}")
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

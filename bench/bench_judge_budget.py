"""The deployment-wide judge budget: 4 processes x 250 fine judgments through one Redis budget of 16 calls in flight.

Run: python bench/bench_judge_budget.py [--processes N] [--items M] [--concurrency C] [--repeat R]
[--redis-url URL]. N worker processes each build a Judge with JUDGE_CONCURRENCY=C and JUDGE_REDIS_URL
(judge.budget.RedisLimiter) against one local judge server with 0.1 s latency, wait until all are ready,
then judge M items each at the same moment. Together they can never have more than C calls in flight,
so the ideal is N x M x latency / C; the wall time (from the start signal to the last process done) is
divided by that ideal, measured in the same run, and judged against 1.3 (the best of R runs, default 2,
as timeit does: other processes on the machine can only add time). It also fails when the server saw
more than C requests at once or a judgment was not ok; exits 1 on FAIL.

Without --redis-url a redis-server (Debian package redis-server) is started on a free port for the
run. The judge server runs in a child process, as a real endpoint would be remote (see bench_judge.py).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_judge import judge_process, server_stats  # noqa: E402

PROCESSES = 4
ITEMS = 250
CONCURRENCY = 16
LATENCY_S = 0.1
MAX_RATIO = 1.3


def worker(spec_json: str) -> None:
    """A worker process: one Judge through the Redis budget; on each "go <salt>" judge the items, print the statuses."""
    from judge import Judge, JudgeConfig
    from kinds.dialogue import prompts
    from kinds.dialogue.prompts import DialogueContext

    spec = json.loads(spec_json)
    config = JudgeConfig.from_env({"JUDGE_BASE_URL": spec["url"], "JUDGE_CONCURRENCY": str(spec["concurrency"]),
                                   "JUDGE_REDIS_URL": spec["redis_url"], "JUDGE_MAX_RETRIES": "0",
                                   "JUDGE_TIMEOUT_S": "30", "JUDGE_CACHE": "0"})
    with Judge(config, cache=None) as judge:
        print(json.dumps({"ready": type(judge._limiter).__name__}), flush=True)
        for line in sys.stdin:
            command, _space, salt = line.strip().partition(" ")
            if command != "go":
                break
            statuses: Counter = Counter()
            items = ((i, prompts.prompt("fine", DialogueContext(
                profile="A retired teacher who loves birdwatching and short answers.", personality="calm, curious",
                history=[("Hello!", "Hi! How are your birds today?")], user_message="I saw a heron this morning.",
                reply=f"How lovely, a heron is a patient hunter. Reply {i} of {salt}."), "en"))
                for i in range(spec["items"]))
            for _tag, verdict in judge.run(items):
                statuses[verdict.status] += 1
            print(json.dumps({"statuses": dict(statuses)}), flush=True)


@contextmanager
def redis_url(given: str | None) -> Iterator[str]:
    """The given Redis URL, else that of a redis-server started for the run."""
    if given:
        yield given
        return
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed (Debian package redis-server); or pass --redis-url")
    from tests.services import Redis

    with tempfile.TemporaryDirectory(prefix="psb-bench-redis-") as folder:
        server = Redis(Path(folder))
        try:
            yield server.url
        finally:
            server.stop()


def start_workers(n: int, spec: dict) -> list[subprocess.Popen]:
    """n worker processes, each ready (its Judge built) when this returns."""
    children = [subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(spec)], cwd=ROOT, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(n)]
    for child in children:
        line = child.stdout.readline() if child.stdout else ""
        if json.loads(line or "{}").get("ready") != "RedisLimiter":
            raise RuntimeError(f"a worker did not start with the Redis budget: {line!r}")
    return children


def timed_run(children: list[subprocess.Popen], salt: str) -> tuple[float, bool]:
    """Wall time from the start signal to the last worker done, and whether every judgment was ok."""
    start = time.perf_counter()
    for child in children:
        assert child.stdin is not None
        child.stdin.write(f"go {salt}\n")
        child.stdin.flush()
    results = [json.loads(child.stdout.readline() or "{}") for child in children if child.stdout]
    wall = time.perf_counter() - start
    return wall, all(set(r.get("statuses", {"none": 1})) == {"ok"} for r in results)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=PROCESSES, help=f"worker processes (default {PROCESSES})")
    parser.add_argument("--items", type=int, default=ITEMS, help=f"judgments per process and run (default {ITEMS})")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY,
                        help=f"JUDGE_CONCURRENCY, for all processes together (default {CONCURRENCY})")
    parser.add_argument("--repeat", type=int, default=2, help="runs; the best one is judged (default 2)")
    parser.add_argument("--redis-url", help="an existing Redis (default: a redis-server started for the run)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    processes, items, concurrency = max(1, args.processes), max(1, args.items), max(1, args.concurrency)
    walls: list[float] = []
    all_ok = True
    with redis_url(args.redis_url) as url_of_redis, judge_process(LATENCY_S) as url:
        spec = {"url": url, "redis_url": url_of_redis, "concurrency": concurrency, "items": items}
        children = start_workers(processes, spec)
        try:
            for run in range(max(1, args.repeat)):
                wall, ok = timed_run(children, f"run {run} at {time.time()}")
                walls.append(wall)
                all_ok = all_ok and ok
        finally:
            for child in children:
                if child.stdin:
                    child.stdin.close()
            for child in children:
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()
        stats = server_stats(url)
    calls = processes * items
    wall = min(walls)
    ideal = calls * LATENCY_S / concurrency
    ratio = wall / ideal
    bounded = stats["max_in_flight"] <= concurrency
    ok = ratio <= MAX_RATIO and all_ok and bounded and stats["requests"] == calls * len(walls)
    print(f"server:          child process, latency {LATENCY_S:g} s; budget in Redis at {url_of_redis}")
    print(f"judgments:       {processes} processes x {items} fine per run, JUDGE_CONCURRENCY {concurrency} "
          f"for all of them, all ok: {all_ok}")
    print(f"server requests: {stats['requests']}, max in flight {stats['max_in_flight']} "
          f"({'within' if bounded else 'OVER'} the budget of {concurrency})")
    print(f"wall times:      {', '.join(f'{w:.3f}' for w in walls)} s (best {wall:.3f} s)")
    print(f"ideal:           {ideal:.3f} s ({calls} calls x {LATENCY_S:g} s / {concurrency})")
    print(f"ratio:           {ratio:.3f} (limit {MAX_RATIO})")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

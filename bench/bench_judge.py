"""Throughput of Judge.run against the local judge server: 1,000 fine judgments, 0.1 s latency, 32 workers.

Run: python bench/bench_judge.py [--in-process] [--repeat N]. Prints the wall time of each run, the
ideal (calls x latency / concurrency), the ratio of the best run to it and PASS/FAIL against 1.5;
exits 1 on FAIL. The best of N runs (default 3) is judged, as timeit does, because other processes on
the machine can only add time: the judge is CPU-bound in the openai SDK (about 2-3 ms of CPU per call
here, so 1,000 calls take most of a core for the 3.1 s ideal).

By default the JudgeServer runs in a child process, as a real judge endpoint would be remote: in the
same process its request handling competes with the judge's threads for the GIL, which measures the
test server more than the judge. --in-process runs it in a thread of this process instead.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_judge import judge_process, server_stats  # noqa: E402
from benchmarks.dialogue import prompts  # noqa: E402
from benchmarks.dialogue.prompts import DialogueContext  # noqa: E402
from evaluator import Judge, JudgeConfig, Prompt  # noqa: E402
from tests.judge_server import JudgeServer  # noqa: E402

CALLS = 1000
LATENCY_S = 0.1
CONCURRENCY = 32
MAX_RATIO = 1.5


def items(n: int) -> Iterator[tuple[int, Prompt]]:
    """n fine-mode items with distinct replies."""
    for i in range(n):
        ctx = DialogueContext(
            profile="A retired teacher who loves birdwatching and short answers.",
            personality="calm, curious",
            history=[("Hello!", "Hi! How are your birds today?")],
            user_message="I saw a heron this morning.",
            reply=f"How lovely, a heron is a patient hunter. Reply number {i}.",
        )
        yield i, prompts.prompt("fine", ctx, "en")


@contextmanager
def server_url(in_process: bool) -> Iterator[str]:
    """The base URL of a JudgeServer with the benchmark latency, in a thread or a child process."""
    if in_process:
        with JudgeServer(latency_s=LATENCY_S) as server:
            yield server.url
        return
    with judge_process(LATENCY_S) as url:
        yield url


def timed_run(url: str) -> tuple[float, dict[str, int]]:
    """Wall time and verdict statuses of CALLS judgments through one fresh Judge."""
    config = JudgeConfig(base_url=url, concurrency=CONCURRENCY, max_retries=0, timeout_s=30)
    statuses: dict[str, int] = {}
    with Judge(config, cache=None) as judge:
        start = time.perf_counter()
        for _tag, verdict in judge.run(items(CALLS)):
            statuses[verdict.status] = statuses.get(verdict.status, 0) + 1
        wall = time.perf_counter() - start
    return wall, statuses


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-process", action="store_true", help="run the server in a thread of this process")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best one is judged (default 3)")
    args = parser.parse_args(argv)
    walls: list[float] = []
    all_ok = True
    with server_url(args.in_process) as url:
        for _run in range(max(1, args.repeat)):
            wall, statuses = timed_run(url)
            walls.append(wall)
            all_ok = all_ok and statuses == {"ok": CALLS}
        stats = server_stats(url)
    wall = min(walls)
    ideal = CALLS * LATENCY_S / CONCURRENCY
    ratio = wall / ideal
    ok = ratio <= MAX_RATIO and all_ok and stats["requests"] == CALLS * len(walls)
    print(f"server:          {'in-process thread' if args.in_process else 'child process'}, latency {LATENCY_S:g} s")
    print(f"judgments:       {CALLS} fine per run, concurrency {CONCURRENCY}, all ok: {all_ok}")
    print(f"server requests: {stats['requests']}, max in flight {stats['max_in_flight']}")
    print(f"wall times:      {', '.join(f'{w:.3f}' for w in walls)} s (best {wall:.3f} s)")
    print(f"ideal:           {ideal:.3f} s")
    print(f"ratio:           {ratio:.3f} (limit {MAX_RATIO})")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

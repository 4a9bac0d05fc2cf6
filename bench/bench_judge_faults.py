"""Judge.run through a flaky endpoint: 2,000 fine judgments, 0.1 s latency, 10% of prompts fail once with 503.

Run: python bench/bench_judge_faults.py [--repeat N]. In the same run it times the 2,000 judgments
against a fault-free judge server and against one where 10% of the distinct prompts get a 503 on
their first request (and succeed when retried), both at concurrency 32 with the judge's default
retry settings (retry_base_s 0.5) and no cache; each run uses fresh replies. It prints both wall
times, the fault-free ideal (calls x latency / concurrency), the ratio of the faulty time to that
ideal with PASS/FAIL against 1.5, and the measured faulty / fault-free ratio; exits 1 on FAIL. The
best of N runs (default 2) of each is judged, as timeit does, because other processes on the machine
can only add time.

The judge servers run in child processes, as a real endpoint would be remote (see bench_judge.py).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_judge import judge_process, server_stats  # noqa: E402
from judge import Judge, JudgeConfig, Prompt  # noqa: E402
from kinds.dialogue import prompts  # noqa: E402
from kinds.dialogue.prompts import DialogueContext  # noqa: E402

CALLS = 2000
LATENCY_S = 0.1
CONCURRENCY = 32
FAIL_FRACTION = 0.1
FAIL_KIND = "503"
MAX_RATIO = 1.5


def items(n: int, salt: str) -> Iterator[tuple[int, Prompt]]:
    """n fine-mode items with distinct replies, different for every salt."""
    for i in range(n):
        ctx = DialogueContext(
            profile="A retired teacher who loves birdwatching and short answers.",
            personality="calm, curious",
            history=[("Hello!", "Hi! How are your birds today?")],
            user_message="I saw a heron this morning.",
            reply=f"How lovely, a heron is a patient hunter. Reply number {i} of run {salt}.",
        )
        yield i, prompts.prompt("fine", ctx, "en")


def timed_run(url: str, salt: str) -> tuple[float, Counter, Counter]:
    """Wall time, verdict statuses and attempts per judgment of CALLS judgments through one fresh Judge."""
    config = JudgeConfig(base_url=url, concurrency=CONCURRENCY, timeout_s=30, use_cache=False)
    statuses: Counter = Counter()
    attempts: Counter = Counter()
    with Judge(config, cache=None) as judge:
        start = time.perf_counter()
        for _tag, verdict in judge.run(items(CALLS, salt)):
            statuses[verdict.status] += 1
            attempts[verdict.attempts] += 1
        wall = time.perf_counter() - start
    return wall, statuses, attempts


def measure(fail_fraction: float, repeat: int, label: str) -> tuple[list[float], bool, Counter, dict]:
    """Wall times of `repeat` runs against one server, whether every judgment was ok, attempts, server stats."""
    walls: list[float] = []
    all_ok = True
    attempts: Counter = Counter()
    with judge_process(LATENCY_S, fail_fraction, FAIL_KIND) as url:
        for run in range(repeat):
            wall, statuses, run_attempts = timed_run(url, f"{label}-{run}")
            walls.append(wall)
            attempts.update(run_attempts)
            all_ok = all_ok and statuses == {"ok": CALLS}
        stats = server_stats(url)
    return walls, all_ok, attempts, stats


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each kind; the best is judged (default 2)")
    args = parser.parse_args(argv)
    repeat = max(1, args.repeat)
    clean_walls, clean_ok, _clean_attempts, clean_stats = measure(0.0, repeat, "clean")
    faulty_walls, faulty_ok, attempts, faulty_stats = measure(FAIL_FRACTION, repeat, "faulty")
    injected = faulty_stats["faults"].get(FAIL_KIND, 0)
    clean, faulty = min(clean_walls), min(faulty_walls)
    ideal = CALLS * LATENCY_S / CONCURRENCY
    ratio = faulty / ideal
    # Every injected fault costs exactly one retry, and nothing else is retried.
    consistent = (clean_stats["requests"] == CALLS * repeat and injected > 0
                  and faulty_stats["requests"] == CALLS * repeat + injected
                  and sum((n - 1) * count for n, count in attempts.items()) == injected)
    ok = ratio <= MAX_RATIO and clean_ok and faulty_ok and consistent
    print(f"server:            child process, latency {LATENCY_S:g} s; faulty: {FAIL_FRACTION:.0%} of prompts "
          f"get {FAIL_KIND} once")
    print(f"judgments:         {CALLS} fine per run, concurrency {CONCURRENCY}, {repeat} run(s) each, "
          f"all ok: {clean_ok and faulty_ok}")
    print(f"faults injected:   {injected} of {CALLS * repeat} judgments ({injected / (CALLS * repeat):.1%}); "
          f"attempts per judgment: {dict(sorted(attempts.items()))}")
    print(f"server requests:   fault-free {clean_stats['requests']} (max in flight {clean_stats['max_in_flight']}), "
          f"faulty {faulty_stats['requests']} (max in flight {faulty_stats['max_in_flight']})")
    print(f"fault-free wall:   {', '.join(f'{w:.3f}' for w in clean_walls)} s (best {clean:.3f} s)")
    print(f"faulty wall:       {', '.join(f'{w:.3f}' for w in faulty_walls)} s (best {faulty:.3f} s)")
    print(f"ideal (no faults): {ideal:.3f} s")
    print(f"faulty / ideal:    {ratio:.3f} (limit {MAX_RATIO})")
    print(f"faulty / measured fault-free: {faulty / clean:.3f}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Throughput of Judge.run against the local judge server: 1,000 fine judgments, 0.1 s latency, 32 workers.

Run: python bench/bench_judge.py. Prints the wall time, the ideal (calls x latency / concurrency), their
ratio and PASS/FAIL against a ratio of 1.5; exits 1 on FAIL.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator import DialogueContext, Judge, JudgeConfig  # noqa: E402
from tests.judge_server import JudgeServer  # noqa: E402

CALLS = 1000
LATENCY_S = 0.1
CONCURRENCY = 32
MAX_RATIO = 1.5


def items(n: int) -> Iterator[tuple[int, str, DialogueContext]]:
    """n fine-mode items with distinct replies."""
    for i in range(n):
        ctx = DialogueContext(
            profile="A retired teacher who loves birdwatching and short answers.",
            personality="calm, curious",
            history=[("Hello!", "Hi! How are your birds today?")],
            user_message="I saw a heron this morning.",
            reply=f"How lovely, a heron is a patient hunter. Reply number {i}.",
        )
        yield i, "fine", ctx


def main() -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    with JudgeServer(latency_s=LATENCY_S) as server:
        config = JudgeConfig(base_url=server.url, concurrency=CONCURRENCY, max_retries=0, timeout_s=30)
        with Judge(config, cache=None) as judge:
            start = time.perf_counter()
            statuses: dict[str, int] = {}
            for _tag, verdict in judge.run(items(CALLS)):
                statuses[verdict.status] = statuses.get(verdict.status, 0) + 1
            wall = time.perf_counter() - start
        ideal = CALLS * LATENCY_S / CONCURRENCY
        ratio = wall / ideal
        ok = ratio <= MAX_RATIO and statuses.get("ok", 0) == CALLS
        print(f"judgments:       {CALLS} fine, concurrency {CONCURRENCY}, server latency {LATENCY_S:g} s")
        print(f"statuses:        {statuses}")
        print(f"server requests: {server.requests}, max in flight {server.max_in_flight}")
        print(f"wall time:       {wall:.3f} s")
        print(f"ideal:           {ideal:.3f} s")
        print(f"ratio:           {ratio:.3f} (limit {MAX_RATIO})")
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

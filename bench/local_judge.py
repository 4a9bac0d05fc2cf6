"""The local judge server as a child process, for the benchmarks (a real judge is another process too)."""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def judge_process(latency_s: float, fail_fraction: float = 0.0, fail_kind: str = "503",
                  capture: Path | None = None) -> Iterator[str]:
    """The base URL of a tests.judge_server child process answering after latency_s (and writing every request's
    body to `capture`, when given)."""
    command = [sys.executable, "-m", "tests.judge_server", "--latency", str(latency_s)]
    if fail_fraction:
        command += ["--fail-fraction", str(fail_fraction), "--fail-kind", fail_kind]
    if capture is not None:
        command += ["--capture", str(capture)]
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        url = child.stdout.readline().strip() if child.stdout else ""
        if not url:
            raise RuntimeError("the judge server did not start")
        yield url
    finally:
        child.terminate()
        child.wait(timeout=10)


def server_stats(url: str) -> dict:
    """The server's request and fault counters."""
    with urllib.request.urlopen(f"{url}/_stats", timeout=5) as response:
        return json.load(response)

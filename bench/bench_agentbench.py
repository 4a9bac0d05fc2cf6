"""Benchmark a leaderboard-sized AgentBench outputs ZIP: 50 agents x 8 tasks x 100 real-sized samples.

    python bench/bench_agentbench.py [--agents 50] [--samples 100]

Writes an outputs/ tree as a ZIP (an overall.json and a runs.jsonl per agent x task; each runs.jsonl line the
size of the real one in ../shared/data/agentbench, about 19 KB, half of it random letters so that it compresses
like real text), then in one run:
(a) bare: unzip every member and json.loads every overall.json and runs.jsonl line, in a fresh process;
(b) `flask --app app score outputs.zip` in a fresh process: wall time and peak resident memory;
(c) the result page and its .json through the app (5 requests each, median).
Checks: (b) under 60 s and under 500 MB, (c) each under 300 ms. Exits 1 on a miss.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REAL_LINE = ROOT.parent / "shared" / "data" / "agentbench" / "medagentbench_gpt-4o_runs.jsonl.line1.json"
TASKS = {"os-std": {"overall": {"acc": 0.4}}, "dbbench-std": {"overall_cat_accuracy": 0.3}, "kg-std": {"main": 0.2},
         "cg-std": {"score": 0.5}, "ltp-std": {"main": 0.1}, "alfworld-std": {"overall": {"success_rate": 0.3}},
         "webshop-std": {"reward": 0.6}, "m2w-std": {"step_sr": 20.0}}
STATUSES = {"running": 0.0, "completed": 0.8, "agent context limit": 0.05, "agent validation failed": 0.0,
            "agent invalid action": 0.1, "task limit reached": 0.05, "unknown": 0.0, "task error": 0.0}
MAX_CLI_S, MAX_CLI_MB, MAX_PAGE_S = 60.0, 500, 0.3

BARE = """
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as archive:
    for name in archive.namelist():
        with archive.open(name) as member:
            if name.endswith(".jsonl"):
                for line in member:
                    json.loads(line)
            else:
                json.loads(member.read())
"""


def sample_line(index: int, rng: np.random.Generator) -> bytes:
    """A runs.jsonl line of the real line's size: its structure and text, half of each message random letters."""
    if REAL_LINE.exists():
        line = json.loads(REAL_LINE.read_text("utf-8"))
    else:
        line = {"index": 0, "output": {"index": 0, "status": "completed", "result": "ok",
                                       "history": [{"role": "user", "content": "x" * 12000},
                                                   {"role": "agent", "content": "y" * 6000}]}}
    line["index"] = line["output"]["index"] = index
    line["output"]["status"] = "completed" if index % 5 else "agent invalid action"
    for turn in line["output"]["history"]:
        text = turn["content"] if isinstance(turn.get("content"), str) else ""
        noise = rng.integers(97, 123, size=len(text) // 2, dtype=np.uint8).tobytes().decode()
        turn["content"] = text[:len(text) - len(noise)] + noise
    return (json.dumps(line) + "\n").encode()


def write_outputs(path: Path, agents: int, samples: int) -> int:
    """The outputs ZIP; returns its unpacked size in bytes."""
    rng = np.random.default_rng(0)
    unpacked = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for a in range(agents):
            for task, custom in TASKS.items():
                folder = f"outputs/2024-06-01-00-00-00/agent-{a:02d}/{task}"
                overall = json.dumps({"total": samples, "validation": {**STATUSES, "average_history_length": 9.5,
                                                                      "max_history_length": 20,
                                                                      "min_history_length": 2},
                                      "custom": custom}).encode()
                runs = b"".join(sample_line(i, rng) for i in range(samples))
                archive.writestr(f"{folder}/overall.json", overall)
                archive.writestr(f"{folder}/runs.jsonl", runs)
                unpacked += len(overall) + len(runs)
    return unpacked


def run(command: list[str], env: dict | None = None) -> tuple[float, int]:
    """Wall seconds and peak resident memory (bytes) of a command in a new process."""
    before = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - before
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{process.stderr.read().decode()[-3000:]}")
    return wall, usage.ru_maxrss * 1024


def median_get(client, url: str) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        response = client.get(url, headers={"Accept-Encoding": "gzip", "Sec-Fetch-Site": "same-origin"})
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (url, response.status_code)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--samples", type=int, default=100, help="runs.jsonl samples per agent x task")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        archive = work / "outputs.zip"
        unpacked = write_outputs(archive, args.agents, args.samples)
        print(f"outputs.zip: {args.agents} agents x {len(TASKS)} tasks x {args.samples} samples, "
              f"{archive.stat().st_size / 2**20:.0f} MB zipped, {unpacked / 2**20:.0f} MB unpacked")
        bare_s, bare_rss = run([sys.executable, "-c", BARE, str(archive)])
        env = {**os.environ, "DATABASE": str(work / "db.sqlite"), "UPLOAD_FOLDER": str(work / "uploads"),
               "RESULTS_FOLDER": str(work / "results"), "CELERY_BROKER_URL": "", "DATABASE_URL": ""}
        cli_s, cli_rss = run([sys.executable, "-m", "flask", "--app", "app", "score", str(archive),
                              "--out", str(work / "result.json")], env)
        from app import create_app  # noqa: PLC0415 - after the child processes, which must not inherit its memory

        app = create_app({"DATABASE": env["DATABASE"], "UPLOAD_FOLDER": env["UPLOAD_FOLDER"],
                          "RESULTS_FOLDER": env["RESULTS_FOLDER"], "SECRET_KEY": "bench", "RESUME_ON_START": False,
                          "CELERY_BROKER_URL": "", "DATABASE_URL": None})
        evaluation_id = app.extensions["store"].list_evaluations()[0]["id"]
        client = app.test_client()
        client.get(f"/evaluations/{evaluation_id}")  # warm up templates
        page_s = median_get(client, f"/evaluations/{evaluation_id}")
        json_s = median_get(client, f"/evaluations/{evaluation_id}.json")
        stored = (work / "results" / f"{evaluation_id}.json").stat().st_size

    checks = {"cli time": cli_s < MAX_CLI_S, "cli memory": cli_rss < MAX_CLI_MB * 2**20,
              "page": page_s < MAX_PAGE_S, "json": json_s < MAX_PAGE_S}
    print(f"(a) bare unzip + json.loads: {bare_s:.1f} s, peak {bare_rss / 2**20:.0f} MB")
    print(f"(b) flask score:             {cli_s:.1f} s (limit {MAX_CLI_S:.0f} s), peak {cli_rss / 2**20:.0f} MB "
          f"(limit {MAX_CLI_MB} MB); {cli_s / bare_s:.2f}x the bare run's time")
    print(f"(c) result page {page_s * 1000:.0f} ms, .json {json_s * 1000:.0f} ms (limit {MAX_PAGE_S * 1000:.0f} ms); "
          f"result document {stored / 1024:.0f} KB")
    passed = all(checks.values())
    print("PASS" if passed else "FAIL: " + ", ".join(name for name, ok in checks.items() if not ok))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

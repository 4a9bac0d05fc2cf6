"""What `flask --app app score` costs beside a bare aiohttp client sending the same judge requests: CPU, time, memory.

Run: python bench/bench_run_cost.py [--sizes 4000,40000] [--repeat 3] [--startup-runs 5] [--celery-judgments 4000]

Each size is a dialogue file of size / 20 sessions x 5 rounds x 2 methods x 2 modes, every reply distinct
(bench_cache.write_file). A first `flask score` of it against the local judge server (tests/judge_server.py in a
child process, answering at once) captures every request the dashboard sends. Then, interleaved in one run, --repeat
times each, against one more such server:
  (a) `flask --app app score FILE --out result.json` in a new instance folder (nothing cached), JUDGE_CONCURRENCY=64;
  (b) bench/bare_client.py: the captured requests POSTed again with aiohttp, 64 in flight, each answer parsed.
Each is a child process, with its bytecode cached as an installed app's is, whose CPU time (user + system, its own
children's included) and peak resident memory the kernel reports when it ends (wait4); the best run of each by CPU
and by wall time is compared (as timeit does: other processes on the machine only ever add time), memory at its
highest. The whole evaluation counts: start-up, validation, the cache, storing every judgment, metrics, the result
document. Then:
  - a cached re-run: `flask score` of the first size's file again in the instance of its last run (every judgment
    from the cache, 0 calls), wall time, the best of --repeat;
  - start-up: CPU time of `flask --app app rubrics list`, of `python -c "from app import create_app; create_app()"`
    and of a Celery worker (`celery -A app:celery_app worker --pool=threads`) until its ready line, each
    --startup-runs times in an instance made beforehand, the median (reported, not judged);
  - the Celery path: one worker and the thread runner in this process, each evaluating the same file of
    --celery-judgments judgments against a judge answering at once (timed from the start of the evaluation, start-up
    excluded; a redis-server started for the run): judgments per second and their ratio. Each first evaluates
    another file of 200 judgments, untimed, as a dashboard or a worker that has run since it started would have.
    The worker is judged as docs/team-deployment.md runs it, on the prefork pool (Celery's default), with one
    process (`--concurrency 1`), as the thread runner judges on one thread; a worker on the thread pool
    (--pool=threads, 4 threads) is measured too and reported.
This process imports nothing of the dashboard until the Celery part: a child's peak memory starts from its parent's.

PASS when (a)'s CPU per judgment is at most 2.0 times (b)'s at sizes up to 4,000 and 1.5 times above, the cached
re-run takes under 1.2 s, (a)'s peak memory is under 200 MB at every size and flat (the largest size's at most 1.1
times the smallest's), and the worker judges at least 0.9 times as many judgments per second as the thread runner;
exits 1 on FAIL.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_judge import judge_process  # noqa: E402

PER_SESSION = 5 * 2 * 2  # rounds x methods x modes
SIZES = (4_000, 40_000)
CONCURRENCY = 64
MAX_CPU_RATIO = {4_000: 2.0}  # at sizes up to 4,000; above it:
MAX_CPU_RATIO_LARGE = 1.5
MAX_CACHED_S = 1.2
MAX_PEAK_MB = 200
MAX_PEAK_GROWTH = 1.1  # the largest size's peak over the smallest's
MIN_CELERY_RATIO = 0.9  # the worker's judgments per second over the thread runner's
CELERY_JUDGMENTS = 4_000
WORKER_THREADS = 4  # of the worker on the thread pool (reported)
TIMEOUT_S = 1800
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
WRITE = "import sys; from pathlib import Path; from bench.bench_cache import write_file; " \
        "write_file(Path(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:])"  # FILE SESSIONS [TAG]
WARMUP_SESSIONS = 10  # of the Celery part's warm-up evaluation: 200 judgments, one block
STARTUPS = (("flask --app app rubrics list", [sys.executable, "-m", "flask", "--app", "app", "rubrics", "list"]),
            ('python -c "from app import create_app; create_app()"',
             [sys.executable, "-c", "from app import create_app; create_app()"]))


@dataclass
class Run:
    """One child process's wall time, CPU time (s) and peak resident memory (bytes)."""

    wall: float
    cpu: float
    peak: int


def child_environ(pycache: Path, extra: dict[str, str]) -> dict[str, str]:
    """This environment with bytecode cached under `pycache` (even where PYTHONDONTWRITEBYTECODE is set, as users'
    installs cache it), no broker nor database URL inherited, and `extra`."""
    environ = {**os.environ, "PYTHONPYCACHEPREFIX": str(pycache), "CELERY_BROKER_URL": "", "DATABASE_URL": "",
               "STORAGE_URL": "", **extra}
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    return environ


def run(command: list[str], environ: dict[str, str]) -> Run:
    """Run a command to its end; its wall time, CPU time and peak memory. Exits naming it when it fails."""
    with tempfile.TemporaryFile() as output:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, env=environ, stdout=output, stderr=subprocess.STDOUT)
        _pid, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            output.seek(0)
            raise SystemExit(f"{' '.join(command)} exited {process.returncode}:\n"
                             f"{output.read().decode('utf-8', 'replace')[-3000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)


def judge_environ(url: str) -> dict[str, str]:
    return {"JUDGE_BASE_URL": url, "JUDGE_API_KEY": "bench", "JUDGE_MODEL": "bench",
            "JUDGE_CONCURRENCY": str(CONCURRENCY)}


def instance_environ(folder: Path) -> dict[str, str]:
    """The settings that keep an app's database and files in `folder`."""
    return {"INSTANCE_PATH": str(folder / "instance"), "UPLOAD_FOLDER": str(folder / "uploads"),
            "RESULTS_FOLDER": str(folder / "results"), "DATABASE": str(folder / "instance" / "db.sqlite")}


def score_command(source: Path, folder: Path) -> list[str]:
    return [sys.executable, "-m", "flask", "--app", "app", "score", str(source), "--out", str(folder / "result.json")]


def calls_of(folder: Path) -> tuple[int, int]:
    """The judge calls and cache hits of the result written in `folder`."""
    judge = json.loads((folder / "result.json").read_text("utf-8"))["judge"]
    return judge["calls"], judge["cache_hits"]


def measure_size(work: Path, pycache: Path, judgments: int, repeat: int, cached: bool) -> dict:
    """Capture the requests of one size, then (a) and (b) interleaved; their best runs, and the cached re-run."""
    sessions = max(1, judgments // PER_SESSION)
    judgments = sessions * PER_SESSION
    source, capture = work / f"log-{judgments}.jsonl", work / f"requests-{judgments}.jsonl"
    run([sys.executable, "-c", WRITE, str(source), str(sessions)], child_environ(pycache, {}))
    with judge_process(0.0, capture=capture) as url:
        folder = work / f"capture-{judgments}"
        run(score_command(source, folder), child_environ(pycache, {**instance_environ(folder), **judge_environ(url)}))
    captured = sum(1 for line in capture.open("rb") if line.strip())
    if captured != judgments:
        raise SystemExit(f"the capture run sent {captured} requests for {judgments} judgments")
    cli: list[Run] = []
    bare: list[Run] = []
    reruns: list[Run] = []
    with judge_process(0.0) as url:
        bare_command = [sys.executable, str(ROOT / "bench" / "bare_client.py"), str(capture), url,
                        "--concurrency", str(CONCURRENCY)]
        run(bare_command, child_environ(pycache, {}))  # its bytecode written once, as (a)'s was by the capture
        for n in range(max(1, repeat)):
            folder = work / f"cli-{judgments}-{n}"
            environ = child_environ(pycache, {**instance_environ(folder), **judge_environ(url)})
            cli.append(run(score_command(source, folder), environ))
            if calls_of(folder) != (judgments, 0):
                raise SystemExit(f"flask score made {calls_of(folder)} (calls, cache hits), not {judgments} calls")
            bare.append(run(bare_command, child_environ(pycache, {})))
        if cached:
            for _n in range(max(1, repeat)):
                reruns.append(run(score_command(source, folder), environ))
                if calls_of(folder) != (0, judgments):
                    raise SystemExit(f"the re-run made {calls_of(folder)} (calls, cache hits), not all from cache")
    return {"judgments": judgments, "cli": cli, "bare": bare, "rerun": min((r.wall for r in reruns), default=None)}


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system, every thread) a running process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def worker_startup(folder: Path, environ: dict[str, str], broker: str) -> float:
    """CPU time of a Celery worker process from its start to its ready line."""
    queue = f"psb-bench-{uuid.uuid4().hex[:8]}"
    log_path = folder / f"{queue}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "app:celery_app", "worker", "--pool=threads", "--concurrency=1",
             "-Q", queue, "-n", f"{queue}@%h", "--without-heartbeat", "--without-mingle", "--without-gossip",
             "--loglevel=INFO"],
            cwd=ROOT, env={**environ, "CELERY_BROKER_URL": broker, "CELERY_QUEUE": queue,
                           "CELERY_REQUEUE_ON_START": "0"}, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while " ready." not in log_path.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"a Celery worker did not start:\n{log_path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.01)
        return cpu_seconds(process.pid)
    finally:
        from bench.bench_celery import stop_process

        stop_process(process)


def measure_startups(work: Path, pycache: Path, runs: int, broker: str) -> dict[str, float]:
    """The median CPU time of each start-up, in an instance made (and its bytecode written) beforehand."""
    environ = child_environ(pycache, instance_environ(work / "startup"))
    commands = dict(STARTUPS)
    for command in commands.values():
        run(command, environ)  # the database made and the bytecode written: not measured
    times: dict[str, list[float]] = {name: [] for name in [*commands, "Celery worker, to its ready line"]}
    worker_startup(work, environ, broker)
    for _n in range(max(1, runs)):  # interleaved, so that a busy moment of the machine touches each alike
        for name, command in commands.items():
            times[name].append(run(command, environ).cpu)
        times["Celery worker, to its ready line"].append(worker_startup(work, environ, broker))
    return {name: statistics.median(values) for name, values in times.items()}


def measure_celery(work: Path, broker: str, judgments: int) -> tuple[float, float, float]:
    """Judgments per second of the thread runner of this process, of one Celery worker with one process (prefork) and
    of one with WORKER_THREADS threads, on the same file."""
    from bench.bench_celery import celery_run, inprocess_run, judge_env

    sessions = max(1, judgments // PER_SESSION)
    source, warmup = work / "celery.jsonl", work / "warmup.jsonl"
    environ = child_environ(work / "pycache", {})
    run([sys.executable, "-c", WRITE, str(source), str(sessions)], environ)
    run([sys.executable, "-c", WRITE, str(warmup), str(WARMUP_SESSIONS), " (warm-up)"], environ)
    with judge_process(0.0) as url:
        env = judge_env(url, CONCURRENCY)
        wall, done = inprocess_run(work / "threads", source, env, warmup)
        threads = done / wall
        wall, done = celery_run(work / "worker", broker, env, source, 1, workers=1, pool="prefork", warmup=warmup)
        worker = done / wall
        wall, done = celery_run(work / "thread-pool", broker, env, source, WORKER_THREADS, workers=1, warmup=warmup)
    return threads, worker, done / wall


def cpu_limit(judgments: int) -> float:
    return next((limit for size, limit in sorted(MAX_CPU_RATIO.items()) if judgments <= size), MAX_CPU_RATIO_LARGE)


def report(sizes: list[dict], startups: dict[str, float], celery: tuple[float, float, float]) -> bool:
    """Print the figures and the verdict of each target; whether all are met."""
    ok = True
    mb = 2**20
    print(f"judge: tests/judge_server.py in a child process, answering at once; {CONCURRENCY} in flight")
    for size in sizes:
        n = size["judgments"]
        cli_cpu, bare_cpu = min(r.cpu for r in size["cli"]), min(r.cpu for r in size["bare"])
        cli_wall, bare_wall = min(r.wall for r in size["cli"]), min(r.wall for r in size["bare"])
        cli_peak, bare_peak = max(r.peak for r in size["cli"]), max(r.peak for r in size["bare"])
        ratio, limit = cli_cpu / bare_cpu, cpu_limit(n)
        passed = ratio <= limit and cli_peak < MAX_PEAK_MB * mb
        ok = ok and passed
        print(f"{n} judgments, best of {len(size['cli'])}:")
        print(f"  flask score:  CPU {cli_cpu:6.2f} s = {cli_cpu / n * 1000:.3f} ms per judgment, wall {cli_wall:6.2f} s,"
              f" peak {cli_peak / mb:5.0f} MB")
        print(f"  bare aiohttp: CPU {bare_cpu:6.2f} s = {bare_cpu / n * 1000:.3f} ms per judgment, wall {bare_wall:6.2f} s,"
              f" peak {bare_peak / mb:5.0f} MB")
        print(f"  ratios: CPU {ratio:.2f} (limit {limit}), wall {cli_wall / bare_wall:.2f}, peak memory "
              f"{cli_peak / bare_peak:.2f} (flask score's limit {MAX_PEAK_MB} MB) {'PASS' if passed else 'FAIL'}")
    first = sizes[0]
    if first["rerun"] is not None:
        passed = first["rerun"] < MAX_CACHED_S
        ok = ok and passed
        print(f"cached re-run of {first['judgments']} judgments: wall {first['rerun']:.2f} s (limit {MAX_CACHED_S} s) "
              f"{'PASS' if passed else 'FAIL'}")
    if len(sizes) > 1:
        smallest, largest = (max(r.peak for r in s["cli"]) for s in (sizes[0], sizes[-1]))
        passed = largest <= MAX_PEAK_GROWTH * smallest
        ok = ok and passed
        print(f"flask score's peak memory at {sizes[-1]['judgments']} over {sizes[0]['judgments']} judgments: "
              f"{largest / smallest:.2f} (limit {MAX_PEAK_GROWTH}) {'PASS' if passed else 'FAIL'}")
    print("start-up CPU, median:")
    for name, seconds in startups.items():
        print(f"  {seconds:5.2f} s  {name}")
    threads, worker, thread_pool = celery
    passed = worker >= MIN_CELERY_RATIO * threads
    ok = ok and passed
    print(f"Celery path: thread runner {threads:.0f} judgments/s, one worker (prefork, 1 process) {worker:.0f} "
          f"judgments/s, ratio {worker / threads:.2f} (limit {MIN_CELERY_RATIO}) {'PASS' if passed else 'FAIL'}; "
          f"on the thread pool ({WORKER_THREADS} threads) {thread_pool:.0f} judgments/s, {thread_pool / threads:.2f}")
    return ok


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="judgments of each run, comma-separated, smallest first (default 4000,40000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side per size; the best is compared")
    parser.add_argument("--startup-runs", type=int, default=5, help="runs of each start-up; the median is reported")
    parser.add_argument("--celery-judgments", type=int, default=CELERY_JUDGMENTS,
                        help=f"judgments of the Celery comparison (default {CELERY_JUDGMENTS})")
    args = parser.parse_args(argv)
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed (Debian package redis-server)")
    # SIGTERM as well as Ctrl-C unwinds through the finally blocks that stop every child process
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="psb-bench-run-cost-") as tmp:
        work = Path(tmp)
        pycache = work / "pycache"
        measured = [measure_size(work, pycache, size, args.repeat, cached=n == 0) for n, size in enumerate(sizes)]
        from bench.bench_celery import redis_server

        with redis_server(work / "redis") as broker:
            startups = measure_startups(work, pycache, args.startup_runs, broker)
            celery = measure_celery(work, broker, args.celery_judgments)
    ok = report(measured, startups, celery)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

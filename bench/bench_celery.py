"""20,000 judgments against a 100 ms judge: the in-process thread runner and 2 Celery workers, each <= 1.3x ideal.

Run: python bench/bench_celery.py [--judgments 20000] [--concurrency 64] [--worker-threads 4] [--skip-inprocess]
[--storage local|s3].
Writes a dialogue file of judgments / 20 sessions x 5 rounds x 2 methods x 2 modes (every reply distinct),
starts the local judge server in a child process (0.1 s latency) and a redis-server on a free port, then
measures:

  1. the in-process thread backend (pipeline/thread_backend.py, as `python app.py` runs it) at JUDGE_CONCURRENCY=C;
  2. the same file on 2 Celery worker processes (`celery -A app:celery_app worker --pool=threads`), the
     evaluation started through the app's API (POST /api/uploads, POST /api/evaluations) by a test client of
     an app with CELERY_BROKER_URL, timed from the start request until the store says done; JUDGE_CONCURRENCY=C
     is then the budget of the whole deployment, kept in Redis;
  3. 4,000 judgments (at most --judgments) on 2 fresh workers against a second judge answering at once (0 s), to
     report the judgments per second the workers sustain when the judge costs nothing.

With `--storage s3`, run 2 is made a second time with STORAGE_URL on a local S3 server (tests/services.py:
SeaweedFS, else moto's server), the uploads, result documents and the workers' reads of the file then going
through S3, and its ratio is printed beside the local-folder run's; the S3 run's wall time over the local one's
is judged against 1.2.

For 1 and 2 the ideal is judgments x latency / C; each ratio wall / ideal is judged against 1.3. Exits 1 when
either misses it (or an evaluation does not end done). Every process it starts (judges, Redis, workers) is
stopped at the end, on failure and on Ctrl-C too.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_cache import timed_run, write_file  # noqa: E402
from bench.local_judge import judge_process, server_stats  # noqa: E402

JUDGMENTS = 20_000
PER_SESSION = 5 * 2 * 2  # rounds x methods x modes
CONCURRENCY = 64
LATENCY_S = 0.1
WORKERS = 2
WORKER_THREADS = 4  # --concurrency of each `celery worker --pool=threads`: block tasks it runs at once
FAST_JUDGMENTS = 4_000
MAX_RATIO = 1.3
MAX_S3_OVER_LOCAL = 1.2  # with --storage s3: the S3 run's wall time over the local-folder run's
TIMEOUT_S = 1800
POLL_S = 0.005  # how often the end of a Celery evaluation is looked for: its time is known to this much


def judge_env(url: str, concurrency: int) -> dict:
    return {"JUDGE_BASE_URL": url, "JUDGE_API_KEY": "bench", "JUDGE_MODEL": "bench",
            "JUDGE_CONCURRENCY": str(concurrency), "JUDGE_MAX_RETRIES": "0", "JUDGE_TIMEOUT_S": "30"}


def stop_process(process: subprocess.Popen) -> None:
    """Terminate one child we started; kill it if it does not go within 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """The URL of a redis-server (tests.services.Redis) started for the run."""
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed (Debian package redis-server)")
    from tests.services import Redis

    server = Redis(folder)
    try:
        yield server.url
    finally:
        stop_process(server.process)


def inprocess_run(folder: Path, source: Path, env: dict, warmup: Path | None = None) -> tuple[float, int]:
    """Wall time and judgments of one evaluation on the thread runner of this process (bench_cache.timed_run), after
    one of `warmup` (untimed) when given."""
    from kinds import registry
    from pipeline.evaluations import Evaluations
    from pipeline.ingest import ingest
    from pipeline.thread_backend import ThreadBackend
    from storage.store import Store

    folder.mkdir(parents=True)
    store = Store(folder / "db.sqlite", registry.tables())
    runner = ThreadBackend(Evaluations(store, folder / "uploads", folder / "results", lambda: env))
    for path in ([warmup] if warmup else []) + [source]:
        with path.open("rb") as f:
            upload = ingest(f, path.name, store, folder / "uploads")
        wall, result = timed_run(store, runner, upload["id"], env)
    return wall, result["judge"]["calls"] + result["judge"]["cache_hits"]


@contextmanager
def celery_deployment(folder: Path, redis_url: str, env_judge: dict, threads: int,
                      storage: dict | None = None, workers: int = WORKERS, pool: str = "threads") -> Iterator[tuple]:
    """An app with CELERY_BROKER_URL (its test client and store) and `workers` ready workers (`--pool=pool`, each
    running `threads` tasks at once) sharing its SQLite database, folders (or the STORAGE_URL of `storage`) and queue;
    the workers are stopped on the way out, whatever happens."""
    from app import create_app

    folder.mkdir(parents=True)
    queue = f"psb-bench-{uuid.uuid4().hex[:8]}"
    env = {"DATABASE": str(folder / "db.sqlite"), "UPLOAD_FOLDER": str(folder / "uploads"),
           "RESULTS_FOLDER": str(folder / "results"), "CELERY_BROKER_URL": redis_url, "CELERY_QUEUE": queue,
           "CELERY_REQUEUE_ON_START": "0", **(storage or {}), **env_judge}
    app = create_app({**{k: v for k, v in env.items() if not k.startswith("JUDGE_")}, "TESTING": True,
                      "SECRET_KEY": "bench", "JUDGE_KEY_FILE": str(folder / "judge_api_key"),
                      "WTF_CSRF_ENABLED": False, "AUTH": "off", "RESUME_ON_START": False, "JUDGE_ENV": env_judge})
    started: list[tuple[subprocess.Popen, Path]] = []
    try:
        for n in range(workers):
            log_path = folder / f"w{n + 1}.log"
            with log_path.open("wb") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "app:celery_app", "worker", f"--pool={pool}",
                     f"--concurrency={threads}", "-Q", queue, "-n", f"bench{n + 1}-{queue}@%h",
                     "--without-heartbeat", "--without-mingle", "--without-gossip", "--loglevel=INFO"],
                    cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
            started.append((process, log_path))
        deadline = time.monotonic() + 60
        for process, log_path in started:
            while " ready." not in log_path.read_text(errors="replace"):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"a Celery worker did not start:\n{log_path.read_text(errors='replace')[-3000:]}")
                time.sleep(0.1)
        yield app.test_client(), app.extensions["store"], started
    finally:
        for process, _log in started:
            stop_process(process)


def celery_run(folder: Path, redis_url: str, env_judge: dict, source: Path, threads: int,
               storage: dict | None = None, workers: int = WORKERS, pool: str = "threads",
               warmup: Path | None = None) -> tuple[float, int]:
    """Wall time and judgments of one evaluation started through the API and judged by `workers` Celery workers,
    after one of `warmup` (untimed) when given."""
    with celery_deployment(folder, redis_url, env_judge, threads, storage, workers, pool) as deployment:
        for path in ([warmup] if warmup else []) + [source]:
            wall, done = _evaluated(*deployment, path)
        return wall, done


def _evaluated(client: Any, store: Any, processes: list, source: Path) -> tuple[float, int]:
    """Wall time and judgments of one evaluation of `source` started through the API of a Celery deployment."""
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(source.read_bytes()), source.name)},
                       content_type="multipart/form-data")
    if resp.status_code != 201:
        raise SystemExit(f"upload refused: {resp.status_code} {resp.get_json()}")
    upload_id = resp.get_json()["id"]
    start = time.perf_counter()
    resp = client.post("/api/evaluations", json={"upload_id": upload_id})
    if resp.status_code != 202:
        raise SystemExit(f"evaluation refused: {resp.status_code} {resp.get_json()}")
    evaluation_id = resp.get_json()["id"]
    while (record := store.get_evaluation(evaluation_id, with_result=False))["status"] in ("queued", "running"):
        if time.perf_counter() - start > TIMEOUT_S or any(p.poll() is not None for p, _log in processes):
            raise SystemExit("the Celery evaluation did not finish (a worker exited or it timed out):\n"
                             + "\n".join(log.read_text(errors="replace")[-2000:] for _p, log in processes))
        time.sleep(POLL_S)
    wall = time.perf_counter() - start
    if record["status"] != "done":
        raise SystemExit(f"Celery evaluation ended {record['status']}: {record['error']}")
    progress = store.progress(evaluation_id)
    return wall, progress["done"]


@contextmanager
def s3_storage(folder: Path) -> Iterator[dict]:
    """STORAGE_URL on a bucket of a local S3 server (tests.services.S3Server), with its endpoint and keys; the
    bench's own process gets them too (its app writes the upload)."""
    if not (shutil.which("weed") or shutil.which("moto_server")):
        raise SystemExit("no S3 server: install SeaweedFS ('weed') or moto's server (pip install \"moto[server]\")")
    from tests.services import S3Server

    server = S3Server(folder)
    try:
        os.environ.update(server.environ)
        yield {"STORAGE_URL": f"s3://{server.bucket()}/bench", **server.environ}
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgments", type=int, default=JUDGMENTS,
                        help=f"judgments of runs 1 and 2, a multiple of {PER_SESSION} (default {JUDGMENTS})")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY,
                        help=f"JUDGE_CONCURRENCY; for the workers, of the whole deployment (default {CONCURRENCY})")
    parser.add_argument("--worker-threads", type=int, default=WORKER_THREADS,
                        help=f"threads of each Celery worker (default {WORKER_THREADS})")
    parser.add_argument("--skip-inprocess", action="store_true", help="skip run 1 (the in-process thread runner)")
    parser.add_argument("--storage", choices=("local", "s3"), default="local",
                        help="s3: run 2 again with STORAGE_URL on a local S3 server (default: local folders only)")
    args = parser.parse_args(argv)
    sessions = max(1, args.judgments // PER_SESSION)
    judgments, concurrency = sessions * PER_SESSION, max(1, args.concurrency)
    fast_sessions = max(1, min(FAST_JUDGMENTS, judgments) // PER_SESSION)
    # SIGTERM as well as Ctrl-C unwinds through the finally blocks that stop every child process
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored

    ideal = judgments * LATENCY_S / concurrency
    rows: list[tuple[str, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="psb-bench-celery-") as tmp:
        folder = Path(tmp)
        source, fast_source = folder / "log.jsonl", folder / "fast.jsonl"
        write_file(source, sessions, "")
        write_file(fast_source, fast_sessions, " (0 ms judge)")
        with redis_server(folder / "redis") as url_of_redis, judge_process(LATENCY_S) as url:
            if not args.skip_inprocess:
                wall, done = inprocess_run(folder / "inprocess", source, judge_env(url, concurrency))
                rows.append(("in-process runner", wall, done))
            wall, done = celery_run(folder / "celery", url_of_redis, judge_env(url, concurrency), source,
                                    args.worker_threads)
            rows.append((f"{WORKERS} Celery workers", wall, done))
            if args.storage == "s3":
                with s3_storage(folder / "s3") as storage:
                    wall, done = celery_run(folder / "celery-s3", url_of_redis, judge_env(url, concurrency), source,
                                            args.worker_threads, storage)
                rows.append((f"{WORKERS} workers, S3", wall, done))
            stats = server_stats(url)
            with judge_process(0.0) as fast_url:
                fast_wall, fast_done = celery_run(folder / "celery-fast", url_of_redis,
                                                  judge_env(fast_url, concurrency), fast_source, args.worker_threads)

    print(f"judge:       child process, latency {LATENCY_S:g} s; {stats['requests']} requests, "
          f"max in flight {stats['max_in_flight']}")
    print(f"judgments:   {judgments} ({sessions} sessions x 5 rounds x 2 methods x 2 modes), JUDGE_CONCURRENCY "
          f"{concurrency}; workers: {WORKERS} x --pool=threads --concurrency={args.worker_threads}")
    print(f"ideal:       {ideal:.2f} s ({judgments} x {LATENCY_S:g} s / {concurrency})")
    ok = True
    for name, wall, done in rows:
        ratio = wall / ideal
        passed = ratio <= MAX_RATIO and done == judgments
        ok = ok and passed
        print(f"{name + ':':<21} wall {wall:7.2f} s, {done} judged, ratio {ratio:.3f} (limit {MAX_RATIO}) "
              f"{'PASS' if passed else 'FAIL'}")
    if args.storage == "s3":  # the same workers with their files in S3 against on local folders, this run
        s3_over_local = rows[-1][1] / rows[-2][1]
        ok = ok and s3_over_local <= MAX_S3_OVER_LOCAL
        print(f"S3 / local folders:   {s3_over_local:.3f} (limit {MAX_S3_OVER_LOCAL}) "
              f"{'PASS' if s3_over_local <= MAX_S3_OVER_LOCAL else 'FAIL'}")
    print(f"0 ms judge, {WORKERS} Celery workers: {fast_done} judgments in {fast_wall:.2f} s = "
          f"{fast_done / fast_wall:.0f} judgments/s")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

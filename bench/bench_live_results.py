"""What open result pages cost a running evaluation: judgments per second with 0 and with 5 pages polling its live view.

Run: python bench/bench_live_results.py [--sessions 200] [--pages 5] [--repeat 3]. The dashboard runs as it does on
one machine (`create_app`, the thread backend judging in the web process, werkzeug's threaded server) in a child
process, the judge too (tests/judge_server.py, 100 ms per answer, JUDGE_CONCURRENCY 32). Each run uploads a new
dialogue file (sessions x 5 rounds x 2 methods x 2 modes = 20 judgments a session, replies distinct from every other
run's so nothing comes from the cache) and evaluates it through the API; meanwhile N simulated pages do what
static/js/result.js does in a browser: once a second, the progress (GET /api/evaluations/<id>) and, when it shows more
judgments stored, the live view (GET /evaluations/<id>/live, with the ETag of the last one). Runs alternate between 0
and N pages, --repeat times each, after a small run that warms the server up; the best run of each is judged (other
work on the machine only ever slows a run).
PASS: judgments per second with N pages >= 0.95 x with none. Exits 1 on FAIL.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_cache import write_file  # noqa: E402
from bench.local_judge import judge_process  # noqa: E402
from tests.browser_support import SERVE, free_port  # noqa: E402  (the app served as the browser tests serve it)

LATENCY_S = 0.1
CONCURRENCY = 32
MIN_RATIO = 0.95
POLL_S = 1.0  # what a page's script waits between two polls
class Dashboard:
    """The dashboard in a child process on a free port, judging with the local judge."""

    def __init__(self, folder: Path, judge_url: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {"DATABASE": str(folder / "db.sqlite"), "UPLOAD_FOLDER": str(folder / "uploads"),
                  "RESULTS_FOLDER": str(folder / "results"), "JUDGE_KEY_FILE": str(folder / "key"),
                  "SECRET_KEY": "bench"}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "OPENAI_", "CELERY_", "DATABASE"))}
        env.update({"JUDGE_BASE_URL": judge_url, "JUDGE_API_KEY": "bench", "JUDGE_MODEL": "bench",
                    "JUDGE_CONCURRENCY": str(CONCURRENCY)})
        self.log = (folder / "server.log").open("wb")
        self.process = subprocess.Popen([sys.executable, "-c", SERVE, json.dumps(config), str(self.port)], cwd=ROOT,
                                        env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.get("/api/evaluations")
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the dashboard did not start") from None
                time.sleep(0.1)

    def get(self, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
        request = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), b""

    def post(self, path: str, body: bytes, content_type: str) -> dict:
        request = urllib.request.Request(self.url + path, data=body, headers={"Content-Type": content_type})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


def page(dashboard: Dashboard, evaluation_id: str, stop: threading.Event, fetched: list) -> None:
    """One open result page: the progress once a second, and the live view while it shows fewer judgments than are
    stored (as static/js/result.js does)."""
    shown, etag = 0, None
    while not stop.is_set():
        _status, _headers, body = dashboard.get(f"/api/evaluations/{evaluation_id}")
        done = json.loads(body)["progress"]["done"] if body else None
        if done != shown:
            status, headers, html = dashboard.get(f"/evaluations/{evaluation_id}/live",
                                                  {"If-None-Match": etag} if etag else {})
            etag = headers.get("ETag") or etag
            if found := re.search(rb'data-judgments="(\d+)"', html):
                shown = int(found.group(1))
            fetched.append(status)
        stop.wait(POLL_S)


def run_once(dashboard: Dashboard, folder: Path, sessions: int, pages: int, number: int) -> dict:
    """Upload a new file, evaluate it with `pages` pages open; judgments per second and live views fetched."""
    source = folder / f"run{number}.jsonl"
    write_file(source, sessions, tag=f" (run {number})")
    boundary = "benchlive"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{source.name}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + source.read_bytes() + \
        f"\r\n--{boundary}--\r\n".encode()
    upload = dashboard.post("/api/uploads", body, f"multipart/form-data; boundary={boundary}")
    started = time.perf_counter()
    evaluation = dashboard.post("/api/evaluations", json.dumps({"upload_id": upload["id"]}).encode(),
                                "application/json")
    stop, fetched = threading.Event(), []
    threads = [threading.Thread(target=page, args=(dashboard, evaluation["id"], stop, fetched), daemon=True)
               for _page in range(pages)]
    for thread in threads:
        thread.start()
    while True:
        record = json.loads(dashboard.get(f"/api/evaluations/{evaluation['id']}")[2])
        if record["status"] not in ("queued", "running"):
            break
        time.sleep(0.1)
    wall = time.perf_counter() - started
    stop.set()
    for thread in threads:
        thread.join(10)
    if record["status"] != "done":
        raise SystemExit(f"evaluation ended {record['status']}: {record['error']}")
    judgments = record["progress"]["done"]
    return {"wall": wall, "judgments": judgments, "rate": judgments / wall,
            "views": sum(1 for s in fetched if s == 200), "unchanged": sum(1 for s in fetched if s == 304)}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200, help="20 judgments each (default 200)")
    parser.add_argument("--pages", type=int, default=5, help="pages open on the running evaluation (default 5)")
    parser.add_argument("--repeat", type=int, default=3, help="runs with and without pages; the best of each")
    args = parser.parse_args(argv)
    runs: dict[int, list[dict]] = {0: [], args.pages: []}
    with tempfile.TemporaryDirectory(prefix="bench_live_") as tmp, judge_process(LATENCY_S) as url:
        folder = Path(tmp)
        dashboard = Dashboard(folder, url)
        try:
            run_once(dashboard, folder, 5, 1, 0)  # warm up: the first run loads the libraries scoring needs
            number = 0
            for _repeat in range(max(1, args.repeat)):
                for pages in runs:
                    number += 1
                    runs[pages].append(run_once(dashboard, folder, args.sessions, pages, number))
        finally:
            dashboard.stop()
    best = {pages: max(found, key=lambda r: r["rate"]) for pages, found in runs.items()}
    print(f"judge: child process, {LATENCY_S:g} s per answer, concurrency {CONCURRENCY}; "
          f"{best[0]['judgments']} judgments per run, best of {max(1, args.repeat)}")
    for pages, r in best.items():
        print(f"{pages} pages open: {r['wall']:.2f} s, {r['rate']:.1f} judgments/s"
              + (f"; live views rendered {r['views']}, unchanged (304) {r['unchanged']}" if pages else ""))
    ratio = best[args.pages]["rate"] / best[0]["rate"]
    print(f"judgments/s with {args.pages} pages open / with none: {ratio:.3f} (target >= {MIN_RATIO})")
    passed = ratio >= MIN_RATIO
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

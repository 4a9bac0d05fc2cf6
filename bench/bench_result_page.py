"""Server-side render time and bytes shipped of the result page of a 5,000-session evaluation.

Run: python bench/bench_result_page.py [--sessions 5000]. Builds an evaluation of 5,000 sessions x 10
rounds x 4 methods (400,000 judgments) directly in a store, computes its result document with the same
code as a real run, then requests the result page through the app (Flask test client, gzip accepted,
as a browser does) and every asset it loads, and its `.json`. Prints the median render time of 5 requests against
300 ms, the bytes shipped (page + CSS + JS, as sent over the wire) against 2 MB, and the median time of the result
document's `.json` (gzipped) against 300 ms. Exits 1 on FAIL.
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import create_app  # noqa: E402
from pipeline.evaluations import create_evaluation  # noqa: E402
from pipeline.ingest import ingest  # noqa: E402

METHODS = ("Base", "CoT", "RAG", "Ours")
ROUNDS = 10
MAX_RENDER_S = 0.3
MAX_BYTES = 2 * 1024 * 1024


def write_file(path: Path, sessions: int, methods: tuple[str, ...] = METHODS) -> None:
    """A dialogue file of the benchmark's size (ROUNDS rounds, a reply of every method in each)."""
    with path.open("w", encoding="utf-8") as f:
        for s in range(sessions):
            rounds = [{"round": k, "user_message": f"message {k} of session {s}",
                       "responses": {m: f"{m} says something kind in round {k}" for m in methods}}
                      for k in range(1, ROUNDS + 1)]
            f.write(json.dumps({"session_id": f"s{s:05d}", "user_profile": "profile", "user_personality": "calm",
                                "rounds": rounds}) + "\n")


def fill_judgments(store, evaluation_id: str, sessions: int, methods: tuple[str, ...] = METHODS) -> None:
    """Every judgment of the evaluation, scored at random (no judge is called)."""
    rng = random.Random(0)
    rows = [(s, f"s{s:05d}", k, m, mode) for s in range(sessions) for k in range(1, ROUNDS + 1)
            for m in methods for mode in ("fine", "binary")]
    store.add_pending(evaluation_id, rows)
    results = []
    for s, _sid, k, m, mode in rows:
        if mode == "fine":
            dims = {d: rng.randint(8, 20) for d in ("style", "content", "naturalness", "personalization",
                                                     "conversation")}
            fields = {"status": "ok", "total": float(sum(dims.values())), "scores": dims, "answer": "fine answer"}
        else:
            fields = {"status": "ok", "verdict": rng.randint(0, 1), "answer": "binary answer"}
        results.append(((s, k, m, mode), {**fields, "prompt_tokens": 500, "completion_tokens": 80, "attempts": 1}))
    store.save_judgments(evaluation_id, results)


def shipped_bytes(client, url: str) -> tuple[int, dict[str, int]]:
    """Bytes sent for a page and the scripts and stylesheets it loads, as encoded on the wire."""
    headers = {"Accept-Encoding": "gzip", "Sec-Fetch-Site": "same-origin"}  # as a browser following a link
    page = client.get(url, headers=headers)
    sizes = {url: len(page.data)}
    html = (gzip.decompress(page.data) if page.headers.get("Content-Encoding") == "gzip" else page.data).decode()
    for asset in re.findall(r'<(?:script|link)[^>]+(?:src|href)="(/[^"]+)"', html):
        sizes[asset] = len(client.get(asset, headers=headers).data)
    return sum(sizes.values()), sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_page_") as tmp:
        folder = Path(tmp)
        env = {"JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "JUDGE_MODEL": "bench"}
        app = create_app({"DATABASE": str(folder / "db.sqlite"), "UPLOAD_FOLDER": str(folder / "uploads"),
                          "RESULTS_FOLDER": str(folder / "results"), "SECRET_KEY": "bench", "JUDGE_ENV": env,
                          "JUDGE_KEY_FILE": str(folder / "key"), "RESUME_ON_START": False})
        store, pipeline = app.extensions["store"], app.extensions["runner"].job.pipeline  # the evaluation's steps
        write_file(folder / "log.jsonl", args.sessions)
        with (folder / "log.jsonl").open("rb") as f:
            upload = ingest(f, "log.jsonl", store, app.config["UPLOAD_FOLDER"])
        evaluation = create_evaluation(store, upload["id"], environ=env)
        started = time.perf_counter()
        kind, job = pipeline.load(evaluation["id"])
        pipeline.plan(kind, job)
        fill_judgments(store, evaluation["id"], args.sessions)
        store.set_result(evaluation["id"], kind.score(job))
        print(f"setup: {args.sessions} sessions x {ROUNDS} rounds x {len(METHODS)} methods, "
              f"{store.progress(evaluation['id'])['total']} judgments, result built in "
              f"{time.perf_counter() - started:.1f} s")

        client = app.test_client()
        url = f"/evaluations/{evaluation['id']}"
        client.get(url)  # warm up templates and caches
        times = []
        for _ in range(5):
            start = time.perf_counter()
            response = client.get(url, headers={"Accept-Encoding": "gzip", "Sec-Fetch-Site": "same-origin"})
            times.append(time.perf_counter() - start)
            assert response.status_code == 200
        render = statistics.median(times)
        total, sizes = shipped_bytes(client, url)
        json_times = []
        for _ in range(5):
            start = time.perf_counter()
            response = client.get(f"{url}.json", headers={"Accept-Encoding": "gzip"})
            json_times.append(time.perf_counter() - start)
            assert response.status_code == 200
        json_s, json_bytes = statistics.median(json_times), len(response.data)

    render_ok = render < MAX_RENDER_S
    bytes_ok = total < MAX_BYTES
    json_ok = json_s < MAX_RENDER_S
    print(f"result .json: median {json_s * 1000:.0f} ms of 5, {json_bytes / 1024:.0f} KB gzipped (limit "
          f"{MAX_RENDER_S * 1000:.0f} ms): {'PASS' if json_ok else 'FAIL'}")
    print(f"render: median {render * 1000:.0f} ms of 5 (limit {MAX_RENDER_S * 1000:.0f} ms): "
          f"{'PASS' if render_ok else 'FAIL'}")
    for name, size in sizes.items():
        print(f"  {size / 1024:8.1f} KB  {name}")
    print(f"shipped: {total / 1024 / 1024:.2f} MB (limit {MAX_BYTES / 1024 / 1024:.0f} MB): "
          f"{'PASS' if bytes_ok else 'FAIL'}")
    passed = render_ok and bytes_ok and json_ok
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

"""Server time of the list of evaluations with 10,000 runs, in SQLite and in PostgreSQL.

Run: python bench/bench_runs_list.py [--runs 10000] [--requests 40] [--stores sqlite,postgresql]. Seeds each store
with a lab's runs (files, kinds, statuses, methods, judge models, rubrics, tags, titles, users, a year of dates, a
result document of about 5 KB each and its headline figures) in bulk, then requests the page /evaluations and
GET /api/evaluations through the app (Flask test client) with varied searches, filters, sorts and pages, the same
for both stores. Prints the time of the first list (which makes every run's search text once), then p50 and p95 of
the server time of each against 300 ms at the 95th percentile. PostgreSQL is started on a free port in a temporary
folder (tests/services.py), or skipped with the reason when it is not installed. Exits 1 on FAIL.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import create_app  # noqa: E402

MAX_P95_S = 0.3
KINDS = ("dialogue",) * 17 + ("mobility", "conversation", "agentbench")
STATUSES = ("done",) * 16 + ("incomplete", "failed", "cancelled", "running")
METHODS = ("Base", "CoT", "RAG", "Ours", "PersonaSteer", "Memory")
MODELS = ("gpt-4o-mini", "gpt-4o", "claude-3-5-sonnet", "qwen2.5-72b", "llama-3.1-70b")
TAGS = ("sweep", "baseline", "ablation", "v1", "v2", "final", "nightly")
USERS = ("ada", "bo", "chen", "dana", "eun", "farid", "gil", "hana")
FILES = 60


def seed(store, runs: int, rng: random.Random) -> None:
    """`runs` evaluations of FILES uploads, written in bulk as the pipeline leaves them (result, headline, figures,
    labels); their search texts are left for the first list to make, as after an upgrade."""
    uploads = [{"id": f"u{i:03d}", "sha256": f"{i:064x}", "kind": "dialogue", "filename": f"replies-{i:02d}.jsonl",
                "size": 1000, "summary": "{}", "warnings": "[]", "created_at": "2025-01-01T00:00:00+00:00"}
               for i in range(FILES)]
    evaluations, figures = [], []
    for i in range(runs):
        kind, methods = rng.choice(KINDS), rng.sample(METHODS, rng.randint(2, 6))
        settings: dict = {"model": rng.choice(MODELS), "language": "en", "temperature": 0.0}
        if rng.random() < 0.2:
            settings["rubric"] = {"id": rng.choice(("helpfulness", "empathy")), "version": "1", "sha256": "0" * 64}
        headline = [[m, round(rng.uniform(30, 90), 2)] for m in methods]
        result = {"kind": kind, "methods": {m: {"avg": value, "al_curve": [{"round": k, "value": value + k}
                                                                             for k in range(1, 11)],
                                                "notes": "x" * 300} for m, value in headline}}
        created = f"2025-{1 + i * 12 // runs:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00+00:00"
        evaluations.append({
            "id": f"e{i:06d}", "upload_id": uploads[i % FILES]["id"], "kind": kind, "status": rng.choice(STATUSES),
            "methods": json.dumps(methods), "settings": json.dumps(settings), "created_at": created,
            "title": f"Run {i} of {rng.choice(TAGS)}" if rng.random() < 0.2 else None,
            "tags": json.dumps(rng.sample(TAGS, rng.randint(0, 2))), "headline": json.dumps(headline),
            "result": json.dumps(result), "started_by": rng.choice(USERS)})
        figures += [{"id": f"e{i:06d}", "name": m, "value": value} for m, value in headline]
    with store.transaction() as tx:
        tx.execute_many("INSERT INTO uploads (id, sha256, kind, filename, size, summary, warnings, created_at)"
                        " VALUES (:id, :sha256, :kind, :filename, :size, :summary, :warnings, :created_at)", uploads)
        tx.execute_many("INSERT INTO evaluations (id, upload_id, kind, status, methods, settings, total, created_at,"
                        " title, tags, headline, result, started_by) VALUES (:id, :upload_id, :kind, :status,"
                        " :methods, :settings, 0, :created_at, :title, :tags, :headline, :result, :started_by)",
                        evaluations)
        tx.execute_many("INSERT INTO evaluation_figures (evaluation_id, name, value) VALUES (:id, :name, :value)",
                        figures)
    store.execute("ANALYZE")  # as a deployment's autovacuum (PostgreSQL) or `PRAGMA optimize` would have


def queries(count: int, rng: random.Random) -> list[str]:
    """`count` query strings of the list: searches, filters, sorts and pages, mixed as people use them."""
    made = []
    for _ in range(count):
        params: dict[str, str] = {}
        if rng.random() < 0.5:
            params["q"] = rng.choice(("gpt", "claude 3-5", "replies-07", "ours", "helpfulness", "final", "run 12",
                                      "qwen", "nothing-matches"))
        for name, values, share in (("kind", KINDS, 0.2), ("status", STATUSES, 0.2), ("tag", TAGS, 0.25),
                                    ("started_by", USERS, 0.15)):
            if rng.random() < share:
                params[name] = rng.choice(values)
        if rng.random() < 0.2:
            params["since"], params["until"] = "2025-03-01", "2025-09-30"
        params["sort"] = rng.choice(("newest", "oldest", "title", "figure-high", "figure-low"))
        if params["sort"].startswith("figure"):
            params["figure"] = rng.choice(METHODS)
        params["page"] = str(rng.choice((1, 1, 2, 5, 40, 200)))
        made.append("&".join(f"{k}={v.replace(' ', '+')}" for k, v in params.items()))
    return made


@contextmanager
def postgres_url() -> Iterator[str | None]:
    """A new database on a PostgreSQL server started for the run (None, with the reason printed, without one)."""
    from tests.services import Postgres, postgres_bin

    if postgres_bin() is None:
        print("postgresql: SKIP (PostgreSQL is not installed: Debian package postgresql)")
        yield None
        return
    server = Postgres()
    try:
        yield server.url()
    finally:
        server.stop()


def measure(name: str, config: dict, runs: int, requests: int, seed_value: int) -> bool:
    """Seed one store and time the page and the API over the same varied queries; whether both meet the target."""
    app = create_app(config)
    store = app.extensions["store"]
    started = time.perf_counter()
    seed(store, runs, random.Random(seed_value))
    client = app.test_client()
    seeded = time.perf_counter()
    first = client.get("/evaluations")
    assert first.status_code == 200, first.status_code
    print(f"{name}: {runs} runs seeded in {seeded - started:.1f} s; first list (making their search texts) "
          f"{time.perf_counter() - seeded:.2f} s")
    passed = True
    for label, path in (("page /evaluations", "/evaluations"), ("GET /api/evaluations", "/api/evaluations")):
        times = []
        for query in queries(requests, random.Random(seed_value + 1)):
            begun = time.perf_counter()
            answer = client.get(f"{path}?{query}")
            times.append(time.perf_counter() - begun)
            assert answer.status_code == 200, (path, query, answer.status_code)
        p50, p95 = statistics.median(times), statistics.quantiles(times, n=20, method="inclusive")[-1]
        ok = p95 < MAX_P95_S
        passed &= ok
        print(f"{name}: {label}: p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms over {requests} requests "
              f"(p95 limit {MAX_P95_S * 1000:.0f} ms, ratio {p95 / MAX_P95_S:.2f}): {'PASS' if ok else 'FAIL'}")
    store.close()
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    passed = True
    with tempfile.TemporaryDirectory(prefix="bench_runs_list_") as tmp:
        folder = Path(tmp)
        base = {"UPLOAD_FOLDER": str(folder / "uploads"), "RESULTS_FOLDER": str(folder / "results"),
                "SECRET_KEY": "bench", "JUDGE_KEY_FILE": str(folder / "key"), "RESUME_ON_START": False,
                "JUDGE_ENV": {}, "CELERY_BROKER_URL": "", "DATABASE_URL": None}
        for name in args.stores.split(","):
            if name == "sqlite":
                passed &= measure(name, {**base, "DATABASE": str(folder / "db.sqlite")}, args.runs, args.requests,
                                  args.seed)
            elif name == "postgresql":
                with postgres_url() as url:
                    if url is not None:
                        passed &= measure(name, {**base, "DATABASE": str(folder / "unused.sqlite"),
                                                 "DATABASE_URL": url}, args.runs, args.requests, args.seed)
            else:
                parser.error(f"unknown store {name!r}: sqlite or postgresql")
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

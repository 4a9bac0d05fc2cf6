"""Lighthouse scores of two result pages on mobile and desktop, and the JavaScript they load with the full and with
the partial Plotly.

Run: python bench/bench_lighthouse.py [--sessions 500]. Builds a 6-method dialogue evaluation (500 sessions x 10
rounds, judged at random directly in a store) and an AgentBench evaluation (5 agents x 8 tasks), starts the
dashboard twice on the same data (`python app.py`'s server: the one as shipped, and one that serves the Python
plotly package's full plotly.min.js instead of the dashboard's partial bundle), and runs Lighthouse 12.2.3 from
node_modules (Debian's Chromium) on each page as shipped with each form factor (`--form-factors`: mobile,
Lighthouse's default emulation and throttling, and desktop, its desktop preset), opened at its top and at its first
chart (the page loads Plotly only when a chart is to be drawn: at the top of a page whose charts are below the fold
it never runs, at the charts it loads and draws them), and with the full bundle at the charts on desktop, three times
each (`--runs`), keeping the run of median performance score. The targets apply to the pages opened at their top,
as Lighthouse opens a page; the rows at the charts show what drawing them costs. Prints, in one run, each page's
performance and accessibility scores as ratios against the targets (>= 0.90, >= 0.95) with the Total Blocking Time,
and the JavaScript each page loads (bytes transferred and uncompressed) with the full bundle and with the partial
one. Exits 1 on a miss.

The default mode answers requests from this machine without signing in, as for anyone running it locally.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import create_app  # noqa: E402
from bench.bench_agentbench import write_outputs  # noqa: E402
from bench.bench_result_page import ROUNDS, fill_judgments, write_file  # noqa: E402
from kinds.figures import FULL_PLOTLY_JS_FILE  # noqa: E402
from pipeline.evaluations import create_evaluation  # noqa: E402
from pipeline.ingest import ingest  # noqa: E402

LIGHTHOUSE = ROOT / "node_modules" / ".bin" / "lighthouse"
CHROME = os.environ.get("CHROME_PATH", "/usr/bin/chromium")
# Lighthouse's own launch of Chromium now and then fails to reach the browser's DevTools endpoint on a busy machine
# (before any page is loaded): such a run is started again, at most LAUNCH_ATTEMPTS times in all.
LAUNCH_FAILURES = ("Failed to fetch browser webSocket URL", "Unable to connect to Chrome", "ECONNREFUSED")
LAUNCH_ATTEMPTS = 3
METHODS = ("Base", "CoT", "RAG", "Memory", "Persona", "Ours")
TARGETS = {"performance": 0.90, "accessibility": 0.95}
VIEWS = ("top", "charts")  # where a page is opened: its top, or its first chart (Plotly loaded, charts drawn)
FIRST_CHART = {"dialogue": "#chart-al", "agentbench": "#chart-status"}
SERVE = """
import json, sys
from app import create_app
create_app(json.loads(sys.argv[1])).run(host="127.0.0.1", port=int(sys.argv[2]), threaded=True, use_reloader=False)
"""


def build_evaluations(config: dict, folder: Path, sessions: int, names: list[str]) -> dict[str, str]:
    """The dialogue and AgentBench evaluations named, finished; their result pages' paths by name."""
    env = {"JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "JUDGE_MODEL": "bench"}
    app = create_app({**config, "JUDGE_ENV": env})
    store, runner = app.extensions["store"], app.extensions["runner"]
    pages = {}
    if "dialogue" in names:
        pages["dialogue"] = build_dialogue(store, runner, app.config["UPLOAD_FOLDER"], env, folder, sessions)
    if "agentbench" in names:
        pages["agentbench"] = build_agentbench(store, runner, app.config["UPLOAD_FOLDER"], env, folder)
    return pages


def build_dialogue(store, runner, uploads: str, env: dict, folder: Path, sessions: int) -> str:
    """The 6-method dialogue evaluation, judged at random; its result page's path."""
    write_file(folder / "dialogue.jsonl", sessions, METHODS)
    with (folder / "dialogue.jsonl").open("rb") as f:
        upload = ingest(f, "dialogue.jsonl", store, uploads)
    dialogue = create_evaluation(store, upload["id"], environ=env)
    pipeline = runner.job.pipeline  # the evaluation's steps, run here by hand
    kind, job = pipeline.load(dialogue["id"])
    pipeline.plan(kind, job)
    fill_judgments(store, dialogue["id"], sessions, METHODS)
    store.set_result(dialogue["id"], kind.score(job))
    return f"/evaluations/{dialogue['id']}"


def build_agentbench(store, runner, uploads: str, env: dict, folder: Path) -> str:
    """The AgentBench evaluation of 5 agents x 8 tasks, scored; its result page's path."""
    write_outputs(folder / "outputs.zip", 5, 5)
    with (folder / "outputs.zip").open("rb") as f:
        upload = ingest(f, "outputs.zip", store, uploads)
    agentbench = create_evaluation(store, upload["id"], environ=env)
    runner.start(agentbench["id"])
    deadline = time.monotonic() + 120
    while store.get_evaluation(agentbench["id"], with_result=False)["status"] in ("queued", "running"):
        if time.monotonic() > deadline:
            raise SystemExit("the AgentBench evaluation did not finish")
        time.sleep(0.1)
    return f"/evaluations/{agentbench['id']}"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def dashboard(config: dict, log: Path):
    """A dashboard server in a child process on a free port; its base URL."""
    port = free_port()
    with log.open("ab") as out:
        child = subprocess.Popen([sys.executable, "-c", SERVE, json.dumps(config), str(port)], cwd=ROOT,
                                 stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/evaluations", timeout=1).close()
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                if child.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the dashboard did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.1)
        yield url
    finally:
        child.terminate()
        child.wait(timeout=10)


def lighthouse(url: str, out: Path, form_factor: str = "desktop") -> dict:
    """Lighthouse's report of a page (performance and accessibility), on desktop (its desktop preset) or on mobile
    (its default: a phone's screen, a slow 4G network and a 4x slower CPU, simulated)."""
    preset = ["--preset=desktop"] if form_factor == "desktop" else []
    command = [str(LIGHTHOUSE), url, *preset, "--chrome-flags=--headless=new --no-sandbox",
               "--output=json", f"--output-path={out}", "--only-categories=performance,accessibility", "--quiet"]
    for _attempt in range(LAUNCH_ATTEMPTS):
        done = subprocess.run(command, env={**os.environ, "CHROME_PATH": CHROME}, capture_output=True, text=True,
                              timeout=240)
        if done.returncode == 0 and out.exists():
            return json.loads(out.read_text(encoding="utf-8"))
        if not any(marker in done.stderr for marker in LAUNCH_FAILURES):
            break
    raise SystemExit(f"lighthouse failed on {url}:\n{done.stderr[-3000:]}")


def median_run(reports: list[dict]) -> dict:
    """The run of median performance score (Lighthouse's advice against the variance of single runs)."""
    return sorted(reports, key=lambda report: report["categories"]["performance"]["score"])[len(reports) // 2]


def javascript_bytes(report: dict) -> tuple[int, int]:
    """Bytes of JavaScript the page loaded: as transferred (compressed) and uncompressed."""
    requests = report["audits"]["network-requests"]["details"]["items"]
    scripts = [r for r in requests if r.get("resourceType") == "Script"]
    return sum(r.get("transferSize", 0) for r in scripts), sum(r.get("resourceSize", 0) for r in scripts)


def blocking_ms(report: dict) -> float:
    """The Total Blocking Time Lighthouse measured, in milliseconds."""
    return float(report["audits"]["total-blocking-time"]["numericValue"])


def failing_audits(report: dict, category: str) -> list[str]:
    """The audits of a category that cost it points, worst first."""
    refs = [r for r in report["categories"][category]["auditRefs"] if r["weight"]]
    missed = [(r["weight"] * (1 - (report["audits"][r["id"]]["score"] or 0)), r["id"]) for r in refs
              if report["audits"][r["id"]]["score"] is not None and report["audits"][r["id"]]["score"] < 1]
    return [f"{audit} ({report['audits'][audit]['score']:.2f})" for _, audit in sorted(missed, reverse=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--pages", default="dialogue,agentbench", help="which result pages, comma-separated")
    parser.add_argument("--out", type=Path, help="a folder to keep Lighthouse's JSON reports in")
    parser.add_argument("--runs", type=int, default=3, help="Lighthouse runs per page; the median one is reported")
    parser.add_argument("--form-factors", default="mobile,desktop", help="mobile, desktop or both, comma-separated")
    args = parser.parse_args(argv)
    form_factors = [f for f in ("mobile", "desktop") if f in args.form_factors.split(",")]
    if not form_factors:
        parser.error("--form-factors: mobile, desktop or both")
    if not LIGHTHOUSE.exists():
        print(f"SKIP: {LIGHTHOUSE.relative_to(ROOT)} is missing: run `npm ci` in the repository first")
        return 0
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="bench_lighthouse_") as tmp, ExitStack() as servers:
        folder = Path(tmp)
        config = {"DATABASE": str(folder / "db.sqlite"), "UPLOAD_FOLDER": str(folder / "uploads"),
                  "RESULTS_FOLDER": str(folder / "results"), "SECRET_KEY": "bench", "RESUME_ON_START": False,
                  "JUDGE_KEY_FILE": str(folder / "key"), "CELERY_BROKER_URL": "", "DATABASE_URL": None}
        started = time.perf_counter()
        pages = build_evaluations(config, folder, args.sessions, args.pages.split(","))
        made = {"dialogue": f"a {len(METHODS)}-method dialogue evaluation of {args.sessions} sessions x {ROUNDS} rounds",
                "agentbench": "an AgentBench evaluation of 5 agents x 8 tasks"}
        print(f"setup: {' and '.join(made[name] for name in pages)}, in {time.perf_counter() - started:.1f} s")
        after = servers.enter_context(dashboard(config, folder / "after.log"))
        before = servers.enter_context(dashboard({**config, "PLOTLY_JS_FILE": str(FULL_PLOTLY_JS_FILE)},
                                                 folder / "before.log"))
        reports = {}
        # The page as shipped on each form factor, opened at its top and at its charts (an address ending in the
        # first chart's id: the browser scrolls there, and the page loads Plotly and draws what is in view); the full
        # bundle at the charts on desktop only, for the JavaScript it loads.
        measured = [("after", f, view) for f in form_factors for view in VIEWS] + [("before", "desktop", "charts")]
        for name, path in pages.items():
            for when, form_factor, view in measured:
                base = before if when == "before" else after
                address = base + path + (FIRST_CHART[name] if view == "charts" else "")
                runs = [lighthouse(address, (args.out or folder) / f"{name}-{when}-{form_factor}-{view}-{run}.json",
                                   form_factor) for run in range(max(1, args.runs))]
                reports[name, when, form_factor, view] = median_run(runs)

    passed = True
    print(f"{'page':<11} {'Plotly':<8} {'form':<8} {'opened at':<10} {'performance':>22} {'accessibility':>22} "
          f"{'TBT':>8} {'JS transferred':>15} {'JS uncompressed':>16}")
    for (name, when, form_factor, view), report in reports.items():
        scores = {c: report["categories"][c]["score"] for c in TARGETS}
        transferred, uncompressed = javascript_bytes(report)
        cells = [f"{scores[c]:.2f} ({scores[c] / TARGETS[c]:.2f}x of {TARGETS[c]:.2f})" for c in TARGETS]
        print(f"{name:<11} {'full' if when == 'before' else 'partial':<8} {form_factor:<8} {view:<10} {cells[0]:>22} "
              f"{cells[1]:>22} {blocking_ms(report):>5.0f} ms {transferred / 1024:>12.0f} KB "
              f"{uncompressed / 1024:>13.0f} KB")
        if when == "after" and view == "top":  # the page as Lighthouse opens it; at the charts, for information
            for category in TARGETS:
                if scores[category] < TARGETS[category]:
                    passed = False
                    print(f"  {name} ({form_factor}, {view}): {category} {scores[category]:.2f} < "
                          f"{TARGETS[category]:.2f}: " + ", ".join(failing_audits(report, category)[:6]))
    for name in sorted({key[0] for key in reports}):
        full = javascript_bytes(reports[name, "before", "desktop", "charts"])
        partial = javascript_bytes(reports[name, "after", form_factors[-1], "charts"])
        print(f"{name}: JavaScript {partial[0] / full[0]:.2f}x transferred, {partial[1] / full[1]:.2f}x uncompressed "
              f"with the partial Plotly ({partial[0] / 1024:.0f} of {full[0] / 1024:.0f} KB on the wire)")
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

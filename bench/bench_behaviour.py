"""Time and peak memory of the Human-vs-Agent analysis on the full release: 3,980 conversations, upload to result.

    python bench/bench_behaviour.py [--files 3980] [--release PATH]

Reads the release (`--release`: a folder of RecLLMSim's layout, LLM_agent_user/, real_human_user/, human_exp_V2/) or,
without one, builds a folder of that layout and size from the labelled files of ../shared/data/human_vs_agent/labelled:
copies taken round-robin, each varied (a seeded draw changes some behaviour labels to other valid values, the
assistant model, a hallucination flag and the ratings) so that no two are the same. The folder is zipped and, in a
fresh child process, uploaded (pipeline.ingest: validation), evaluated (the thread backend running the evaluations'
job: reading, statistics and the analysis block of every label set and assistant model) and the result page drawn
through the Flask test client.
Prints the time of each step and the child's peak resident memory (ru_maxrss). FAIL when the evaluation does not end
done with every conversation read and analysed, or takes more than MAX_SECONDS, or peaks above MAX_PEAK_MB.
Skips (exit 0) when neither the release nor the shared data is there.
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LABELLED = ROOT.parent / "shared" / "data" / "human_vs_agent" / "labelled"
RELEASE_SIZE = 3980
MAX_SECONDS = 180.0  # the whole analysis, upload to result page, on two shared cores (45 s measured)
MAX_PEAK_MB = 1000  # 308 MB measured
MODELS = ("gpt-4-turbo-preview", "claude-3-7-sonnet-20250219", "gemini-2.0-pro-exp-02-05", "deepseek-v3")


def varied(data: dict, rng: random.Random) -> dict:
    """A copy of one conversation with some labels, the model, a flag and the ratings drawn again."""
    from kinds.conversation.behaviour import DIMENSIONS

    data = json.loads(json.dumps(data))
    for prefix in ("strategy_V", "strategy_human_V"):
        for d in DIMENSIONS:
            final = (data.get(f"{prefix}{d.group}") or {}).get("final")
            if isinstance(final, dict) and d.key in final and rng.random() < 0.3:
                final[d.key] = rng.choice(d.values)
    if "questionnaire" in data:
        data["chat_model"] = rng.choice(MODELS)
    for turn in data["history"]:
        if turn.get("role") == "assistant" and "hallucination" in turn and rng.random() < 0.05:
            turn["hallucination"] = rng.choice(("是", "否", "无法判断")) if isinstance(turn["hallucination"], str) \
                else {"hallucination": rng.random() < 0.5, "memo": ""}
    for key in data.get("rating") or {}:
        data["rating"][key] = rng.choice((0, 1, 2))
    return data


def build(folder: Path, files: int) -> None:
    """A folder of the release's layout holding `files` varied copies of the labelled files."""
    sources = sorted(LABELLED.rglob("*.json"))
    rng = random.Random(20261127)
    for n in range(files):
        path = sources[n % len(sources)]
        rel = path.relative_to(LABELLED)
        target = folder / rel.parent / f"{n}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        data = json.loads(path.read_text(encoding="utf-8"))
        target.write_text(json.dumps(varied(data, rng), ensure_ascii=False), encoding="utf-8")


def zip_folder(folder: Path, target: Path) -> int:
    """Zip every .json under `folder` (paths kept); the number of files."""
    members = sorted(folder.rglob("*.json"))
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in members:
            archive.write(path, str(path.relative_to(folder)))
    return len(members)


def child(folder: Path, archive: Path) -> None:
    """Upload, evaluate and draw the result page in this process; print the times and the peak memory as JSON."""
    from app import create_app
    from kinds import registry
    from pipeline.evaluations import Evaluations, create_evaluation
    from pipeline.ingest import ingest
    from pipeline.thread_backend import ThreadBackend
    from storage.store import Store

    store = Store(folder / "db.sqlite", registry.tables())
    start = time.perf_counter()
    with archive.open("rb") as f:
        upload = ingest(f, archive.name, store, folder / "uploads")
    t_upload = time.perf_counter() - start
    evaluation = create_evaluation(store, upload["id"], environ={})
    runner = ThreadBackend(Evaluations(store, folder / "uploads", folder / "results", lambda: {}))
    start = time.perf_counter()
    runner.run(evaluation["id"])
    t_score = time.perf_counter() - start
    record = store.get_evaluation(evaluation["id"])
    store.close()
    app = create_app({"DATABASE": str(folder / "db.sqlite"), "UPLOAD_FOLDER": str(folder / "uploads"),
                      "RESULTS_FOLDER": str(folder / "results"), "SECRET_KEY": "bench", "RESUME_ON_START": False,
                      "JUDGE_KEY_FILE": str(folder / "key")})
    start = time.perf_counter()
    page = app.test_client().get(f"/evaluations/{evaluation['id']}?labels=human&chat_model=deepseek-v3")
    t_page = time.perf_counter() - start
    block = (record.get("result") or {}).get("analysis") or {}
    print(json.dumps({"upload": t_upload, "score": t_score, "page": t_page, "page_status": page.status_code,
                      "status": record["status"], "error": record.get("error"),
                      "conversations": (record.get("result") or {}).get("input", {}).get("conversations"),
                      "views": len(block.get("views", [])), "label_sets": block.get("label_sets"),
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS (or SKIP), 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=RELEASE_SIZE, help="conversations built (default 3,980)")
    parser.add_argument("--release", type=Path, help="the release's folder, read as it is instead")
    parser.add_argument("--child", nargs=2, metavar=("FOLDER", "ZIP"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]))
        return 0
    if args.release is None and not LABELLED.exists():
        print(f"SKIP: no --release and {LABELLED} is absent")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench_behaviour_") as tmp:
        folder = Path(tmp)
        source = args.release
        if source is None:
            source = folder / "release"
            build(source, args.files)
        archive = folder / "RecLLMSim.zip"
        files = zip_folder(source, archive)
        run = subprocess.run([sys.executable, __file__, "--child", str(folder), str(archive)], cwd=ROOT,
                             capture_output=True, text=True, check=False)
        if run.returncode:
            print(run.stderr[-3000:], file=sys.stderr)
            print("FAIL")
            return 1
        m = json.loads(run.stdout.strip().splitlines()[-1])
        size_mb = archive.stat().st_size / 1e6
    total = m["upload"] + m["score"] + m["page"]
    complete = m["status"] == "done" and m["conversations"] == files and m["views"] >= 1 and m["page_status"] == 200
    print(f"{files} conversations ({'the release' if args.release else 'built from the labelled files'}), ZIP "
          f"{size_mb:.1f} MB; label sets {m['label_sets']}, {m['views']} views (all + each assistant model)")
    print(f"upload (validation) {m['upload']:.1f} s, evaluation (read, statistics, analysis) {m['score']:.1f} s, "
          f"result page {m['page']:.2f} s: total {total:.1f} s (limit {MAX_SECONDS:.0f} s)")
    print(f"peak memory {m['peak_mb']:.0f} MB (limit {MAX_PEAK_MB} MB); evaluation {m['status']}"
          f"{': ' + m['error'] if m['error'] else ''}")
    passed = complete and total <= MAX_SECONDS and m["peak_mb"] <= MAX_PEAK_MB
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark importing a full-size Human-vs-Agent ZIP: about 4,000 conversation files, 60 MB or more unpacked.

    python bench/bench_conversation.py [--files 4000] [--mb 60]

Builds the ZIP from the real sample files in ../shared/data/human_vs_agent/sample (copies, padded when needed, in the
dataset's folder layout), then measures in one run
(a) kinds.conversation.read_any (unzip, decode, validate, map labels) against the bare work of
    unzipping every member and json.loads-ing it: the ratio must stay <= 3;
(b) statistics() on the imported conversations, as a share of the import time (reported);
(c) that the compressed ZIP fits the default upload limit (app.DEFAULT_UPLOAD_MB), so the dataset imports in one upload.
Exits 1 when a check fails; skips (exit 0) when the shared data is absent.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import DEFAULT_UPLOAD_MB  # noqa: E402
from kinds.conversation import format as conversation  # noqa: E402
from kinds.conversation.result import statistics  # noqa: E402

SAMPLE = ROOT.parent / "shared" / "data" / "human_vs_agent" / "sample"
MAX_RATIO = 3.0
UPLOAD_LIMIT = DEFAULT_UPLOAD_MB * 1024 * 1024


def build_zip(files: int, target_mb: float) -> tuple[bytes, int]:
    """A ZIP of `files` conversations copied round-robin from the sample, padded to about target_mb unpacked."""
    sources = sorted(SAMPLE.rglob("*.json"))
    docs = [(path.relative_to(SAMPLE), json.loads(path.read_text(encoding="utf-8"))) for path in sources]
    unpacked = sum(len(json.dumps(doc, ensure_ascii=False).encode()) for _p, doc in docs) / len(docs) * files
    pad = max(0, int((target_mb * 1024 * 1024 - unpacked) / files))
    buffer = io.BytesIO()
    total = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for n in range(files):
            rel, doc = docs[n % len(docs)]
            doc = {**doc, "note": "x" * pad}
            data = json.dumps(doc, ensure_ascii=False).encode("utf-8")
            total += len(data)
            archive.writestr(str(rel.parent / f"{n}.json"), data)
    return buffer.getvalue(), total


def bare(raw: bytes) -> int:
    """Unzip every member and parse it: the floor any importer pays."""
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        return sum(len(json.loads(archive.read(info))["history"]) for info in archive.infolist())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4000)
    parser.add_argument("--mb", type=float, default=60.0)
    args = parser.parse_args()
    if not SAMPLE.exists():
        print(f"SKIP: {SAMPLE} is absent")
        return 0
    raw, unpacked = build_zip(args.files, args.mb)
    start = time.perf_counter()
    bare(raw)
    t_bare = time.perf_counter() - start
    start = time.perf_counter()
    report, conversations = conversation.read_any(io.BytesIO(raw), "RecLLMSim.zip")
    t_import = time.perf_counter() - start
    start = time.perf_counter()
    statistics(conversations)
    t_stats = time.perf_counter() - start
    ratio = t_import / t_bare
    ok = report.ok and len(conversations) == args.files and ratio <= MAX_RATIO and len(raw) <= UPLOAD_LIMIT
    print(f"files {args.files}, unpacked {unpacked / 1e6:.1f} MB, ZIP {len(raw) / 1e6:.1f} MB "
          f"(upload limit {UPLOAD_LIMIT / 1e6:.0f} MB)")
    print(f"import {t_import:.2f} s, bare unzip+json.loads {t_bare:.2f} s: ratio {ratio:.2f} (limit {MAX_RATIO})")
    print(f"statistics {t_stats:.2f} s = {t_stats / t_import:.2f} x the import")
    print("PASS" if ok else f"FAIL (report ok={report.ok}, conversations={len(conversations)})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark dialogue validation: speed against bare json.loads, and memory against file size.

    python bench/bench_validate.py [--mb 50] [--small-mb 5] [--repeat 3]

Generates realistic dialogue JSONL files in a temporary directory, then checks that
(a) validate() runs at >= 1/3 the speed of reading the lines and json.loads-ing each one, and
(b) validate()'s peak traced memory does not grow with the file size, and
(c) a real dashboard server's peak resident memory grows by far less than the file when the big file
    is uploaded after the small one (upload streamed over HTTP; stored and validated line by line).
Exits 1 when a check fails.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kinds.dialogue.format import validate  # noqa: E402

METHODS = ["Base", "CoT", "RAG", "Ours"]
MIN_SPEED_RATIO = 1 / 3
MB = 1024 * 1024

_EN = ("I just got back from a long hike and the views of the mountains were amazing, "
       "although my legs are really tired now. ", "Do you have any tips for keeping a sourdough "
       "starter alive while travelling for two weeks? ", "Honestly the new project at work is "
       "stressing me out a little, but I think the team will pull through. ", "That sounds great! "
       "Tell me more about the trail, was it crowded on a weekend like this? ")
_ZH = ("今天下班以后去公园跑了五公里，感觉整个人都轻松了很多。", "我最近在学做川菜，麻婆豆腐已经做得有模有样了。",
       "周末想带猫去打疫苗，不过它一进航空箱就开始叫。", "你觉得我应该先学吉他还是先学钢琴？")


def _text(rng: random.Random, low: int, high: int) -> str:
    """A message of roughly low..high characters, mostly English with some Chinese."""
    target = rng.randint(low, high)
    parts: list[str] = []
    size = 0
    while size < target:
        part = rng.choice(_ZH if rng.random() < 0.3 else _EN)
        parts.append(part)
        size += len(part)
    return "".join(parts)


def _session(rng: random.Random, number: int) -> dict:
    rounds = []
    for k in range(1, rng.randint(5, 10) + 1):
        rounds.append({
            "round": k,
            "user_message": _text(rng, 100, 300),
            "responses": {method: _text(rng, 200, 500) for method in METHODS},
        })
    return {
        "session_id": f"user_{number:06d}_session_001",
        "user_profile": _text(rng, 200, 400),
        "user_personality": _text(rng, 100, 200),
        "rounds": rounds,
    }


def generate(path: Path, megabytes: float, seed: int = 7) -> int:
    """Write a dialogue JSONL file of about `megabytes` MB; return its size in bytes."""
    rng = random.Random(seed)
    target = int(megabytes * MB)
    size = 0
    number = 0
    with path.open("wb") as out:
        while size < target:
            number += 1
            line = (json.dumps(_session(rng, number), ensure_ascii=False) + "\n").encode("utf-8")
            out.write(line)
            size += len(line)
    return size


def baseline(path: Path) -> int:
    """Read the lines and json.loads each one: the floor any validator has to pay."""
    count = 0
    with path.open("rb") as stream:
        for line in stream:
            if line.strip():
                json.loads(line)
                count += 1
    return count


def run_validate(path: Path) -> dict:
    with path.open("rb") as stream:
        report = validate(stream)
    if not report.ok:
        raise SystemExit(f"generated file did not validate: {report.problems[:3]}")
    return report.summary


def best_time(function, path: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function(path)
        best = min(best, time.perf_counter() - start)
    return best


def peak_memory(path: Path) -> int:
    tracemalloc.start()
    try:
        run_validate(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


SERVER = """
import sys
from app import create_app
folder = sys.argv[1]
app = create_app({"DATABASE": folder + "/db.sqlite", "UPLOAD_FOLDER": folder + "/uploads",
                  "RESULTS_FOLDER": folder + "/results", "MAX_CONTENT_LENGTH": 1 << 30})
app.run(port=int(sys.argv[2]), threaded=True, use_reloader=False)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _peak_rss(pid: int) -> int:
    """The process's peak resident memory (VmHWM) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def _post_file(url: str, path: Path) -> int:
    """POST a file as multipart without reading it into memory; returns the HTTP status."""
    boundary = "benchboundary7d3f"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path.name}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def body():
        yield head
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                yield chunk
        yield tail

    request = urllib.request.Request(url, data=body(), method="POST", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Content-Length": str(len(head) + path.stat().st_size + len(tail))})
    with urllib.request.urlopen(request, timeout=300) as response:
        return response.status


def server_memory_growth(small: Path, big: Path, folder: Path) -> tuple[int, int]:
    """Peak RSS of a real server after uploading the small file, then after the big one."""
    port = _free_port()
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(folder), str(port)], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/api/uploads"
        if _post_file(url, small) != 201:
            raise SystemExit("small upload failed")
        after_small = _peak_rss(proc.pid)
        if _post_file(url, big) != 201:
            raise SystemExit("big upload failed")
        return after_small, _peak_rss(proc.pid)
    finally:
        proc.terminate()
        proc.wait(10)


def verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50, help="size of the big file (MB)")
    parser.add_argument("--small-mb", type=float, default=5, help="size of the small file (MB)")
    parser.add_argument("--repeat", type=int, default=3, help="timing runs; the best is kept")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench_validate_") as tmp:
        big, small = Path(tmp) / "big.jsonl", Path(tmp) / "small.jsonl"
        big_size = generate(big, args.mb)
        small_size = generate(small, args.small_mb)
        summary = run_validate(big)
        print(f"file: {big_size / MB:.1f} MB, {summary['sessions']} sessions, {summary['rounds']} rounds, "
              f"methods {summary['methods']}")

        base_s = best_time(baseline, big, args.repeat)
        val_s = best_time(run_validate, big, args.repeat)
        ratio = base_s / val_s  # speed(validate) / speed(baseline)
        speed_ok = ratio >= MIN_SPEED_RATIO
        print(f"(a) baseline read+json.loads: {base_s:.3f} s ({big_size / MB / base_s:.0f} MB/s)")
        print(f"(b) validate():               {val_s:.3f} s ({big_size / MB / val_s:.0f} MB/s)")
        print(f"    speed ratio validate/baseline = {ratio:.2f} (need >= {MIN_SPEED_RATIO:.2f}): "
              f"{verdict(speed_ok)}")

        peak_big, peak_small = peak_memory(big), peak_memory(small)
        limit = 2 * peak_small + 2 * MB
        memory_ok = peak_big < limit and peak_big < big_size / 10
        print(f"(c) peak memory of validate(): {peak_big / MB:.2f} MB for {big_size / MB:.1f} MB, "
              f"{peak_small / MB:.2f} MB for {small_size / MB:.1f} MB "
              f"(need < {limit / MB:.2f} MB and < 10% of the file): {verdict(memory_ok)}")

        after_small, after_big = server_memory_growth(small, big, Path(tmp) / "server")
        growth = after_big - after_small
        server_ok = growth < big_size / 10
        print(f"(d) server peak RSS: {after_small / MB:.1f} MB after the {small_size / MB:.0f} MB upload, "
              f"{after_big / MB:.1f} MB after the {big_size / MB:.0f} MB upload: growth {growth / MB:.1f} MB "
              f"(need < 10% of the file, {big_size / MB / 10:.1f} MB): {verdict(server_ok)}")

    passed = speed_ok and memory_ok and server_ok
    print(verdict(passed))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

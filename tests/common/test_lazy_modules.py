"""Lazily loaded modules under concurrent first use: no thread ever sees a half-imported module.

Each case runs in a fresh interpreter, where the module is really not imported yet.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
import uuid

import pytest

from tests.conftest import ROOT, session_line
from tests.services import free_port, wait_for_port

THREADS = 16

RACE = textwrap.dedent("""
    import sys, threading
    sys.path[:0] = [{root!r}, {extra!r}]
    from common.lazy_modules import lazy
    module = lazy({name!r})
    assert {name!r} not in sys.modules or sys.modules[{name!r}] is not module
    barrier = threading.Barrier({threads})
    errors = []
    def read():
        barrier.wait()
        try:
            getattr(module, {attribute!r})
        except Exception as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=read) for _ in range({threads})]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(len(errors), errors[:1])
""")


def race(tmp_path, name: str, attribute: str) -> str:
    """What a fresh interpreter prints after THREADS threads read `name.attribute` at the same moment."""
    code = RACE.format(root=str(ROOT), extra=str(tmp_path), name=name, attribute=attribute, threads=THREADS)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_threads_reading_a_slow_module_at_once_all_see_it_whole(tmp_path):
    # The module's last line runs 0.3 s after its first: a thread that saw it half-run would miss VALUE.
    (tmp_path / "slow_module.py").write_text("import time\ntime.sleep(0.3)\nVALUE = 42\n")
    assert race(tmp_path, "slow_module", "VALUE") == "0 []"


def test_threads_reading_pandas_at_once_all_see_it_whole(tmp_path):
    assert race(tmp_path, "pandas", "DataFrame") == "0 []"


ARROW = textwrap.dedent("""
    import io, sys, threading, time
    sys.path[:0] = [{root!r}]
    from common.lazy_modules import lazy
    from kinds.mobility.upload_files import _read_parquet
    pandas = lazy("pandas")
    if {alone}:
        pandas.DataFrame({{"a": ["x", "y"]}}).groupby("a").size()
        import pandas.compat.pyarrow
        print(pandas.compat.pyarrow.HAS_PYARROW, "pyarrow" in sys.modules)
    else:  # a Parquet upload arriving while pandas is first imported (0.3 s or more)
        importing = threading.Thread(target=lambda: pandas.DataFrame)
        importing.start()
        time.sleep(0.05)
        report, data = _read_parquet(io.BytesIO(b"not parquet"))
        importing.join()
        print(data is None, report.problems[0].message)
""")


def arrow(alone: bool) -> str:
    """What a fresh interpreter prints after loading pandas (`alone`), or reading a Parquet file as it does."""
    done = subprocess.run([sys.executable, "-c", ARROW.format(root=str(ROOT), alone=alone)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_pandas_is_loaded_without_pyarrow():
    assert arrow(alone=True) == "False False"  # pandas runs as where pyarrow is not installed, and never loads it


def test_a_parquet_file_read_while_pandas_is_loaded_still_finds_pyarrow():
    refused, message = arrow(alone=False).split(" ", 1)
    assert refused == "True" and message.startswith("The Parquet file cannot be read") and "module" not in message


def test_a_missing_module_is_named_at_once():
    from common.lazy_modules import lazy
    with pytest.raises(ModuleNotFoundError, match="no_such_module_here"):
        lazy("no_such_module_here")


def _post(url: str, body: bytes, content_type: str) -> dict:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_two_evaluations_started_at_once_on_a_fresh_server_both_finish(tmp_path, judge_server):
    """`python app.py` that has run nothing yet; two API calls start two evaluations of one file together."""
    port = free_port()
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(port),
           "DATABASE": str(tmp_path / "db.sqlite"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
           "RESULTS_FOLDER": str(tmp_path / "results"), "SECRET_KEY": "test", "CELERY_BROKER_URL": "",
           "DATABASE_URL": "", "JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test",
           "JUDGE_MODEL": "judge-test", "JUDGE_CONCURRENCY": "4", "JUDGE_MAX_RETRIES": "0"}
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, server, "python app.py")
        base = f"http://127.0.0.1:{port}"
        boundary = uuid.uuid4().hex
        data = "".join(json.dumps(session_line(f"s{i}")) + "\n" for i in range(6)).encode()
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"d.jsonl\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        upload_id = _post(f"{base}/api/uploads", body, f"multipart/form-data; boundary={boundary}")["id"]

        barrier, started = threading.Barrier(2), []

        def start() -> None:
            barrier.wait()
            started.append(_post(f"{base}/api/evaluations", json.dumps({"upload_id": upload_id}).encode(),
                                 "application/json")["id"])

        threads = [threading.Thread(target=start) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(set(started)) == 2

        deadline = time.monotonic() + 60
        for evaluation_id in started:
            while True:
                with urllib.request.urlopen(f"{base}/api/evaluations/{evaluation_id}", timeout=10) as response:
                    state = json.loads(response.read())
                if state["status"] not in ("queued", "running") or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert state["status"] == "done", state.get("error")
            assert state["progress"]["done"] == state["progress"]["total"] == 6 * 3 * 2 * 2
            assert state["progress"]["failed"] == 0
    finally:
        server.terminate()
        server.wait(20)

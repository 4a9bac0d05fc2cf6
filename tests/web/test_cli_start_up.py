"""What a `flask --app app` process loads and keeps: only what its command needs (issue 42).

Each case runs the command as a user does, in a process of its own, with Python's -X importtime, which lists every
module the process imports.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, jsonl, marked, session_line


def _imported(stderr: str) -> set[str]:
    """The modules -X importtime says a process imported, and the packages of each. A module that
    common/lazy_modules.py loads (importlib.import_module) has no line of its own, only the modules it imports."""
    names = {line.split("|")[2].strip() for line in stderr.splitlines()
             if line.startswith("import time:") and line.count("|") == 2 and "self [us]" not in line}
    return {".".join(name.split(".")[:n]) for name in names for n in range(1, name.count(".") + 2)}


def _flask(args: list[str], tmp_path, environ: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "INSTANCE_PATH": str(tmp_path / "instance"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
           "RESULTS_FOLDER": str(tmp_path / "results"), "CELERY_BROKER_URL": "", "DATABASE_URL": "", **environ}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "flask", "--app", "app", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_command_that_scores_nothing_starts_without_numpy(tmp_path):
    done = _flask(["rubrics", "list"], tmp_path, {})
    assert "personasteer" in done.stdout
    assert not {"numpy", "pandas", "scipy", "openai", "aiohttp", "jsonschema"} & _imported(done.stderr)


def test_scoring_a_dialogue_file_loads_neither_the_openai_sdk_nor_scipy_stats_nor_pandas(tmp_path, judge_server, judge_env):
    source = tmp_path / "log.jsonl"
    source.write_bytes(jsonl(*(marked(session_line(f"s{i}", rounds=3, methods=("A", "B", "C")), f"(session {i}" + " and more" * i + ")")
                               for i in range(8))))
    done = _flask(["score", str(source), "--out", str(tmp_path / "result.json")], tmp_path, judge_env)
    imported = _imported(done.stderr)
    assert "aiohttp" in imported  # the judge did run here
    assert not {"openai", "httpx2", "scipy.stats", "jsonschema", "pandas"} & imported
    result = json.loads((tmp_path / "result.json").read_text("utf-8"))
    assert result["judge"]["calls"] == 8 * 3 * 3 * 2
    # the paired t-tests and the length bias' interval and rank correlation are there, computed without scipy.stats
    assert all(isinstance(c["p_value"], float) for c in result["comparisons"])
    assert isinstance(result["length_bias"]["spearman"], float)
    assert result["length_bias"]["differences"]["B"]["ci95"] is not None


def test_a_rerun_answered_from_the_cache_does_not_load_the_http_client(tmp_path, judge_server, judge_env):
    source = tmp_path / "log.jsonl"
    source.write_bytes(jsonl(*(session_line(f"s{i}", rounds=2, methods=("A", "B")) for i in range(3))))
    command = ["score", str(source), "--out", str(tmp_path / "result.json")]
    first = _flask(command, tmp_path, judge_env)
    again = _flask(command, tmp_path, judge_env)
    assert "aiohttp" in _imported(first.stderr) and "aiohttp" not in _imported(again.stderr)
    judge = json.loads((tmp_path / "result.json").read_text("utf-8"))["judge"]
    assert (judge["calls"], judge["cache_hits"]) == (0, 3 * 2 * 2 * 2)


# flask's own entry point, reporting at exit the threads of numpy's OpenBLAS (threadpoolctl reads them from the library)
WITH_BLAS_REPORT = ("import atexit, sys\n"
                    "def report():\n"
                    "    from threadpoolctl import threadpool_info\n"
                    "    print('blas', [p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'],"
                    " file=sys.stderr)\n"
                    "atexit.register(report)\n"
                    "from flask.cli import main\n"
                    "sys.argv[0] = 'flask'\n"
                    "main()\n")


@pytest.mark.parametrize("own, threads", [(None, 1), ("2", 2)])
def test_scoring_runs_numpys_blas_on_one_thread_unless_told_otherwise(tmp_path, judge_server, judge_env, own, threads):
    source = tmp_path / "log.jsonl"
    source.write_bytes(jsonl(*(marked(session_line(f"s{i}", rounds=2, methods=("A", "B")), f"(session {i})")
                               for i in range(3))))
    env = {**os.environ, "INSTANCE_PATH": str(tmp_path / "instance"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
           "RESULTS_FOLDER": str(tmp_path / "results"), "CELERY_BROKER_URL": "", "DATABASE_URL": "", **judge_env}
    env.pop("OPENBLAS_NUM_THREADS", None)
    if own:
        env["OPENBLAS_NUM_THREADS"] = own
    done = subprocess.run([sys.executable, "-c", WITH_BLAS_REPORT, "--app", "app", "score", str(source), "--out",
                           str(tmp_path / "result.json")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = done.stderr.splitlines()[-1]  # numpy's OpenBLAS and scipy's
    assert line.startswith("blas ") and set(json.loads(line[5:])) == {threads}, line
    assert json.loads((tmp_path / "result.json").read_text("utf-8"))["judge"]["calls"] == 3 * 2 * 2 * 2


# flask's own entry point, reporting at exit the objects the garbage collector keeps frozen and those it would still go
# through on the way out
WITH_GC_REPORT = ("import atexit, gc, sys\n"
                  "atexit.register(lambda: print('gc', gc.get_freeze_count(), len(gc.get_objects()), gc.get_threshold()[0],"
                  " file=sys.stderr))\n"
                  "from flask.cli import main\n"
                  "sys.argv[0] = 'flask'\n"
                  "main()\n")


def test_scoring_leaves_the_start_up_heap_and_then_the_runs_out_of_the_garbage_collectors_rounds(
        tmp_path, judge_server, judge_env):
    source = tmp_path / "log.jsonl"
    source.write_bytes(jsonl(*(marked(session_line(f"s{i}"), f"(session {i})") for i in range(3))))
    env = {**os.environ, "INSTANCE_PATH": str(tmp_path / "instance"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
           "RESULTS_FOLDER": str(tmp_path / "results"), "CELERY_BROKER_URL": "", "DATABASE_URL": "", **judge_env}
    done = subprocess.run([sys.executable, "-c", WITH_GC_REPORT, "--app", "app", "score", str(source), "--out",
                           str(tmp_path / "result.json")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (report,) = [line.split() for line in done.stderr.splitlines() if line.startswith("gc ")]
    frozen, tracked, young = map(int, report[1:])
    assert frozen > 50_000  # the app, its kinds and libraries, and what the run loaded
    assert tracked < frozen / 100  # the interpreter's last collection has next to nothing to go through
    assert young == 10_000  # young collections spaced for judging (Python's default: 700)
    assert json.loads((tmp_path / "result.json").read_text("utf-8"))["judge"]["calls"] == 3 * 3 * 2 * 2


BUILD_TWICE = ("import gc\n"
               "from app import create_app\n"
               "create_app()\n"
               "first = gc.get_freeze_count()\n"
               "create_app()\n"
               "print(first, gc.get_freeze_count())\n")


def test_the_first_app_a_process_builds_leaves_the_garbage_collectors_rounds_and_only_the_first(tmp_path):
    env = {**os.environ, "INSTANCE_PATH": str(tmp_path / "instance"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
           "RESULTS_FOLDER": str(tmp_path / "results"), "CELERY_BROKER_URL": "", "DATABASE_URL": ""}
    done = subprocess.run([sys.executable, "-c", BUILD_TWICE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = map(int, done.stdout.split())
    assert first > 50_000  # the app, its kinds and the libraries they imported
    # a second app (tests build hundreds) stays in the collector's care, so that its garbage is collected: frozen,
    # its objects would have added some 10,000 more
    assert second < first + 1_000


MODELS_BUILT = ("from pydantic import BaseModel\n"
                "from app import create_app\n"
                "app = create_app()\n"
                "def models(cls):\n"
                "    for sub in cls.__subclasses__():\n"
                "        yield sub\n"
                "        yield from models(sub)\n"
                "ours = {m for m in models(BaseModel) if m.__module__.split('.')[0] in ('web', 'common', 'kinds')\n"
                "        and not m.__pydantic_generic_metadata__['parameters']}  # not a generic base\n"
                "print(len(ours), sum(m.__pydantic_complete__ for m in ours))\n"
                "answer = app.test_client().post('/api/evaluations', json={'upload_id': 3})\n"
                "print(answer.status_code, answer.get_json()['error'])\n")


def test_the_apis_request_and_answer_models_are_built_when_first_used_not_at_start(tmp_path):
    env = {**os.environ, "INSTANCE_PATH": str(tmp_path / "instance"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
           "RESULTS_FOLDER": str(tmp_path / "results"), "CELERY_BROKER_URL": "", "DATABASE_URL": "",
           "AUTH": "off"}
    done = subprocess.run([sys.executable, "-c", MODELS_BUILT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    counts, answer = done.stdout.splitlines()
    models, built = map(int, counts.split())
    assert models > 50 and built == 0  # pydantic builds a model's validator at its first use (defer_build)
    assert answer.startswith("400 ") and "upload_id" in answer  # and the first request is checked as before

"""docs/ratings.md against the code: its example files read as it says (the mean it works out by hand, the problem it
quotes), and its commands run as written: the CLI's, then curl and the Python example against a running dashboard,
judged by the local judge server."""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

from kinds import registry
from kinds.dialogue import human_file, rating_store
from storage.store import Store
from tests.conftest import ROOT
from tests.doc_commands import DOCS, commands, section
from tests.services import free_port
from tests.test_docs_commands import Server, _environment, _run

PAGE = DOCS / "ratings.md"
METHODS = ["Base", "PersonaSteer"]


def example(language: str) -> str:
    [block] = re.findall(rf"^```{language}\n(.*?)^```", section(PAGE, "The file"), flags=re.S | re.M)
    return block


def cells() -> set[tuple[str, int]]:
    sessions = [json.loads(line) for line in (ROOT / "sample_data.jsonl").read_text(encoding="utf-8").splitlines()]
    return {(s["session_id"], r["round"]) for s in sessions for r in s["rounds"]}


def test_the_example_files_read_as_the_page_says():
    report, people = human_file.read(io.BytesIO(example("csv").encode()), "people.csv", cells(), METHODS)
    assert report.ok and report.summary["raters"] == ["alice", "bob"] and len(people) == 8
    report, carol = human_file.read(io.BytesIO(example("json").encode()), "carol.jsonl", cells(), METHODS,
                                    rater="carol")
    assert report.ok and [r["rater"] for r in carol] == ["carol", "carol"] and all(r["total"] is None for r in carol)
    assert human_file.read(io.BytesIO(example("json").encode()), "carol.jsonl", cells(), METHODS)[1][0]["rater"] \
        == "carol.jsonl"  # without --rater: the file's name
    # the worked mean: (55 + 61) / 2, and the verdict 0 against 1 against 0 (a tie without carol)
    nurse = ("en-nurse-marathon-01", 1, "Base")
    mean = next(r for r in rating_store.by_reply([*people, *carol]) if (r["session_id"], r["round"], r["method"]) ==
                nurse)
    assert (mean["total"], mean["verdict"], mean["raters"]) == (58.0, 0, 3)
    text = " ".join(section(PAGE, "The file").split())
    assert "(55 + 61) / 2 = 58 and the verdict 0" in text
    assert next(r for r in rating_store.by_reply(people) if r["method"] == "Base")["verdict"] is None
    # the problem the page quotes: line 3's total made 500
    broken = example("csv").replace("alice,en-nurse-marathon-01,1,Base,55,", "alice,en-nurse-marathon-01,1,Base,500,")
    report, _rows = human_file.read(io.BytesIO(broken.encode()), "people.csv", cells(), METHODS)
    [problem] = report.problems
    quoted = re.search(r"\(`(line 3 total: [^`]+)`\)", text).group(1)
    assert f"line {problem.line} {problem.path}: {problem.message}" == quoted


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "sample_data.jsonl", work)
    (work / "people.csv").write_text(example("csv"), encoding="utf-8")
    (work / "carol.jsonl").write_text(example("json"), encoding="utf-8")
    return work


def judge(judge_server) -> dict:
    return {"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
            "JUDGE_MAX_RETRIES": "0"}


def test_the_commands_run_as_written(tmp_path, judge_server):
    work = workspace(tmp_path)
    env = _environment(tmp_path, **judge(judge_server))
    steps = commands(PAGE, "Commands")
    assert len(steps) == 5
    score, add, add_carol, export, export_carol = steps
    evaluation_id = re.search(r"^evaluation (\w+)$", _run(score, work, env).stderr, flags=re.M).group(1)
    done = [_run(step.replace("EVAL_ID", evaluation_id), work, env) for step in (add, add_carol, export,
                                                                                    export_carol)]
    lines = done[0].stdout.splitlines()
    assert lines[0] == f"Attached 8 ratings by alice, bob to evaluation {evaluation_id}; it has 8 ratings of 6 " \
                       "replies now."
    assert lines[1] == "Agreement with people, over 6 replies in 3 sessions:"
    assert re.fullmatch(r"  judge-test: total: Spearman's rho \S+( \[\S+, \S+\])?; yes/no: Cohen's kappa .+",
                        lines[2])
    assert done[1].stdout.startswith(f"Attached 2 ratings by carol to evaluation {evaluation_id}; it has 10 ratings "
                                     "of 7 replies now.\n")
    exported = (work / "all-ratings.csv").read_text(encoding="utf-8").splitlines()
    assert exported[0] == "rater,session_id,round,method,total,binary,style,content,naturalness,personalization," \
                          "conversation"
    assert [row.split(",")[0] for row in exported[1:]] == ["alice"] * 4 + ["bob"] * 4 + ["carol"] * 2
    assert exported[1] == "alice,en-nurse-marathon-01,1,PersonaSteer,82.0,1,17.0,,,,"
    assert done[2].stderr == "10 ratings written to all-ratings.csv\n"
    assert [json.loads(line) for line in done[3].stdout.splitlines()] == [
        {"rater": "carol", **json.loads(line)} for line in example("json").splitlines()]
    store = Store(env["DATABASE"], registry.tables())
    nurse = next(r for r in rating_store.human_ratings(store, evaluation_id)
                 if (r["session_id"], r["round"], r["method"]) == ("en-nurse-marathon-01", 1, "Base"))
    assert (nurse["total"], nurse["verdict"]) == (58.0, 0)
    assert store.get_evaluation(evaluation_id)["result"]["agreement"]["human"]["ratings"] == 7
    store.close()


def test_the_api_and_python_examples_run_as_written(tmp_path, judge_server):
    work = workspace(tmp_path)
    port = free_port()
    env = _environment(tmp_path, PORT=str(port), **judge(judge_server))
    [python] = re.findall(r"^```python\n(.*?)^```", section(PAGE, "From Python"), flags=re.S | re.M)
    steps = [step.replace("curl ", "curl -sS --fail-with-body ", 1) for step in commands(PAGE, "The API")]
    assert len(steps) == 5
    with Server("python app.py", env, port) as server:
        ran = subprocess.run([sys.executable, "-c", python], cwd=work, text=True, capture_output=True, timeout=300,
                             env={**env, "PSB_URL": server.base, "PYTHONPATH": str(ROOT)})
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.splitlines() == ["8 ratings by alice, bob", "alice 4", "bob 4", "carol 2"]
        assert len((work / "all-ratings.jsonl").read_text(encoding="utf-8").splitlines()) == 10
        with urllib.request.urlopen(f"{server.base}/api/evaluations", timeout=10) as answer:
            [evaluation] = json.loads(answer.read())
        outputs = [_run(step.replace("http://127.0.0.1:5000", server.base).replace("<id>", evaluation["id"]),
                        work, env).stdout for step in steps]
    post, post_carol, listed, download, delete = outputs
    assert json.loads(post)["attached"] == 8 and json.loads(post)["raters"] == ["alice", "bob"]
    assert json.loads(post_carol)["raters"] == ["carol"] and json.loads(post_carol)["ratings"] == 10
    assert [(r["rater"], r["ratings"]) for r in json.loads(listed)["raters"]] == [("alice", 4), ("bob", 4),
                                                                                  ("carol", 2)]
    assert download == "" and (work / "all-ratings.csv").read_text(encoding="utf-8").startswith("rater,session_id")
    assert json.loads(delete)["ratings"] == 8 and json.loads(delete)["rescore"]["status"] in ("queued", "running",
                                                                                               "done")

"""docs/simulation.md's commands, run as written against the local server playing the simulator and the methods."""
from __future__ import annotations

import json
import re
import shutil

from tests.conftest import ROOT
from tests.doc_commands import DOCS, commands
from tests.simulate.support import Recorder
from tests.test_docs_commands import _environment, _run

SIMULATION = DOCS / "simulation.md"


def test_the_command_line_section_runs_as_written(tmp_path, judge_server):
    recorder = Recorder(judge_server)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "sample_data.jsonl", work)
    (work / "ours-prompt.txt").write_text("You adapt to the user.", encoding="utf-8")
    endpoints = {"local": {"base_url": judge_server.url, "models": ["Qwen2.5-7B-Instruct", "my-steered-model"]}}
    env = _environment(tmp_path, JUDGE_BASE_URL=judge_server.url, JUDGE_API_KEY="sk-test", JUDGE_MODEL="judge-test",
                       JUDGE_ENDPOINTS=json.dumps(endpoints), JUDGE_MAX_RETRIES="0")
    personas = [json.loads(line)["session_id"] for line in (ROOT / "sample_data.jsonl").read_text().splitlines()]

    shared, independent = commands(SIMULATION, "Command line")
    done = _run(shared, work, env)
    assert re.search(r"^simulation \w+$", done.stderr, flags=re.M)
    sessions = [json.loads(line) for line in (work / "simulated.jsonl").read_text().splitlines()]
    assert [s["session_id"] for s in sessions] == personas
    assert all([r["round"] for r in s["rounds"]] == [1, 2, 3] and all(
        r["responses"].keys() == {"Base", "Ours"} for r in s["rounds"]) for s in sessions)
    asked = len(recorder.requests)
    assert asked == len(personas) * 3 * 3  # personas x rounds x (simulator + two methods)

    done = _run(independent, work, env)
    for method in ("Base", "Ours"):
        sessions = [json.loads(line) for line in (work / f"simulated-{method}.jsonl").read_text().splitlines()]
        assert [s["session_id"] for s in sessions] == personas
        assert all(r["responses"].keys() == {method} for s in sessions for r in s["rounds"])
    assert len(re.findall(r"^evaluation \w+$", done.stderr, flags=re.M)) == 2
    # the report: each speaker's calls beside the estimate; the judge's, counted at the server, are all it estimated
    # (personas x rounds x two files of one method x fine and binary)
    judged = [model for model, _messages in recorder.requests[asked:] if model == "judge-test"]
    assert len(judged) == len(personas) * 3 * 2 * 2
    assert f"Judge: judge-test (judge-test@default): {len(judged):,} calls (estimated {len(judged):,})," in done.stderr
    assert re.search(r"^Ours \(my-steered-model@local\): [\d,]+ calls \(estimated %d\)," % (len(personas) * 3),
                     done.stderr, flags=re.M)
    ours = [m for model, m in recorder.requests[asked:] if model == "my-steered-model"]
    assert ours and all(m[0] == {"role": "system", "content": "You adapt to the user."} for m in ours)

"""docs/leaderboard.md against the code: its commands run as written (the CLI's, then curl against a running
dashboard, judged by the local judge server), its dataset id worked out as it says, and its answers read back against
the runs' own result documents."""
from __future__ import annotations

import hashlib
import json
import shutil

from tests.conftest import ROOT
from tests.doc_commands import DOCS, commands, section
from tests.services import free_port
from tests.test_docs_commands import Server, _environment, _run

PAGE = DOCS / "leaderboard.md"


def test_the_dataset_id_is_worked_out_as_the_page_says():
    text = " ".join(section(PAGE, "Datasets").split())
    assert '`sha256("dialogue\\nsamples\\ns0\\ns1\\ns2\\ns3")`' in text and "first 16 hex digits" in text


def test_the_commands_run_as_written(tmp_path, judge_server):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "sample_data.jsonl", work)
    port = free_port()
    env = _environment(tmp_path, PORT=str(port), JUDGE_BASE_URL=judge_server.url, JUDGE_API_KEY="sk-test",
                       JUDGE_MODEL="judge-test", JUDGE_MAX_RETRIES="0")
    cli = commands(PAGE, "From the command line")
    assert len(cli) == 3
    for step in cli:
        _run(step, work, env)
    first, second = (json.loads((work / name).read_text(encoding="utf-8")) for name in ("first.json", "second.json"))
    second_id = (work / "second.id").read_text(encoding="utf-8").strip()
    assert second["evaluation_id"] == second_id
    sessions = sorted({s["session_id"] for s in second["sessions"]})
    dataset = hashlib.sha256("\n".join(["dialogue", "samples", *sessions]).encode()).hexdigest()[:16]
    steps = [step.replace("curl ", "curl -sS --fail-with-body ", 1) for step in commands(PAGE, "The API")]
    assert len(steps) == 6
    with Server("python app.py", env, port) as server:
        outputs = []
        for step in steps:
            step = step.replace("http://127.0.0.1:5000", server.base).replace("DATASET", dataset)
            outputs.append(_run(step, work, env).stdout)
    found, best, tagged, by_tag, download, shared = outputs
    assert json.loads(found) == {"dataset": dataset, "url": f"{server.base}/datasets/{dataset}"}
    best = json.loads(best)
    assert best["choice"] == "best" and [run["id"] for run in best["runs"]] == [first["evaluation_id"], second_id]
    # each method's figure and interval are its run's AVG and ci95.avg, ranked higher first
    for row in best["ranking"]:
        run = first if row["run"] == first["evaluation_id"] else second
        assert row["value"] == run["methods"][row["method"]]["avg"]
        assert row["ci95"] == run["methods"][row["method"]]["ci95"]["avg"]
    values = [row["value"] for row in best["ranking"]]
    assert values == sorted(values, reverse=True) and len(values) == len(second["methods"])
    assert json.loads(tagged)["tags"] == ["v2"]
    by_tag = json.loads(by_tag)
    assert {row["run"] for row in by_tag["ranking"]} == {second_id} and by_tag["tag"] == "v2"
    assert download == ""
    rows = (work / "leaderboard.csv").read_text(encoding="utf-8-sig").splitlines()
    assert rows[0] == "rank,method,value,ci95_low,ci95_high,run,created_at,runs"
    # both runs scored the same replies with the same judge: the latest run's figures are the best run's
    assert [(line.split(",")[1], float(line.split(",")[2])) for line in rows[1:]] == [
        (row["method"], row["value"]) for row in best["ranking"]]
    share = json.loads(shared)
    assert share["active"] and share["url"].startswith(f"{server.base}/share/datasets/")

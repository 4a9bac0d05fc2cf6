"""The agentbench benchmark: reading AgentBench outputs (overall.json, ZIP trees, result.json, summary.csv),
validation messages, status grouping, newest-run selection, the overall score and the published leaderboard."""
from __future__ import annotations

import codecs
import io
import json
import zipfile

import pytest

from kinds.agentbench import format as ab
from kinds.agentbench import leaderboard as lb
from kinds.agentbench import logs as ab_logs
from kinds.agentbench import metrics as ab_metrics
from kinds.agentbench import overall as ab_overall
from kinds.agentbench import tasks as ab_tasks
from kinds.agentbench.result import score
from kinds.readers import limits
from tests.conftest import SHARED_DATA

REAL = SHARED_DATA / "agentbench"
REAL_OVERALL = REAL / "medagentbench_gpt-4o_overall.json"
REAL_RUNS_LINE = REAL / "medagentbench_gpt-4o_runs.jsonl.line1.json"
REAL_ERRORS = REAL / "medagentbench_gemini-2.0_error.jsonl"
needs_data = pytest.mark.skipif(not REAL.is_dir(), reason=f"the real AgentBench files are not at {REAL}")

# The paper's normalisers, written out here independently of the module.
W = {"os": 10.8, "db": 13.0, "kg": 13.9, "dcg": 12.0, "ltp": 3.5, "hh": 13.0, "ws": 30.7, "wb": 11.6}

# Main metrics as they appear in overall.json (Mind2Web's step_sr is a percentage).
AGENT_A = {"os-std": 0.424, "dbbench-std": 0.32, "kg-std": 0.588, "cg-std": 0.745, "ltp-std": 0.166,
           "alfworld-std": 0.78, "webshop-std": 0.611, "m2w-std": 29.0}
AGENT_B = {"os-std": 0.2, "dbbench-std": 0.5, "kg-std": 0.1, "cg-std": 0.3, "ltp-std": 0.05,
           "alfworld-std": 0.4, "webshop-std": 0.7, "m2w-std": 12.5}
OA_A = (42.4 / 10.8 + 32.0 / 13.0 + 58.8 / 13.9 + 74.5 / 12.0 + 16.6 / 3.5 + 78.0 / 13.0 + 61.1 / 30.7
        + 29.0 / 11.6) / 8
OA_B = (20.0 / 10.8 + 50.0 / 13.0 + 10.0 / 13.9 + 30.0 / 12.0 + 5.0 / 3.5 + 40.0 / 13.0 + 70.0 / 30.7
        + 12.5 / 11.6) / 8
ALL_COMPLETED = {"running": 0.0, "completed": 1.0, "agent context limit": 0.0, "agent validation failed": 0.0,
                 "agent invalid action": 0.0, "task limit reached": 0.0, "unknown": 0.0, "task error": 0.0}


# --- helpers -----------------------------------------------------------------------------------

def custom_for(task: str, metric) -> dict:
    """The `custom` block that carries `metric` as the main metric of a task config name."""
    base = task.rsplit("-", 1)[0]
    return {"os": {"overall": {"acc": metric}}, "dbbench": {"overall_cat_accuracy": metric},
            "kg": {"main": metric}, "cg": {"score": metric}, "ltp": {"main": metric},
            "alfworld": {"overall": {"success_rate": metric}}, "webshop": {"reward": metric},
            "m2w": {"step_sr": metric}}[base]


def overall(custom: dict | None = None, total: int = 100, statuses: dict | None = None,
            history=(5.5, 9, 2)) -> dict:
    validation = dict(ALL_COMPLETED if statuses is None else statuses)
    validation.update(average_history_length=history[0], max_history_length=history[1],
                      min_history_length=history[2])
    return {"total": total, "validation": validation, "custom": {} if custom is None else custom}


def dumps(value) -> bytes:
    return json.dumps(value, indent=4, ensure_ascii=False).encode("utf-8")


def tree(agents: dict[str, dict[str, float]], run: str = "outputs/2024-01-01-00-00-00",
         date_time=(2024, 1, 1, 0, 0, 0)) -> dict:
    """ZIP members of an outputs tree: one overall.json per agent x task with the given main metrics."""
    return {f"{run}/{agent}/{task}/overall.json": (dumps(overall(custom_for(task, metric))), date_time)
            for agent, tasks in agents.items() for task, metric in tasks.items()}


def make_zip(members: dict) -> io.BytesIO:
    """A ZIP of {name: bytes | (bytes, date_time)}, in the order given."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            if isinstance(data, tuple):
                data, date_time = data
            else:
                date_time = (2024, 1, 1, 0, 0, 0)
            archive.writestr(zipfile.ZipInfo(name, date_time=date_time), data)
    buf.seek(0)
    return buf


def stored_zip(folder, members: dict):
    """The ZIP of these members written to a file, as an upload is stored."""
    path = folder / "outputs.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    path.write_bytes(buffer.getvalue())
    return path


def read_zip(members: dict, **kwargs):
    return ab.read_any(make_zip(members), "outputs.zip", **kwargs)


def read_bytes(data: bytes, name: str = "overall.json", **kwargs):
    return ab.read_any(io.BytesIO(data), name, **kwargs)


def scored(members: dict) -> dict:
    report, run = read_zip(members)
    assert report.ok, report.to_dict()
    return score(run)


def messages(report) -> str:
    return "\n".join(p.message for p in report.problems)


def warnings(report) -> str:
    return "\n".join(p.message for p in report.warnings)


def runs_line(index: int, status: str = "completed", history=None, result="ok") -> bytes:
    history = [{"role": "user", "content": "task"}, {"role": "agent", "content": "answer"}] \
        if history is None else history
    line = {"index": index, "error": None, "info": None,
            "output": {"index": index, "status": status, "result": result, "history": history},
            "time": {"timestamp": 1700000000000 + index, "str": "2023-11-14 22:13:20"}}
    return (json.dumps(line) + "\n").encode()


def error_line(index: int, kind: str = "TASK_ERROR", info: str = "boom") -> bytes:
    line = {"index": index, "error": kind, "info": info,
            "output": {"index": None, "status": "running", "result": None, "history": None},
            "time": {"timestamp": 1700000000000, "str": "2023-11-14 22:13:20"}}
    return (json.dumps(line) + "\n").encode()


# --- the real files ----------------------------------------------------------------------------

@needs_data
def test_real_overall_is_an_unknown_task_with_its_custom_block():
    report, run = ab.read_any(REAL_OVERALL.open("rb"), "overall.json", agent="gpt-4o", task="medagentbench-std")
    assert report.ok and not report.warnings, report.to_dict()
    doc = score(run)
    agent = doc["agents"]["gpt-4o"]
    task = agent["tasks"]["medagentbench-std"]
    assert task["score"] is None and task["standard"] is None and task["split"] == "std"
    assert task["custom"] == {"accuracy": 0.61}  # raw_results (a list) is left out
    assert task["total"] == 100
    assert task["status"] == {"completed": 1.0, "context_limit": 0.0, "invalid_format": 0.0,
                              "invalid_action": 0.0, "task_limit": 0.0}
    assert task["history_length"] == {"average": 4.34, "max": 6, "min": 4}
    assert agent["oa"] is None and agent["missing"] == list(ab_tasks.STANDARD_TASKS)
    json.dumps(doc, allow_nan=False)


@needs_data
def test_real_overall_without_names_asks_for_agent_and_task():
    report, run = ab.read_any(REAL_OVERALL.open("rb"), REAL_OVERALL.name)
    assert not report.ok and run.tasks == []
    fields = {p.path: p.message for p in report.problems}
    assert set(fields) == {"agent", "task"}
    assert all(REAL_OVERALL.name in message for message in fields.values())
    assert "agent name is needed" in fields["agent"] and "task name is needed" in fields["task"]


@needs_data
def test_real_runs_line_and_error_log_in_an_outputs_tree(tmp_path):
    folder = "outputs/2025-01-17-10-00-00/gpt-4o/medagentbench-std"
    runs = REAL_RUNS_LINE.read_bytes()
    report, run = read_zip({f"{folder}/overall.json": REAL_OVERALL.read_bytes(),
                            f"{folder}/runs.jsonl": runs,
                            f"{folder}/error.jsonl": REAL_ERRORS.read_bytes()})
    assert report.ok and not report.warnings, report.to_dict()
    task = score(run)["agents"]["gpt-4o"]["tasks"]["medagentbench-std"]
    line = json.loads(runs)
    samples = task["samples"]
    assert samples == {"file": f"{folder}/runs.jsonl", "total": 1, "by_status": {"completed": 1},
                       "index": {"statuses": ["completed"], "lines": [[0, 0]]}}
    stored = stored_zip(tmp_path, {f"{folder}/overall.json": REAL_OVERALL.read_bytes(), f"{folder}/runs.jsonl": runs,
                                   f"{folder}/error.jsonl": REAL_ERRORS.read_bytes()})
    page = ab_logs.sample_page(stored, samples, limits.current(), "", 0, 25)
    assert len(page) == 1
    sample = page[0]
    assert sample["index"] == line["index"] == 97 and sample["status"] == "completed"
    assert sample["result"] == line["output"]["result"]
    assert sample["history_length"] == len(line["output"]["history"]) == len(sample["history"])
    first = line["output"]["history"][0]["content"]
    assert len(first) > ab_logs.MAX_MESSAGE_CHARS  # the real prompt is long: it is cut, and marked so
    assert sample["history"][0] == {"role": "user", "content": first[:ab_logs.MAX_MESSAGE_CHARS], "cut": True}
    assert sample["history"][1]["content"] == line["output"]["history"][1]["content"]
    errors = task["errors"]
    assert errors["total"] == 22 == len(REAL_ERRORS.read_text().splitlines())
    assert errors["by_kind"] == {"AGENT_FAILED": 22}
    assert ab_logs.stored_errors(stored, errors["file"], limits.current(), 5)[0] == {
        "index": 53, "kind": "AGENT_FAILED", "info": "Failed.", "time": "2025-01-17 16:10:55"}
    assert task["source_file"] == f"{folder}/overall.json" and task["run"] == "outputs/2025-01-17-10-00-00"


# --- scoring -----------------------------------------------------------------------------------

def test_two_agents_all_eight_tasks_overall_score_by_hand():
    doc = scored(tree({"zeta-model": AGENT_B, "alpha-model": AGENT_A}))
    assert list(doc["agents"]) == ["alpha-model", "zeta-model"]
    a, b = doc["agents"]["alpha-model"], doc["agents"]["zeta-model"]
    assert list(a["tasks"]) == ["os", "db", "kg", "dcg", "ltp", "hh", "ws", "wb"] == doc["tasks"]
    assert a["oa"] == pytest.approx(OA_A, abs=1e-12)
    assert round(a["oa"], 2) == 4.01  # these are gpt-4's published scores
    assert b["oa"] == pytest.approx(OA_B, abs=1e-12)
    assert a["missing"] == [] and a["oa_split"] == "std"
    assert a["tasks"]["wb"]["score"] == pytest.approx(29.0)  # step_sr / 100 x 100
    assert a["tasks"]["os"]["score"] == pytest.approx(42.4)
    assert b["tasks"]["ws"]["normalised"] == pytest.approx(70.0 / 30.7)
    assert b["tasks"]["ltp"]["metric_path"] == "custom.main"
    assert b["tasks"]["hh"]["config_name"] == "alfworld-std" and b["tasks"]["hh"]["name"] == "House-Holding"
    assert all(task["in_oa"] for task in b["tasks"].values())
    json.dumps(doc, allow_nan=False)


def test_overall_score_needs_all_eight():
    scores = {"os": 10.8, "db": 13.0, "kg": 13.9, "dcg": 12.0, "ltp": 3.5, "hh": 13.0, "ws": 30.7, "wb": 11.6}
    assert ab_metrics.overall_score(scores) == pytest.approx(1.0)  # every task at its normaliser
    del scores["ltp"]
    assert ab_metrics.overall_score(scores) is None


def test_status_grouping_by_hand():
    statuses = {"running": 0.0, "completed": 0.5, "agent context limit": 0.1, "agent validation failed": 0.15,
                "agent invalid action": 0.05, "task limit reached": 0.1, "unknown": 0.04, "task error": 0.06}
    upper = {key.upper().replace(" ", "_"): value for key, value in statuses.items()}  # older writers
    for block in (statuses, upper):
        data = dumps(overall(custom_for("os-std", 0.5), total=20, statuses=block))
        report, run = read_bytes(data, agent="m", task="os-std")
        assert report.ok and not report.warnings, report.to_dict()
        status = score(run)["agents"]["m"]["tasks"]["os"]["status"]
        assert status == pytest.approx({"completed": 0.5, "context_limit": 0.1, "invalid_format": 0.15,
                                        "invalid_action": 0.05, "task_limit": 0.1 + 0.04 + 0.06})
        assert set(ab_tasks.STATUS_GROUP_NAMES) == set(status)


def newest_members(order: str, old_date, new_date, old_run="outputs/run-b", new_run="outputs/run-a") -> dict:
    old = {f"{old_run}/m/os-std/overall.json": (dumps(overall(custom_for("os-std", 0.1))), old_date)}
    new = {f"{new_run}/m/os-std/overall.json": (dumps(overall(custom_for("os-std", 0.9))), new_date)}
    return {**old, **new} if order == "old first" else {**new, **old}


@pytest.mark.parametrize("order", ["old first", "new first"])
def test_newest_overall_wins_by_date(order):
    # run-a is newer by date although "run-b" sorts later: the date decides.
    members = newest_members(order, (2024, 1, 1, 0, 0, 0), (2024, 5, 1, 12, 0, 0))
    report, run = read_zip(members)
    assert report.ok
    doc = score(run)
    assert doc["agents"]["m"]["tasks"]["os"]["score"] == pytest.approx(90.0)
    assert doc["agents"]["m"]["tasks"]["os"]["modified"] == "2024-05-01 12:00:00"
    assert doc["superseded"] == [{"agent": "m", "task": "os-std", "file": "outputs/run-b/m/os-std/overall.json",
                                  "kept": "outputs/run-a/m/os-std/overall.json"}]
    assert "outputs/run-b/m/os-std/overall.json is replaced by" in warnings(report)
    assert report.summary["superseded"] == 1


@pytest.mark.parametrize("order", ["old first", "new first"])
def test_newest_overall_tie_broken_by_run_folder(order):
    same = (2024, 3, 3, 3, 3, 4)
    members = newest_members(order, same, same, old_run="outputs/2024-03-01", new_run="outputs/2024-03-02")
    doc = scored(members)
    assert doc["agents"]["m"]["tasks"]["os"]["score"] == pytest.approx(90.0)
    assert doc["superseded"][0]["file"] == "outputs/2024-03-01/m/os-std/overall.json"


def test_partial_run_has_no_overall_score_and_lists_missing_tasks():
    doc = scored(tree({"m": {"os-std": 0.3, "dbbench-std": 0.2, "kg-std": 0.1}}))
    agent = doc["agents"]["m"]
    assert agent["oa"] is None and agent["oa_split"] is None
    assert agent["missing"] == ["dcg", "ltp", "hh", "ws", "wb"]
    assert agent["tasks"]["db"]["score"] == pytest.approx(20.0)


def test_dev_split_maps_to_standard_keys():
    dev = {task.replace("-std", "-dev"): metric for task, metric in AGENT_A.items()}
    doc = scored(tree({"m": dev}))
    agent = doc["agents"]["m"]
    assert list(agent["tasks"]) == list(ab_tasks.STANDARD_TASKS)
    assert agent["tasks"]["db"]["config_name"] == "dbbench-dev" and agent["tasks"]["db"]["split"] == "dev"
    assert agent["oa"] == pytest.approx(OA_A) and agent["oa_split"] == "dev"


def test_std_and_dev_together_keep_both_and_oa_uses_std():
    tasks = dict(AGENT_A, **{"os-dev": 0.9})
    report, run = read_zip(tree({"m": tasks}))
    assert report.ok
    assert "os-std and os-dev" in warnings(report) and "uses os-std only" in warnings(report)
    agent = score(run)["agents"]["m"]
    assert agent["tasks"]["os"]["score"] == pytest.approx(42.4) and agent["tasks"]["os"]["in_oa"]
    assert agent["tasks"]["os-dev"]["score"] == pytest.approx(90.0) and not agent["tasks"]["os-dev"]["in_oa"]
    assert list(agent["tasks"])[-1] == "os-dev"  # other keys after the eight standard ones
    assert agent["oa"] == pytest.approx(OA_A) and agent["oa_split"] == "std"


def test_unknown_task_is_kept_with_its_scalar_custom_values():
    members = tree({"m": AGENT_A})
    custom = {"overall": {"win_rate": 0.25, "games": 20}, "note": "x" * 500, "raw": [1, 2, 3], "bad": None}
    members["outputs/2024-01-01-00-00-00/m/avalon-std/overall.json"] = dumps(overall(custom))
    doc = scored(members)
    agent = doc["agents"]["m"]
    task = agent["tasks"]["avalon-std"]
    assert task["score"] is None and task["normalised"] is None and not task["in_oa"]
    assert task["custom"]["overall.win_rate"] == 0.25 and task["custom"]["overall.games"] == 20
    assert "raw" not in task["custom"] and len(task["custom"]["note"]) == ab_overall.MAX_CUSTOM_TEXT
    assert agent["oa"] == pytest.approx(OA_A)
    assert doc["tasks"][-1] == "avalon-std"


def test_single_overall_names_from_arguments_or_path():
    data = dumps(overall(custom_for("kg-std", 0.25)))
    report, run = read_bytes(data, agent="my-agent", task="kg-std")
    assert report.ok and score(run)["agents"]["my-agent"]["tasks"]["kg"]["score"] == pytest.approx(25.0)
    report, run = read_bytes(data, "outputs/2024-01-01/gpt-x/kg-std/overall.json")
    doc = score(run)
    assert report.ok and doc["source"] == "overall"
    assert doc["agents"]["gpt-x"]["tasks"]["kg"]["config_name"] == "kg-std"


def test_single_overall_without_task_name():
    report, _run = read_bytes(dumps(overall(custom_for("kg-std", 0.25))), "upload.json", agent="a")
    assert [p.path for p in report.problems] == ["task"]
    assert "upload.json" in report.problems[0].message


def test_validate_reports_the_summary():
    report = ab.validate(make_zip(tree({"b": AGENT_B, "a": {"os-std": 0.1}})))
    assert report.ok
    assert report.summary["agent_names"] == ["a", "b"] and report.summary["results"] == 9
    assert report.summary["tasks"] == list(ab_tasks.STANDARD_TASKS)


def test_score_is_deterministic_and_json_ready():
    members = tree({"b": AGENT_B, "a": AGENT_A})
    assert json.dumps(scored(members), sort_keys=False) == json.dumps(scored(dict(reversed(members.items()))))


# --- result.json and summary.csv ---------------------------------------------------------------

def analysis_result() -> dict:
    """A result.json as AgentBench's src/analysis.py writes it (validation grouped, summary on the 0-1 scale)."""
    grouped = {"Completed": 0.75, "Context Limit Exceeded": 0.0, "Invalid Format": 0.0, "Invalid Action": 0.01,
               "Task Limit Exceeded": 0.24}
    details = {
        "os-std": {"file": "outputs/x/gpt-4/os-std/overall.json", "time": "2023-08-20 10:00:00",
                   "overall": {"total": 144, "validation": {**grouped, "average_history_length": 7.5,
                                                            "max_history_length": 12, "min_history_length": 2},
                               "custom": {"overall": {"acc": 0.424}}}},
        "m2w-std": {"file": "outputs/x/gpt-4/m2w-std/overall.json", "time": "2023-08-20 11:00:00",
                    "overall": {"total": 100, "validation": grouped, "custom": {"step_sr": 29.0}}},
    }
    summary_a = {"os-std": 0.424, "dbbench-std": 0.32, "kg-std": 0.588, "cg-std": 0.745, "ltp-std": 0.166,
                 "alfworld-std": 0.78, "webshop-std": 0.611, "m2w-std": 0.29}
    return {"summary": {"gpt-4": summary_a, "small": {"os-std": 0.05, "webshop-std": 0.4}},
            "details": {"gpt-4": details}}


def test_result_json_import():
    report, run = read_bytes(dumps(analysis_result()), "analysis/result.json")
    assert report.ok, report.to_dict()
    doc = score(run)
    assert doc["source"] == "result_json"
    gpt4 = doc["agents"]["gpt-4"]
    assert gpt4["oa"] == pytest.approx(OA_A)
    assert gpt4["tasks"]["wb"]["score"] == pytest.approx(29.0)  # from details: step_sr / 100
    assert gpt4["tasks"]["os"]["status"] == {"completed": 0.75, "context_limit": 0.0, "invalid_format": 0.0,
                                            "invalid_action": 0.01, "task_limit": 0.24}
    assert gpt4["tasks"]["os"]["history_length"] == {"average": 7.5, "max": 12, "min": 2}
    assert gpt4["tasks"]["os"]["modified"] == "2023-08-20 10:00:00"
    assert gpt4["tasks"]["db"]["status"] is None and gpt4["tasks"]["db"]["score"] == pytest.approx(32.0)
    small = doc["agents"]["small"]
    assert small["oa"] is None and small["missing"] == ["db", "kg", "dcg", "ltp", "hh", "wb"]
    assert small["tasks"]["ws"]["score"] == pytest.approx(40.0)


def test_result_json_bad_metric_names_the_path():
    result = analysis_result()
    result["summary"]["small"]["webshop-std"] = "n/a"
    report, _run = read_bytes(dumps(result), "result.json")
    assert [p.path for p in report.problems] == ["summary.small.webshop-std"]
    assert "result.json" in report.problems[0].message and "a string" in report.problems[0].message


def summary_csv() -> str:
    header = "Agent\\Task,os-std,dbbench-std,kg-std,cg-std,ltp-std,alfworld-std,webshop-std,m2w-std"
    a = "gpt-4," + ",".join(str(v) for v in (0.424, 0.32, 0.588, 0.745, 0.166, 0.78, 0.611, 0.29))
    b = "tiny,0.1,,,,,,0.5,"
    return "\n".join([header, a, b]) + "\n"


def test_summary_csv_import():
    report, run = read_bytes(summary_csv().encode(), "summary.csv")
    assert report.ok, report.to_dict()
    doc = score(run)
    assert doc["source"] == "summary_csv"
    assert doc["agents"]["gpt-4"]["oa"] == pytest.approx(OA_A)
    tiny = doc["agents"]["tiny"]
    assert list(tiny["tasks"]) == ["os", "ws"] and tiny["oa"] is None
    assert tiny["tasks"]["ws"]["score"] == pytest.approx(50.0)


def test_summary_csv_bad_cells():
    text = summary_csv().replace("tiny,0.1,", "tiny,abc,").rstrip("\n")
    text += "\nold,0.1,0.1,0.1,{'win_rate(legacy)': 0.3},0.1,0.1,0.1,0.1\nshort,0.1\n"
    report, _run = read_bytes(text.encode(), "my summary.csv")
    problems = {(p.line, p.path): p.message for p in report.problems}
    assert set(problems) == {(3, "os-std"), (5, "")}
    assert "my summary.csv" in problems[(3, "os-std")] and "a string" in problems[(3, "os-std")]
    assert "line 5" in problems[(5, "")]
    assert [(w.line, w.path) for w in report.warnings] == [(4, "cg-std")]


# --- malformed files ---------------------------------------------------------------------------

FOLDER = "outputs/2024-01-01/m/os-std"


def one_task(data: bytes, extra: dict | None = None):
    return read_zip({f"{FOLDER}/overall.json": data, **(extra or {})})


def test_not_json_names_file_line_and_column():
    report, run = one_task(b'{\n  "total": 10,\n  "validation": }\n')
    assert not report.ok and run.tasks == []
    problem = report.problems[0]
    assert problem.line == 3
    assert f"{FOLDER}/overall.json is not valid JSON at line 3, column 17" in problem.message


@pytest.mark.parametrize("change, path, words", [
    (lambda d: d.update(validation=[0.5]), "validation", "must be an object"),
    (lambda d: d["validation"].update(completed="1.0"), "validation.completed", "a string"),
    (lambda d: d["validation"].update({"agent context limit": 1.5}), "validation.agent context limit",
     "between 0 and 1"),
    (lambda d: d["validation"].update(max_history_length=2.5), "validation.max_history_length", "whole number"),
    (lambda d: d.update(total=-1), "total", "0 or more"),
    (lambda d: d.update(total="100"), "total", "a string"),
    (lambda d: d.update(total=True), "total", "a boolean"),
    (lambda d: d.pop("total"), "total", "missing"),
    (lambda d: d.update(custom={"overall": {}}), "custom.overall.acc", "missing"),
    (lambda d: d.update(custom={"overall": {"acc": "0.5"}}), "custom.overall.acc", "finite number"),
    (lambda d: d.update(custom={"overall": {"acc": float("nan")}}), "custom.overall.acc", "finite number"),
    (lambda d: d.pop("custom"), "custom.overall.acc", "missing"),
])
def test_malformed_overall_names_file_and_field(change, path, words):
    data = overall(custom_for("os-std", 0.5))
    change(data)
    report, run = one_task(dumps(data))
    assert not report.ok and run.tasks == []
    assert [p.path for p in report.problems] == [path]
    assert report.problems[0].message.startswith(f"{FOLDER}/overall.json: ")
    assert words in report.problems[0].message


def test_top_level_not_an_object():
    report, _run = one_task(b"[1, 2]")
    assert "must be a JSON object" in messages(report) and f"{FOLDER}/overall.json" in messages(report)


def test_missing_main_metric_of_mind2web_names_its_path():
    members = tree({"m": AGENT_A})
    members["outputs/2024-01-01-00-00-00/m/m2w-std/overall.json"] = dumps(overall({"element_acc": 0.3}))
    report, _run = read_zip(members)
    assert [p.path for p in report.problems] == ["custom.step_sr"]
    assert "outputs/2024-01-01-00-00-00/m/m2w-std/overall.json" in report.problems[0].message


def test_not_utf8_and_utf16():
    data = dumps(overall(custom_for("os-std", 0.5))).replace(b'"total"', b'"tot\xffal"')
    report, _run = one_task(data)
    assert f"{FOLDER}/overall.json is not valid UTF-8: byte 0xFF" in messages(report)
    report, _run = read_bytes(json.dumps(overall()).encode("utf-16"), "overall.json", agent="a", task="os-std")
    assert "UTF-16" in messages(report) and "overall.json" in messages(report)


def test_bom_is_accepted():
    report, _run = read_bytes(b"\xef\xbb\xbf" + dumps(overall(custom_for("os-std", 0.5))), agent="a", task="os-std")
    assert report.ok


def test_empty_zip_and_zip_without_overall():
    report, _run = read_zip({})
    assert messages(report) == "The ZIP is empty."
    report, _run = read_zip({"__MACOSX/._x": b"junk", "analysis/result.json": b"{}",
                             f"{FOLDER}/runs.jsonl": runs_line(0)})
    assert "holds no overall.json" in messages(report) and "analysis/result.json" in messages(report)


def test_not_a_zip():
    report, _run = read_bytes(b"PK\x03\x04 this is not really a zip", "outputs.zip")
    assert "not a valid ZIP archive" in messages(report)


def test_empty_file():
    report, _run = read_bytes(b"  \n", "overall.json", agent="a", task="os-std")
    assert "overall.json is empty" in messages(report)


def test_zip_without_agent_task_folders_uses_arguments():
    data = dumps(overall(custom_for("os-std", 0.5)))
    report, _run = read_zip({"overall.json": data})
    assert [p.path for p in report.problems] == ["agent"] and "overall.json" in messages(report)
    report, run = read_zip({"overall.json": data}, agent="a", task="os-std")
    assert report.ok and score(run)["agents"]["a"]["tasks"]["os"]["score"] == pytest.approx(50.0)


def test_macosx_members_and_unfinished_tasks():
    members = tree({"m": {"os-std": 0.5}})
    members["__MACOSX/outputs/2024-01-01-00-00-00/m/os-std/._overall.json"] = b"\x00\x05junk"
    members["outputs/2024-01-01-00-00-00/m/._overall.json"] = b"junk"
    members["outputs/2024-01-01-00-00-00/m/kg-std/runs.jsonl"] = runs_line(0)
    report, run = read_zip(members)
    assert report.ok and [t.config_name for t in run.tasks] == ["os-std"]
    assert "m/kg-std/runs.jsonl has no overall.json beside it" in warnings(report)


# --- warnings: suspicious but usable -----------------------------------------------------------

def test_fractions_not_summing_to_one_and_running_are_warnings():
    statuses = dict(ALL_COMPLETED, completed=0.7, running=0.1)
    report, run = one_task(dumps(overall(custom_for("os-std", 0.5), statuses=statuses)))
    assert report.ok
    found = {w.path: w.message for w in report.warnings}
    assert "add up to 0.800 instead of 1" in found["validation"]
    assert "10.0% of the samples are still marked running" in found["validation.running"]
    assert all(m.startswith(f"{FOLDER}/overall.json: ") for m in found.values())


def test_metric_out_of_range_is_a_warning():
    report, run = one_task(dumps(overall(custom_for("os-std", 1.5))))
    assert report.ok and [w.path for w in report.warnings] == ["custom.overall.acc"]
    assert score(run)["agents"]["m"]["tasks"]["os"]["score"] == pytest.approx(150.0)


def test_missing_validation_is_a_warning():
    report, run = one_task(dumps({"total": 5, "custom": custom_for("os-std", 0.5)}))
    assert report.ok and [w.path for w in report.warnings] == ["validation"]
    assert score(run)["agents"]["m"]["tasks"]["os"]["status"] is None


def test_bad_jsonl_lines_are_warnings_naming_file_and_line():
    runs = runs_line(0) + b"{not json\n" + runs_line(2, status="task limit reached") + b'{"output": 3}\n'
    errors = error_line(5) + b"[1]\n" + error_line(6, kind="AGENT_FAILED")
    report, run = one_task(dumps(overall(custom_for("os-std", 0.5))),
                           {f"{FOLDER}/runs.jsonl": runs, f"{FOLDER}/error.jsonl": errors})
    assert report.ok
    found = {(w.line, w.message.split(" line ")[0]) for w in report.warnings}
    assert found == {(2, f"{FOLDER}/runs.jsonl"), (4, f"{FOLDER}/runs.jsonl"), (2, f"{FOLDER}/error.jsonl")}
    task = score(run)["agents"]["m"]["tasks"]["os"]
    assert task["score"] == pytest.approx(50.0)
    assert task["samples"]["by_status"] == {"completed": 1, "task limit reached": 1}
    assert task["errors"]["by_kind"] == {"AGENT_FAILED": 1, "TASK_ERROR": 1}


def test_many_bad_lines_are_counted_not_listed():
    runs = b"oops\n" * (ab_logs.MAX_LINE_WARNINGS + 3)
    report, _run = one_task(dumps(overall(custom_for("os-std", 0.5))), {f"{FOLDER}/runs.jsonl": runs})
    assert report.ok and len(report.warnings) == ab_logs.MAX_LINE_WARNINGS + 1
    assert f"3 more unusable lines in {FOLDER}/runs.jsonl" in report.warnings[-1].message


def test_the_result_counts_samples_and_a_page_reads_the_ones_it_shows(tmp_path):
    lines = [runs_line(i, status="completed" if i % 2 else "agent invalid action") for i in range(5)]
    lines.insert(2, b"not json\n")  # skipped, and the offsets after it still point at their lines
    runs = codecs.BOM_UTF8 + b"".join(lines)
    members = {f"{FOLDER}/overall.json": dumps(overall(custom_for("os-std", 0.5))), f"{FOLDER}/runs.jsonl": runs}
    report, run = read_zip(members)
    assert report.ok and len(report.warnings) == 1
    samples = score(run)["agents"]["m"]["tasks"]["os"]["samples"]
    starts = [3 + sum(len(line) for line in lines[:n]) for n in range(len(lines))]
    del starts[2]
    # Counts, and each sample's byte offset with its status (0: the most frequent), no sample itself.
    assert samples == {"file": f"{FOLDER}/runs.jsonl", "total": 5,
                       "by_status": {"agent invalid action": 3, "completed": 2},
                       "index": {"statuses": ["agent invalid action", "completed"],
                                 "lines": [[0, 0], [starts[1], 1], [starts[2], 0], [starts[3], 1], [starts[4], 0]]}}
    stored = stored_zip(tmp_path, members)
    unindexed = {"file": samples["file"]}  # as a result document made before samples were indexed
    for entry in (samples, unindexed):
        page = ab_logs.sample_page(stored, entry, limits.current(), "", 1, 3)
        assert [s["index"] for s in page] == [1, 2, 3]
        page = ab_logs.sample_page(stored, entry, limits.current(), "agent invalid action", 0, 25)
        assert [s["index"] for s in page] == [0, 2, 4] and {s["status"] for s in page} == {"agent invalid action"}
        assert ab_logs.sample_page(stored, entry, limits.current(), "completed", 1, 25)[0]["index"] == 3
    assert ab_logs.sample_page(stored, {**samples, "file": "nowhere/runs.jsonl"}, limits.current(), "", 0, 25) == []


def test_history_budget_drops_later_histories(monkeypatch, tmp_path):
    monkeypatch.setattr(ab_logs, "MAX_HISTORY_CHARS", 10)
    history = [{"role": "user", "content": "0123456789ab"}]
    runs = runs_line(0, history=history) + runs_line(1, history=history)
    stored = stored_zip(tmp_path, {f"{FOLDER}/overall.json": dumps(overall(custom_for("os-std", 0.5))),
                                   f"{FOLDER}/runs.jsonl": runs})
    page = ab_logs.sample_page(stored, {"file": f"{FOLDER}/runs.jsonl"}, limits.current(), "", 0, 25)
    assert page[0]["history"][0]["content"] == "0123456789ab"
    assert page[1]["history"] is None and page[1]["history_length"] == 1


def test_zip_bomb_guard(monkeypatch):
    monkeypatch.setenv("LIMIT_ZIP_EXPANDED_MB", str(1000 / (1024 * 1024)))
    big = runs_line(0, history=[{"role": "user", "content": "x" * 5000}])
    report, run = one_task(dumps(overall(custom_for("os-std", 0.5))), {f"{FOLDER}/runs.jsonl": big})
    assert not report.ok and run.tasks == []
    assert "more than the limit" in messages(report)


# --- the published leaderboard -----------------------------------------------------------------

def test_leaderboard_oa_recomputes_from_the_task_scores():
    rows = lb.leaderboard()
    assert len(rows) == 29
    for row in rows:
        scores = row["scores"]
        assert list(scores) == list(W)
        by_hand = sum(scores[task] / W[task] for task in W) / 8
        assert abs(by_hand - row["oa"]) <= 0.01, row["model"]
        assert ab_metrics.overall_score(scores) == pytest.approx(by_hand)


def test_leaderboard_holds_the_api_models_and_open_models():
    models = {row["model"]: row for row in lb.leaderboard()}
    for name in ("gpt-4", "gpt-3.5-turbo", "claude-2", "claude", "text-davinci-003", "llama-2-70b",
                 "codellama-34b", "vicuna-13b"):
        assert name in models
    assert models["gpt-4"]["scores"] == {"os": 42.4, "db": 32.0, "kg": 58.8, "dcg": 74.5, "ltp": 16.6,
                                         "hh": 78.0, "ws": 61.1, "wb": 29.0}
    assert models["gpt-4"]["oa"] == 4.01 and models["gpt-4"]["type"] == "api"
    assert {row["type"] for row in models.values()} == {"api", "oss"}
    assert lb.row("no-such-model") is None
    copy = lb.row("gpt-4")
    copy["scores"]["os"] = 0
    assert lb.row("gpt-4")["scores"]["os"] == 42.4  # rows are copies


def test_a_fork_tasks_main_metric_is_found_by_name_or_as_its_only_share():
    fork_metric = ab_metrics.fork_metric

    assert fork_metric({"accuracy": 0.61, "recall": 0.2}) == ("accuracy", 0.61)
    assert fork_metric({"success_rate": 1, "score": 0.5}) == ("success_rate", 1.0)  # the first name that is there
    assert fork_metric({"recall": 0.2, "turns": 12}) == ("recall", 0.2)  # the only number in [0, 1]
    assert fork_metric({"recall": 0.2, "precision": 0.3}) is None  # which one is main cannot be told
    assert fork_metric({"accuracy": 61.0, "ok": True}) is None  # not on the 0-1 scale; booleans are not numbers

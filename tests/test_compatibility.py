"""What a user gets back stays byte for byte what it was: for one small input of each kind, the API's evaluation
body, the result document (`.json`), the main table (`.csv`), every download of the kind and, for dialogue,
`judgments.csv`, compared with the files under tests/compat/<case>/ once run-to-run noise is replaced by placeholders.

Only HTTP entry points and the conftest fixtures are used, so the test outlives any reorganisation of the code.
`PSB_WRITE_COMPAT=1` rewrites the expected files (and fails, so that a writing run never passes); see
tests/compat/README.md for when that is allowed."""
from __future__ import annotations

import difflib
import io
import json
import os
import re
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, jsonl, session_line, wait_for

COMPAT = Path(__file__).resolve().parent / "compat"
WRITE = os.environ.get("PSB_WRITE_COMPAT") == "1"


# --- inputs: small, built here from literals so that nothing outside this file can change them ---------------

def post_upload(client, data: bytes, name: str, **form) -> dict:
    """Upload a file through the API, as a user's script does."""
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(data), name), **form},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()


def start(client, upload_id: str, **options) -> str:
    """Start an evaluation through the API and wait for it to finish; its id."""
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, **options})
    assert resp.status_code == 202, resp.get_json()
    body = wait_for(client, resp.get_json()["id"])
    assert body["status"] == "done", body
    return body["id"]


def dialogue(client, judge_server) -> tuple[dict, str, list[str]]:
    """The sample file of the repository, judged by the local judge (answers derived from each reply)."""
    upload = post_upload(client, (ROOT / "sample_data.jsonl").read_bytes(), "sample_data.jsonl")
    return {"upload-id": upload["id"]}, start(client, upload["id"]), ["comparisons"]


def dialogue_panel(client, judge_server) -> tuple[dict, str, list[str]]:
    """Three methods judged by a panel of two judges, pairwise too: the per-judge, agreement and pairwise tables."""
    judge_server.models = {"judge-b": (7, True)}  # judge-b: every fine total +7, every verdict flipped
    sessions = []
    for sid, per_round in {"s1": [(70, 50, 60), (80, 40, 80)], "s2": [(65, 55, 75)],
                           "s3": [(90, 30, 90), (60, 60, 40), (45, 85, 55)]}.items():
        s = session_line(sid, rounds=len(per_round), methods=("A", "B", "C"), user_profile=f"profile {sid}")
        for k, (rnd, values) in enumerate(zip(s["rounds"], per_round)):
            rnd["responses"] = {m: f"{m} says [[score={v}]] [[keep={(k + i) % 2}]]"
                                for i, (m, v) in enumerate(zip("ABC", values))}
        sessions.append(s)
    upload = post_upload(client, jsonl(*sessions), "panel.jsonl")
    evaluation_id = start(client, upload["id"], pairwise=True, judges=[{"model": "judge-a"}, {"model": "judge-b"}])
    return {"upload-id": upload["id"]}, evaluation_id, ["comparisons", "judges", "agreement", "pairwise"]


def mobility(client, judge_server) -> tuple[dict, str, list[str]]:
    """A reference set and a generated set of 12 users each, drawn from a fixed pseudo-random sequence."""
    def users(seed: int, shift: float) -> dict:
        state = seed

        def draw(n: int) -> int:  # a small linear congruential generator: the same numbers everywhere
            nonlocal state
            state = (state * 1103515245 + 12345) % 2 ** 31
            return state % n
        sequences = [[1 + draw(7) for _slot in range(48)] for _user in range(12)]
        return {"gyration_radius": [500.0 + 250 * draw(40) + shift for _user in range(12)],
                "daily_location_numbers": [1 + draw(7) for _user in range(12)],
                "intention_sequences": sequences,
                "intention_proportions": [[seq.count(i) / 48 for i in range(1, 8)] for seq in sequences]}
    resp = client.post("/api/references", data={"file": (io.BytesIO(json.dumps(users(1, 0)).encode()), "ref.json"),
                                                 "name": "fixed"}, content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    upload = post_upload(client, json.dumps(users(2, 300.0)).encode(), "my_agent.json")
    ids = {"upload-id": upload["id"], "reference-id": resp.get_json()["id"]}
    return ids, start(client, upload["id"], reference="fixed"), []


def conversation(client, judge_server) -> tuple[dict, str, list[str]]:
    """Two real and two simulated users, annotated by the local judge (answers from the markers)."""
    def conv(source, marker, **extra):
        history = [{"role": "user", "content": "Plan a weekend in Hangzhou", "intent": "Planning"},
                   {"role": "assistant", "content": f"Day 1: West Lake. {marker}", "hallucination": "否"},
                   {"role": "user", "content": "再便宜一点", "intent": "Budget"},
                   {"role": "assistant", "content": "Take the bus."}]
        if source == "agent":  # simulated users ask one more, longer question: fidelity below 100%
            history += [{"role": "user", "content": "And what about the food near the lake?", "intent": "Food"},
                        {"role": "assistant", "content": "Try the Louwailou restaurant."}]
        return {"source": source, "task": "travel planning", "task_context": "two days", "history": history, **extra}

    def questionnaire(detail, diversity, availability):
        return [{"summary": "Detail", "option": detail}, {"summary": "Diversity", "option": diversity},
                {"summary": "Availability", "option": availability}]

    items = [conv("human", "[[annotate=2,1,2,0]]", questionnaire=questionnaire("详细", "一般", "很有用")),
             conv("human", "[[annotate=1,1,1,1]]",
                  questionnaire=questionnaire("详细", "结果多样", "有一定参考")),
             conv("agent", "[[annotate=2,2,2,0]]", rating={"Detail Level": 2}),
             conv("agent", "<b>bold</b> [[annotate=0,0,1,0]]", rating={"Detail Level": 1})]
    upload = post_upload(client, json.dumps(items, ensure_ascii=False).encode(), "mine.json")
    return {"upload-id": upload["id"]}, start(client, upload["id"], annotate=True), ["annotations"]


def agentbench(client, judge_server) -> tuple[dict, str, list[str]]:
    """An outputs tree: two agents on the eight standard tasks, one with runs, errors and a fork task."""
    def overall(custom: dict) -> bytes:
        validation = {"running": 0.0, "completed": 0.9, "agent context limit": 0.0, "agent validation failed": 0.0,
                      "agent invalid action": 0.1, "task limit reached": 0.0, "unknown": 0.0, "task error": 0.0,
                      "average_history_length": 5.5, "max_history_length": 9, "min_history_length": 2}
        return json.dumps({"total": 100, "validation": validation, "custom": custom}, indent=4).encode()

    def main(task: str, metric: float) -> dict:
        return {"os": {"overall": {"acc": metric}}, "dbbench": {"overall_cat_accuracy": metric},
                "kg": {"main": metric}, "cg": {"score": metric}, "ltp": {"main": metric},
                "alfworld": {"overall": {"success_rate": metric}}, "webshop": {"reward": metric},
                "m2w": {"step_sr": metric}}[task.rsplit("-", 1)[0]]

    def line(index: int, error=None, status="completed") -> bytes:
        history = [{"role": "user", "content": "task"}, {"role": "agent", "content": "answer"}]
        return (json.dumps({"index": index, "error": error, "info": "boom" if error else None,
                            "output": {"index": index, "status": status, "result": "ok", "history": history},
                            "time": {"timestamp": 1700000000000 + index, "str": "2023-11-14 22:13:20"}})
                + "\n").encode()

    agents = {"agent-a": {"os-std": 0.424, "dbbench-std": 0.32, "kg-std": 0.588, "cg-std": 0.745, "ltp-std": 0.166,
                          "alfworld-std": 0.78, "webshop-std": 0.611, "m2w-std": 29.0},
              "agent-b": {"os-std": 0.2, "dbbench-std": 0.5, "kg-std": 0.1, "cg-std": 0.3, "ltp-std": 0.05,
                          "alfworld-std": 0.4, "webshop-std": 0.7, "m2w-std": 12.5}}
    run = "outputs/2024-01-01-00-00-00"
    members = {f"{run}/{agent}/{task}/overall.json": overall(main(task, metric))
               for agent, tasks in agents.items() for task, metric in tasks.items()}
    members[f"{run}/agent-b/os-std/runs.jsonl"] = line(0) + line(1, status="agent invalid action")
    members[f"{run}/agent-b/os-std/error.jsonl"] = line(7, "AGENT_FAILED", "running")
    members[f"{run}/agent-b/medagentbench-std/overall.json"] = overall({"accuracy": 0.61})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), data)
    upload = post_upload(client, buffer.getvalue(), "outputs.zip")
    return {"upload-id": upload["id"]}, start(client, upload["id"]), []


CASES = {"dialogue": dialogue, "dialogue-panel": dialogue_panel, "mobility": mobility,
         "conversation": conversation, "agentbench": agentbench}
JUDGMENTS_KEPT = ("dialogue", "dialogue-panel")  # other kinds' judgments.csv is not part of the promise


# --- fetching and normalising -----------------------------------------------------------------------------------

def fetch(client, url: str) -> bytes:
    """The body of a GET that must succeed."""
    resp = client.get(url)
    assert resp.status_code == 200, (url, resp.status_code)
    return resp.get_data()


def outputs(client, case: str, evaluation_id: str, downloads: list[str]) -> dict[str, bytes]:
    """Every file a user can fetch for the finished evaluation, by the name it is kept under."""
    files = {"api.json": fetch(client, f"/api/evaluations/{evaluation_id}"),
             "result.json": fetch(client, f"/evaluations/{evaluation_id}.json"),
             "result.csv": fetch(client, f"/evaluations/{evaluation_id}.csv")}
    for name in downloads:
        files[f"{name}.csv"] = fetch(client, f"/evaluations/{evaluation_id}/{name}.csv")
    if case in JUDGMENTS_KEPT:
        files["judgments.csv"] = fetch(client, f"/evaluations/{evaluation_id}/judgments.csv")
    return files


# The evaluation's own times in the API body and in a result's provenance (set by the clock when it was created,
# started and finished); the other times inside result documents come from the inputs and are kept.
TIMES = re.compile(r'"(created_at|started_at|finished_at)":( ?)"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?\+00:00"')
# In a result's provenance, what the code runs from and on: the commit (each one differs) and the versions of Python
# and its libraries (each machine's); the product's version, the hashes and the settings are kept.
COMMIT = re.compile(r'"commit":( ?)(?:"[0-9a-f]{40}"|null)')
ENVIRONMENT = re.compile(r'"environment":( ?)\{[^{}]*\}')
CSV_FIELD = re.compile(r'"(?:[^"]|"")*"|[^,\r\n]*')


def normalise(name: str, data: bytes, ids: dict[str, str], judge_port: int) -> bytes:
    """The bytes with what legitimately differs between two runs replaced by fixed placeholders."""
    text = data.decode("utf-8")
    # Ids are random per run (evaluation, upload, reference set): replaced wherever they appear verbatim.
    for placeholder, value in ids.items():
        text = text.replace(value, f"<{placeholder}>")
    # The local judge listens on a free port chosen at start; its endpoint is named in results and judgments.
    text = text.replace(f"127.0.0.1:{judge_port}", "127.0.0.1:<judge-port>")
    if name in ("api.json", "result.json"):
        text = TIMES.sub(lambda m: f'"{m.group(1)}":{m.group(2)}"<time>"', text)
        text = COMMIT.sub(lambda m: f'"commit":{m.group(1)}"<commit>"', text)
        text = ENVIRONMENT.sub(lambda m: f'"environment":{m.group(1)}"<environment>"', text)
    if name == "judgments.csv":
        text = blank_column(text, "latency_ms", "<latency>")  # how long the judge took to answer each request
    return text.encode("utf-8")


def blank_column(text: str, column: str, placeholder: str) -> str:
    """The CSV text with every value of one column replaced, every other byte (quoting, line ends) as it was."""
    out, position, field, index = [], 0, 0, None
    while position < len(text):
        match = CSV_FIELD.match(text, position)
        value, position = match.group(), match.end()
        out.append(placeholder if index is not None and field == index else value)
        if index is None and value.lstrip("\ufeff") == column:
            index = field
        separator = text[position:position + 2] if text.startswith("\r\n", position) else text[position:position + 1]
        assert value or separator, f"not CSV at character {position}"
        out.append(separator)
        position += len(separator)
        field = field + 1 if separator == "," else 0
    assert index is not None, f"no {column} column"
    return "".join(out)


@pytest.mark.parametrize("case", CASES)
def test_outputs_are_byte_compatible(case, client, judge_server):
    ids, evaluation_id, downloads = CASES[case](client, judge_server)
    ids = {"evaluation-id": evaluation_id, **ids}
    files = {name: normalise(name, data, ids, judge_server.port)
             for name, data in outputs(client, case, evaluation_id, downloads).items()}
    folder = COMPAT / case
    if WRITE:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        pytest.fail(f"{folder} written; rerun without PSB_WRITE_COMPAT")
    assert folder.is_dir(), f"{folder} is missing: see tests/compat/README.md"
    assert sorted(p.name for p in folder.iterdir()) == sorted(files), "a file appeared or went missing"
    for name, data in files.items():
        expected = (folder / name).read_bytes()
        if data != expected:
            pytest.fail(f"tests/compat/{case}/{name} differs from what the app answers now:\n" + first_difference(
                expected, data))


def first_difference(expected: bytes, actual: bytes, context: int = 3) -> str:
    """A short unified diff of two files' lines (JSON on one line is split at commas so the place shows)."""
    def lines(data: bytes) -> list[str]:
        text = data.decode("utf-8", "replace")
        return text.replace(",", ",\n").splitlines(keepends=True) if text.count("\n") <= 1 else \
            text.splitlines(keepends=True)
    diff = list(difflib.unified_diff(lines(expected), lines(actual), "expected", "actual", n=context))
    return "".join(diff[:40]) + ("..." if len(diff) > 40 else "") if diff else "(line ends or other bytes only)"

"""docs/rubrics.md against the code: its field table is the published schema's fields, its side-by-side table says
what the built-ins are, its example is a rubric that reads as described, and its commands (the CLI's, then curl
against a running dashboard) run as written, judged by the local judge server."""
from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from kinds import rubrics
from tests.conftest import jsonl, marked, session_line
from tests.doc_commands import DOCS, commands, section
from tests.services import free_port
from tests.test_docs_commands import Server, _environment, _run

PAGE = DOCS / "rubrics.md"
LAB = "lab-consistency"


def table_rows(text: str) -> list[list[str]]:
    """The rows of the first Markdown table of a text (header and separator left out), each its cells."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def schema_fields(node: dict, path: str = ""):
    """Every field of the schema by its path (`dimensions[].scale.min`); a field of a type of `$defs` (a text, the
    prompts) is one field, the type being described once in its own table."""
    if "$ref" in node:
        yield path
        return
    items = node.get("items", {})
    if "properties" in node:
        if path:
            yield path
        for name, child in node["properties"].items():
            yield from schema_fields(child, f"{path}.{name}" if path else name)
    elif "properties" in items:
        yield path
        for name, child in items["properties"].items():
            yield from schema_fields(child, f"{path}[].{name}")
    else:
        yield path


def example_yaml() -> str:
    [block] = re.findall(r"^```yaml\n(.*?)^```", section(PAGE, "A complete example"), flags=re.S | re.M)
    return block


def test_the_field_table_names_each_field_of_the_schema_once():
    documented = [re.fullmatch(r"`([^`]+)`", row[0]).group(1) for row in table_rows(section(PAGE, "The file"))]
    fields = list(schema_fields(rubrics.schema()))
    assert len(fields) > 20 and "dimensions[].scale.integer" in fields and "binary.answer.format" in fields
    assert sorted(documented) == sorted(fields)
    required = {row[0].strip("`"): row[2] for row in table_rows(section(PAGE, "The file"))}
    assert {name for name, said in required.items() if "." not in name and said == "yes"} == set(
        rubrics.schema()["required"])
    types = [row[0].strip("`") for row in table_rows(section(PAGE, "Texts and prompts"))]
    assert sorted(types) == sorted(rubrics.schema()["$defs"])


def test_the_side_by_side_table_says_what_the_builtins_are():
    rows = {row[0]: row[1:] for row in table_rows(section(PAGE, "The built-ins side by side"))}
    for column, rubric in enumerate(rubrics.builtins().values()):
        assert f"`{rubric.version}`" == rows["version"][column]
        assert f"`{rubric.headline_text()}`" in rows["headline (0-100)"][column]
        assert f"`{rubric.answer_format('fine')}`" in rows["answer format"][column]
        assert rubric.binary_label() in rows["yes/no question"][column] if rubric.has_binary else \
            rows["yes/no question"][column] == "none"
        assert rows["dimensions"][column].split(" (")[0] == ", ".join(rubric.keys)
        scale = rubric.dimensions[0].scale_text()
        assert rows["scale"][column] == f"{scale}, whole numbers"
    assert list(rubrics.builtins()) == ["personasteer", "aloe"]


def test_the_example_is_the_rubric_the_page_describes():
    rubric = rubrics.read(example_yaml())
    assert rubric.id == LAB and [(d.key, d.low, d.high, d.integer) for d in rubric.dimensions] == [
        ("profile_fit", 1, 7, True), ("tone_fit", 1, 7, True), ("coherence", 1, 7, True)]
    assert rubric.answer_format("fine") == "json" and not rubric.has_binary and rubric.languages == ("en",)
    text = section(PAGE, "A complete example")
    assert f"`{rubric.headline_text()}`" in text
    # 6, 6 and 6: the weighted mean (2 x 6 + 6 + 6) / 4 = 6 on 1-7, rescaled: 100 x (6 - 1) / 6 = 83.33
    assert rubric.headline({"profile_fit": 6, "tone_fit": 6, "coherence": 6}) == pytest.approx(500 / 6)
    assert "83.3" in text
    # 7, 1, 1: (14 + 1 + 1) / 4 = 4, so 100 x 3 / 6 = 50
    assert rubric.headline({"profile_fit": 7, "tone_fit": 1, "coherence": 1}) == pytest.approx(50.0)


def _workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "lab.yaml").write_text(example_yaml(), encoding="utf-8")
    # every reply marked for the local judge (tests/judge_server.py) to score it 6, 6 and 6
    (work / "log.jsonl").write_bytes(jsonl(*(marked(session_line(f"s{i}", 2, ("Base", "Ours")), "[[dims=6,6,6]]")
                                             for i in range(3))))
    return work


def test_the_cli_commands_run_as_written(tmp_path, judge_server):
    work = _workspace(tmp_path)
    env = _environment(tmp_path, JUDGE_BASE_URL=judge_server.url, JUDGE_API_KEY="sk-test", JUDGE_MODEL="judge-test",
                       JUDGE_MAX_RETRIES="0")
    steps = commands(PAGE, "Commands")
    cli = [step for step in steps if step.startswith("flask ")]
    assert len(cli) == 6
    done = {step: _run(step, work, env) for step in cli}
    check, add, listed, show, copy, score = cli
    rubric = rubrics.read(example_yaml())
    assert f"the rubric {LAB} 1 is valid" in done[check].stdout and rubric.sha256 in done[check].stdout
    assert f"Added the rubric {LAB} 1 (SHA-256 {rubric.sha256})" in done[add].stdout
    rows = [line.split("\t") for line in done[listed].stdout.splitlines()]
    assert rows[0] == ["id", "version", "sha256", "origin", "dimensions", "yes/no"]
    assert [row[0] for row in rows[1:]] == ["personasteer", "aloe", LAB]
    assert rows[3] == [LAB, "1", rubric.sha256[:12], "added", "profile_fit 1-7, tone_fit 1-7, coherence 1-7", "-"]
    assert f"Headline (0-100): {rubric.headline_text()}" in done[show].stdout
    assert "  profile_fit (Fits the profile): 1-7, whole numbers" in done[show].stdout
    assert rubrics.read((work / "lab-copy.yaml").read_bytes()).sha256 == rubric.sha256  # the same rubric back
    result = json.loads((work / "result.json").read_text(encoding="utf-8"))
    assert result["rubric"]["id"] == LAB and result["rubric"]["sha256"] == rubric.sha256
    assert result["provenance"]["rubric"] == {"id": LAB, "version": "1", "sha256": rubric.sha256}
    # the local judge answers each marked reply 6, 6 and 6
    for method in ("Base", "Ours"):
        assert result["methods"][method]["dimensions"] == {"profile_fit": 6.0, "tone_fit": 6.0, "coherence": 6.0}
        assert result["methods"][method]["avg"] == pytest.approx(500 / 6)
    assert judge_server.last_request["response_format"]["json_schema"]["schema"]["required"] == [
        "reasoning", "profile_fit", "tone_fit", "coherence"]

    # the page's word on a file with problems: exit status 1, each problem "lab.yaml: line N, field: message", the
    # example's first scale turned round giving the problem the page quotes
    (work / "lab.yaml").write_text(example_yaml().replace("scale: {min: 1, max: 7}", "scale: {min: 7, max: 1}", 1),
                                   encoding="utf-8")
    refused = subprocess.run(["bash", "-c", check], cwd=work, env=env, text=True, capture_output=True, timeout=120)
    quoted = re.search(r"gets `(line 12, [^`]+)`", " ".join(section(PAGE, "The file").split())).group(1)
    assert refused.returncode == 1 and f"lab.yaml: {quoted}\n" in refused.stderr
    assert "nothing was stored" in refused.stderr and refused.stdout == ""
    # check stores nothing, even a valid file: a version 2 checked is not listed
    (work / "lab.yaml").write_text(example_yaml().replace('version: "1"', 'version: "2"'), encoding="utf-8")
    assert "the rubric lab-consistency 2 is valid" in _run(check, work, env).stdout
    assert [line.split("\t")[1] for line in _run(listed, work, env).stdout.splitlines() if LAB in line] == ["1"]


def test_the_curl_commands_run_as_written(tmp_path, judge_server):
    work = _workspace(tmp_path)
    steps = [step.replace("curl ", "curl -sS --fail-with-body ", 1)
             for step in commands(PAGE, "Commands") if step.startswith("curl ")]
    assert len(steps) == 4
    listed, add, show, start = steps
    port = free_port()
    env = _environment(tmp_path, PORT=str(port), JUDGE_BASE_URL=judge_server.url, JUDGE_API_KEY="sk-test",
                       JUDGE_MODEL="judge-test", JUDGE_MAX_RETRIES="0")
    rubric = rubrics.read(example_yaml())
    with Server("python app.py", env, port) as server:
        def run(command: str):
            return json.loads(_run(command.replace("http://127.0.0.1:5000", server.base), work, env).stdout)

        assert [r["id"] for r in run(listed)] == ["personasteer", "aloe"]
        added = run(add)
        assert (added["id"], added["sha256"], added["builtin"]) == (LAB, rubric.sha256, False)
        assert [d["max"] for d in added["dimensions"]] == [7, 7, 7]
        assert run(show)["document"] == json.loads(rubrics.canonical(rubric.document))
        upload = run(f"curl -sS -F file=@log.jsonl {server.base}/api/uploads")
        started = run(start.replace("<id>", upload["id"]))
        for _attempt in range(300):
            with urllib.request.urlopen(f"{server.base}/api/evaluations/{started['id']}", timeout=10) as answer:
                status = json.loads(answer.read())
            if status["status"] not in ("queued", "running"):
                break
            time.sleep(0.1)
    assert status["status"] == "done", status
    assert status["result"]["rubric"]["sha256"] == rubric.sha256
    assert status["result"]["methods"]["Base"]["dimensions"] == {"profile_fit": 6.0, "tone_fit": 6.0,
                                                                 "coherence": 6.0}

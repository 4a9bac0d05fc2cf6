"""Every shell command of the documentation (README.md and docs/*.md), run as written; only hosts, ports, passwords
and folders are the test's own.

The team deployment and the API calls run in tests/test_docs_team.py; the README's two install commands are what
.ci/run runs; the benchmark scripts run at small sizes in tests/test_bench_scripts.py. Everything else runs
here: the judge page's and the security page's servers, each CLI command in order, and the translation commands.
The first test fails when a ```bash block of any page is run by none of these.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED_DATA, jsonl, session_line
from tests.doc_commands import DOCS, README, bash_blocks, bash_blocks_of, commands, pages, section
from tests.services import free_port, wait_for_port

JUDGE, CLI, SECURITY, LAYOUT = DOCS / "judge.md", DOCS / "cli.md", DOCS / "security.md", DOCS / "layout.md"
# (page, heading) -> who runs the ```bash blocks under that heading, when not this module
RUN_ELSEWHERE = {
    (README, "Two commands"): "the install commands: .ci/run runs the second, a person the first",
    (DOCS / "team-deployment.md", "Deploying for a team"): "tests/test_docs_team.py",
    (DOCS / "api.md", "API"): "tests/test_docs_team.py",
    (DOCS / "simulation.md", "Command line"): "tests/test_docs_simulation.py",
    (DOCS / "rubrics.md", "Commands"): "tests/test_docs_rubrics.py",
    (DOCS / "ratings.md", "Commands"): "tests/test_docs_ratings.py",
    (DOCS / "ratings.md", "The API"): "tests/test_docs_ratings.py, against a running dashboard",
    (DOCS / "client.md", "The CLI's remote mode"): "tests/test_client.py, against a live dashboard",
    (DOCS / "formats.md", "Scores from another judge"): "tests/kinds/dialogue/test_imported_scores.py, with the "
                                                        "files of its worked example",
    (DOCS / "benchmarks.md", "Benchmarks"): "tests/test_bench_scripts.py, at small sizes (the full runs take minutes "
                                            "each and are judged by hand)",
    (DOCS / "adding-a-kind.md", "Trying the example"): "tests/kinds/test_installed_kind.py, into a folder of its own "
                                                       "and with the local judge",
    (DOCS / "leaderboard.md", "From the command line"): "tests/test_docs_leaderboard.py, then its API calls",
    (DOCS / "leaderboard.md", "The API"): "tests/test_docs_leaderboard.py, against a running dashboard",
    (CLI, "Gating on figures calibrated to people"): "tests/web/test_calibrated_gate.py, with a ratings file of its "
                                                     "own",
}
RUN_HERE = ((JUDGE, "The judge"), (CLI, "CLI"), (SECURITY, "Accounts and API tokens"),
            (SECURITY, "Headers, cookies and exports"), (LAYOUT, "Translations"),
            (DOCS / "api.md", "Paired differences of runs"), (DOCS / "api.md", "The list of evaluations"))
PASSWORD = "docs-commands-pw"


def test_every_bash_block_of_the_documentation_is_run_by_a_test():
    run = {(page, block) for page, heading in [*RUN_ELSEWHERE, *RUN_HERE]
           for block in bash_blocks(section(page, heading))}
    every = {(page, block) for page in pages() for block in bash_blocks_of(page)}
    left = sorted(f"{page.relative_to(README.parent)}: {block.splitlines()[0]}" for page, block in every - run)
    assert left == [], "```bash blocks no test runs (add them to RUN_HERE or RUN_ELSEWHERE, and run them)"
    assert run <= every


def test_ci_runs_the_readmes_install_and_test_command_as_written():
    install_and_run, install_and_test = commands(README, "Two commands")
    assert install_and_run == "pip install -r requirements.txt && python app.py"
    assert install_and_test == "pip install -r requirements-dev.txt && python -m pytest"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[ci.index("# The README's test command:") + 1] == install_and_test


def _environment(tmp_path: Path, **extra: str) -> dict:
    """This machine's environment without its deployment settings, with a store and folders of the test's own."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUDGE_", "DATABASE", "CELERY_", "UPLOAD_", "RESULTS_", "STORAGE_", "AWS_", "AUTH",
                                "HOST", "PORT", "SECRET_", "SETTINGS_", "RATELIMIT", "SECURE_", "TRUSTED_"))}
    return {**env, "PYTHONPATH": str(ROOT), "INSTANCE_PATH": str(tmp_path / "instance"),
            "DATABASE": str(tmp_path / "db.sqlite"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
            "RESULTS_FOLDER": str(tmp_path / "results"), **extra}


def _run(command: str, cwd: Path, env: dict, stdin: str = "") -> subprocess.CompletedProcess:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, input=stdin, text=True, capture_output=True,
                          timeout=300, start_new_session=True)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _get(url: str, headers: dict | None = None) -> tuple[int, str, dict]:
    request = urllib.request.Request(url, headers=headers or {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=10) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace"), dict(exc.headers)


class Server:
    """A documentation command that serves the dashboard, in ROOT, until stopped."""

    def __init__(self, command: str, env: dict, port: int):
        self.log = Path(env["INSTANCE_PATH"]).parent / f"server-{port}.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(["bash", "-c", command], cwd=ROOT, env=env, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        self.base = f"http://127.0.0.1:{port}"
        wait_for_port(port, self.process, command)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(20)
        except ProcessLookupError:
            pass


def test_the_judge_section_starts_the_dashboard_as_written(tmp_path, judge_server):
    steps = commands(JUDGE, "The judge")
    assert len(steps) == 3
    models = [("Qwen2.5-72B-Instruct",), ("gpt-4o",), ("local", "openai", "Qwen2.5-72B-Instruct")]
    for step, expected in zip(steps, models):
        port = free_port()
        command = step.replace("http://localhost:8000/v1", judge_server.url)
        with Server(command, _environment(tmp_path / str(port), PORT=str(port)), port) as server:
            status, page, _headers = _get(f"{server.base}/settings")
            assert status == 200, page[:500]
            assert all(name in page for name in expected), (step, expected)
            assert "sk-..." not in page  # a key is never shown back


def test_the_security_section_starts_the_dashboard_as_written(tmp_path):
    create, serve = commands(SECURITY, "Accounts and API tokens")
    env = _environment(tmp_path)
    _run(create, ROOT, env, stdin=f"{PASSWORD}\n{PASSWORD}\n")
    port = free_port()
    with Server(serve, {**env, "PORT": str(port)}, port) as server:  # listens on every address; asked on loopback
        status, _page, headers = _get(f"{server.base}/evaluations")
        assert status == 302 and "/login" in headers["Location"]  # accounts are on
        assert _get(f"{server.base}/login")[0] == 200

    [proxied] = commands(SECURITY, "Headers, cookies and exports")
    port = free_port()
    with Server(proxied.replace("PORT=5000", f"PORT={port}"), env, port) as server:
        status, _page, headers = _get(f"{server.base}/login", {"X-Forwarded-Proto": "https"})
        assert status == 200 and "Secure" in headers["Set-Cookie"]


def test_the_translation_commands_leave_the_catalogs_as_they_are(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "uploads", "results", "instance", "docs",
                                                               "__pycache__", "*.mo", ".pytest_cache",
                                                               ".mypy_cache", ".ruff_cache"))
    for command in commands(LAYOUT, "Translations"):
        _run(command, copy, dict(os.environ))

    def entries(path: Path) -> str:  # without the header, whose dates change at every run
        return path.read_text(encoding="utf-8").split("\n\n", 1)[1]

    for catalog in ("messages.pot", "zh/LC_MESSAGES/messages.po", "ko/LC_MESSAGES/messages.po"):
        assert entries(copy / "translations" / catalog) == entries(ROOT / "translations" / catalog), catalog


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"the CLI's examples use real data from {SHARED_DATA}")
def test_the_cli_section_runs_as_written(tmp_path, judge_server):
    from tests.kinds.agentbench.test_agentbench import custom_for, dumps, overall
    from tests.kinds.agentbench.test_agentbench_pipeline import outputs_zip
    from tests.kinds.conversation.test_conversation_pipeline import sample_zip
    from tests.kinds.mobility.test_mobility_pipeline import synthetic

    # The files the examples name, in a working folder beside a link to ../shared (as from the project folder).
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "shared").symlink_to(SHARED_DATA.parent)
    shutil.copy(ROOT / "sample_data.jsonl", work)
    (work / "log.jsonl").write_bytes(jsonl(*(session_line(f"s{i}", 3, ("Base", "Ours")) for i in range(4))))
    (work / "scores.csv").write_text("session_id,round,method,alignment\n" + "".join(  # ALOE's 1-5, of log.jsonl
        f"s{i},{k},{m},{1 + (i + k + len(m)) % 5}\n" for i in range(4) for k in (1, 2, 3) for m in ("Base", "Ours")))
    (work / "generated.json").write_text(json.dumps(synthetic(seed=2)))
    (work / "RecLLMSim.zip").write_bytes(sample_zip())
    (work / "outputs.zip").write_bytes(outputs_zip())
    (work / "overall.json").write_bytes(dumps(overall(custom_for("os-std", 0.42))))
    (work / "judges.json").write_text(json.dumps([{"model": "judge-a", "temperature": 0.7},
                                                  {"model": "judge-b", "temperature": 0.7}]))
    endpoints = {"local": {"base_url": judge_server.url, "models": ["judge-test"]}}
    env = _environment(tmp_path, JUDGE_BASE_URL=judge_server.url, JUDGE_API_KEY="sk-test", JUDGE_MODEL="judge-test",
                       JUDGE_ENDPOINTS=json.dumps(endpoints), JUDGE_MAX_RETRIES="0")

    evaluations: list[str] = []
    outputs = {}
    elsewhere = set(commands(CLI, "Gating on figures calibrated to people"))  # see RUN_ELSEWHERE
    for step in commands(CLI, "CLI"):
        if step in elsewhere:
            continue
        if "--baseline EVAL_ID" in step:  # against the run of the same file with the same judge: no regression
            step = step.replace("EVAL_ID", evaluations[1])
        if "EVAL_ID" in step:
            step = step.replace("EVAL_ID", evaluations[0], 1).replace("EVAL_ID", evaluations[1], 1)
        done = outputs[step] = _run(step, work, env, stdin=f"{PASSWORD}\n{PASSWORD}\n")
        evaluations += re.findall(r"^evaluation (\w+)$", done.stderr, flags=re.M)
        if " score " in step and "--out" not in step:
            document = json.loads(done.stdout)
            assert document["kind"] in ("dialogue", "mobility", "conversation", "agentbench"), step
            if "--scores" in step:  # imported: the rubric's, no judge
                assert document["rubric"]["id"] == "aloe" and document["judge"]["calls"] == 0, step
    assert json.loads((work / "result.json").read_text())["methods"].keys() == {"Base", "Ours"}
    assert (work / "site" / "index.html").is_file()
    assert "alice" in outputs["flask --app app users list"].stdout


def test_the_api_compare_example_runs_as_written(tmp_path, judge_server):
    # the page's first three commands, as a user types them (only -sS and the server's address are changed to run them)
    documented = commands(DOCS / "api.md", "API")[:3]
    assert documented == [
        "curl -F file=@sample_data.jsonl http://127.0.0.1:5000/api/uploads",
        "curl -H 'Content-Type: application/json' -d '{\"upload_id\": \"<id>\"}' http://127.0.0.1:5000/api/evaluations",
        "curl http://127.0.0.1:5000/api/evaluations/<evaluation id>"]
    upload, start, status = (c.replace("curl ", "curl -sS ", 1) for c in documented)
    [compare] = commands(DOCS / "api.md", "Paired differences of runs")
    assert compare == "curl 'http://127.0.0.1:5000/api/compare?ids=<evaluation id>&ids=<other id>&baseline=<evaluation id>'"
    [contract] = commands(DOCS / "api.md", "The contract: `/api/openapi.json`")
    assert contract == "curl http://127.0.0.1:5000/api/openapi.json"
    port = free_port()
    env = _environment(tmp_path, PORT=str(port), JUDGE_BASE_URL=judge_server.url, JUDGE_API_KEY="sk-test",
                       JUDGE_MODEL="judge-test")
    with Server("python app.py", env, port) as server:
        def run(command: str) -> dict:
            return json.loads(_run(command.replace("http://127.0.0.1:5000", server.base), ROOT, env).stdout)

        upload_id = run(upload)["id"]
        ids = [run(start.replace("<id>", upload_id))["id"] for _ in range(2)]
        for evaluation_id in ids:
            for _ in range(600):
                if run(status.replace("<evaluation id>", evaluation_id))["status"] not in ("queued", "running"):
                    break
                time.sleep(0.2)
        body = run(compare.replace("<evaluation id>", ids[0]).replace("<other id>", ids[1]))
        document = run(contract)
        [listing] = commands(DOCS / "api.md", "The list of evaluations")
        second = run(listing.replace("curl ", "curl -sS ", 1))
        averages = {i: run(status.replace("<evaluation id>", i))["result"]["methods"]["PersonaSteer"]["avg"] for i in ids}
    assert document["openapi"] == "3.1.0" and "/api/compare" in document["paths"]
    # the list's example: one run a page, by PersonaSteer's average AL, highest first (the same judge: equal, so the
    # newest first among them); its second page is the other run
    ranked = sorted(ids, key=lambda i: (-averages[i], -ids.index(i)))
    assert [e["id"] for e in second] == [ranked[1]] and second[0]["filename"] == "sample_data.jsonl"
    assert set(body) == {"baseline", "runs", "paired", "regression"} and body["baseline"] == ids[0]
    assert [r["id"] for r in body["runs"]] == ids and body["regression"] is False
    # the same file judged twice by the same judge: every paired difference is 0
    assert body["paired"] and all(r["diff"] == 0 and r["run"] == ids[1] for r in body["paired"])

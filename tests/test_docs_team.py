"""docs/team-deployment.md ("Deploying for a team"), run as written: its commands, with only hosts, ports,
passwords and folders swapped for the test's own (a PostgreSQL and a Redis started here, the local judge, temporary
folders).

The database is created with the page's `sudo -u postgres createuser/createdb`, the bucket (on the S3 server of
the fixtures) with its `flask --app app storage check --create`, the first admin with its
`flask --app app users create`, the web with its `gunicorn` line and two workers with its `celery` line (one
in the project folder, one in another folder with the project on PYTHONPATH, as on a second machine). Then the
API calls of docs/api.md (with the token header it asks for when accounts are on) upload `sample_data.jsonl` and
evaluate it on the workers, and the team page's `flask --app app jobs requeue` runs.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.conftest import ROOT
from tests.doc_commands import DOCS, commands, substitute
from tests.services import Postgres, Redis, free_port, wait_for_port

TEAM = DOCS / "team-deployment.md"
API = DOCS / "api.md"
INSTALLS = ("sudo apt-get install", "pip install")  # done by .ci/run before the tests
PASSWORD = "correct-horse-battery-9"


def _needs_sudo() -> None:
    if shutil.which("sudo") is None or os.geteuid() != 0:
        pytest.skip("the team page creates the database with `sudo -u postgres`: run as root with sudo installed")


class Shell:
    """Runs documentation commands one by one under bash, with the exports seen so far, in `cwd`."""

    def __init__(self, cwd: Path, base_env: dict):
        self.cwd, self.env, self.exports = cwd, base_env, []
        self.background: list[tuple[subprocess.Popen, Path]] = []

    def script(self, command: str) -> list[str]:
        return ["bash", "-ec", "\n".join([*self.exports, command])]

    def run(self, command: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess:
        """Run `command` to its end; AssertionError with its output when it fails."""
        if command.startswith("export "):
            self.exports.append(command)
            return self.run("true")
        done = subprocess.run(self.script(command), cwd=cwd or self.cwd, env=self.env, input=stdin, text=True,
                              capture_output=True, timeout=120, start_new_session=True)  # no terminal: stdin
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        return done

    def start(self, command: str, log: Path, cwd: Path | None = None, env: dict | None = None) -> subprocess.Popen:
        """Start a long-running `command` (a server), its output in `log`."""
        with log.open("wb") as out:
            process = subprocess.Popen(self.script(command), cwd=cwd or self.cwd, env={**self.env, **(env or {})},
                                       stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.background.append((process, log))
        return process

    def stop(self) -> None:
        """End every server started, process group and all."""
        for process, _log in self.background:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(process.pid, sig)
                    process.wait(20)
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue


def _sign_in(base: str) -> str:
    """Sign in as the team page's admin through the sign-in form and create an API token on the account page."""
    session = requests.Session()
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', session.get(f"{base}/login").text).group(1)
    page = session.post(f"{base}/login", data={"csrf_token": csrf, "name": "alice", "password": PASSWORD})
    assert page.status_code == 200 and "/login" not in page.url, page.text[:500]
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', session.get(f"{base}/account").text).group(1)
    page = session.post(f"{base}/account/tokens", data={"csrf_token": csrf, "name": "docs"})
    return re.search(r'class="new-token">(psb_[^<]+)<', page.text).group(1)


def test_the_team_deployment_runs_as_the_docs_say(tmp_path, judge_server, s3_server):
    _needs_sudo()
    postgres, redis = Postgres(), Redis(tmp_path / "redis")
    web_port = free_port()
    replacements = {
        "db.lab.example": f"127.0.0.1:{postgres.port}", "redis.lab.example:6379": f"127.0.0.1:{redis.port}",
        "http://vllm.lab.example:8000/v1": judge_server.url, "PASSWORD": PASSWORD,
        "http://s3.lab.example:8333": s3_server.environ["AWS_ENDPOINT_URL"],
        "=KEY_ID": "=" + s3_server.environ["AWS_ACCESS_KEY_ID"],
        "=SECRET_ACCESS_KEY": "=" + s3_server.environ["AWS_SECRET_ACCESS_KEY"],
        "0.0.0.0:8000": f"127.0.0.1:{web_port}",
        # Debian's client tools find a server by host and port; the page's server is the local default one
        "createuser ": f"createuser -h 127.0.0.1 -p {postgres.port} ",
        "createdb ": f"createdb -h 127.0.0.1 -p {postgres.port} ",
    }
    steps = [c for c in commands(TEAM, "Deploying for a team") if not c.startswith(INSTALLS)]
    assert "gunicorn -w 4 -b 0.0.0.0:8000 'app:create_app()'" in steps  # the web line, run below as written
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "DATABASE", "CELERY_", "UPLOAD_",
                                                                   "RESULTS_", "AUTH", "STORAGE_", "SECRET_", "SETTINGS_",
                                                                   "AWS_", "RATELIMIT"))}
    shell = Shell(ROOT, env)
    machine_b = tmp_path / "machine-b"
    machine_b.mkdir()
    try:
        web = workers = None
        for step in steps:
            step = substitute(step, replacements)
            if step.startswith("python -c"):  # the SETTINGS_KEY, made once and then exported everywhere
                replacements["FERNET_KEY"] = shell.run(step).stdout.strip()
            elif step.startswith("sudo -u postgres createuser"):
                shell.run(step, stdin=f"{PASSWORD}\n{PASSWORD}\n")  # --pwprompt, asked twice
            elif step.startswith("flask --app app users create"):
                shell.run(step, stdin=f"{PASSWORD}\n{PASSWORD}\n")
            elif step.startswith("gunicorn "):
                web = shell.start(step, tmp_path / "web.log")
            elif step.startswith("celery "):
                workers = [shell.start(step, tmp_path / "worker-a.log"),
                           shell.start(step, tmp_path / "worker-b.log", cwd=machine_b, env={"PYTHONPATH": str(ROOT)})]
            else:
                shell.run(step)
        assert web is not None and workers is not None, "the team page lost its gunicorn or celery line"
        wait_for_port(web_port, web, "gunicorn")
        base = f"http://127.0.0.1:{web_port}"

        token = _sign_in(base)
        api = [substitute(c, {"http://127.0.0.1:5000": base}) for c in commands(API, "API")]
        auth = f"curl -sS -H 'Authorization: Bearer {token}' "
        upload = json.loads(shell.run(api[0].replace("curl ", auth, 1)).stdout)
        assert upload["kind"] == "dialogue", upload
        started = json.loads(shell.run(api[1].replace("curl ", auth, 1).replace("<id>", upload["id"])).stdout)
        deadline = time.monotonic() + 180
        while True:
            state = json.loads(shell.run(api[2].replace("curl ", auth, 1).replace("<evaluation id>",
                                                                                  started["id"])).stdout)
            if state["status"] not in ("queued", "running") or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert state["status"] == "done", state
        assert state["progress"]["done"] == state["progress"]["total"] > 0 and state["progress"]["failed"] == 0
        assert judge_server.requests >= state["progress"]["total"]  # judged by the workers, on the local judge

        assert s3_server.keys("psb"), "nothing was kept in the team page's bucket"
        [requeue_step] = [step for step in steps if step.startswith("flask --app app jobs requeue")]
        requeue = shell.run(requeue_step)
        assert requeue.stdout.strip() == ""  # nothing is left to enqueue again

        logs = [(tmp_path / name).read_text(errors="replace") for name in ("worker-a.log", "worker-b.log")]
        assert all(worker.poll() is None for worker in workers), logs
        assert not any("DuplicateNodenameWarning" in log or "Traceback" in log for log in logs), logs
    finally:
        try:
            shell.stop()
        finally:
            redis.stop()
            postgres.stop()


def test_every_command_of_the_team_page_is_run_here():
    """A command added to the page must be handled by the test above (or be an install command)."""
    known = ("sudo apt-get install", "pip install", "sudo -u postgres createuser", "sudo -u postgres createdb",
             'python -c "from cryptography.fernet', "export ", "flask --app app storage check",
             "flask --app app users create", "gunicorn ", "celery ", "flask --app app jobs requeue")
    left = [c for c in commands(TEAM, "Deploying for a team") if not c.startswith(known)]
    assert left == []
    assert shlex.split(commands(API, "API")[0])[0] == "curl"

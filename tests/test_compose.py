"""docker-compose.yml, the Dockerfile and the systemd units of docs/team-deployment.md run what that page runs.

The compose file is validated against the Compose specification's JSON schema (the copy check-jsonschema ships),
its commands are the page's, word for word, and it sets every variable the page exports; web and workers share
no volume and run as a non-root user. The page's systemd units start its commands too.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys

import yaml

from tests.conftest import ROOT
from tests.doc_commands import DOCS, commands, section

PAGE = DOCS / "team-deployment.md"
TEAM = "Deploying for a team"


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _docs_command(program: str) -> list[str]:
    [line] = [c for c in commands(PAGE, TEAM) if c.startswith(program)]
    return shlex.split(line)


def test_the_compose_file_follows_the_compose_specification():
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                           str(ROOT / "docker-compose.yml")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_compose_services_run_the_documented_commands():
    services = _compose()["services"]
    assert services["web"]["command"] == _docs_command("gunicorn ")
    assert services["worker"]["command"] == _docs_command("celery ")
    assert services["storage"]["command"] == _docs_command("flask --app app storage check")


def test_the_compose_services_have_every_setting_the_docs_export():
    exported = set()
    for line in commands(PAGE, TEAM):
        if line.startswith("export "):
            exported |= {word.split("=", 1)[0] for word in shlex.split(line)[1:]}
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "STORAGE_URL", "SETTINGS_KEY"} <= exported
    for name in ("web", "worker", "storage"):
        environment = _compose()["services"][name]["environment"]
        assert exported <= set(environment), (name, exported - set(environment))


def test_web_and_workers_share_no_volume_and_run_as_a_non_root_user():
    services = _compose()["services"]
    for name in ("web", "worker", "storage"):
        assert not services[name].get("volumes"), name
        assert services[name]["user"] not in ("", "0", "root")
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^USER 10001$", dockerfile, re.M) and services["web"]["user"] == "10001"


def test_the_systemd_units_start_the_documented_commands():
    units = re.findall(r"^```ini\n(.*?)^```", section(PAGE, TEAM), flags=re.S | re.M)
    starts = [shlex.split(line.split("=", 1)[1]) for unit in units for line in unit.splitlines()
              if line.startswith("ExecStart=")]
    assert len(starts) == 2
    for start, program in zip(starts, ("gunicorn ", "celery ")):
        expected = _docs_command(program)
        assert start[0].endswith("/" + expected[0]) and start[1:] == expected[1:]
    assert all("EnvironmentFile=/etc/psb.env" in unit and "Restart=always" in unit for unit in units)

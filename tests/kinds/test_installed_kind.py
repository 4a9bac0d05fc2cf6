"""A judged kind from an installed package: tests/plugins/psb-answers, installed by pip (docs/adding-a-kind.md's command,
as written but for the folder) into a temporary folder, its wheel built offline by flit_core; nothing is written to the
repository nor to the interpreter's site-packages. The kind is found by its entry point (group personasteer.kinds),
never imported by path: by the web app (upload over HTTP, a judged evaluation, the result page, judgments.csv, compare,
the list), by `flask --app app score` in a process of its own (the docs' command as written), and by a Celery worker.

The grades are the local judge's (tests/judge_server.py): each answer's `[[dims=N]]` marker is the grade the judge
answers with, so every mean below is computed by hand from the files. And a kind that cannot be loaded stops the app
with a message that says which and why.
"""
from __future__ import annotations

import csv
import importlib.util
import inspect
import io
import json
import os
import re
import subprocess
import sys
import time
import uuid
from importlib import metadata
from pathlib import Path

import pytest

from app import create_app
from kinds import registry
from kinds.kind import Judged, Paired, Plan, capabilities
from tests.conftest import ROOT, wait_for
from tests.doc_commands import DOCS, commands, substitute

PLUGIN = ROOT / "tests" / "plugins" / "psb-answers"
QUESTIONS = PLUGIN / "questions.jsonl"
DOC_FOLDER = "/tmp/psb-kinds"  # where adding-a-kind.md installs the example
# QUESTIONS' grades, by their markers: small 2 and 5; large 5, 4 and 5
MEANS = {"small": (2 + 5) / 2, "large": (5 + 4 + 5) / 3}


def docs_commands(folder: Path) -> list[str]:
    """The commands of adding-a-kind.md's "Trying the example", its folder replaced by ours."""
    return [substitute(c, {DOC_FOLDER: str(folder)}) for c in commands(DOCS / "adding-a-kind.md", "Trying the example")]


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Path:
    """A folder holding the example package as pip installs it (the docs' first command)."""
    folder = tmp_path_factory.mktemp("kinds")
    install = docs_commands(folder)[0]
    before = sorted(PLUGIN.rglob("*"))
    done = subprocess.run(["bash", "-c", install], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{install}\n{done.stdout}\n{done.stderr}"
    assert sorted(PLUGIN.rglob("*")) == before  # no build folder, egg-info nor cache left in the repository
    assert (folder / "psb_answers" / "kind.py").is_file() and (folder / "psb_answers" / "templates").is_dir()
    return folder


@pytest.fixture
def on_path(installed, monkeypatch):
    """The folder on sys.path, as PYTHONPATH puts it there; the kind and its modules are forgotten afterwards."""
    assert "answers" not in registry.names()
    assert importlib.util.find_spec("psb_answers") is None  # not importable from the repository by path
    monkeypatch.syspath_prepend(str(installed))
    yield installed
    registry.unregister("answers")
    for name in [name for name in sys.modules if name.split(".")[0] == "psb_answers"]:
        del sys.modules[name]


@pytest.fixture
def answers_app(on_path, make_app, judge_env):
    """An app built with the example installed, its judge the local server."""
    return make_app(judge_env)


def upload(client, data: bytes, name: str = "questions.jsonl"):
    return client.post("/api/uploads", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")


def evaluate(client, upload_id: str) -> dict:
    resp = client.post("/api/evaluations", json={"upload_id": upload_id})
    assert resp.status_code == 202, resp.get_data(as_text=True)
    return wait_for(client, resp.get_json()["id"])


def line(qid: str, **answers: str) -> dict:
    return {"id": qid, "question": f"Question {qid}?", "reference": f"The answer to {qid}.", "answers": answers}


def jsonl(*lines: dict) -> bytes:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()


def test_the_kind_comes_from_the_installed_packages_entry_point(answers_app, installed):
    kind = registry.get("answers")
    assert registry.source("answers") == "the entry point answers = psb_answers.kind:AnswersKind of psb-answers 1.0"
    assert Path(inspect.getfile(type(kind))).is_relative_to(installed)  # the installed copy, not tests/plugins
    [entry] = [e for e in metadata.entry_points(group=registry.GROUP) if e.name == "answers"]
    assert (entry.value, entry.dist.name) == ("psb_answers.kind:AnswersKind", "psb-answers")
    assert capabilities(kind) == ["Scored", "Judged"] and isinstance(kind, Judged) and not isinstance(kind, Paired)
    assert "Graded answers (example plug-in): .jsonl, one question per line." in \
        answers_app.test_client().get("/").get_data(as_text=True)


def test_upload_judge_result_page_judgments_and_compare(answers_app, judge_server):
    client = answers_app.test_client()
    sent = upload(client, QUESTIONS.read_bytes())
    assert sent.status_code == 201, sent.get_json()
    assert (sent.get_json()["kind"], sent.get_json()["summary"]) == (
        "answers", {"questions": 3, "answers": {"small": 2, "large": 3}})
    page = client.get(f"/uploads/{sent.get_json()['id']}").get_data(as_text=True)
    assert "The file is valid: 3 questions." in page and 'name="model"' in page  # its template, the judge fields

    first = evaluate(client, sent.get_json()["id"])
    assert first["status"] == "done", first
    result = first["result"]
    assert result["kind"] == "answers" and result["questions"] == 3
    assert result["methods"] == {"small": {"mean": MEANS["small"], "graded": 2, "ungraded": 0},
                                 "large": {"mean": pytest.approx(MEANS["large"]), "graded": 3, "ungraded": 0}}
    assert judge_server.requests == 5 and result["judge"]["calls"] == 5 and result["judge"]["model"] == "judge-test"
    asked = judge_server.last_request["messages"]  # the kind's own prompt
    assert asked[0]["content"].startswith("You grade an answer") and "Reference answer: " in asked[1]["content"]
    provenance = result["provenance"]
    assert provenance["kind"] == {"name": "answers", "format_version": 1}
    assert list(provenance["judges"][0]["prompts"]) == ["grade"]

    html = client.get(f"/evaluations/{first['id']}").get_data(as_text=True)
    assert re.findall(r'<td class="mean">([^<]*)</td>', html) == ["3.50", "4.67"]
    rows = client.get(f"/evaluations/{first['id']}/judgments.csv").get_data(as_text=True).lstrip("\ufeff")
    grades = sorted((r["method"], int(r["grade"])) for r in csv.DictReader(io.StringIO(rows)))
    assert grades == [("large", 4), ("large", 5), ("large", 5), ("small", 2), ("small", 5)]
    assert client.get(f"/evaluations/{first['id']}.csv").get_data(as_text=True).lstrip("\ufeff").splitlines()[0] == \
        "method,mean,graded,ungraded"

    # A second run: small's first answer graded 4, and large's last answered out of the scale (6): not graded
    other = jsonl(line("q1", small="Close. [[dims=4]]", large="Right. [[dims=5]]"),
                  line("q2", small="Right. [[dims=5]]", large="Mostly. [[dims=4]]"),
                  line("q3", large="Off the scale. [[dims=6]]"))
    second = evaluate(client, upload(client, other, "other.jsonl").get_json()["id"])
    assert second["status"] == "done" and second["progress"]["unparsed"] == 1
    assert second["result"]["methods"] == {"small": {"mean": (4 + 5) / 2, "graded": 2, "ungraded": 0},
                                           "large": {"mean": (5 + 4) / 2, "graded": 2, "ungraded": 1}}
    compare = client.get(f"/compare?ids={first['id']}&ids={second['id']}")
    assert compare.status_code == 200
    assert re.findall(r'<td class="mean">([^<]*)</td>', compare.get_data(as_text=True)) == [
        "3.50", "4.67", "4.50", "4.50"]
    listed = client.get("/evaluations").get_data(as_text=True)
    assert "Mean grade (1-5)" in listed and "small, large" in listed


def test_bad_files_and_requests_get_located_messages(answers_app):
    client = answers_app.test_client()
    bad = upload(client, jsonl(line("q1", a="x"), {"id": "q2", "question": "Why?", "answers": {"a": "y"}},
                               line("q1", a="z"), {"id": "q4", "question": "How?", "reference": "So.", "answers": []}))
    assert bad.status_code == 400
    assert [(p["line"], p["path"]) for p in bad.get_json()["problems"]] == [(2, "reference"), (3, "id"),
                                                                            (4, "answers")]
    assert "The id q1 is taken by an earlier line." in bad.get_json()["problems"][1]["message"]
    upload_id = upload(client, jsonl(line("q1", a="x", b="y"))).get_json()["id"]
    panel = client.post("/api/evaluations", json={"upload_id": upload_id, "judges": [{"model": "m1"}, {"model": "m2"}]})
    assert panel.status_code == 400 and panel.get_json()["error"] == "Graded answers are graded by one judge, not a panel."
    unknown = client.post("/api/evaluations", json={"upload_id": upload_id, "methods": ["c"]})
    assert unknown.get_json()["error"] == "Unknown methods: c. This file has: a, b."


def test_the_docs_commands_score_it_in_a_process_of_its_own(installed, judge_server, tmp_path):
    env = {**{k: v for k, v in os.environ.items()
              if not k.startswith(("JUDGE_", "DATABASE", "CELERY_", "PSB_", "PYTHONPATH"))},
           "INSTANCE_PATH": str(tmp_path / "instance"), "DATABASE": str(tmp_path / "db.sqlite"),
           "UPLOAD_FOLDER": str(tmp_path / "uploads"), "RESULTS_FOLDER": str(tmp_path / "results"),
           "JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test"}
    score = docs_commands(installed)[1]
    assert score.startswith(f"PYTHONPATH={installed} flask --app app score ")
    done = subprocess.run(["bash", "-c", score], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert document["kind"] == "answers"
    assert {m: v["mean"] for m, v in document["methods"].items()} == pytest.approx(MEANS)
    # without the folder on PYTHONPATH the same process has no such kind
    bare = subprocess.run(["bash", "-c", score.split(" ", 1)[1] + " --kind answers"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert bare.returncode == 1 and "Unknown benchmark kind 'answers'" in bare.stderr


@pytest.mark.skipif(importlib.util.find_spec("celery") is None, reason="celery is not installed")
def test_a_celery_worker_judges_and_scores_it(on_path, redis_server, judge_server, tmp_path):
    judge = {"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test"}
    shared = {"DATABASE": str(tmp_path / "db.sqlite"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
              "RESULTS_FOLDER": str(tmp_path / "results"), "CELERY_BROKER_URL": redis_server.url,
              "CELERY_QUEUE": f"psb-test-{uuid.uuid4().hex[:8]}"}
    app = create_app({**shared, "TESTING": True, "SECRET_KEY": "test", "JUDGE_KEY_FILE": str(tmp_path / "key"),
                      "WTF_CSRF_ENABLED": False, "RESUME_ON_START": False, "DATABASE_URL": None, "JUDGE_ENV": judge})
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "DATABASE", "CELERY_", "PSB_"))},
           **shared, **judge, "PYTHONPATH": str(on_path), "INSTANCE_PATH": str(tmp_path / "instance")}
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "app:celery_app", "worker", "--pool=threads",
                                   "--concurrency=2", "-Q", shared["CELERY_QUEUE"], "--without-heartbeat",
                                   "--without-mingle", "--without-gossip", "--loglevel=INFO"],
                                  cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while " ready." not in log.read_text(errors="replace"):
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.1)
        client = app.test_client()
        body = evaluate(client, upload(client, QUESTIONS.read_bytes()).get_json()["id"])
        assert body["status"] == "done", (body, log.read_text(errors="replace")[-3000:])
        assert {m: v["mean"] for m, v in body["result"]["methods"].items()} == pytest.approx(MEANS)
        assert "psb.judge_block" in log.read_text(errors="replace")  # the worker judged it
    finally:
        worker.kill()
        worker.wait(10)


class Unfinished(Judged):
    """A judged kind that leaves out `plan`, `requests` and `prompt_templates`."""

    name, label = "unfinished", "Unfinished"

    def validate(self, stream, filename, options):
        raise NotImplementedError

    def start(self, upload, request):
        return Plan([], {})

    def score(self, job):
        return {}

    def csv(self, result):
        return (), []

    def compare(self, runs):
        return {}


class Unpaired(Paired):
    """A paired kind without the `paired_metrics` it must declare."""

    name, label = "unpaired", "Unpaired"
    validate, start, score, csv, compare = (Unfinished.validate, Unfinished.start, Unfinished.score, Unfinished.csv,
                                            Unfinished.compare)

    def paired_samples(self, record, site):
        return []


@pytest.mark.parametrize(("setting", "message"), [
    ("no_such_module:Kind", "PSB_KINDS: no_such_module:Kind: the module no_such_module cannot be imported: "
                            "ModuleNotFoundError: No module named 'no_such_module'"),
    ("kinds.kind:NoSuchKind", "PSB_KINDS: kinds.kind:NoSuchKind: the module kinds.kind has no NoSuchKind."),
    ("kinds.kind", "PSB_KINDS: kinds.kind: 'kinds.kind' does not name a kind; write module:Class"),
    ("kinds.kind:as_flag", "PSB_KINDS: kinds.kind:as_flag: kinds.kind:as_flag is not a subclass of kinds.kind.Kind"),
    (f"{__name__}:Unfinished", f"PSB_KINDS: {__name__}:Unfinished: {__name__}:Unfinished cannot be made: Can't "
                               "instantiate abstract class Unfinished with abstract methods plan, prompt_templates, "
                               "requests"),
    (f"{__name__}:Unpaired", f"PSB_KINDS: {__name__}:Unpaired: the kind lacks Paired.paired_metrics."),
    ("kinds.dialogue.kind:DialogueKind", "PSB_KINDS: kinds.dialogue.kind:DialogueKind: a kind named dialogue is "
                                         "already registered (kinds.dialogue.kind:DialogueKind (built in))"),
])
def test_a_kind_that_cannot_be_loaded_stops_the_app_saying_why(make_app, setting, message):
    before = registry.names()
    with pytest.raises(registry.KindError) as caught:
        make_app(PSB_KINDS=setting)
    assert str(caught.value).startswith(message), str(caught.value)
    assert registry.names() == before


def test_an_entry_point_not_named_after_its_kind_is_refused(make_app, tmp_path, monkeypatch):
    info = tmp_path / "misnamed-1.0.dist-info"  # what pip writes for a package, by hand
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: misnamed\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[personasteer.kinds]\ncounts = tests.kinds.test_kind_plugin:CountsKind\n"
                                           "other = tests.kinds.test_kind_plugin:CountsKind\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(registry.KindError) as caught:
            make_app()
    finally:
        registry.unregister("counts")
    assert str(caught.value) == ("the entry point other = tests.kinds.test_kind_plugin:CountsKind of misnamed 1.0: the "
                                 "kind is named counts; name the entry point after it (counts = "
                                 "tests.kinds.test_kind_plugin:CountsKind).")


def test_python_app_py_names_the_kind_that_cannot_be_loaded(tmp_path):
    env = {**os.environ, "PSB_KINDS": "no_such_module:Kind", "INSTANCE_PATH": str(tmp_path / "instance"),
           "DATABASE": str(tmp_path / "db.sqlite"), "PORT": "0"}
    done = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip() == ("PersonaSteer Bench: PSB_KINDS: no_such_module:Kind: the module no_such_module "
                                   "cannot be imported: ModuleNotFoundError: No module named 'no_such_module'")

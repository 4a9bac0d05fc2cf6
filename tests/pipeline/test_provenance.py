"""The `provenance` block of every kind's result, through the real entry points (upload and evaluate over the API with
the local judge server, then GET /evaluations/<id>.json, the result page, the offline report and the bundle): each
value checked against its source, and no key nor base URL of the judge anywhere."""
from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy
import pandas
import pytest
import scipy

from kinds import stats
from kinds.conversation import prompts as conversation_prompts
from kinds.dialogue import pairwise_mode
from kinds.dialogue import prompts as dialogue_prompts
from kinds.mobility.format import KEYS
from tests.conftest import jsonl, session_line, wait_for
from tests.kinds.agentbench.test_agentbench_pipeline import outputs_zip
from tests.kinds.conversation.test_conversation_pipeline import own_conversation
from tests.kinds.mobility.test_mobility_pipeline import add_reference, synthetic

ROOT = Path(__file__).resolve().parent.parent.parent
KEY = "sk-test-secret-key"  # conftest's judge_env
LAB_KEY = "sk-lab-endpoint-secret"
A_SCORES = (20, 50, 60, 90)  # method A's fine score in sessions s0..s3, the same at every round


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def evaluate(client, data: bytes, name: str, **body) -> dict:
    """Upload and evaluate over the API; the finished evaluation (with its result)."""
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"], **body})
    assert created.status_code in (200, 201, 202), created.get_json()
    finished = wait_for(client, created.get_json()["id"])
    assert finished["status"] == "done", finished
    return finished


def exported(client, evaluation_id: str) -> tuple[dict, str]:
    """The result document as GET /evaluations/<id>.json serves it, and its text."""
    resp = client.get(f"/evaluations/{evaluation_id}.json")
    assert resp.status_code == 200
    return json.loads(resp.get_data(as_text=True)), resp.get_data(as_text=True)


def expected_commit() -> str | None:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    return done.stdout.strip() if done.returncode == 0 else None


def record_system_prompts(judge_server) -> dict[str, set]:
    """The system messages the judge server receives, by the mode it recognises."""
    seen: dict[str, set] = {}

    def hook(request: dict) -> None:
        seen.setdefault(request["mode"], set()).add(request["body"]["messages"][0]["content"])
    judge_server.hook = hook
    return seen


def assert_no_secrets(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text


def varied_sessions() -> bytes:
    sessions = []
    for i, score in enumerate(A_SCORES):
        s = session_line(f"s{i}", rounds=2)
        for k, rnd in enumerate(s["rounds"]):
            rnd["responses"] = {"A": f"A {i} {k} [[score={score}]] [[keep=1]]", "B": f"B {i} {k} [[score=40]] [[keep=0]]"}
        sessions.append(s)
    return jsonl(*sessions)


def test_a_dialogue_result_records_exactly_what_produced_it(client, judge_server, monkeypatch):
    monkeypatch.delenv("PSB_COMMIT", raising=False)
    seen = record_system_prompts(judge_server)
    data = varied_sessions()
    finished = evaluate(client, data, "log.jsonl", judge={"temperature": 0.25, "max_tokens": 700})
    document, text = exported(client, finished["id"])
    provenance = document["provenance"]
    with open(ROOT / "pyproject.toml", "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert provenance["code"] == {"version": version, "commit": expected_commit()}
    assert provenance["upload"] == {"sha256": hashlib.sha256(data).hexdigest()}
    assert provenance["kind"] == {"name": "dialogue", "format_version": 2}
    assert provenance["environment"] == {"python": platform.python_version(), "numpy": numpy.__version__,
                                         "scipy": scipy.__version__, "pandas": pandas.__version__}
    fine, binary = (dialogue_prompts.template(mode, "en") for mode in ("fine", "binary"))
    assert provenance["judges"] == [{
        "endpoint": "default", "model": "judge-test", "temperature": 0.25, "max_tokens": 700, "language": "en",
        "samples": 1, "batch": False, "prompt_version": dialogue_prompts.PROMPT_VERSION,
        "prompts": {"fine": {"version": dialogue_prompts.PROMPT_VERSION, "sha256": sha256(fine)},
                    "binary": {"version": dialogue_prompts.PROMPT_VERSION, "sha256": sha256(binary)}}}]
    # the templates hashed are those sent: their system messages are what the judge received, and they differ
    assert seen["fine"] == {json.loads(fine)["system"]} and seen["binary"] == {json.loads(binary)["system"]}
    assert sha256(fine) != sha256(binary) != sha256(dialogue_prompts.template("fine", "zh"))
    assert provenance["reference"] is None
    # the bootstrap recorded is the one the intervals were drawn with: A's interval over its session means again
    boot = provenance["bootstrap"]
    assert boot == {"seed": stats.DEFAULT_SEED, "replicates": stats.DEFAULT_N_BOOT}
    again = stats.bootstrap_ci(A_SCORES, n_boot=boot["replicates"], seed=boot["seed"])
    assert document["methods"]["A"]["ci95"]["avg"] == pytest.approx(again)
    assert stats.bootstrap_ci(A_SCORES, n_boot=boot["replicates"], seed=boot["seed"] + 1) != pytest.approx(again)
    # the times the store keeps of the run
    record = client.get(f"/api/evaluations/{finished['id']}").get_json()
    assert provenance["started_at"] == record["started_at"] and provenance["finished_at"] == record["finished_at"]
    assert record["started_at"] <= record["finished_at"]
    # never the key nor the URL of the judge, in the document, the offline report or the bundle
    assert_no_secrets(text, KEY, judge_server.url)
    report = client.get(f"/evaluations/{finished['id']}/report.html").get_data(as_text=True)
    assert "Provenance" in report and sha256(fine) in report and version in report
    assert_no_secrets(report, KEY, judge_server.url)
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/bundle.zip?ids={finished['id']}").data))
    assert json.loads(archive.read(f"bundle/{finished['id']}.json"))["provenance"] == provenance
    assert sha256(binary) in archive.read(f"bundle/{finished['id']}.html").decode()
    for name in archive.namelist():
        assert_no_secrets(archive.read(name).decode(), KEY, judge_server.url)
    # the result page shows it
    page = client.get(f"/evaluations/{finished['id']}").get_data(as_text=True)
    assert 'aria-labelledby="provenance-title"' in page
    for value in (sha256(fine), sha256(binary), hashlib.sha256(data).hexdigest(), numpy.__version__,
                  dialogue_prompts.PROMPT_VERSION, "judge temperature"):
        assert value in page
    assert_no_secrets(page, KEY)


def test_a_panel_names_each_judge_by_its_endpoint_with_its_own_prompts(make_app, judge_env, judge_server):
    named = {"lab": {"base_url": judge_server.url, "api_key": LAB_KEY, "models": ["judge-lab"]}}
    client = make_app({**judge_env, "JUDGE_ENDPOINTS": json.dumps(named)}).test_client()
    finished = evaluate(client, jsonl(session_line("p1", 2), session_line("p2", 2)), "panel.jsonl",
                        judges=[{"model": "judge-test", "temperature": 0.5}, {"endpoint": "lab", "model": "judge-lab", "language": "zh",
                                                          "temperature": 0.7}],
                        samples=2, pairwise=True)
    document, text = exported(client, finished["id"])
    judges = document["provenance"]["judges"]
    assert [(j["endpoint"], j["model"], j["temperature"], j["language"], j["samples"]) for j in judges] == [
        ("default", "judge-test", 0.5, "en", 2), ("lab", "judge-lab", 0.7, "zh", 2)]
    for judge, language in zip(judges, ("en", "zh")):
        assert judge["prompts"] == {
            "fine": {"version": dialogue_prompts.PROMPT_VERSION,
                     "sha256": sha256(dialogue_prompts.template("fine", language))},
            "binary": {"version": dialogue_prompts.PROMPT_VERSION,
                       "sha256": sha256(dialogue_prompts.template("binary", language))},
            "pairwise": {"version": pairwise_mode.PAIRWISE_PROMPT_VERSION,
                         "sha256": sha256(pairwise_mode.pair_template(language))}}
        assert judge["prompt_version"] == f"{dialogue_prompts.PROMPT_VERSION}, {pairwise_mode.PAIRWISE_PROMPT_VERSION}"
    assert_no_secrets(text, KEY, LAB_KEY, judge_server.url)
    report = client.get(f"/evaluations/{finished['id']}/report.html").get_data(as_text=True)
    assert_no_secrets(report, KEY, LAB_KEY, judge_server.url)
    assert "judge model, judge 2" in report and "<code>lab</code>" in report


def test_a_mobility_result_records_its_reference_set(client):
    reference = synthetic(seed=1)
    assert add_reference(client, json.dumps(reference).encode(), "ref.json", "synthetic").status_code == 201
    data = json.dumps(synthetic(seed=2, shift=500)).encode()
    finished = evaluate(client, data, "agent.json", reference="synthetic")
    provenance = exported(client, finished["id"])[0]["provenance"]
    # over the four arrays as the reference set keeps them (intention codes as int8, the rest float64): dtype, shape,
    # bytes
    digest = hashlib.sha256()
    for key in KEYS:
        array = numpy.asarray(reference[key], dtype=numpy.int8 if key == "intention_sequences" else numpy.float64)
        digest.update(f"{key}:{array.dtype.str}:{array.shape}".encode())
        digest.update(array.tobytes())
    assert provenance["reference"] == {"name": "synthetic", "sha256": digest.hexdigest()}
    assert provenance["upload"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert provenance["kind"] == {"name": "mobility", "format_version": 1}
    assert provenance["judges"] == [] and provenance["bootstrap"] is None
    page = client.get(f"/evaluations/{finished['id']}").get_data(as_text=True)
    assert digest.hexdigest() in page and "reference set SHA-256" in page


def test_a_conversation_annotation_records_its_prompt(client, judge_server):
    seen = record_system_prompts(judge_server)
    data = json.dumps([own_conversation("agent", 2), own_conversation("human", 2)]).encode()
    plain = exported(client, evaluate(client, data, "mine.json")["id"])[0]["provenance"]
    assert plain["judges"] == [] and plain["kind"] == {"name": "conversation", "format_version": 2}
    finished = evaluate(client, data, "mine.json", annotate=True)
    document, text = exported(client, finished["id"])
    template = conversation_prompts.template("en")
    [judge] = document["provenance"]["judges"]
    assert judge["prompts"] == {"annotation": {"version": conversation_prompts.ANNOTATION_PROMPT_VERSION,
                                               "sha256": sha256(template)}}
    assert (judge["endpoint"], judge["model"]) == ("default", "judge-test")
    assert set().union(*seen.values()) == {json.loads(template)["system"]}
    assert document["provenance"]["upload"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert_no_secrets(text, KEY, judge_server.url)
    page = client.get(f"/evaluations/{finished['id']}").get_data(as_text=True)
    assert sha256(template) in page and "prompt SHA-256 (annotation)" in page


def test_an_agentbench_result_records_the_common_part(client):
    data = outputs_zip()
    finished = evaluate(client, data, "outputs.zip")
    provenance = exported(client, finished["id"])[0]["provenance"]
    assert provenance["upload"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert provenance["kind"] == {"name": "agentbench", "format_version": 1}
    assert provenance["judges"] == [] and provenance["reference"] is None and provenance["bootstrap"] is None
    assert provenance["environment"]["numpy"] == numpy.__version__


def test_an_agentbench_score_does_not_load_pandas_or_scipy_for_its_provenance(tmp_path):
    # `flask --app app score outputs.zip` as docs/cli.md has it, in a process of its own; what it loaded is read at
    # its exit. The versions of libraries it did not load come from their installed distributions.
    (tmp_path / "outputs.zip").write_bytes(outputs_zip())
    report = ("import atexit, json, sys; atexit.register(lambda: print(json.dumps(sorted(m for m in "
              "('numpy', 'pandas', 'scipy') if m in sys.modules)), file=sys.stderr)); "
              "from flask.cli import main; sys.argv = ['flask', '--app', 'app', 'score', sys.argv[1], '--out', "
              "sys.argv[2]]; main()")
    environ = {**os.environ, "INSTANCE_PATH": str(tmp_path / "instance"), "UPLOAD_FOLDER": str(tmp_path / "up"),
               "RESULTS_FOLDER": str(tmp_path / "results"), "DATABASE": str(tmp_path / "db.sqlite"),
               "DATABASE_URL": "", "CELERY_BROKER_URL": "", "STORAGE_URL": ""}
    done = subprocess.run([sys.executable, "-c", report, str(tmp_path / "outputs.zip"), str(tmp_path / "r.json")],
                          cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
    environment = json.loads((tmp_path / "r.json").read_text("utf-8"))["provenance"]["environment"]
    assert environment == {"python": platform.python_version(), "numpy": numpy.__version__,
                           "scipy": scipy.__version__, "pandas": pandas.__version__}


def test_the_commit_of_an_image_comes_from_psb_commit(monkeypatch):
    from pipeline import provenance

    monkeypatch.setenv("PSB_COMMIT", "A" * 40)
    assert provenance.commit() == "a" * 40
    monkeypatch.setenv("PSB_COMMIT", "not-a-commit")
    assert provenance.commit() == expected_commit()

"""DailyMobility through the whole app: reference sets, upload, evaluation, result page, exports, CLI, API."""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from kinds.mobility import format as mobility
from kinds.mobility import metrics
from tests.conftest import SHARED_DATA, wait_for

GROUNDTRUTH = SHARED_DATA / "dailymobility" / "groundtruth"
needs_data = pytest.mark.skipif(not GROUNDTRUTH.exists(), reason="../shared/data/dailymobility is not present")


def synthetic(users: int = 40, seed: int = 1, shift: float = 0.0) -> dict:
    """A four-key mobility set of our own."""
    rng = np.random.default_rng(seed)
    proportions = rng.dirichlet(np.ones(7), size=users)
    return {"gyration_radius": (rng.gamma(2.0, 3000.0, users) + shift).tolist(),
            "daily_location_numbers": (rng.integers(1, 8, users) + shift / 1000).tolist(),
            "intention_sequences": rng.integers(1, 8, (users, 48)).tolist(),
            "intention_proportions": proportions.tolist()}


def zip_of_groundtruth() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in GROUNDTRUTH.glob("*.npy"):
            z.write(path, f"benchmark/groundtruth/{path.name}")
    return buffer.getvalue()


def add_reference(client, data: bytes, filename: str, name: str):
    return client.post("/api/references", data={"file": (io.BytesIO(data), filename), "name": name},
                       content_type="multipart/form-data")


def upload_generated(client, generated: dict, name: str = "my_agent.json") -> dict:
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(json.dumps(generated).encode()), name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()


def test_json_reference_then_evaluation_matches_a_direct_score(client):
    reference, generated = synthetic(seed=1), synthetic(seed=2, shift=500)
    ref = add_reference(client, json.dumps(reference).encode(), "ref.json", "synthetic")
    assert ref.status_code == 201 and ref.get_json()["summary"]["users"] == 40
    upload = upload_generated(client, generated)
    assert upload["kind"] == "mobility" and upload["summary"]["users"] == 40
    created = client.post("/api/evaluations", json={"upload_id": upload["id"], "reference": "synthetic"})
    assert created.status_code == 202
    body = wait_for(client, created.get_json()["id"])
    assert body["status"] == "done", body
    assert {k: body["progress"][k] for k in ("done", "total")} == {"done": 1, "total": 1}  # one step, made
    result = body["result"]
    expected = metrics.score(mobility.load(io.BytesIO(json.dumps(reference).encode())),
                              mobility.load(io.BytesIO(json.dumps(generated).encode())))
    assert result["official"] == expected["official"]  # JSON keeps every digit
    assert result["strict"] == expected["strict"]
    assert result["reference"]["name"] == "synthetic" and result["generated"]["users"] == 40
    assert result["method"] == "my_agent"


@needs_data
def test_official_zip_reference_scores_itself_100(client):
    ref = add_reference(client, zip_of_groundtruth(), "groundtruth.zip", "beijing")
    assert ref.status_code == 201, ref.get_json()
    assert ref.get_json()["summary"]["users"] == 100
    generated = {"gyration_radius": np.load(GROUNDTRUTH / "gyration_radius.npy").tolist(),
                 "daily_location_numbers": np.load(GROUNDTRUTH / "daily_location_numbers.npy").tolist(),
                 "intention_sequences": np.load(GROUNDTRUTH / "daily_intentions_2d.npy").tolist(),
                 "intention_proportions": np.load(GROUNDTRUTH / "intention_proportions_2d.npy").tolist()}
    upload = upload_generated(client, generated, "copy_of_reference.json")
    created = client.post("/api/evaluations", json={"upload_id": upload["id"], "reference": "beijing"}).get_json()
    result = wait_for(client, created["id"])["result"]
    assert result["official"]["final_score"] == pytest.approx(100, abs=1e-9)
    assert all(v == 0 for v in result["strict"]["jsd"].values())

    page = client.get(f"/evaluations/{created['id']}").get_data(as_text=True)
    assert "Final score, official" in page and 'data-figure="slots"' in page and "100.00" in page
    csv_text = client.get(f"/evaluations/{created['id']}.csv").data.decode("utf-8")
    assert csv_text.startswith("\ufeffvariant,gyration_radius,") and "\nstrict,0.0,0.0,0.0,0.0,100.0" in csv_text


def test_evaluation_needs_a_known_reference(client):
    upload = upload_generated(client, synthetic())
    resp = client.post("/api/evaluations", json={"upload_id": upload["id"]})
    assert resp.status_code == 400 and "reference set" in resp.get_json()["error"]
    resp = client.post("/api/evaluations", json={"upload_id": upload["id"], "reference": "nowhere"})
    assert resp.status_code == 400


def test_bad_reference_file_is_refused(client):
    resp = add_reference(client, b"PK\x03\x04 not really a zip", "broken.zip", "broken")
    assert resp.status_code == 400 and resp.get_json()["error"]
    resp = add_reference(client, json.dumps(synthetic()).encode(), "ref.json", "")
    assert resp.status_code == 201 and resp.get_json()["name"] == "ref"  # named after the file


def test_same_name_different_data_is_refused(client):
    assert add_reference(client, json.dumps(synthetic(seed=1)).encode(), "a.json", "one").status_code == 201
    again = add_reference(client, json.dumps(synthetic(seed=5)).encode(), "b.json", "one")
    assert again.status_code == 400 and "already exists" in again.get_json()["error"]


def test_invalid_generated_file_is_rejected_with_its_path(client):
    bad = synthetic()
    bad["intention_sequences"][3][12] = 9
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(json.dumps(bad).encode()), "bad.json")},
                       content_type="multipart/form-data")
    assert resp.status_code == 400
    assert any("intention_sequences[3][12]" in (p["path"] + p["message"]) for p in resp.get_json()["problems"])


def test_reference_pages(client):
    html = client.get("/references").get_data(as_text=True)
    assert "Add a reference set" in html and "Hugging Face" in html
    resp = client.post("/references", data={"name": "page-ref", "file": (io.BytesIO(json.dumps(synthetic()).encode()),
                                                                             "ref.json")},
                       content_type="multipart/form-data")
    assert resp.status_code == 302
    assert "page-ref" in client.get("/references").get_data(as_text=True)
    upload = upload_generated(client, synthetic(seed=3))
    page = client.get(f"/uploads/{upload['id']}").get_data(as_text=True)
    assert "page-ref" in page and 'name="reference"' in page
    resp = client.post(f"/uploads/{upload['id']}/evaluate", data={"reference": "page-ref"})
    assert resp.status_code == 302
    assert wait_for(client, resp.headers["Location"].rsplit("/", 1)[-1])["status"] == "done"


def test_huggingface_download_offline_says_so(make_app, judge_env):
    client = make_app(judge_env, HF_BASE_URL="http://127.0.0.1:9/datasets/x/resolve/main").test_client()
    resp = client.post("/api/references", data={"source": "huggingface", "name": "hf"})
    assert resp.status_code == 400 and "127.0.0.1:9" in resp.get_json()["error"]


def test_cli_scores_against_a_reference_path_and_then_by_name(runner, tmp_path):
    reference_file = tmp_path / "beijing_like.json"
    reference_file.write_text(json.dumps(synthetic(seed=1)))
    generated_file = tmp_path / "agent.json"
    generated_file.write_text(json.dumps(synthetic(seed=2)))
    result = runner.invoke(args=["score", str(generated_file), "--kind", "mobility", "--reference",
                                 str(reference_file)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "mobility" and doc["reference"]["name"] == "beijing_like"
    by_name = runner.invoke(args=["score", str(generated_file), "--reference", "beijing_like"])
    assert by_name.exit_code == 0 and json.loads(by_name.stdout)["official"] == doc["official"]
    missing = runner.invoke(args=["score", str(generated_file)])
    assert missing.exit_code == 2 and "--reference" in missing.stderr


def test_compare_two_generated_sets(client):
    add_reference(client, json.dumps(synthetic(seed=1)).encode(), "ref.json", "cmp-ref")
    ids = []
    for seed, name in ((2, "agent_a.json"), (3, "agent_b.json")):
        upload = upload_generated(client, synthetic(seed=seed, shift=300 * seed), name)
        created = client.post("/api/evaluations", json={"upload_id": upload["id"], "reference": "cmp-ref"}).get_json()
        ids.append(wait_for(client, created["id"])["id"])
    html = client.get(f"/compare?ids={ids[0]},{ids[1]}").get_data(as_text=True)
    assert "Compare generated mobility" in html and "agent_a.json" in html and "agent_b.json" in html
    results = [client.get(f"/api/evaluations/{i}").get_json()["result"] for i in ids]
    for result in results:
        assert f'{result["official"]["final_score"]:.2f}' in html and f'{result["strict"]["final_score"]:.2f}' in html
    assert 'data-figure="official"' in html and 'data-figure="strict"' in html
    # no pairs: one clear sentence on the page, an empty table in the API
    assert "Runs of this kind compare distributions, not samples: no paired differences." in html
    body = client.get(f"/api/compare?ids={ids[0]}&ids={ids[1]}").get_json()
    assert body["paired"] == [] and body["regression"] is False and body["baseline"] == ids[0]


def test_compare_refuses_mixed_kinds(client):
    from tests.conftest import jsonl, session_line
    add_reference(client, json.dumps(synthetic(seed=1)).encode(), "ref.json", "mix-ref")
    upload = upload_generated(client, synthetic(seed=2))
    mobility_id = client.post("/api/evaluations", json={"upload_id": upload["id"], "reference": "mix-ref"}).get_json()["id"]
    dialogue = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "d.jsonl")},
                           content_type="multipart/form-data").get_json()
    dialogue_id = client.post("/api/evaluations", json={"upload_id": dialogue["id"]}).get_json()["id"]
    wait_for(client, mobility_id), wait_for(client, dialogue_id)
    resp = client.get(f"/compare?ids={mobility_id},{dialogue_id}")
    assert resp.status_code == 400 and "one kind" in resp.get_data(as_text=True)

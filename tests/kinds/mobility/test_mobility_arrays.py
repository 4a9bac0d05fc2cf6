"""Mobility sets as arrays (issue 15, item 1): a .npz of the four arrays, a ZIP or a folder in the dataset's
groundtruth/ layout (.npy or headerless .csv), any numeric dtype; the same checks, messages and scores as JSON."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kinds.mobility.format import KEYS
from tests.kinds.mobility.test_mobility_pipeline import add_reference, synthetic

FILES = {"gyration_radius": "gyration_radius", "daily_location_numbers": "daily_location_numbers",
         "intention_sequences": "daily_intentions_2d", "intention_proportions": "intention_proportions_2d"}


def npz(arrays: dict, **dtypes) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v, dtype=dtypes.get(k)) for k, v in arrays.items()})
    return buffer.getvalue()


def groundtruth_zip(arrays: dict, csv_keys=()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, name in FILES.items():
            value = np.asarray(arrays[key])
            if key in csv_keys:
                text = io.StringIO()
                np.savetxt(text, value.reshape(len(value), -1), delimiter=",", fmt="%.17g")
                archive.writestr(f"agent/groundtruth/{name}.csv", text.getvalue())
            else:
                out = io.BytesIO()
                np.save(out, value)
                archive.writestr(f"agent/groundtruth/{name}.npy", out.getvalue())
    return buffer.getvalue()


def post(client, data: bytes, name: str):
    return client.post("/api/uploads", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")


def score(client, upload_id: str) -> dict:
    from tests.conftest import wait_for

    created = client.post("/api/evaluations", json={"upload_id": upload_id, "reference": "synthetic"})
    assert created.status_code == 202, created.get_json()
    body = wait_for(client, created.get_json()["id"])
    assert body["status"] == "done", body
    return body["result"]


@pytest.fixture
def with_reference(client):
    assert add_reference(client, json.dumps(synthetic(seed=1)).encode(), "ref.json", "synthetic").status_code == 201
    return client


def test_every_format_scores_exactly_like_the_json(with_reference, app):
    client = with_reference
    generated = synthetic(seed=2, shift=500)
    expected = score(client, post(client, json.dumps(generated).encode(), "agent.json").get_json()["id"])
    formats = [(npz(generated), "agent.npz"),
               (npz(generated, intention_sequences=np.int16, gyration_radius=np.float32), "agent-small.npz"),
               (groundtruth_zip(generated), "agent.zip"),
               (groundtruth_zip(generated, csv_keys=("gyration_radius", "intention_proportions")), "agent-csv.zip")]
    for data, name in formats:
        resp = post(client, data, name)
        assert resp.status_code == 201, (name, resp.get_json())
        upload = resp.get_json()
        assert upload["kind"] == "mobility" and upload["summary"]["users"] == 40
        stored = Path(app.config["UPLOAD_FOLDER"]) / f"{app.extensions['store'].get_upload(upload['id'])['sha256']}.zip"
        assert stored.exists()  # named by content hash, with the extension of its format
        result = score(client, upload["id"])
        if name == "agent-small.npz":  # float32 radii are other numbers: only the codes' JSD is the same
            assert result["official"]["jsd"]["intention_sequences"] == expected["official"]["jsd"]["intention_sequences"]
            continue
        assert result["official"] == expected["official"] and result["strict"] == expected["strict"], name


def test_a_bad_value_is_named_by_the_same_path_and_message_in_every_format(client):
    bad = synthetic()
    bad["intention_sequences"][3][12] = 9
    bad["gyration_radius"][5] = -1.0
    as_json = post(client, json.dumps(bad).encode(), "bad.json").get_json()["problems"]
    for data, name in ((npz(bad), "bad.npz"), (groundtruth_zip(bad), "bad.zip")):
        resp = post(client, data, name)
        assert resp.status_code == 400, name
        assert resp.get_json()["problems"] == as_json, name
    assert {p["path"] for p in as_json} >= {"intention_sequences[3][12]", "gyration_radius[5]"}


@pytest.mark.parametrize("change, message", [
    (lambda a: a.pop("intention_proportions"), "has no intention_proportions_2d.npy"),
    (lambda a: a.update(intention_sequences=np.array([["x"] * 48] * 40)), "must hold numbers"),
    (lambda a: a.update(daily_location_numbers=np.ones((40, 2))), "must be one value per user"),
])
def test_broken_npz_files_say_what_is_wrong(client, change, message):
    arrays = {k: np.asarray(v) for k, v in synthetic().items()}
    change(arrays)
    resp = post(client, npz(arrays), "broken.npz")
    assert resp.status_code == 400 and any(message in p["message"] for p in resp.get_json()["problems"]), \
        resp.get_json()


def test_pickled_objects_and_truncated_members_are_refused(client):
    arrays = synthetic()
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items() if k != "gyration_radius"},
             gyration_radius=np.array([{"x": 1}] * 40, dtype=object))
    resp = post(client, buffer.getvalue(), "pickled.npz")
    assert resp.status_code == 400 and "Python objects" in resp.get_json()["problems"][0]["message"]
    resp = post(client, npz(arrays)[:-200], "cut.npz")
    assert resp.status_code == 400


def test_a_bomb_is_stopped_by_the_zip_limits(client, monkeypatch):
    monkeypatch.setenv("LIMIT_ZIP_MEMBER_MB", "1")
    arrays = {k: np.asarray(v) for k, v in synthetic().items()}
    arrays["intention_sequences"] = np.ones((200_000, 48), dtype=np.int8)  # 9.6 MB of ones: compresses ~1000x
    data = npz(arrays)
    assert len(data) < 200_000
    resp = post(client, data, "bomb.npz")
    assert resp.status_code == 400
    assert "MB" in resp.get_json()["problems"][0]["message"]


def test_the_cli_scores_a_npz_and_a_groundtruth_folder(runner, tmp_path):
    reference = tmp_path / "ref.json"
    reference.write_text(json.dumps(synthetic(seed=1)), "utf-8")
    generated = synthetic(seed=3)
    (tmp_path / "gen.npz").write_bytes(npz(generated))
    folder = tmp_path / "agent" / "groundtruth"
    folder.mkdir(parents=True)
    for key, name in FILES.items():
        np.save(folder / f"{name}.npy", np.asarray(generated[key]))
    (tmp_path / "gen.json").write_text(json.dumps(generated), "utf-8")
    scores = []
    for path in (tmp_path / "gen.json", tmp_path / "gen.npz", tmp_path / "agent"):
        result = runner.invoke(args=["score", str(path), "--reference", str(reference)])
        assert result.exit_code == 0, result.output
        scores.append(json.loads(result.stdout)["official"])
    assert scores[0] == scores[1] == scores[2]
    assert set(KEYS) == set(scores[0]["jsd"])


def user_rows(arrays: dict) -> bytes:
    """A CSV with one row per user, as the upload format describes it."""
    slots, shares = len(arrays["intention_sequences"][0]), len(arrays["intention_proportions"][0])
    header = ["gyration_radius", "daily_location_numbers", *(f"intention_sequences_{k}" for k in range(1, slots + 1)),
              *(f"intention_proportions_{k}" for k in range(1, shares + 1))]
    lines = [",".join(header)]
    for user in range(len(arrays["gyration_radius"])):
        values = [arrays["gyration_radius"][user], arrays["daily_location_numbers"][user],
                  *arrays["intention_sequences"][user], *arrays["intention_proportions"][user]]
        lines.append(",".join(repr(float(v)) if isinstance(v, float) else str(v) for v in values))
    return ("\n".join(lines) + "\n").encode()


def test_a_csv_with_one_row_per_user_scores_like_the_json(with_reference, app):
    client = with_reference
    generated = synthetic(seed=2, shift=500)
    expected = score(client, post(client, json.dumps(generated).encode(), "agent.json").get_json()["id"])
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(user_rows(generated)), "agent.csv")},
                       content_type="multipart/form-data")  # no kind given: told from the header
    assert resp.status_code == 201, resp.get_json()
    upload = resp.get_json()
    assert upload["kind"] == "mobility" and upload["summary"]["users"] == 40
    result = score(client, upload["id"])
    assert result["official"] == expected["official"] and result["strict"] == expected["strict"]


def test_a_bad_csv_row_is_named_by_line_and_column(client):
    bad = synthetic()
    bad["intention_sequences"][3][12] = 9
    resp = post(client, user_rows(bad), "bad.csv")
    assert resp.status_code == 400
    assert resp.get_json()["problems"] == post(client, json.dumps(bad).encode(), "bad.json").get_json()["problems"]
    text = user_rows(synthetic()).decode().splitlines()
    text[5] = text[5].replace(",", ",x", 1)
    resp = post(client, ("\n".join(text) + "\n").encode(), "cell.csv")
    problem = resp.get_json()["problems"][0]
    assert (problem["line"], problem["path"]) == (6, "daily_location_numbers") and "is not a number" in problem["message"]
    resp = post(client, b"gyration_radius,daily_location_numbers\n1,2\n", "short.csv")
    assert "has no intention_sequences, intention_proportions column" in resp.get_json()["problems"][0]["message"]
    text = user_rows(synthetic()).decode().splitlines()
    text[2] = text[2] + ",7"
    resp = post(client, ("\n".join(text) + "\n").encode(), "ragged.csv")
    assert resp.get_json()["problems"][0]["line"] == 3 and "values; the header has" in resp.get_json()["problems"][0]["message"]


def user_table(arrays: dict, **columns) -> bytes:
    """A Parquet file with one row per user (columns as the CSV's header), `columns` replacing some."""
    import pyarrow as pa
    import pyarrow.parquet as parquet

    slots, shares = len(arrays["intention_sequences"][0]), len(arrays["intention_proportions"][0])
    table = {"gyration_radius": np.asarray(arrays["gyration_radius"], dtype=np.float32),
             "daily_location_numbers": np.asarray(arrays["daily_location_numbers"], dtype=np.int64)}
    sequences = np.asarray(arrays["intention_sequences"], dtype=np.int8)
    table |= {f"intention_sequences_{k + 1}": sequences[:, k] for k in range(slots)}
    proportions = np.asarray(arrays["intention_proportions"])
    table |= {f"intention_proportions_{k + 1}": proportions[:, k] for k in range(shares)}
    buffer = io.BytesIO()
    parquet.write_table(pa.table({**table, **columns}), buffer)
    return buffer.getvalue()


def test_a_parquet_table_with_one_row_per_user_scores_like_the_json(with_reference):
    client = with_reference
    generated = synthetic(seed=3, shift=300)
    # Stored as float32 and int64 in the table: the JSON holds the same values.
    generated["gyration_radius"] = [float(np.float32(v)) for v in generated["gyration_radius"]]
    generated["daily_location_numbers"] = [int(v) for v in generated["daily_location_numbers"]]
    expected = score(client, post(client, json.dumps(generated).encode(), "agent.json").get_json()["id"])
    resp = post(client, user_table(generated), "agent.parquet")  # no kind given: told from the file's start
    assert resp.status_code == 201, resp.get_json()
    upload = resp.get_json()
    assert upload["kind"] == "mobility" and upload["summary"]["users"] == 40
    result = score(client, upload["id"])
    assert result["official"] == expected["official"] and result["strict"] == expected["strict"]


def test_a_bad_parquet_table_is_named_by_column_and_user(client):
    bad = synthetic()
    bad["intention_sequences"][3][12] = 9
    resp = post(client, user_table(bad), "bad.parquet")
    assert resp.status_code == 400
    assert resp.get_json()["problems"] == post(client, json.dumps(bad).encode(), "bad.json").get_json()["problems"]
    good = synthetic()
    resp = post(client, user_table(good, daily_location_numbers=["two"] * 40), "text.parquet")
    problem = resp.get_json()["problems"][0]
    assert problem["path"] == "daily_location_numbers" and "holds string values" in problem["message"]
    radius = [1.0] * 40
    radius[6] = None
    resp = post(client, user_table(good, gyration_radius=radius), "empty.parquet")
    problem = resp.get_json()["problems"][0]
    assert (problem["line"], problem["path"]) == (7, "gyration_radius") and "User 7 has no" in problem["message"]
    import pyarrow as pa
    import pyarrow.parquet as parquet

    buffer = io.BytesIO()
    parquet.write_table(pa.table({"gyration_radius": [1.0], "daily_location_numbers": [2]}), buffer)
    resp = post(client, buffer.getvalue(), "short.parquet")
    assert "has no intention_sequences, intention_proportions column" in resp.get_json()["problems"][0]["message"]
    resp = post(client, b"PAR1" + b"\0" * 64, "cut.parquet")
    assert resp.status_code == 400 and "The Parquet file cannot be read" in resp.get_json()["problems"][0]["message"]

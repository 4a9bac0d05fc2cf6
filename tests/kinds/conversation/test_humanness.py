"""How human are simulated users: the behaviour gap on hand-built labels against scipy, and end to end from
`flask --app app simulate` through the judge's labelling to the comparison page, checked against an independent
computation from the judge's answers and the real people's file labels."""
from __future__ import annotations

import csv
import io
import json
import zipfile

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from kinds.conversation.behaviour import DIMENSIONS
from kinds.conversation.humanness import behaviour_gap
from tests.conftest import SHARED_DATA
from tests.simulate.support import SIMULATOR, Recorder
from tests.simulate.test_estimate import env

LABELLED = SHARED_DATA / "human_vs_agent" / "labelled"


def expected_jsd(a: list, b: list, values: tuple) -> float:
    """scipy's Jensen-Shannon distance in bits, squared: the divergence the mobility kind's strict variant uses."""
    p = [a.count(v) for v in values]
    q = [b.count(v) for v in values]
    return float(jensenshannon(p, q, base=2) ** 2)


def per_dimension(simulated: list[dict | None], real: list[dict | None]) -> dict[str, float | None]:
    out = {}
    for d in DIMENSIONS:
        a = [row[d.key] for row in simulated if row and row.get(d.key) is not None]
        b = [row[d.key] for row in real if row and row.get(d.key) is not None]
        out[d.key] = expected_jsd(a, b, d.values) if a and b else None
    return out


def row(**labels) -> dict:
    return {d.key: labels.get(d.key) for d in DIMENSIONS}


def test_each_dimensions_divergence_and_the_gap_match_scipy_and_an_explicit_bootstrap():
    simulated = [row(problem_solving="AllInOne", order="Depth", question_broadness=5, politeness="Polite"),
                 row(problem_solving="AllInOne", order="Breadth", question_broadness=4, politeness="Polite"),
                 row(problem_solving="StepByStep", order="Depth", question_broadness=5), None]
    real = [row(problem_solving="StepByStep", order="Depth", question_broadness=2, politeness="Neutral"),
            row(problem_solving="StepByStep", order="BreadthDepth", question_broadness=3),
            row(problem_solving="AllInOne", order="Depth", question_broadness=2, politeness="Polite")]
    got = behaviour_gap(simulated, real, n_boot=300, seed=7)
    expected = per_dimension(simulated, real)
    assert {r["dimension"]: r["jsd"] for r in got["dimensions"]} == pytest.approx(expected)
    # by hand: problem_solving 2/3 vs 1/3 AllInOne: JS = H(1/2) - (H(2/3) + H(1/3)) / 2 in bits
    h = lambda p: -p * np.log2(p) - (1 - p) * np.log2(1 - p)  # noqa: E731
    assert expected["problem_solving"] == pytest.approx(1 - h(2 / 3))
    present = [v for v in expected.values() if v is not None]
    assert len(present) == got["gap_dimensions"] == 4 and got["gap"] == pytest.approx(np.mean(present))
    assert got["n_simulated"] == 3 and got["n_real"] == 3
    polite = next(r for r in got["dimensions"] if r["dimension"] == "politeness")
    assert (polite["n_simulated"], polite["n_real"]) == (2, 2) and polite["simulated"]["Polite"] == 1.0

    # the same bootstrap written out: resample each set's labelled conversations, seeded, in the same order
    rng = np.random.default_rng(7)
    sim_rows, real_rows = [r for r in simulated if r], real
    draws = rng.integers(0, 3, (300, 3)), rng.integers(0, 3, (300, 3))
    boot_gaps, boot_ps = [], []
    for i in range(300):
        values = per_dimension([sim_rows[k] for k in draws[0][i]], [real_rows[k] for k in draws[1][i]])
        kept = [values[d] for d in ("problem_solving", "order", "question_broadness", "politeness")
                if values[d] is not None]
        boot_gaps.append(np.mean(kept))
        boot_ps.append(values["problem_solving"])
    assert got["gap_ci95"] == pytest.approx(list(np.quantile(boot_gaps, [0.025, 0.975])))
    ps = next(r for r in got["dimensions"] if r["dimension"] == "problem_solving")
    assert ps["ci95"] == pytest.approx(list(np.quantile(boot_ps, [0.025, 0.975])))
    assert behaviour_gap(simulated, real, n_boot=300, seed=7) == got  # seeded: the same again


def test_a_dimension_one_set_never_labels_has_no_divergence():
    got = behaviour_gap([row(promise="HavePromise")], [row(feedback="Both")], n_boot=50)
    assert all(r["jsd"] is None and r["ci95"] is None for r in got["dimensions"])
    assert got["gap"] is None and got["gap_ci95"] is None and got["gap_dimensions"] == 0


# --- end to end -----------------------------------------------------------------------------------------------

def real_people_zip(count: int = 30) -> tuple[bytes, list[dict]]:
    """The first `count` real people's conversations of the labelled release, as a ZIP of the dataset's folders, and
    their GPT-4o labels read here from the files (strategy_V<group>.final, a value kept only when in the taxonomy)."""
    files = sorted((LABELLED / "real_human_user").rglob("*.json"))[:count]
    buffer, labels = io.BytesIO(), []
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in files:
            archive.write(path, str(path.relative_to(LABELLED)))
            raw = json.loads(path.read_text(encoding="utf-8"))
            found = {}
            for d in DIMENSIONS:
                value = ((raw.get(f"strategy_V{d.group}") or {}).get("final") or {}).get(d.key)
                found[d.key] = value if value in d.values and type(value) is type(d.values[0]) else None
            labels.append(found)
    return buffer.getvalue(), labels


def test_simulate_label_and_compare_with_real_people(make_app, judge_server, builtin_two, tmp_path):
    Recorder(judge_server)  # the server plays the simulated user and the methods, and is the labelling judge
    app = make_app(env(judge_server.url))
    runner = app.test_cli_runner()
    out = tmp_path / "simulated.jsonl"
    done = runner.invoke(args=["simulate", "builtin", "--simulator", SIMULATOR, "--method", "A=model-a@local",
                               "--method", "B=model-b@local", "--rounds", "2", "--out", str(out)])
    assert done.exit_code == 0, done.stderr
    labelled = runner.invoke(args=["score", str(out), "--kind", "conversation", "--label"])
    assert labelled.exit_code == 0, labelled.stderr
    simulated_result = json.loads(labelled.stdout)
    [judged] = simulated_result["labelling"]["by_judge"]
    assert judged["judge"]["calls"] == 2 * 2 * 4 and judged["counts"]["1"]["ok"] == 4  # 2 personas x 2 methods
    (tmp_path / "real.zip").write_bytes(real_people_zip()[0])
    real = runner.invoke(args=["score", str(tmp_path / "real.zip")])
    assert real.exit_code == 0, real.stderr
    sim_id, real_id = simulated_result["evaluation_id"], json.loads(real.stdout)["evaluation_id"]

    # independently: the simulated users' labels from the judge's own answers, the real people's from their files
    store = app.extensions["store"]
    answers: dict[str, dict] = {}
    for j in store.judgments(sim_id):
        answers.setdefault(j["session_id"], {d.key: None for d in DIMENSIONS}).update(
            {k: v for k, v in json.loads(j["answer"]).items() if k != "reasoning"})
    assert len(answers) == 4
    expected = per_dimension(list(answers.values()), real_people_zip()[1])

    client = app.test_client()
    got = client.get(f"/conversation/humanness?simulated={sim_id}&real={real_id}&format=json").get_json()
    assert got["simulated"]["label_set"] == "judge" and got["real"]["label_set"] == "gpt"
    assert {r["dimension"]: r["jsd"] for r in got["dimensions"]} == pytest.approx(expected)
    present = [v for v in expected.values() if v is not None]
    assert got["gap"] == pytest.approx(np.mean(present)) and got["n_simulated"] == 4 and got["n_real"] == 30
    assert got["gap_ci95"][0] <= got["gap"] <= got["gap_ci95"][1]
    page = client.get(f"/conversation/humanness?simulated={sim_id}&real={real_id}")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert f'<span id="behaviour-gap">{got["gap"]:.3f}</span>' in html and "Problem solving" in html
    rows = list(csv.reader(io.StringIO(client.get(f"/conversation/humanness?simulated={sim_id}&real={real_id}"
                                                  "&format=csv").data.decode("utf-8-sig"))))
    assert rows[0][:4] == ["dimension", "n_simulated", "n_real", "jsd_bits"]
    assert float(rows[1][3]) == pytest.approx(expected["problem_solving"]) and rows[-1][0] == "behaviour_gap (mean)"

    # the links to it: the compare page of the two evaluations, and each result page
    compare = client.get(f"/compare?ids={sim_id},{real_id}").get_data(as_text=True)
    assert f"/conversation/humanness?simulated={sim_id}&amp;real={real_id}" in compare
    # what cannot be compared gets a clear 400
    wrong = client.get(f"/conversation/humanness?simulated={real_id}&real={sim_id}")
    assert wrong.status_code == 400 and "has no conversations of simulated users" in wrong.get_data(as_text=True)
    unknown = client.get(f"/conversation/humanness?simulated={sim_id}&real={real_id}&real_labels=judge&format=json")
    assert unknown.status_code == 400 and "has no label set judge" in unknown.get_json()["error"]

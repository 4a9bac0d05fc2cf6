"""AgentBench runs sample by sample: per-sample values that average to each task's score, pairs by agent x task x
sample index through the real upload and scoring path, and the OA's paired difference, all worked out by hand."""
from __future__ import annotations

import json
import math

import pytest
from scipy.stats import norm

from kinds.agentbench.paired_samples import oa_rows, sample_scores
from kinds.agentbench.tasks import WEIGHTS
from kinds.paired_rows import align
from kinds.paired_stats import paired_scores, weighted_strata
from kinds.registry import get as get_kind
from tests.kinds.agentbench.test_agentbench import custom_for, dumps, make_zip, overall
from tests.kinds.agentbench.test_agentbench_pipeline import evaluate, upload

RUN = "outputs/2024-01-01-00-00-00"
# Per task config: the `output.result` of its four samples, and the main metric overall.json gives for them.
BASELINE = {
    "os-std": ([{"result": True}, {"result": False}, {"result": False}, {"result": True}], 0.5),
    # categories: SELECT 1/2 right, INSERT 2/2 right -> the mean of the categories' accuracies is 0.75, not 3/4
    "dbbench-std": ([{"is_correct": True, "type": "SELECT"}, {"is_correct": False, "type": "SELECT"},
                     {"is_correct": True, "type": "INSERT"}, {"is_correct": True, "type": "INSERT"}], 0.75),
    "kg-std": ([{"f1": 0.5}, {"f1": 1.0}, {"f1": 0.0}, {"f1": 0.5}], 0.5),
    "cg-std": ([1, 0, 0.5, 0.5], 0.5),  # bare numbers
    "ltp-std": ([{"score": 0.2}, {"score": 0.2}, {"score": 0.0}, {"score": 0.0}], 0.1),
    "alfworld-std": ([{"result": True}, {"result": True}, {"result": True}, None], 0.75),  # None: a failed sample
    "webshop-std": ([{"reward": 0.8}, {"reward": 0.4}, {"reward": 0.0}, {"reward": 0.4}], 0.4),
    "m2w-std": ([{"step_sr": 40.0}, {"step_sr": 20.0}, {"step_sr": 0.0}, {"step_sr": 20.0}], 20.0),  # x 0.01
}
SCORES = {"os": 50.0, "db": 75.0, "kg": 50.0, "dcg": 50.0, "ltp": 10.0, "hh": 75.0, "ws": 40.0, "wb": 20.0}


def runs_jsonl(results: list) -> bytes:
    lines = [{"index": i, "error": None, "info": None,
              "output": {"index": i, "status": "completed" if r else "agent invalid action", "result": r,
                         "history": [{"role": "user", "content": "do it"}, {"role": "agent", "content": f"done {i}"}]}}
             for i, r in enumerate(results)]
    return b"".join((json.dumps(line) + "\n").encode() for line in lines)


def outputs(tasks: dict, agent: str = "agent-a", logs: bool = True) -> bytes:
    members = {}
    for task, (results, metric) in tasks.items():
        members[f"{RUN}/{agent}/{task}/overall.json"] = dumps(overall(custom_for(task, metric), total=len(results)))
        if logs:
            members[f"{RUN}/{agent}/{task}/runs.jsonl"] = runs_jsonl(results)
    return make_zip(members).getvalue()


def flipped() -> dict:
    """The baseline with OS samples 1 and 2 turned from failure to success: OS 0.5 -> 1.0."""
    tasks = dict(BASELINE)
    tasks["os-std"] = ([{"result": True}] * 4, 1.0)
    return tasks


def run(client, app, data: bytes, name: str) -> tuple[dict, list]:
    body = evaluate(client, upload(client, data, name).get_json()["id"])
    site = app.extensions["site"]
    record = site.store.get_evaluation(body["id"])
    return record, list(get_kind("agentbench").paired_samples(record, site))


def test_sample_values_average_to_the_task_score():
    results, _metric = BASELINE["dbbench-std"]
    # N / (K x n_cat) = 4 / (2 x 2) = 1 for each category here: SELECT 1 right of 2, INSERT 2 of 2
    assert sample_scores(results, 75.0, 1.0) == [100.0, 0.0, 100.0, 100.0]
    uneven = [{"is_correct": True, "type": "SELECT"}, {"is_correct": False, "type": "SELECT"},
              {"is_correct": True, "type": "INSERT"}]  # (1/2 + 1) / 2 = 0.75; weights 3/4, 3/4, 3/2
    assert sample_scores(uneven, 75.0, 1.0) == pytest.approx([75.0, 0.0, 150.0])
    assert sample_scores([{"step_sr": 40.0}, {"step_sr": 0.0}], 20.0, 0.01) == pytest.approx([40.0, 0.0])
    assert sample_scores([{"result": True}, {"result": False}], 70.0, 1.0) is None  # no field gives 70
    assert sample_scores([], 50.0, 1.0) is None and sample_scores([True], None, 1.0) is None


def test_weighted_strata_by_hand():
    # strata [1, 1, 1] (coefficient 0.5) and [0, 2] (coefficient 1): diff 0.5 x 1 + 1 x 1 = 1.5;
    # se = sqrt(0.25 x 0 / 3 + 1 x 2 / 2) = 1 (the sample variance of [0, 2] is 2)
    figures = weighted_strata([[1, 1, 1], [0, 2]], [0.5, 1.0], n_boot=2000, seed=3)
    assert figures.diff == pytest.approx(1.5) and figures.se == pytest.approx(1.0)
    assert figures.p_value == pytest.approx(2 * norm.sf(1.5))
    assert figures.mdd == pytest.approx(norm.ppf(0.975) + norm.ppf(0.8))
    # the second stratum's resampled mean is 0, 1 or 2 (1/4, 1/2, 1/4): 0.5 + those, both ends past 2.5%
    assert figures.ci95 == pytest.approx([0.5, 2.5])
    still = weighted_strata([[1.0, 1.0], [2.0]], [1.0, 1.0])
    assert (still.diff, still.p_value, still.se, still.mdd) == (3.0, None, None, None)  # one pair: no variance
    with pytest.raises(ValueError):
        weighted_strata([[1.0], []], [1.0, 1.0])


def test_two_runs_pair_by_task_and_index_and_the_oa_difference(client, app):
    base_record, base = run(client, app, outputs(BASELINE), "base.zip")
    other_record, other = run(client, app, outputs(flipped()), "other.zip")
    assert len(base) == 32 and len(other) == 32
    # every task's sample values average to the score the result document shows
    for task, score in SCORES.items():
        values = [s.values[task] for s in base if s.key[0] == task]
        assert sum(values) / len(values) == pytest.approx(score)
        assert base_record["result"]["agents"]["agent-a"]["tasks"][task]["score"] == pytest.approx(score)
    first = base[0]
    assert (first.method, first.key, first.cluster, first.text) == ("agent-a", ("os", 0), "os:0", "done 0")
    assert first.links == {"sample": "samples?agent=agent-a&task=os&status=completed"}
    kind = get_kind("agentbench")
    assert [m.name for m in kind.paired_metrics] == [t for t in SCORES]

    pairs = align(base, other)
    assert len(pairs) == 32
    changed = [(a.key, a.values["os"], b.values["os"]) for a, b in pairs
               if a.values != b.values]
    assert changed == [(("os", 1), 0.0, 100.0), (("os", 2), 0.0, 100.0)]  # OS score 50 -> 100: +2/4 x 100
    os_pairs = [(a, b) for a, b in pairs if a.key[0] == "os"]
    os_score = paired_scores([a.values["os"] for a, _b in os_pairs], [b.values["os"] for _a, b in os_pairs],
                             [a.cluster for a, _b in os_pairs])
    assert (os_score.baseline_value, os_score.value, os_score.diff, os_score.n_pairs) == (50.0, 100.0, 50.0, 4)
    assert os_score.n_clusters == 4  # each sample its own cluster

    [row] = kind.paired_aggregates(pairs)
    oa = base_record["result"]["agents"]["agent-a"]["oa"]
    coefficient = 1 / (8 * WEIGHTS["os"])
    assert row["method"] == "agent-a" and row["metric"] == "oa" and row["n_pairs"] == 32 and row["test"] == "z"
    assert row["baseline_value"] == pytest.approx(oa)
    assert row["value"] == pytest.approx(other_record["result"]["agents"]["agent-a"]["oa"])
    assert row["diff"] == pytest.approx(50.0 * coefficient)
    # only OS varies: differences [0, 100, 100, 0], se = c x sqrt(var / 4) = c x 100 / sqrt(12), z = sqrt(3)
    assert row["p_value"] == pytest.approx(2 * norm.sf(math.sqrt(3)))
    assert row["mdd"] == pytest.approx((norm.ppf(0.975) + norm.ppf(0.8)) * coefficient * 100 / math.sqrt(12))
    # resampled OS mean: 0 or 100 each with 1/16 > 2.5%
    assert row["ci95"] == pytest.approx([0.0, 100 * coefficient])


def test_tasks_without_logs_or_a_reproducible_score_give_no_samples(client, app):
    _record, bare = run(client, app, outputs(BASELINE, logs=False), "bare.zip")
    assert bare == []
    tasks = dict(BASELINE)
    tasks["os-std"] = (BASELINE["os-std"][0], 0.7)  # overall.json says 70, the samples say 50
    _record, samples = run(client, app, outputs(tasks), "odd.zip")
    assert {s.key[0] for s in samples} == set(SCORES) - {"os"}
    assert oa_rows([(s, s) for s in samples]) == []  # the OA needs all eight tasks

"""The Human-vs-Agent paper's analysis (kinds/conversation/analysis.py): every figure on hand-built conversations with
answers worked out here, the numbers on the released labelled data against scipy and scikit-learn, and the page."""
from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter

import pytest

from kinds.conversation import analysis
from kinds.conversation.behaviour import DIMENSIONS
from kinds.conversation.format import read_any, task_name
from kinds.conversation.label_sets import label_sets
from tests.conftest import SHARED_DATA, wait_for

LABELLED = SHARED_DATA / "human_vs_agent" / "labelled"
needs_labelled = pytest.mark.skipif(not LABELLED.exists(), reason="../shared/data/human_vs_agent/labelled is absent")


def labels(prefix: str, solving: str, broadness: int) -> dict:
    """The four label groups of a conversation with only problem_solving and question_broadness given."""
    return {f"{prefix}1": {"final": {"problem_solving": solving}}, f"{prefix}2": {"final": {"question_broadness":
                                                                                            broadness}},
            f"{prefix}3": {"final": {}}, f"{prefix}4": {"final": {}}}


def conv(source: str, solving: str, broadness: int, flags=(), people=None, **extra) -> dict:
    """A one-task conversation whose assistant turns carry the hallucination labels `flags`."""
    history = []
    for k, flag in enumerate(flags or ("否",)):
        history += [{"role": "user", "content": f"q{k}"}, {"role": "assistant", "content": f"a{k}",
                                                           "hallucination": flag}]
    item = {"source": source, "task": "recipe planning", "history": history,
            **labels("strategy_V", solving, broadness), **extra}
    if people is not None:
        item.update(labels("strategy_human_V", *people))
    return item


# Simulated users: AllInOne x3, StepByStep x1, broadness 1..4; real people: AllInOne x1, StepByStep x3, 2..5.
HAND = [
    conv("agent", "AllInOne", 1, flags=({"hallucination": True}, {"hallucination": False}),
         people=("AllInOne", 1), rating={"Detail Level": 2, "Diversity": 1}, satisfaction={"detail": 2}),
    conv("agent", "AllInOne", 2, people=("StepByStep", 2), rating={"Detail Level": 1}, satisfaction={"detail": 2}),
    conv("agent", "AllInOne", 3, rating={"Detail Level": 2}),
    conv("agent", "StepByStep", 4, rating={"Detail Level": 0}),
    conv("human", "AllInOne", 2, flags=("是", "否", "无法判断"), people=("StepByStep", 3), chat_model="m1"),
    conv("human", "StepByStep", 3, flags=("无法判断",), people=("StepByStep", 5), chat_model="m1"),
    conv("human", "StepByStep", 4, flags=("否", "否")),
    conv("human", "StepByStep", 5, flags=("否",)),
]


def hand_analysis() -> analysis.Analysis:
    report, conversations = read_any(io.BytesIO(json.dumps(HAND).encode()), "hand.json")
    assert report.ok, report
    return analysis.analysis(conversations, label_sets(None, conversations))


def dimension(block, key: str, label_set: str = "gpt", model=None) -> dict:
    view = analysis.chosen_view(block, model)
    return next(d for d in view["behaviour"][label_set]["dimensions"] if d["key"] == key)


def test_behaviour_distributions_tests_and_holm_by_hand():
    block = hand_analysis()
    solving = dimension(block, "problem_solving")["all"]
    assert solving["agent"]["counts"] == [3, 1] and solving["human"]["counts"] == [1, 3]
    assert solving["agent"]["shares"] == [0.75, 0.25]
    # 2 x 2 table [[3, 1], [1, 3]], every expected count 2: chi2 = 4 x 1^2 / 2 = 2, df 1, V = sqrt(2 / 8)
    assert solving["test"] == "chi_square" and solving["statistic"] == pytest.approx(2.0) and solving["df"] == 1
    assert solving["p_value"] == pytest.approx(math.erfc(1.0))  # P(chi2_1 > 2) = erfc(sqrt(2 / 2))
    assert solving["effect"] == pytest.approx(0.5)
    broad = dimension(block, "question_broadness")["all"]
    assert broad["agent"]["mean"] == 2.5 and broad["human"]["mean"] == 3.5
    # U of 1,2,3,4 against 2,3,4,5: 3 pairs above, 3 ties = 4.5; rank-biserial 2 x 4.5 / 16 - 1
    assert broad["statistic"] == 4.5 and broad["effect"] == pytest.approx(-0.4375)
    # normal approximation with tie and continuity corrections: three pairs of ties among n = 8
    sigma = math.sqrt(16 / 12 * (9 - 3 * (2 ** 3 - 2) / (8 * 7)))
    p_broad = math.erfc((abs(4.5 - 8) - 0.5) / sigma / math.sqrt(2))
    assert broad["p_value"] == pytest.approx(p_broad)
    # Holm over the two dimensions with data (the nine others have no labels and no test)
    assert math.erfc(1.0) < p_broad  # 0.157 < 0.378: the smaller doubled, the larger kept (above the doubled one)
    assert solving["p_holm"] == pytest.approx(2 * math.erfc(1.0))
    assert broad["p_holm"] == pytest.approx(max(2 * math.erfc(1.0), p_broad))
    assert dimension(block, "order")["all"]["p_value"] is None
    assert dimension(block, "order")["all"]["p_holm"] is None


def test_labels_checked_against_people_by_hand():
    check = analysis.chosen_view(hand_analysis(), None)["label_checks"]["human"]["gpt"]
    assert check["pairs"] == 4
    solving = next(d for d in check["dimensions"] if d["key"] == "problem_solving")
    # gpt AllInOne, AllInOne, AllInOne, StepByStep; people AllInOne, StepByStep, StepByStep, StepByStep
    assert solving["all"]["n"] == 4 and solving["all"]["accuracy"]["value"] == 0.5
    p_o, p_e = 0.5, 0.75 * 0.25 + 0.25 * 0.75
    assert solving["all"]["kappa"]["value"] == pytest.approx((p_o - p_e) / (1 - p_e))
    assert solving["agent"]["n"] == 2 and solving["agent"]["accuracy"]["value"] == 0.5
    broad = next(d for d in check["dimensions"] if d["key"] == "question_broadness")
    # gpt 1, 2, 2, 3 against people 1, 2, 3, 5: absolute errors 0, 0, 1, 2
    assert broad["all"]["mae"]["value"] == 0.75
    gpt, people = [1, 2, 2, 3], [1, 2, 3, 5]
    observed = sum((a - b) ** 2 for a, b in zip(gpt, people)) / 4
    expected = sum((a - b) ** 2 for a in gpt for b in people) / 16
    assert broad["all"]["weighted_kappa"]["value"] == pytest.approx(1 - observed / expected)
    low, high = broad["all"]["weighted_kappa"]["low"], broad["all"]["weighted_kappa"]["high"]
    assert low is not None and low <= high


def test_hallucination_awareness_under_both_rules_by_hand():
    view = analysis.chosen_view(hand_analysis(), None)
    paper, known = view["hallucination"]["paper"]["all"], view["hallucination"]["known"]["all"]
    # real people: turns 是 否 无法判断 | 无法判断 | 否 否 | 否 -> paper: 1 of 7 turns, 1 of 4 conversations
    assert (paper["human"]["turns"], paper["human"]["flagged_turns"]) == (7, 1)
    assert paper["human"]["turn_share"]["value"] == pytest.approx(1 / 7)
    assert (paper["human"]["conversations"], paper["human"]["flagged_conversations"]) == (4, 1)
    # known labels only: 无法判断 left out (5 turns), the conversation with only 无法判断 too (3 conversations)
    assert (known["human"]["turns"], known["human"]["flagged_turns"]) == (5, 1)
    assert (known["human"]["conversations"], known["human"]["flagged_conversations"]) == (3, 1)
    assert known["human"]["conversation_share"]["value"] == pytest.approx(1 / 3)
    # simulated users: True, False | 否 | 否 | 否
    assert (paper["agent"]["turns"], paper["agent"]["flagged_turns"]) == (5, 1)
    assert paper["agent"]["conversation_share"]["value"] == 0.25
    ci = paper["agent"]["conversation_share"]
    assert 0 <= ci["low"] <= 0.25 <= ci["high"] <= 1


def test_quality_shares_and_the_assistant_model_filter_by_hand():
    block = hand_analysis()
    assert block["chat_models"] == ["gpt-4-turbo-preview", "m1"]  # the paper's default for a person's file
    view = analysis.chosen_view(block, None)
    detail = view["quality"]["ratings"]["Detail Level"]
    assert detail["values"] == [0, 1, 2] and detail["counts"] == [1, 1, 2] and detail["mean"] == 1.25
    assert detail["shares"] == [0.25, 0.25, 0.5]
    assert view["quality"]["self_report"]["detail"]["counts"] == [0, 0, 2]
    m1 = analysis.chosen_view(block, "m1")
    assert m1["conversations"] == {"agent": 4, "human": 2}  # simulated users name no model: all kept
    solving = next(d for d in m1["behaviour"]["gpt"]["dimensions"] if d["key"] == "problem_solving")
    assert solving["all"]["human"]["counts"] == [1, 1]
    assert m1["hallucination"]["paper"]["all"]["human"]["turns"] == 4


def test_the_page_the_downloads_and_the_json(client):
    body = json.dumps(HAND).encode()
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(body), "hand.json")},
                         content_type="multipart/form-data").get_json()
    created = client.post("/api/evaluations", json={"upload_id": upload["id"]}).get_json()
    result = wait_for(client, created["id"])["result"]
    assert result["analysis"]["label_sets"] == ["gpt", "human"]
    html = client.get(f"/evaluations/{created['id']}?hallucination=known&chat_model=m1").get_data(as_text=True)
    assert 'id="analysis"' in html and 'data-figure="behaviour"' in html
    assert '<option value="m1" selected>' in html and '<option value="known" selected>' in html
    figures = json.loads(html.split('<script id="figures" type="application/json">')[1].split("</script>")[0])
    # real people with model m1, known labels: 是 否 (无法判断 left out) | (无法判断 only) -> 1 of 2 turns
    turns = figures["hallucination_turns"]["data"][1]
    assert turns["y"][0] == 0.5
    people = client.get(f"/evaluations/{created['id']}?labels=human").get_data(as_text=True)
    assert '<option value="human" selected>' in people and "Choose labels other than the reference" in people
    text = client.get(f"/evaluations/{created['id']}/behaviour.csv").data.decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    row = next(r for r in rows if (r["chat_model"], r["label_set"], r["task"], r["dimension"], r["value"])
               == ("all", "gpt", "all", "problem_solving", "AllInOne"))
    assert (row["agent_count"], row["human_count"], row["test"]) == ("3", "1", "chi_square")
    answer = client.get(f"/evaluations/{created['id']}/figures/hallucination.json")
    assert answer.status_code == 200 and "attachment" in answer.headers["Content-Disposition"]
    record = next(r for r in answer.get_json()["rows"] if (r["chat_model"], r["rule"], r["task"], r["users"])
                  == ("all", "paper", "all", "human"))
    assert (record["turns"], record["flagged_turns"]) == (7, 1)
    assert client.get(f"/evaluations/{created['id']}/figures/nothing.json").status_code == 404


# --- the released labelled data against an independent computation --------------------------------------------

def released() -> list[dict]:
    """Every labelled file read here with json, with its source and English task."""
    out = []
    for path in sorted(LABELLED.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["_source"] = "agent" if path.parts[-3] == "LLM_agent_user" else "human"
        data["_task"] = task_name(data.get("task") or data.get("task_type"))
        out.append(data)
    return out


def final(data: dict, prefix: str, key: str):
    group = next(d.group for d in DIMENSIONS if d.key == key)
    return data.get(f"{prefix}{group}", {}).get("final", {}).get(key)


@pytest.fixture(scope="module")
def real_block():
    if not LABELLED.exists():
        pytest.skip("../shared/data/human_vs_agent/labelled is absent")
    import zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(LABELLED.rglob("*.json")):
            archive.write(path, str(path.relative_to(LABELLED)))
    buffer.seek(0)
    report, conversations = read_any(buffer, "labelled.zip")
    assert report.ok and len(conversations) == 500
    return analysis.analysis(conversations, label_sets(None, conversations))


@needs_labelled
def test_distributions_and_tests_on_the_release_equal_scipy(real_block):
    from scipy.stats import chi2_contingency, mannwhitneyu
    from scipy.stats.contingency import association

    files = released()
    for d in DIMENSIONS:
        for task in (None, "travel planning", "skills learning planning"):
            values = {source: [final(f, "strategy_V", d.key) for f in files if f["_source"] == source
                               and (task is None or f["_task"] == task)] for source in ("agent", "human")}
            counts = {s: Counter(v) for s, v in values.items()}
            ours = dimension(real_block, d.key)
            ours = ours["all"] if task is None else ours["by_task"][task]
            for source in ("agent", "human"):
                assert ours[source]["counts"] == [counts[source][v] for v in d.values], (d.key, task, source)
            if d.is_scale:
                expected = mannwhitneyu(values["agent"], values["human"], alternative="two-sided")
                assert ours["statistic"] == pytest.approx(expected.statistic)
                assert ours["p_value"] == pytest.approx(expected.pvalue)
                n = len(values["agent"]) * len(values["human"])
                assert ours["effect"] == pytest.approx(2 * expected.statistic / n - 1)
            else:
                table = [[counts[s][v] for v in d.values if counts["agent"][v] + counts["human"][v]]
                         for s in ("agent", "human")]
                if len(table[0]) < 2:
                    assert ours["p_value"] is None
                    continue
                expected = chi2_contingency(table, correction=False)
                assert ours["statistic"] == pytest.approx(expected.statistic)
                assert ours["p_value"] == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-300)
                assert ours["effect"] == pytest.approx(association(table, method="cramer", correction=False))


@needs_labelled
def test_label_checks_on_the_release_equal_scikit_learn(real_block):
    import warnings

    from sklearn.metrics import accuracy_score, cohen_kappa_score, mean_absolute_error

    warnings.simplefilter("ignore")  # scikit-learn warns where kappa is undefined; the test says what it expects

    files = [f for f in released() if "strategy_human_V1" in f]
    assert len(files) == 200
    check = analysis.chosen_view(real_block, None)["label_checks"]["human"]["gpt"]
    for d in check["dimensions"]:
        for group in ("all", "agent", "human"):
            pairs = [(final(f, "strategy_V", d["key"]), final(f, "strategy_human_V", d["key"])) for f in files
                     if group == "all" or f["_source"] == group]
            pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
            gpt, people = [p[0] for p in pairs], [p[1] for p in pairs]
            ours = d[group]
            assert ours["n"] == len(pairs)
            assert ours["accuracy"]["value"] == pytest.approx(accuracy_score(people, gpt))
            kappa = cohen_kappa_score(gpt, people)
            if math.isnan(kappa):  # one label only (everybody Polite, say): undefined, None here
                assert ours["kappa"]["value"] is None, (d["key"], group)
                continue
            assert ours["kappa"]["value"] == pytest.approx(kappa, abs=1e-12)
            assert ours["kappa"]["low"] <= ours["kappa"]["value"] <= ours["kappa"]["high"]
            if d["scale"]:
                assert ours["weighted_kappa"]["value"] == pytest.approx(
                    cohen_kappa_score(gpt, people, weights="quadratic", labels=[1, 2, 3, 4, 5]))
                assert ours["mae"]["value"] == pytest.approx(mean_absolute_error(people, gpt))


@needs_labelled
def test_hallucination_on_the_release_counts_as_the_paper_does(real_block):
    files = released()
    view = analysis.chosen_view(real_block, None)["hallucination"]["paper"]["all"]
    for source in ("agent", "human"):
        utterances, conversations = [], []
        for f in (f for f in files if f["_source"] == source):  # statistics/hallucination.py at 405f80d
            flag = False
            for utt in f["history"]:
                if "hallucination" in utt:
                    value = utt["hallucination"]
                    hit = value["hallucination"] if source == "agent" else value == "是"
                    utterances.append(int(bool(hit)))
                    flag = flag or bool(hit)
            conversations.append(int(flag))
        assert view[source]["turns"] == len(utterances)
        assert view[source]["turn_share"]["value"] == pytest.approx(sum(utterances) / len(utterances))
        assert view[source]["conversation_share"]["value"] == pytest.approx(sum(conversations) / len(conversations))

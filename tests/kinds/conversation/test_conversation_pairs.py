"""Conversation runs sample by sample: two annotated uploads of one file's versions pair by conversation path,
through the real upload, judge and scoring path; every paired value is known from the answers' markers."""
from __future__ import annotations

import json

import pytest

from kinds.paired_rows import align
from kinds.paired_stats import paired_scores, paired_verdicts
from kinds.registry import get as get_kind
from tests.conftest import wait_for
from tests.kinds.conversation.test_conversation_annotation import upload


def conv(source: str, marker: str, turns: int = 1) -> dict:
    history = []
    for k in range(turns):
        history += [{"role": "user", "content": f"question {k}", "intent": "Planning"},
                    {"role": "assistant", "content": f"answer {k}"}]
    history[-1]["content"] += f" {marker}"  # the local judge answers from the last [[annotate=D,V,U,H]] marker
    return {"source": source, "task": "travel planning", "history": history}


BASELINE = [conv("human", "[[annotate=2,1,2,0]]", 2), conv("human", "[[annotate=1,1,1,1]]", 3),
            conv("agent", "[[annotate=2,2,2,0]]", 1), conv("agent", "[[annotate=0,0,1,0]]", 2)]
# The new version: conversation 1 judged more detailed and no longer hallucinating, conversation 2 one turn longer,
# conversation 3 more detailed and now hallucinating.
OTHER = [BASELINE[0], conv("human", "[[annotate=2,1,1,0]]", 3),
         conv("agent", "[[annotate=2,2,2,0]]", 2), conv("agent", "[[annotate=1,0,1,1]]", 2)]


def run(client, app, items: list[dict], annotate: bool = True) -> list:
    up = upload(client, json.dumps(items).encode(), "conversations.json")
    created = client.post("/api/evaluations", json={"upload_id": up["id"], "annotate": annotate}).get_json()
    assert wait_for(client, created["id"])["status"] == "done"
    site = app.extensions["site"]
    return list(get_kind("conversation").paired_samples(site.store.get_evaluation(created["id"]), site))


def column(pairs, method: str, metric: str) -> tuple[list, list, list]:
    chosen = [(a, b) for a, b in pairs if a.method == method]
    return [a.values[metric] for a, _b in chosen], [b.values[metric] for _a, b in chosen], [a.cluster for a, _b in chosen]


def test_two_annotated_versions_pair_by_conversation(client, app):
    base, other = run(client, app, BASELINE), run(client, app, OTHER)
    pairs = align(base, other)
    assert [(a.method, a.key) for a, _b in pairs] == [
        ("human", ("conversations.json[0]",)), ("human", ("conversations.json[1]",)),
        ("agent", ("conversations.json[2]",)), ("agent", ("conversations.json[3]",))]
    first = base[0]
    assert first.cluster == "conversations.json[0]" and first.links == {"transcript": "transcript?index=0"}
    assert first.text == "answer 1 [[annotate=2,1,2,0]]"
    assert first.values == {"turns": 2.0, "detail": 2.0, "diversity": 1.0, "utility": 2.0, "hallucination": 0.0}
    kind = get_kind("conversation")
    assert [m.name for m in kind.paired_metrics] == ["turns", "detail", "diversity", "utility", "hallucination"]
    assert [m.binary for m in kind.paired_metrics] == [False, False, False, False, True]
    assert kind.paired_aggregates(pairs) == []

    # human: detail 2, 1 -> 2, 2 (+0.5 on average); the flag 0, 1 -> 0, 0; utility 2, 1 both times
    detail = paired_scores(*column(pairs, "human", "detail"))
    assert (detail.baseline_value, detail.value, detail.diff, detail.n_pairs) == (1.5, 2.0, 0.5, 2)
    flag = paired_verdicts(*column(pairs, "human", "hallucination"))
    assert (flag.baseline_value, flag.value, flag.gained, flag.lost) == (0.5, 0.0, 0, 1)
    assert flag.p_value == pytest.approx(1.0)  # McNemar with one discordant pair: 2 x 1/2
    # agent: one more turn on conversation 2 (1, 2 -> 2, 2), detail 2, 0 -> 2, 1, the flag 0, 0 -> 0, 1
    turns = paired_scores(*column(pairs, "agent", "turns"))
    assert (turns.baseline_value, turns.value, turns.diff) == (1.5, 2.0, 0.5)
    agent_flag = paired_verdicts(*column(pairs, "agent", "hallucination"))
    assert (agent_flag.diff, agent_flag.gained, agent_flag.lost) == (0.5, 1, 0)
    assert paired_scores(*column(pairs, "agent", "detail")).diff == 0.5
    unchanged = paired_scores(*column(pairs, "human", "utility"))
    assert (unchanged.diff, unchanged.ci95, unchanged.p_value) == (0.0, [0.0, 0.0], None)


def test_a_statistics_run_pairs_turns_only(client, app):
    plain = run(client, app, BASELINE, annotate=False)
    assert [s.values["turns"] for s in plain] == [2.0, 3.0, 1.0, 2.0]
    assert all(s.values[name] is None for s in plain for name in ("detail", "diversity", "utility", "hallucination"))

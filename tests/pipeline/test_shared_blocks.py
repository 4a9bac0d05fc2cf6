"""The blocks Celery workers share an evaluation in: about CELERY_BLOCK_JUDGMENTS judgments each (1,000 by default),
the same at every plan of the evaluation, and a clear failure for a setting that is not a whole number > 0."""
from __future__ import annotations

import io

import pytest

from kinds import registry
from kinds.kind import JobFailed
from pipeline.evaluations import SHARED_BLOCK_JUDGMENTS, Evaluations, create_evaluation
from pipeline.ingest import ingest
from storage.store import Store
from tests.conftest import jsonl, session_line

SESSIONS = 100  # x 3 rounds x 2 methods x 2 modes = 1,200 judgments, 12 per session
JUDGE = {"JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test"}


def planned(tmp_path, setting: str | None) -> list[tuple[int, int]]:
    """The shared blocks of a new evaluation of SESSIONS sessions planned with CELERY_BLOCK_JUDGMENTS = setting."""
    environ = {**JUDGE, **({} if setting is None else {"CELERY_BLOCK_JUDGMENTS": setting})}
    store = Store(tmp_path / "db.sqlite", registry.tables())
    data = jsonl(*(session_line(f"s{i}", 3, user_profile=f"person {i}") for i in range(SESSIONS)))
    upload = ingest(io.BytesIO(data), "log.jsonl", store, tmp_path / "uploads")
    evaluation = create_evaluation(store, upload["id"], environ=environ)
    evaluations = Evaluations(store, tmp_path / "uploads", tmp_path / "results", lambda: environ)
    work = evaluations.open(evaluation["id"])
    assert work is not None
    blocks = evaluations.plan(work, shared=True)
    assert evaluations.plan(work, shared=True) == blocks  # the same blocks at the next plan
    return blocks


def test_by_default_a_block_has_about_a_thousand_judgments(tmp_path):
    assert SHARED_BLOCK_JUDGMENTS == 1000
    assert planned(tmp_path, None) == [(0, 82), (83, 165)]  # round(1000 / 12) = 83 sessions a block


def test_celery_block_judgments_sets_the_size_of_a_block(tmp_path):
    assert planned(tmp_path, "240") == [(first, first + 19) for first in range(0, SESSIONS, 20)]  # 20 sessions


@pytest.mark.parametrize("value", ["0", "-5", "many", "2.5"])
def test_a_bad_block_size_fails_the_plan_and_says_why(tmp_path, value):
    with pytest.raises(JobFailed) as failed:
        planned(tmp_path, value)
    assert str(failed.value) == f"CELERY_BLOCK_JUDGMENTS must be a whole number > 0, got '{value}'."

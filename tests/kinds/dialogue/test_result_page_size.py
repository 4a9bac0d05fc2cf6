"""A large dialogue result stays a light page: 500 sessions of 6 methods render a bounded number of elements (the
sessions come 20 a page, each session's detail only when opened; the sample grid 25 rows a page)."""
from __future__ import annotations

import io
import random
import re

from pipeline.evaluations import create_evaluation
from pipeline.ingest import ingest
from tests.conftest import element_count, jsonl, session_line

METHODS = ("Base", "CoT", "RAG", "Memory", "Persona", "Ours")
SESSIONS, ROUNDS = 500, 3


def large_result(app) -> str:
    """A finished 6-method, 500-session evaluation, its judgments written straight into the store at random."""
    store, pipeline = app.extensions["store"], app.extensions["runner"].job.pipeline  # the evaluation's steps
    data = jsonl(*(session_line(f"s{s:03d}", ROUNDS, METHODS) for s in range(SESSIONS)))
    upload = ingest(io.BytesIO(data), "large.jsonl", store, app.config["UPLOAD_FOLDER"])
    evaluation = create_evaluation(store, upload["id"], environ=app.config["JUDGE_ENV"])
    kind, job = pipeline.load(evaluation["id"])
    pipeline.plan(kind, job)
    rng = random.Random(0)
    rows = [(s, f"s{s:03d}", k, m, mode) for s in range(SESSIONS) for k in range(1, ROUNDS + 1) for m in METHODS
            for mode in ("fine", "binary")]
    store.add_pending(evaluation["id"], rows)
    dims = ("style", "content", "naturalness", "personalization", "conversation")
    store.save_judgments(evaluation["id"], [
        ((s, k, m, mode), {"status": "ok", "total": 60.0, "scores": {d: rng.randint(8, 20) for d in dims},
                           "answer": "fine", "attempts": 1} if mode == "fine" else
         {"status": "ok", "verdict": rng.randint(0, 1), "answer": "binary", "attempts": 1})
        for s, _sid, k, m, mode in rows])
    store.set_result(evaluation["id"], kind.score(job))
    return evaluation["id"]


def test_a_500_session_6_method_result_page_has_under_3000_elements(app, client):
    evaluation_id = large_result(app)
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert len(re.findall(r'<details class="session"', page)) == 20 and "Page 1 of 25" in page
    assert page.count('class="chip on"') == len(METHODS)
    assert element_count(page) < 3000
    grid = client.get(f"/evaluations/{evaluation_id}/view/grid").get_data(as_text=True)
    assert element_count(grid) < 3000

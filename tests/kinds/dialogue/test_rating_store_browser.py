"""The people_ratings functions rating in the browser uses (issue 40's contract: save_rating, delete_rating,
people_ratings), on SQLite and PostgreSQL: one row per rater and reply, replaced when saved again, read per rater."""
from __future__ import annotations

from kinds import registry
from kinds.dialogue.rating_store import delete_rating, people_ratings, save_rating
from storage.store import Store


def test_ratings_are_kept_per_rater_replaced_and_forgotten(store_url):
    store = Store(store_url, registry.tables())
    store.add_upload({"id": "u1", "sha256": "x", "kind": "dialogue", "filename": "f.jsonl", "size": 1, "summary": {},
                      "warnings": []})
    store.add_evaluation({"id": "e1", "upload_id": "u1", "kind": "dialogue", "methods": ["A", "B"], "settings": {},
                          "total": 1})
    save_rating(store, "e1", "zoe", "s2", 1, "A", {"total": 60, "verdict": 1, "style": 12, "content": 12})
    save_rating(store, "e1", "ada", "s1", 2, "B", {"total": 40.5, "verdict": 0})
    save_rating(store, "e1", "zoe", "s1", 1, "B", {"total": 10, "verdict": None, "style": 2})
    save_rating(store, "e1", "zoe", "s2", 1, "A", {"total": 80, "verdict": 0, "style": 16})  # replaces zoe's

    found = people_ratings(store, "e1")
    assert [(r["rater"], r["session_id"], r["round"], r["method"], r["total"], r["verdict"]) for r in found] == [
        ("ada", "s1", 2, "B", 40.5, 0), ("zoe", "s1", 1, "B", 10, None), ("zoe", "s2", 1, "A", 80, 0)]
    assert found[2]["style"] == 16 and "content" not in found[2]  # the dimensions of the last save only
    assert {r["source"] for r in found} == {"browser"} and {r["line"] for r in found} == {None}
    assert [r["session_id"] for r in people_ratings(store, "e1", rater="zoe")] == ["s1", "s2"]

    assert delete_rating(store, "e1", "zoe", "s1", 1, "B") is True
    assert delete_rating(store, "e1", "zoe", "s1", 1, "B") is False
    assert [(r["rater"], r["session_id"]) for r in people_ratings(store, "e1")] == [("ada", "s1"), ("zoe", "s2")]

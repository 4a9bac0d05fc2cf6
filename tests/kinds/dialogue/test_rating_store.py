"""People's ratings per rater (kinds/dialogue/rating_store.py) on SQLite and on PostgreSQL: a file replaces only the
ratings of the raters it names, one rating is saved and forgotten, and people's mean per reply is what hand
computation gives."""
from __future__ import annotations

import pytest

from kinds import registry
from kinds.dialogue import rating_store
from storage.store import Store


@pytest.fixture
def store(store_url):
    """A store with one dialogue evaluation, e1 (the ratings' foreign key needs it on PostgreSQL)."""
    store = Store(store_url, registry.tables())
    store.add_upload({"id": "u", "sha256": "abc", "kind": "dialogue", "filename": "log.jsonl", "size": 1,
                      "summary": {}, "warnings": []})
    for evaluation_id in ("e1", "e2"):
        store.add_evaluation({"id": evaluation_id, "upload_id": "u", "kind": "dialogue", "methods": ["A", "B"],
                              "settings": {}, "total": 1})
    yield store
    store.close()


def rating(rater: str, session_id: str, rnd: int, method: str, line: int | None = None, **ratings) -> dict:
    return {"rater": rater, "session_id": session_id, "round": rnd, "method": method, "line": line, **ratings}


FIRST_FILE = [rating("alice", "s1", 1, "A", 2, total=70.0, verdict=1, style=14.0),
              rating("bob", "s1", 1, "A", 3, total=80.5, verdict=0),
              rating("alice", "s2", 1, "B", 4, total=30.0, verdict=0, warmth=2.5),
              rating("bob", "s2", 1, "B", 5, total=41.0, verdict=0, style=9.0)]


def test_a_file_replaces_only_the_ratings_of_the_raters_it_names(store):
    assert rating_store.add_ratings(store, "e1", FIRST_FILE, "file") == 4
    assert rating_store.add_ratings(store, "e2", [rating("bob", "s1", 1, "A", 2, total=1.0)], "api") == 1
    # bob again, one rating now: his two earlier ones go, alice's stay, e2's bob is another evaluation's
    assert rating_store.add_ratings(store, "e1", [rating("bob", "s9", 2, "B", 2, total=55.0)], "file") == 1
    kept = rating_store.people_ratings(store, "e1")
    assert [(r["rater"], r["session_id"], r["total"], r["line"], r["source"]) for r in kept] == [
        ("alice", "s1", 70.0, 2, "file"), ("alice", "s2", 30.0, 4, "file"), ("bob", "s9", 55.0, 2, "file")]
    assert kept[0]["style"] == 14.0 and kept[1]["warmth"] == 2.5 and "style" not in kept[1]
    assert [r["total"] for r in rating_store.people_ratings(store, "e2")] == [1.0]
    assert rating_store.people_ratings(store, "e2")[0]["source"] == "api"
    assert [r["session_id"] for r in rating_store.people_ratings(store, "e1", "alice")] == ["s1", "s2"]
    assert rating_store.people_ratings(store, "e1", "nobody") == []


def test_one_rating_is_saved_replaced_and_forgotten(store):
    rating_store.add_ratings(store, "e1", FIRST_FILE, "file")
    rating_store.save_rating(store, "e1", "carol", "s2", 1, "B", {"total": 12.0, "verdict": 1})
    rating_store.save_rating(store, "e1", "carol", "s1", 1, "A", {"total": 70.3, "style": 3.25})
    rating_store.save_rating(store, "e1", "carol", "s2", 1, "B", {"total": 60.0, "warmth": 4.0})  # changed her mind
    carol = rating_store.people_ratings(store, "e1", "carol")
    # without a file line, by reply; 70.3 kept exactly (a double on PostgreSQL, as on SQLite)
    assert [(r["session_id"], r["total"], r["verdict"], r["line"], r["source"]) for r in carol] == [
        ("s1", 70.3, None, None, "browser"), ("s2", 60.0, None, None, "browser")]
    assert carol[0]["style"] == 3.25 and carol[1]["warmth"] == 4.0 and "style" not in carol[1]
    assert rating_store.delete_rating(store, "e1", "carol", "s1", 1, "A") is True
    assert rating_store.delete_rating(store, "e1", "carol", "s1", 1, "A") is False
    assert len(rating_store.people_ratings(store, "e1")) == 5
    # a file from carol replaces what she rated in the browser
    rating_store.add_ratings(store, "e1", [rating("carol", "s1", 2, "A", 7, verdict=1)], "file")
    assert [(r["session_id"], r["round"]) for r in rating_store.people_ratings(store, "e1", "carol")] == [("s1", 2)]


def test_peoples_mean_per_reply(store):
    rating_store.add_ratings(store, "e1", FIRST_FILE, "file")
    rating_store.save_rating(store, "e1", "carol", "s1", 1, "A", {"total": 60.0, "verdict": 1, "style": 10.0})
    rating_store.save_rating(store, "e1", "carol", "s3", 1, "A", {"verdict": 1})
    rows = rating_store.human_ratings(store, "e1")
    # by the lowest file line, the reply no file rated last
    assert [(r["session_id"], r["line"], r["raters"]) for r in rows] == [("s1", 2, 3), ("s2", 4, 2), ("s3", None, 1)]
    s1, s2, s3 = rows
    assert s1["total"] == pytest.approx((70 + 80.5 + 60) / 3)
    assert s1["verdict"] == 1  # alice 1, bob 0, carol 1
    assert s1["style"] == pytest.approx((14 + 10) / 2)  # bob gave no style
    assert (s2["total"], s2["verdict"], s2["style"], s2["warmth"]) == (35.5, 0, 9.0, 2.5)
    assert (s3["total"], s3["verdict"]) == (None, 1)
    assert set(s3) == {"line", "session_id", "round", "method", "total", "verdict", "raters"}
    rating_store.delete_rating(store, "e1", "carol", "s1", 1, "A")
    assert rating_store.human_ratings(store, "e1")[0]["verdict"] is None  # alice 1, bob 0: a tie


def test_who_rated_and_clearing(store):
    rating_store.add_ratings(store, "e1", FIRST_FILE, "file")
    rating_store.save_rating(store, "e1", "alice", "s3", 1, "A", {"total": 5.0})
    info = rating_store.human_ratings_info(store, "e1")
    assert info["rows"] == 5 and info["raters"] == ["alice", "bob"]
    assert [(r["rater"], r["ratings"], r["sources"]) for r in info["by_rater"]] == [
        ("alice", 3, ["browser", "file"]), ("bob", 2, ["file"])]
    assert rating_store.clear_human_ratings(store, "e1", "bob") == 2
    assert rating_store.human_ratings_info(store, "e1")["raters"] == ["alice"]
    assert rating_store.clear_human_ratings(store, "e1") == 3
    assert rating_store.human_ratings_info(store, "e1") is None and rating_store.human_ratings(store, "e1") == []


def test_what_cannot_be_kept_is_refused_before_anything_changes(store):
    rating_store.add_ratings(store, "e1", FIRST_FILE, "file")
    with pytest.raises(ValueError, match="gives a total"):
        rating_store.save_rating(store, "e1", "carol", "s1", 1, "A", {"total": None})
    with pytest.raises(ValueError, match="source must be one of"):
        rating_store.add_ratings(store, "e1", [rating("bob", "s1", 1, "A", total=1.0)], "email")
    with pytest.raises(ValueError, match="1 to 80 characters"):
        rating_store.add_ratings(store, "e1", [rating("bob", "s1", 1, "A", total=1.0),
                                               rating("x" * 81, "s1", 1, "A", total=1.0)], "file")
    assert len(rating_store.people_ratings(store, "e1", "bob")) == 2  # bob's stay: nothing was kept

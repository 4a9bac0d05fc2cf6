"""The dialogue kind's samples for comparing runs: one per judged reply, with the values the result counts."""
from kinds import registry
from tests.conftest import jsonl, wait_for
from tests.web.test_api import scored_session, upload


def test_each_judged_reply_is_a_sample_with_its_score_verdict_and_dimensions(client, app):
    data = jsonl(scored_session("s1", [40, 70], 55), scored_session("s2", [90], 10))
    upload_id = upload(client, data).get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()
    record = app.extensions["store"].get_evaluation(wait_for(client, created["id"])["id"])
    kind = registry.get("dialogue")
    samples = list(kind.paired_samples(record, app.extensions["site"]))

    assert [(s.method, s.key, s.cluster, s.values["avg"], s.values["binary_rate"], s.stratum) for s in samples] == [
        ("A", ("s1", 1), "s1", 40.0, 1.0, 1), ("B", ("s1", 1), "s1", 55.0, 0.0, 1),
        ("A", ("s1", 2), "s1", 70.0, 1.0, 2), ("B", ("s1", 2), "s1", 55.0, 0.0, 2),
        ("A", ("s2", 1), "s2", 90.0, 1.0, 1), ("B", ("s2", 1), "s2", 10.0, 0.0, 1)]
    # the judge server splits a total over the five dimensions so that they sum to it
    assert all(sum(s.values[d] for d in ("style", "content", "naturalness", "personalization", "conversation"))
               == s.values["avg"] for s in samples)
    assert samples[0].text == "A says hi [[score=40]] [[keep=1]]"
    assert samples[0].links == {"session": "session?index=0", "fine": "prompt?index=0&round=1&method=A&mode=fine",
                                "binary": "prompt?index=0&round=1&method=A&mode=binary"}
    assert [m.name for m in kind.paired_metrics] == ["avg", "binary_rate", "style", "content", "naturalness",
                                                     "personalization", "conversation"]
    # the links open the kind's views of this evaluation
    for link in samples[0].links.values():
        assert client.get(f"/evaluations/{record['id']}/view/{link}").status_code == 200

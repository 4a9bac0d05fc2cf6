"""The row-level diff page and CSV: two dialogue runs whose replies differ in known ways, filters, counts, word diff,
sorting, paging, share links and bad input."""
from __future__ import annotations

import csv
import io
import json
import re
from urllib.parse import urlsplit

import pytest

from kinds import registry
from kinds import row_diff as logic
from kinds.kind import Metric, Paired, Sample
from tests.conftest import jsonl
from tests.kinds.test_kind_plugin import CountsKind
from tests.kinds.test_kind_plugin import evaluate as plugin_evaluate
from tests.kinds.test_kind_plugin import upload as plugin_upload
from tests.web.test_share import create_share, evaluate

# (session, round, method) -> (baseline reply, other reply); the judge server scores the markers
REPLIES = {
    ("s1", 1, "A"): ("A says hi [[score=40]] [[keep=1]]", "A says hello [[score=50]] [[keep=1]]"),  # +10
    ("s1", 2, "A"): ("A fine [[score=70]] [[keep=1]]", "A fine [[score=70]] [[keep=0]]"),  # verdict flips 1 -> 0
    ("s2", 1, "A"): ("A long <b>answer</b> [[score=90]] [[keep=1]]", "A short answer [[score=60]] [[keep=1]]"),  # -30
    ("s2", 2, "A"): ("A same [[score=55]] [[keep=0]]", "A same [[score=55]] [[keep=0]]"),
    ("s1", 1, "B"): ("B one [[score=20]] [[keep=0]]", "B one [[score=20]] [[keep=0]]"),
    ("s1", 2, "B"): ("B two [[score=30]] [[keep=0]]", "B two [[score=30]] [[keep=1]]"),  # verdict flips 0 -> 1
    ("s2", 1, "B"): ("B three [[score=10]] [[keep=0]]", "B three [[score=13]] [[keep=0]]"),  # +3
    ("s2", 2, "B"): ("B four [[score=45]] [[keep=1]]", "B four [[score=45]] [[keep=1]]"),
}


def sessions(side: int, extra: str) -> bytes:
    """The two sessions both files share (replies of one side of REPLIES), plus one session only this file has."""
    lines = []
    for sid in ("s1", "s2", extra):
        rounds = [{"round": k, "user_message": f"message {k}",
                   "responses": {m: REPLIES.get((sid, k, m), (f"{m} only {k} [[score=5]]",) * 2)[side]
                                 for m in ("A", "B")}} for k in (1, 2)]
        lines.append({"session_id": sid, "user_profile": "A nurse.", "user_personality": "Direct.", "rounds": rounds})
    return jsonl(*lines)


@pytest.fixture
def runs(client):
    """(baseline id, other id): two uploads whose session ids overlap in s1 and s2."""
    return evaluate(client, sessions(0, "only-base"), "base.jsonl"), evaluate(client, sessions(1, "only-new"), "new.jsonl")


def page(client, query: str, status: int = 200) -> str:
    resp = client.get(f"/compare/rows?{query}")
    assert resp.status_code == status, resp.get_data(as_text=True)[:2000]
    return resp.get_data(as_text=True)


def rows_of(html: str) -> list[tuple[str, str, str]]:
    """(method, key, change) of each row shown."""
    found = re.findall(r'<tr class="change-\w+" data-change="(\w+)">\s*<td>(\w+)</td>\s*<th scope="row">([^<]*)</th>',
                       html)
    return [(method, key, change) for change, method, key in found]


def counts(html: str) -> dict[str, int]:
    return {k: int(n) for k, n in re.findall(r'data-count="(\w+)">(\d+)', html)}


def test_changed_only_finds_exactly_the_flipped_verdicts(client, runs):
    base, other = runs
    html = page(client, f"ids={base}&ids={other}&metric=binary_rate&changed=1")
    assert rows_of(html) == [("A", "s1 / 2", "regressed"), ("B", "s1 / 2", "improved")]
    assert counts(html) == {"improved": 1, "regressed": 1, "unchanged": 6}
    assert rows_of(page(client, f"ids={base}&ids={other}&metric=binary_rate&direction=improved")) == [
        ("B", "s1 / 2", "improved")]


def test_score_counts_follow_the_threshold_and_sort_by_largest_difference(client, runs):
    base, other = runs
    html = page(client, f"ids={base}&ids={other}&metric=avg&sort=delta")
    assert counts(html) == {"improved": 2, "regressed": 1, "unchanged": 5}
    assert [k for _m, k, _c in rows_of(html)[:3]] == ["s2 / 1", "s1 / 1", "s2 / 1"]
    assert [m for m, _k, _c in rows_of(html)[:3]] == ["A", "A", "B"]
    assert "−30.0" in html or "-30.0" in html
    html = page(client, f"ids={base}&ids={other}&threshold=5&changed=1")
    assert counts(html) == {"improved": 1, "regressed": 1, "unchanged": 6}
    assert rows_of(html) == [("A", "s1 / 1", "improved"), ("A", "s2 / 1", "regressed")]
    # the other run as baseline: improved and regressed swap
    html = page(client, f"ids={base}&ids={other}&baseline={other}&threshold=5")
    assert counts(html) == {"improved": 1, "regressed": 1, "unchanged": 6}
    assert ("A", "s2 / 1", "improved") in rows_of(html)


def test_word_diff_marks_exactly_the_changed_words_escaped(client, runs):
    base, other = runs
    html = page(client, f"ids={base}&ids={other}&q=short")
    assert rows_of(html) == [("A", "s2 / 1", "regressed")]
    assert re.findall(r"<(del|ins)>([^<]*)</", html) == [
        ("del", "long"), ("del", "&lt;b&gt;answer&lt;/b&gt;"), ("del", "[[score=90]]"),
        ("ins", "short"), ("ins", "answer"), ("ins", "[[score=60]]")]
    assert "<b>answer</b>" not in html
    html = page(client, f"ids={base}&ids={other}&q=hello")
    assert re.findall(r"<(del|ins)>([^<]*)</", html) == [("del", "hi"), ("del", "[[score=40]]"), ("ins", "hello"),
                                                          ("ins", "[[score=50]]")]


def test_each_row_links_to_both_runs_judgments(client, runs):
    base, other = runs
    html = page(client, f"ids={base}&ids={other}&q=hello")
    hrefs = re.findall(r'href="(/evaluations/[^"]+)"', html)
    assert f"/evaluations/{base}/view/prompt?index=0&amp;round=1&amp;method=A&amp;mode=fine" in hrefs
    assert f"/evaluations/{other}/view/prompt?index=0&amp;round=1&amp;method=A&amp;mode=binary" in hrefs
    for href in hrefs:
        assert client.get(href.replace("&amp;", "&")).status_code == 200


def test_paging_keeps_the_query(client, runs, monkeypatch):
    base, other = runs
    monkeypatch.setattr(logic, "PER_PAGE", 3)
    first = page(client, f"ids={base}&ids={other}&metric=avg")
    assert len(rows_of(first)) == 3 and "page 1 of 3" in first
    last = page(client, f"ids={base}&ids={other}&metric=avg&page=3")
    assert [k for _m, k, _c in rows_of(last)] == ["s2 / 2", "s2 / 2"]
    assert 'href="/compare/rows?ids=' in last and "page=2" in last
    assert rows_of(page(client, f"ids={base}&ids={other}&page=99")) == rows_of(last)


def test_csv_has_the_filtered_rows(client, runs):
    base, other = runs
    resp = client.get(f"/compare/rows.csv?ids={base}&ids={other}&metric=binary_rate&changed=1")
    assert resp.status_code == 200 and resp.mimetype == "text/csv"
    table = list(csv.reader(io.StringIO(resp.get_data(as_text=True).lstrip("\ufeff"))))
    assert table == [
        ["method", "key_1", "key_2", "baseline_value", "other_value", "diff", "changed", "baseline_text", "other_text"],
        ["A", "s1", "2", "1.0", "0.0", "-1.0", "regressed", REPLIES[("s1", 2, "A")][0], REPLIES[("s1", 2, "A")][1]],
        ["B", "s1", "2", "0.0", "1.0", "1.0", "improved", REPLIES[("s1", 2, "B")][0], REPLIES[("s1", 2, "B")][1]]]
    assert f'href="/compare/rows.csv?ids={base}&amp;ids={other}&amp;metric=binary_rate&amp;changed=1"' in page(
        client, f"ids={base}&ids={other}&metric=binary_rate&changed=1")


def test_bad_input_is_a_clear_400(client, runs):
    base, other = runs
    for query, message in ((f"ids={base}", "exactly two"), (f"ids={base}&ids=nope", "No evaluation has the id nope"),
                           (f"ids={base}&ids={other}&q=(", "not a valid regular expression"),
                           (f"ids={base}&ids={other}&q=(a%2B)%2B", "repeats a group"),
                           (f"ids={base}&ids={other}&metric=nope", "Unknown metric nope"),
                           (f"ids={base}&ids={other}&threshold=-1", "threshold must be a number"),
                           (f"ids={base}&ids={other}&threshold=nan", "threshold must be a number")):
        html = page(client, query, status=400)
        assert message in html and 'role="alert"' in html, query
    resp = client.get(f"/compare/rows.csv?ids={base}&ids={other}&q=(")
    assert resp.status_code == 400


def test_other_kinds_say_why(client, runs):
    from tests.conftest import wait_for
    from tests.kinds.mobility.test_mobility_pipeline import add_reference, synthetic, upload_generated
    add_reference(client, json.dumps(synthetic(seed=1)).encode(), "ref.json", "rows-ref")
    mobility = []
    for seed in (2, 3):
        upload = upload_generated(client, synthetic(seed=seed), f"agent{seed}.json")
        created = client.post("/api/evaluations", json={"upload_id": upload["id"], "reference": "rows-ref"}).get_json()
        mobility.append(wait_for(client, created["id"])["id"])
    assert "one kind at a time" in page(client, f"ids={runs[0]}&ids={mobility[0]}", status=400)
    assert "not compared sample by sample" in page(client, f"ids={mobility[0]}&ids={mobility[1]}", status=400)


def test_share_links_show_the_diff_of_two_shared_runs_only(client, runs):
    base, other = runs
    first, second = create_share(client, base), create_share(client, other)
    path = urlsplit(first["url"]).path
    resp = client.get(f"{path}/compare/rows?other={second['token']}&metric=binary_rate&changed=1")
    assert resp.status_code == 200 and resp.headers["Referrer-Policy"] == "no-referrer"
    html = resp.get_data(as_text=True)
    assert rows_of(html) == [("A", "s1 / 2", "regressed"), ("B", "s1 / 2", "improved")]
    links = re.findall(r'(?:href|action)="([^"#]+)"', html)
    assert not [x for x in links if x.startswith(("/evaluations", "/compare"))], links
    view = f"/share/{second['token']}/view/prompt?index=0&amp;round=2&amp;method=A&amp;mode=fine"
    assert view in links and client.get(view.replace("&amp;", "&")).status_code == 200
    csv_resp = client.get(f"{path}/compare/rows.csv?other={second['token']}&metric=binary_rate&changed=1")
    assert csv_resp.status_code == 200 and len(csv_resp.get_data(as_text=True).strip().splitlines()) == 3
    # an evaluation without a share link cannot be read through someone else's link: not by its id, nor once revoked
    client.post(f"/api/evaluations/{other}/shares/{second['id']}/revoke")
    for query in (f"other={other}", f"other={second['token']}", "other="):
        for suffix in ("", ".csv"):
            resp = client.get(f"{path}/compare/rows{suffix}?{query}")
            body = resp.get_data(as_text=True)
            assert resp.status_code == 404 and "A says hello" not in body and "new.jsonl" not in body, query
    assert client.get(f"/share/not-a-token/compare/rows?other={first['token']}").status_code == 404


def test_the_compare_page_of_two_runs_links_to_their_diff(client, runs):
    base, other = runs
    html = client.get(f"/compare?ids={base}&ids={other}").get_data(as_text=True)
    assert f'href="/compare/rows?ids={base}&amp;ids={other}&amp;baseline={base}"' in html
    # ticked newest first, the earlier run is still the baseline of the diff it links to
    html = client.get(f"/compare?ids={other}&ids={base}").get_data(as_text=True)
    assert f'href="/compare/rows?ids={other}&amp;ids={base}&amp;baseline={base}"' in html


class PairedCounts(CountsKind, Paired):
    """The test plug-in kind "counts", its numbers paired by position: a key of three parts, one metric."""

    paired_metrics = (Metric("value", "Value"),)

    def paired_samples(self, record, site):
        with site.file_of(site.store.get_upload(record["upload_id"])).open("rb") as stream:
            values = json.loads(stream.read())
        for i, v in enumerate(values):
            yield Sample(method="all", key=("n", i, "x"), cluster=str(i), values={"value": v}, text=f"number {v}",
                         links={"above": f"above?min={v}"})


def test_any_kind_with_paired_metrics_gets_the_diff(make_app, judge_env):
    registry.register(PairedCounts())
    try:
        client = make_app(judge_env).test_client()
        ids = [plugin_evaluate(client, plugin_upload(client, data, name).get_json()["id"])["id"]
               for data, name in ((b"[1, 2, 3]", "a.json"), (b"[1, 5, 0]", "b.json"))]
        html = page(client, f"ids={ids[0]}&ids={ids[1]}&sort=delta")
        assert counts(html) == {"improved": 1, "regressed": 1, "unchanged": 1}
        assert rows_of(html) == [("all", "n / 1 / x", "improved"), ("all", "n / 2 / x", "regressed"),
                                 ("all", "n / 0 / x", "unchanged")]
        assert f'<a href="/evaluations/{ids[1]}/view/above?min=5">above</a>' in html
        assert re.findall(r"<(del|ins)>([^<]*)</", html) == [("del", "2"), ("ins", "5"), ("del", "3"), ("ins", "0")]
        table = client.get(f"/compare/rows.csv?ids={ids[0]}&ids={ids[1]}&changed=1").get_data(as_text=True)
        assert list(csv.reader(io.StringIO(table.lstrip("\ufeff")))) == [
            ["method", "key_1", "key_2", "key_3", "baseline_value", "other_value", "diff", "changed", "baseline_text",
             "other_text"],
            ["all", "n", "1", "x", "2.0", "5.0", "3.0", "improved", "number 2", "number 5"],
            ["all", "n", "2", "x", "3.0", "0.0", "-3.0", "regressed", "number 3", "number 0"]]
    finally:
        registry.unregister("counts")


def test_with_accounts_the_diff_needs_sign_in_and_share_links_do_not(make_app, judge_env):
    from tests.web.test_auth import PASSWORD, signed_in
    from web import accounts
    app = make_app(judge_env, AUTH="on")
    accounts.create_user(app.extensions["store"], "max", PASSWORD)
    member = signed_in(app, "max")
    base = evaluate(member, sessions(0, "only-base"), "base.jsonl")
    other = evaluate(member, sessions(1, "only-new"), "new.jsonl")
    first, second = create_share(member, base), create_share(member, other)
    anonymous = app.test_client()
    assert anonymous.get(f"/compare/rows?ids={base}&ids={other}").status_code == 302
    assert anonymous.get(f"/compare/rows.csv?ids={base}&ids={other}").status_code in (302, 401)
    path = urlsplit(first["url"]).path
    shared = anonymous.get(f"{path}/compare/rows?other={second['token']}")
    assert shared.status_code == 200 and counts(shared.get_data(as_text=True)) == {
        "improved": 2, "regressed": 1, "unchanged": 5}
    assert anonymous.get(f"{path}/compare/rows.csv?other={second['token']}").status_code == 200


def test_the_view_gives_its_share_address_once_both_runs_are_shared(client, runs):
    base, other = runs
    query = f"ids={base}&ids={other}&metric=binary_rate&changed=1&page=2"
    assert "Create a share link on both runs" in page(client, query)
    first, second = create_share(client, base), create_share(client, other)
    html = page(client, query)
    address = re.search(r'id="row-diff-share" type="text" readonly size="64" value="([^"]+)"', html).group(1)
    assert address == f"{first['url']}/compare/rows?other={second['token']}&amp;metric=binary_rate&amp;changed=1"
    shared = client.get(urlsplit(address.replace("&amp;", "&")).path + "?" + urlsplit(address.replace("&amp;", "&")).query)
    assert rows_of(shared.get_data(as_text=True)) == [("A", "s1 / 2", "regressed"), ("B", "s1 / 2", "improved")]

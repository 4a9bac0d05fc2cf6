"""The conversations table over HTTP: its columns, sorting by each, filters, pages, the "none" line, bad query values."""
from __future__ import annotations

import io
import json
import re

import pytest

from kinds.conversation import table
from tests.conftest import wait_for


def conv(source: str, task: str, turns: int, **extra) -> dict:
    history = []
    for k in range(turns):
        history += [{"role": "user", "content": f"question {k}", "intent": "Planning"},
                    {"role": "assistant", "content": f"answer {k}"}]
    return {"source": source, "task": task, "history": history, **extra}


def items() -> list[dict]:
    """Four conversations whose columns differ: turns 2/2/1/3, satisfaction only on #1 (4 and 2: mean 3), rating
    means 3 (#0) and 5 (#2)."""
    satisfied = conv("human", "recipe planning", 2)
    satisfied["history"][1]["satisfaction"], satisfied["history"][3]["satisfaction"] = 4, "2"
    return [conv("agent", "travel planning", 2, rating={"Detail Level": 2, "Preference Alignment": 4}),
            satisfied,
            conv("agent", "recipe planning", 1, rating={"Detail Level": 5}),
            conv("human", "travel planning", 3)]


def evaluate(client, payload: list[dict], name: str = "mine.json", **options) -> str:
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(json.dumps(payload).encode()), name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"], **options}).get_json()
    assert wait_for(client, created["id"])["status"] == "done"
    return created["id"]


def order(client, evaluation_id: str, query: str = "") -> list[int]:
    """The indexes of the conversations the page lists, in its order."""
    resp = client.get(f"/evaluations/{evaluation_id}/view/conversations{query}")
    assert resp.status_code == 200
    return [int(i) for i in re.findall(r"view/transcript\?index=(\d+)", resp.get_data(as_text=True))]


@pytest.fixture()
def four(client):
    return evaluate(client, items())


def test_the_columns_of_each_conversation(client, four):
    html = client.get(f"/evaluations/{four}/view/conversations").get_data(as_text=True)
    row = re.search(r"<tr>\s*<td>2</td>(.*?)</tr>", html, re.S).group(1)  # the second conversation
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
    assert cells == ["mine.json[1]", "Real users", "recipe planning", "2", "3.00", "—"]
    first = re.search(r"<tr>\s*<td>1</td>(.*?)</tr>", html, re.S).group(1)
    assert "Detail Level 2.0 · Preference Alignment 4.0" in first and "Simulated users" in first
    assert "Annotation" not in html  # no annotation columns in a run that does not annotate


@pytest.mark.parametrize(("query", "expected"), [
    ("", [0, 1, 2, 3]),
    ("?desc=1", [3, 2, 1, 0]),
    ("?sort=turns", [2, 0, 1, 3]),  # 1 < 2 = 2 < 3, the tie in file order
    ("?sort=turns&desc=1", [3, 0, 1, 2]),  # the tie still in file order
    ("?sort=satisfaction&desc=1", [1, 0, 2, 3]),  # rows without a value last, either way
    ("?sort=ratings&desc=1", [2, 0, 1, 3]),  # means 5 and 3
    ("?sort=ratings", [0, 2, 1, 3]),
    ("?sort=rating:Preference%20Alignment", [0, 1, 2, 3]),
    ("?sort=source", [0, 2, 1, 3]),
    ("?sort=task&desc=1", [0, 3, 1, 2]),
    ("?sort=path&desc=1", [3, 2, 1, 0]),
    ("?source=human", [1, 3]),
    ("?task=recipe%20planning&sort=turns", [2, 1]),
    ("?q=%5B3", [3]),
    ("?q=MINE.JSON%5B0", [0]),  # the path, case-insensitively
])
def test_sorted_and_filtered_as_the_address_says(client, four, query, expected):
    assert order(client, four, query) == expected


def test_a_sorted_column_says_so_and_its_link_turns_the_order(client, four):
    html = client.get(f"/evaluations/{four}/view/conversations?sort=turns").get_data(as_text=True)
    header = re.search(r'<th scope="col" aria-sort="ascending">(.*?)</th>', html, re.S).group(1)
    assert "sort=turns" in header and "desc=1" in header and "Turns" in header
    assert html.count("aria-sort=") == 1
    # filtering keeps the sort: the form's sort menu has it chosen
    assert '<option value="turns" selected>Turns</option>' in html


def test_every_sort_is_one_menu_in_the_form_each_choice_once(client):
    """The Ratings header held a link per rating field (a field both rated and asked in the questionnaire twice):
    those sorts are now options of the form's one sort menu, each once, with the header a single link."""
    human = conv("human", "travel planning", 2, questionnaire=[{"summary": "Diversity", "option": "结果多样"},
                                                               {"summary": "Detail", "option": "一般"}])
    rated = conv("agent", "travel planning", 1, rating={"Diversity": 3})
    evaluation_id = evaluate(client, [*items(), human, rated])
    html = client.get(f"/evaluations/{evaluation_id}/view/conversations?sort=rating:Detail%20Level&desc=1"
                      ).get_data(as_text=True)
    menu = re.search(r'<select id="sort-menu" name="sort">(.*?)</select>', html, re.S).group(1)
    options = re.findall(r'<option value="([^"]*)"( selected)?>([^<]*)</option>', menu)
    values = [value for value, _chosen, _label in options]
    labels = [label for _value, _chosen, label in options]
    assert values == ["index", "path", "source", "task", "turns", "satisfaction", "ratings", "rating:Detail Level",
                      "rating:Diversity", "rating:Preference Alignment", "questionnaire:Detail",
                      "questionnaire:Diversity"]
    assert len(set(labels)) == len(labels)  # Diversity is rated and asked: two choices, told apart
    assert {"Diversity (simulated users' rating)", "Diversity (real users' questionnaire)"} <= set(labels), labels
    assert [value for value, chosen, _label in options if chosen] == ["rating:Detail Level"]
    assert '<option value="1" selected>highest first</option>' in html
    header = re.search(r"<thead>(.*?)</thead>", html, re.S).group(1)
    assert "sort=rating:" not in header and "sort=questionnaire" not in header  # one link per column
    assert re.search(r'<th scope="col" aria-sort="descending"><a [^>]*sort=ratings[^>]*>Ratings</a>', header)
    # The menu sorts as the links did: Detail Level 5 (#2), 2 (#0), then the rows without it in file order.
    assert order(client, evaluation_id, "?sort=rating:Detail%20Level&desc=1") == [2, 0, 1, 3, 4, 5]
    assert order(client, evaluation_id, "?sort=questionnaire:Diversity") == [4, 0, 1, 2, 3, 5]


def test_nothing_matching_says_so(client, four):
    html = client.get(f"/evaluations/{four}/view/conversations?q=nowhere").get_data(as_text=True)
    assert "No conversations match." in html and "0 conversations · of 4" in html
    assert '<tr><td colspan="7">No conversations match.</td></tr>' in html


@pytest.mark.parametrize("query", ["?sort=bogus", "?sort=rating:", "?sort=rating:nope", "?desc=maybe", "?page=abc",
                                   "?page=-4", "?page=99999999999999999999999", "?source=%3Cscript%3E",
                                   "?task=nope", "?status=problems", "?sort=detail", "?q=" + "x" * 5000])
def test_bad_query_values_fall_back_and_never_fail(client, four, query):
    shown = order(client, four, query)
    assert set(shown) <= {0, 1, 2, 3}
    assert client.get(f"/evaluations/{four}/view/conversations?source=%3Cscript%3E&q=%3Cscript%3E"
                      ).get_data(as_text=True).count("<script>") == 0


def test_a_nul_character_in_the_query_is_a_400_saying_so(client, four):
    refused = client.get(f"/evaluations/{four}/view/conversations?sort=%00&task=%00&q=%00")
    assert refused.status_code == 400 and "holds a NUL character" in refused.get_data(as_text=True)


def test_pages_of_fifty(client):
    evaluation_id = evaluate(client, [conv("agent", "travel planning", 1 + k % 3) for k in range(51)], "many.json")
    assert order(client, evaluation_id) == list(range(50))
    assert order(client, evaluation_id, "?page=2") == [50]
    assert order(client, evaluation_id, "?page=9") == [50]  # past the end: the last page
    html = client.get(f"/evaluations/{evaluation_id}/view/conversations?sort=turns&page=2").get_data(as_text=True)
    # 17 conversations of 3 turns, the last page's one is the last of them in file order
    assert re.findall(r"view/transcript\?index=(\d+)", html) == ["50"] and "page 2 of 2" in html
    assert "sort=turns" in re.search(r'<p class="pager">(.*?)</p>', html, re.S).group(1)


def test_an_annotation_run_has_status_and_scores_to_sort_and_filter_by(client, judge_server):
    payload = [conv("agent", "travel planning", 1) for _ in range(3)]
    for k, marker in enumerate(("[[annotate=2,1,2,0]]", "[[annotate=0,2,1,1]]", "[[annotate=1,1,1,0]]")):
        payload[k]["history"][1]["content"] += " " + marker
    judge_server.fail_next(1, "malformed", match=lambda r: "annotate=1,1,1,0" in json.dumps(r["body"]))
    evaluation_id = evaluate(client, payload, annotate=True)
    assert order(client, evaluation_id, "?sort=detail&desc=1") == [0, 1, 2]  # 2, 0, then the unparsed one
    assert order(client, evaluation_id, "?sort=diversity&desc=1") == [1, 0, 2]
    assert order(client, evaluation_id, "?status=problems") == [2]
    assert order(client, evaluation_id, "?status=unparsed") == [2]
    assert order(client, evaluation_id, "?status=ok&sort=utility") == [1, 0]
    assert order(client, evaluation_id, "?status=failed") == []
    html = client.get(f"/evaluations/{evaluation_id}/view/conversations").get_data(as_text=True)
    assert '<span class="status status-unparsed">unparsed</span>' in html
    assert '<tr><td colspan="12">' not in html
    empty = client.get(f"/evaluations/{evaluation_id}/view/conversations?status=failed").get_data(as_text=True)
    assert '<tr><td colspan="12">No conversations match.</td></tr>' in empty


def test_the_annotation_table_says_none_when_nothing_was_annotated(client, judge_server):
    judge_server.fail_next(2, "malformed")
    evaluation_id = evaluate(client, [conv("agent", "travel planning", 1), conv("human", "travel planning", 1)],
                             annotate=True)
    html = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert '<tr><td colspan="6">None annotated yet.</td></tr>' in html


def test_an_empty_table_and_its_query():
    shown, query, choices = table.table([], {"sort": "turns", "desc": "1", "source": "agent"}, annotated=False)
    assert shown == [] and choices == {"tasks": [], "fields": {"rating": [], "questionnaire": []}}
    assert query == {"sort": "turns", "desc": True, "q": "", "source": "agent", "task": "", "status": ""}
    assert table.page_of([], {"page": "3"}) == ([], 1, 1)


def test_the_table_under_a_share_link_links_only_under_it(client, four):
    token = client.post(f"/api/evaluations/{four}/shares").get_json()["token"]
    html = client.get(f"/share/{token}/view/conversations?sort=turns").get_data(as_text=True)
    assert re.findall(r"view/transcript\?index=(\d+)", html) == ["2", "0", "1", "3"]
    links = re.findall(r'href="([^"#]+)', html)
    assert [link for link in links if "/view/" in link and not link.startswith(f"/share/{token}/")] == []
    assert f'/share/{token}/view/conversations?sort=turns&amp;page=1&amp;desc=1' in html  # the sorted column's

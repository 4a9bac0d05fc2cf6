"""The dialogue result's column chooser: `cols` in the query string picks the metric columns of its tables."""
from __future__ import annotations

import re

from werkzeug.datastructures import MultiDict

from kinds.dialogue.columns import KEYS, chosen
from tests.conftest import jsonl, session_line
from tests.web.test_pages import finished_evaluation


def test_every_column_is_shown_until_the_query_names_some():
    everything = chosen(MultiDict())
    assert everything["shown"] == list(KEYS) and everything["param"] is None and len(KEYS) == 14
    # the form sends an empty `cols` plus one per ticked box; unknown names are dropped, the page order kept
    picked = chosen(MultiDict([("cols", ""), ("cols", "slope"), ("cols", "avg"), ("cols", "nope")]))
    assert picked["shown"] == ["avg", "slope"] and picked["param"] == "avg,slope"
    assert [c["key"] for c in picked["choices"] if c["shown"]] == ["avg", "slope"]
    assert chosen(MultiDict({"cols": "avg,slope"}))["shown"] == ["avg", "slope"]  # a link's comma list
    nothing = chosen(MultiDict([("cols", "")]))  # every box unticked: only the method names stay
    assert nothing["shown"] == [] and nothing["param"] == "-"
    assert chosen(MultiDict({"cols": ",".join(KEYS)}))["param"] is None


def _header(html: str, section: str) -> list[str]:
    start = html.index(section)
    head = html[html.index("<thead>", start):html.index("</thead>", start)]
    return [" ".join(re.sub(r"<[^>]+>", "", cell).split()) for cell in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)]


def test_the_result_page_hides_the_columns_left_out_and_keeps_the_choice_in_its_links(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("c1", 2, methods=("A", "B"))))
    full = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert len(_header(full, "<h2>Methods</h2>")) == 13  # Method + 12 metric columns
    assert _header(full, 'id="rounds"') == ["Round", "n", "A", "B", "AL(k)", "BAR(k)", "AL(k)", "BAR(k)"]

    html = client.get(f"/evaluations/{evaluation_id}?methods=B&cols=&cols=avg&cols=slope&cols=bar").get_data(
        as_text=True)
    assert _header(html, "<h2>Methods</h2>") == ["Method", "AVG", "Slope"]
    assert _header(html, 'id="rounds"') == ["Round", "n", "B", "BAR(k)"]
    assert 'colspan="1"' in html
    # the chips keep the columns; the chooser's form keeps the methods and shows the boxes ticked as asked
    assert f'href="/evaluations/{evaluation_id}?cols=avg,slope,bar"' in html
    assert '<input type="hidden" name="methods" value="B">' in html
    ticked = re.findall(r'name="cols" value="(\w+)" checked', html)
    assert ticked == ["avg", "slope", "bar"]
    assert "Columns (3/14)" in html

    no_rounds = client.get(f"/evaluations/{evaluation_id}?cols=avg").get_data(as_text=True)
    assert 'id="rounds"' not in no_rounds  # neither AL(k) nor BAR(k): the by-round table has nothing to show
    assert client.get(f"/evaluations/{evaluation_id}?cols=%3Cscript%3E").status_code == 200


def test_the_sample_grid_shows_the_methods_picked_and_its_chips_keep_the_rest_of_the_view(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("g1", 2, methods=("A", "B"))))
    grid = f"/evaluations/{evaluation_id}/view/grid"
    assert _header(client.get(grid).get_data(as_text=True), 'id="samples-grid"')[3:5] == ["A fine · keep", "B fine · keep"]
    html = client.get(grid + "?methods=B&sort=round").get_data(as_text=True)
    assert _header(html, 'id="samples-grid"') == ["Session", "Round", "User message", "B fine · keep"]
    assert f'href="{grid}?sort=round"' in html  # the chip showing A again drops `methods`, keeps the sort
    assert '<input type="hidden" name="methods" value="B">' in html  # the filter form keeps the methods
    assert client.get(grid + "?methods=nope").status_code == 200


def test_under_a_share_link_the_chooser_is_links_that_stay_under_it(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("s1", 2, methods=("A", "B"))))
    made = client.post(f"/api/evaluations/{evaluation_id}/shares", json={}).get_json()
    share = "/" + made["url"].split("/", 3)[3]
    html = client.get(share + "?cols=avg,al").get_data(as_text=True)
    assert "<form" not in html and _header(html, "<h2>Methods</h2>") == ["Method", "AVG"]
    assert f'href="{share}?cols=al"' in html  # hides AVG
    assert f'href="{share}?cols=avg,slope,al"' in html  # shows the slope too, in page order
    assert 'aria-label="Slope: hidden"' in html and 'aria-label="AVG: shown"' in html

"""In the browser: two people label the same conversations of a conversation evaluation with the keyboard only (number
keys, arrows, Enter, S and B), each under the name they typed, and the labelling overview shows their progress and
Krippendorff's alpha per dimension, equal to the textbook computation from the coincidence matrix written here (not the
product's function); both pages pass axe and fit 1280-1920 px (Chromium driven by Playwright against a real server)."""
from __future__ import annotations

import json

import pytest

from kinds.conversation.behaviour import DIMENSIONS
from tests.browser_support import CHROMIUM, PageWatch, axe_violations, dashboard_server, new_context
from tests.judge_server import JudgeServer
from tests.web.test_browser import check_widths, open_page

if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`; CI's .ci/run installs it)",
                allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402  (after the skip)

# The keys each person presses on each conversation: the n-th value of each dimension, in the page's order.
KEYS = {
    "alice": [[1, 1, 2, 3, 1, 1, 2, 1, 1, 1, 1], [2, 2, 3, 3, 2, 2, 1, 1, 2, 2, 2],
              [1, 3, 4, 5, 3, 1, 2, 2, 3, 3, 3], [2, 4, 1, 2, 1, 2, 4, 3, 1, 1, 1]],
    "bob": [[1, 2, 2, 4, 1, 1, 2, 1, 1, 1, 2], [2, 2, 4, 3, 2, 2, 1, 2, 2, 2, 2],
            [1, 3, 5, 5, 3, 2, 3, 2, 3, 3, 3], [2, 1, 1, 1, 1, 2, 4, 3, 2, 1, 1]],
}
FIXED_WITH_ARROWS = 3  # bob's last conversation: after the eleven keys, ↑ ↑ then 3 sets formality to its third value


def conversation(source: str, task: str, text: str) -> dict:
    return {"source": source, "task": task, "history": [
        {"role": "user", "content": text, "content_zh": f"{text}（中文）"},
        {"role": "assistant", "content": "Here is a plan: **day one** by the lake."},
        {"role": "user", "content": "Thanks, and for day two?"},
        {"role": "assistant", "content": "Day two: the hills."}]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with JudgeServer() as judge, dashboard_server(tmp_path_factory.mktemp("labelling"), judge.url) as running:
        yield running


@pytest.fixture(scope="module")
def evaluation(server) -> str:
    data = [conversation("agent", "travel planning", "Plan two days in Hangzhou."),
            conversation("human", "recipe planning", "A dinner for six, one vegetarian."),
            conversation("agent", "preparing gifts", "A gift for my sister <b>who reads</b>."),
            conversation("human", "skills learning planning", "Learn the guitar in three months.")]
    body = server.evaluate(server.upload(json.dumps(data).encode(), "talks.json"))
    assert body["status"] == "done", body
    return body["id"]


def krippendorff(units: list[list], interval: bool) -> float | None:
    """Krippendorff's alpha from the coincidence matrix (Krippendorff 2011, "Computing Krippendorff's alpha"): units
    holds each conversation's values; squared differences for interval data, 0/1 for nominal."""
    pairable = [[v for v in unit if v is not None] for unit in units]
    pairable = [unit for unit in pairable if len(unit) >= 2]
    values = sorted({v for unit in pairable for v in unit})
    coincidences = {(c, k): 0.0 for c in values for k in values}
    for unit in pairable:
        for i, c in enumerate(unit):
            for j, k in enumerate(unit):
                if i != j:
                    coincidences[c, k] += 1 / (len(unit) - 1)
    totals = {c: sum(coincidences[c, k] for k in values) for c in values}
    n = sum(totals.values())

    def delta(c, k) -> float:
        return float((c - k) ** 2) if interval else float(c != k)

    observed = sum(coincidences[c, k] * delta(c, k) for c in values for k in values) / n
    expected = sum(totals[c] * totals[k] * delta(c, k) for c in values for k in values) / (n * (n - 1))
    return None if expected == 0 else 1 - observed / expected


def labels_of(keys: list[int]) -> dict:
    return {d.key: d.values[key - 1] for d, key in zip(DIMENSIONS, keys)}


def expected_labels() -> dict[str, list[dict]]:
    found = {person: [labels_of(keys) for keys in rows] for person, rows in KEYS.items()}
    formality = next(d for d in DIMENSIONS if d.key == "formality")
    found["bob"][3]["formality"] = formality.values[FIXED_WITH_ARROWS - 1]
    return found


def press_labels(page, keys: list[int]) -> None:
    page.wait_for_function("() => document.activeElement && document.activeElement.name === 'problem_solving'")
    for key in keys:
        page.keyboard.press(str(key))


def save(page) -> None:
    with page.expect_navigation():
        page.keyboard.press("Enter")


def label_as(browser, server, evaluation: str, person: str, shots) -> None:
    context = new_context(browser)
    page = context.new_page()
    watch = PageWatch(page)
    open_page(page, server, f"/evaluations/{evaluation}")
    page.get_by_role("link", name="Label behaviour").click()
    page.get_by_label("Your name").fill(person)
    page.get_by_role("button", name="Label under this name").click()
    expect(page.locator("#you")).to_contain_text(f"You label as {person}.")
    page.get_by_role("link", name="Label the next conversation you have not labelled").click()
    for position, keys in enumerate(KEYS[person]):
        expect(page.locator("h1")).to_contain_text(f"Conversation {position + 1} of 4")
        if person == "bob" and position == 1:  # S skips to the next conversation, B comes back
            with page.expect_navigation():
                page.keyboard.press("s")
            expect(page.locator("h1")).to_contain_text("Conversation 3 of 4")
            with page.expect_navigation():
                page.keyboard.press("b")
            expect(page.locator("h1")).to_contain_text("Conversation 2 of 4")
        press_labels(page, keys)
        if person == "bob" and position == 3:  # arrows move between dimensions
            page.keyboard.press("ArrowUp")
            page.keyboard.press("ArrowUp")
            expect(page.locator("#dimension-formality")).to_contain_text("Formality")
            assert page.evaluate("document.activeElement.name") == "formality"
            page.keyboard.press(str(FIXED_WITH_ARROWS))
        if person == "alice" and position == 0:
            assert page.locator("#dimension-politeness input:checked").count() == 1
            assert axe_violations(page) == []
            check_widths(page, shots, "label")
            page.set_viewport_size({"width": 1280, "height": 900})
        save(page)
    expect(page.locator("#you")).to_contain_text("You have labelled every conversation of this slice.")
    assert watch.errors == [] and watch.foreign_requests() == []
    context.close()


def test_two_people_label_by_keyboard_and_the_overview_shows_their_agreement(server, evaluation, tmp_path, browser):
    for person in ("alice", "bob"):
        label_as(browser, server, evaluation, person, tmp_path)
    kept = server.call(f"/api/evaluations/{evaluation}/people-labels")["labels"]
    expected = expected_labels()
    assert {(r["person"], r["index"]): r["labels"] for r in kept} == {
        (person, i): labels for person, rows in expected.items() for i, labels in enumerate(rows)}

    page = new_context(browser).new_page()
    open_page(page, server, f"/evaluations/{evaluation}/labelling")
    progress = page.locator("#progress tbody tr")
    assert [row.inner_text().split("\t") for row in progress.all()] == [["alice", "4", "4"], ["bob", "4", "4"]]
    for dimension in DIMENSIONS:
        units = [[expected[p][i][dimension.key] for p in ("alice", "bob")] for i in range(4)]
        alpha = krippendorff(units, dimension.is_scale)
        cell = page.locator(f"tr[data-dimension={dimension.key}] td.alpha")
        shown = cell.get_attribute("data-value")
        if alpha is None:
            assert shown == "" and cell.inner_text().startswith("—"), dimension.key
        else:
            assert float(shown) == pytest.approx(alpha, abs=1e-12), dimension.key
            assert cell.inner_text().split(" ")[0] == f"{alpha:.2f}".replace("-", "−") or \
                cell.inner_text().split(" ")[0] == f"{alpha:.2f}", dimension.key
    assert axe_violations(page) == []
    check_widths(page, tmp_path, "labelling")

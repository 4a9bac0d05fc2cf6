"""Real-browser tests of the dashboard: Debian's Chromium driven by Playwright against a real server.

The server runs in a subprocess (`create_app` on temporary paths, then `app.run`) and judges with the
local JudgeServer, answering after a small delay so the progress bar can be seen moving. One server serves the
whole module and one browser the whole test process (tests/conftest.py); the tests share one browser context and
its page, reset after each test to what a new one holds (no cookies, no stored data; see the `context` fixture).

Screenshots for the docs are made by an explicit run, not by pytest:

    python -m tests.web.test_browser --screenshots        # writes docs/screenshots/*.png

(with a CJK font installed, e.g. Debian's fonts-noto-cjk, or the Chinese screenshot shows empty boxes)
"""
from __future__ import annotations

import base64
import csv
import io
import json
import os
import re
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from tests.browser_support import (
    CHROMIUM,
    SAMPLE,
    PageWatch,
    axe_violations,
    csp_violations,
    dashboard_server,
    launch_chromium,
    new_context,
    tab,
)
from tests.conftest import ROOT, jsonl, session_line
from tests.judge_server import JudgeServer
from tests.kinds.agentbench.test_agentbench_pipeline import OA_A, outputs_zip
from tests.kinds.conversation.test_conversation_annotation import items as conversation_items
from tests.web.test_upload_misfits import CONVERSATION, GROUNDTRUTH, OVERALL, SCREENSHOT, needs_shared_data

if not CHROMIUM.exists() and __name__ != "__main__":
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`; CI's .ci/run installs it)",
                allow_module_level=True)

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402  (after the skip)

SAMPLE_METHODS = ["Base", "CoT", "PersonaSteer"]
SAMPLE_SESSIONS = 8
SAMPLE_IDS = [json.loads(line)["session_id"] for line in SAMPLE.read_text("utf-8").splitlines()]
TIMEOUT_MS = 20_000
RUN_TIMEOUT_MS = 60_000  # an evaluation from start to the charts
CHARTS = ("#chart-al", "#chart-binary", "#chart-radar")
BOM = b"\xef\xbb\xbf"

XSS_1 = "<script>window.__xss=1</script>"
XSS_2 = '<img src=x onerror="window.__xss=2">'
XSS_3 = "</script><script>window.__xss=3</script>"
XSS_4 = '<svg onload="window.__xss=4;alert(4)">'
XSS_METHOD = '<img src=x onerror="window.__xss=5">'
XSS_FILENAME = '<img src=x onerror="window.__xss=6">.jsonl'


# -- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def judge():
    """The local OpenAI-compatible judge, a little slow so progress is visible.

    A module-scoped JudgeServer of its own (tests/judge_server.py's `judge_server` fixture is
    function-scoped, and one server process serves the whole module)."""
    with JudgeServer(latency_s=0.05) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory, judge):
    with dashboard_server(tmp_path_factory.mktemp("browser"), judge.url) as running:
        yield running


@pytest.fixture(scope="module")
def module_context(browser):
    """One context for the module's tests, and its page reused (see `context`)."""
    ctx = new_context(browser)
    ctx.set_default_timeout(TIMEOUT_MS)
    yield ctx
    ctx.close()


@pytest.fixture
def context(module_context, server):
    """The module's context, given back to the next test as a new one would be: no cookies, permissions or data
    stored for the server, no other page, its page blank at the default size and media. Its page is reused because
    a new page's renderer compiles Plotly afresh: a result page cost Chromium 2.5 s of CPU in a new page against
    1.0 s in one that had loaded it before (see browser_support.tab)."""
    yield module_context
    for extra in module_context.pages[1:]:
        extra.close()
    page = tab(module_context)
    page.goto("about:blank")
    page.unroute_all(behavior="ignoreErrors")
    page.emulate_media(media="null", color_scheme="null", reduced_motion="null")
    module_context.clear_cookies()
    module_context.clear_permissions()
    session = module_context.new_cdp_session(page)
    session.send("Storage.clearDataForOrigin", {"origin": server.url, "storageTypes": "all"})
    session.detach()


@pytest.fixture
def page(context):
    return tab(context)


@pytest.fixture
def watch(page):
    watch = PageWatch(page)
    yield watch
    watch.stop()


@pytest.fixture(scope="module")
def sample_evaluation(server, judge) -> str:
    """A finished evaluation of sample_data.jsonl, made through the API (fast: no judge delay)."""
    latency, judge.latency_s = judge.latency_s, 0.0
    try:
        body = server.evaluate(server.upload(SAMPLE.read_bytes(), "sample_data.jsonl"))
    finally:
        judge.latency_s = latency
    assert body["status"] == "done", body
    return body["id"]


# -- helpers -------------------------------------------------------------------------------------

def quick_evaluation(server, judge, filename: str) -> str:
    """A finished evaluation of sample_data.jsonl under another name, of its own (judged with no delay)."""
    latency, judge.latency_s = judge.latency_s, 0.0
    try:
        return server.evaluate(server.upload(SAMPLE.read_bytes(), filename))["id"]
    finally:
        judge.latency_s = latency


def open_page(page, server, path: str) -> None:
    """Go to a page of the server and fail with the server's log when it does not answer 200."""
    response = page.goto(server.url + path)
    assert response is not None and response.ok, \
        f"GET {path} answered {response and response.status}; server log:\n{server.log_tail()}"


def upload_file(page, server, path: Path | None = None, *, name: str | None = None,
                data: bytes | None = None) -> int:
    """Choose a file in the upload form's file input and submit it; returns the HTTP status of the POST."""
    open_page(page, server, "/")
    if path is not None:
        page.locator("#file").set_input_files(str(path))
    else:
        page.locator("#file").set_input_files({"name": name, "mimeType": "application/octet-stream", "buffer": data})
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/uploads")) as response:
        page.locator("form.upload-form button[type=submit]").click()
    return response.value.status


def overflowing_cards(page) -> list[str]:
    """The cards whose content sticks out of them (wide tables belong in a .scroll box, which scrolls instead; a
    chart's card clips the pixel or two of Plotly's drawing beyond its border)."""
    return page.evaluate("""() => [...document.querySelectorAll('.card')]
        .filter(card => getComputedStyle(card).overflowX !== 'hidden' && card.scrollWidth > card.clientWidth + 1)
        .map(card => (card.id || card.className) + ': ' + card.scrollWidth + ' > ' + card.clientWidth)""")


def check_widths(page, shots: Path, name: str) -> None:
    """At 1280, 1440 and 1920 px wide no card overflows; with SCREENSHOT_DIR set, a full-page screenshot of each is
    kept there (to look at them; each costs Chromium about 0.4 s of CPU, so none is taken otherwise)."""
    keep = os.environ.get("SCREENSHOT_DIR")
    draw_every_chart(page)
    for width in (1280, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(200)  # Plotly redraws on resize
        assert overflowing_cards(page) == [], (name, width)
        if keep:
            page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
    if keep:
        shutil.copytree(shots, keep, dirs_exist_ok=True)


def open_offline_report(page, watch, folder: Path):
    """Download the result page's offline report and open the file; its path, and a function giving the URLs the
    page has loaded since (data: and blob: left out)."""
    with page.expect_download() as info:
        page.get_by_role("link", name="HTML report (opens offline)").click()
    report = folder / "report.html"
    info.value.save_as(report)
    before = len(watch.requests)
    page.goto(report.as_uri())
    return report, lambda: [url for url in watch.requests[before:] if not url.startswith(("data:", "blob:"))]


def wait_for_chart(page, chart: str, timeout: float = TIMEOUT_MS) -> None:
    """Scroll a chart into view (the page draws those below the fold when they come into view) and wait until
    Plotly drew it."""
    page.locator(chart).first.scroll_into_view_if_needed(timeout=timeout)
    page.locator(f"{chart} .main-svg").first.wait_for(state="attached", timeout=timeout)


def wait_for_charts(page, timeout: float = RUN_TIMEOUT_MS) -> None:
    """Wait until the result page has reloaded itself as finished and Plotly drew every chart; when they do not come,
    fail with what the page and the API say of the evaluation (still running, finished without its charts...)."""
    try:
        for chart in CHARTS:
            wait_for_chart(page, chart, timeout)
    except PlaywrightTimeoutError:
        status = page.locator("#status").all_inner_texts()
        api = page.request.get(re.sub(r"/evaluations/", "/api/evaluations/", page.url, count=1))
        state = api.json() if api.ok else {"error": api.status}
        pytest.fail(f"no charts on {page.url} within {timeout / 1000:g} s; the page's status {status}, the API's "
                    f"{ {key: state.get(key) for key in ('status', 'progress', 'error')} }")


def draw_every_chart(page) -> None:
    """Have the page draw its charts below the fold too, as it does before printing (loading Plotly first if no
    chart had been drawn), and wait until every chart with a figure is drawn."""
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    page.wait_for_function("() => { const figures = document.getElementById('figures');"
                           " const data = figures ? JSON.parse(figures.textContent) : {};"
                           " return [...document.querySelectorAll('[data-figure]')]"
                           ".every(el => !data[el.dataset.figure] || el.querySelector('.main-svg')); }")


def fact(page, label: str):
    """The <dd> after the <dt> with this label in a facts list."""
    return page.locator("dl.facts dt", has_text=label).locator("xpath=following-sibling::dd[1]")


# -- tests ---------------------------------------------------------------------------------------

def test_upload_evaluate_shows_live_progress_then_charts(page, watch, server, judge):
    judge.latency_s = 0.05
    assert upload_file(page, server, SAMPLE) == 302

    expect(page).to_have_url(re.compile(r"/uploads/[\w-]+$"))
    expect(page.locator("h1")).to_have_text("sample_data.jsonl")
    expect(fact(page, "Sessions")).to_have_text(str(SAMPLE_SESSIONS))
    expect(fact(page, "Methods")).to_have_text(", ".join(SAMPLE_METHODS))

    # A model name of its own, so no judgment comes from the cache and the progress is real.
    page.locator("input[name=model]").fill("judge-browser")
    page.get_by_role("button", name="Evaluate").click()
    expect(page).to_have_url(re.compile(r"/evaluations/[\w-]+$"))

    bar = page.locator("#progress progress")
    expect(bar).to_be_visible()
    expect(page.locator("#status")).to_have_text(re.compile("queued|running"))
    # The page's script updates the bar while the judge works: some done, not all.
    page.wait_for_function("() => { const b = document.querySelector('#progress progress');"
                           " return b !== null && b.value > 0 && b.value < b.max; }")
    expect(page.locator("#progress-text")).to_contain_text(re.compile(r"\d+ of \d+ judgments"))

    wait_for_charts(page)
    expect(page.locator("#status")).to_have_text("done")
    expect(page.locator("#progress")).to_have_count(0)
    expect(page.locator("code", has_text="judge-browser").first).to_be_visible()
    expect(page.locator("table.metrics").first.locator("tbody tr")).to_have_count(len(SAMPLE_METHODS))
    for chart in CHARTS:
        expect(page.locator(f"{chart} .main-svg").first).to_be_visible()
    expect(page.locator("details.session")).to_have_count(SAMPLE_SESSIONS)

    assert watch.errors == [], watch.errors
    assert watch.foreign_requests() == [], watch.foreign_requests()
    assert any(url.startswith(server.url) and url.endswith("/vendor/plotly.min.js") for url in watch.requests), \
        "Plotly's script was not loaded from the app"
    assert judge.requests_by_mode["fine"] > 0


def test_language_switch_translates_page_and_charts_and_sticks(page, watch, context, server, sample_evaluation):
    open_page(page, server, f"/evaluations/{sample_evaluation}")
    wait_for_charts(page)
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("header nav")).to_contain_text("Upload")

    for code, upload, method, round_k in (("zh", "上传", "方法", "轮次"), ("ko", "업로드", "방법", "라운드")):
        page.locator(f"header .lang a[lang={code}]").click()
        for reloaded in (False, True):
            if reloaded:
                page.reload()
            wait_for_charts(page)
            expect(page).to_have_url(re.compile(rf"/evaluations/{sample_evaluation}$"))
            expect(page.locator("html")).to_have_attribute("lang", code)
            expect(page.locator("header nav a").first).to_have_text(upload)
            expect(page.locator("header nav")).not_to_contain_text("Upload")
            expect(page.locator(f"header .lang a[lang={code}]")).to_have_attribute("aria-current", "true")
            expect(page.locator("table.metrics").first.locator("thead th").first).to_have_text(method)
            expect(page.locator("#chart-al .main-svg .xtitle")).to_contain_text(round_k)
            expect(page.locator("#chart-binary .main-svg .xtitle")).to_contain_text(round_k)
        assert {c["name"]: c["value"] for c in context.cookies()}.get("lang") == code

    assert watch.errors == [], watch.errors


def test_download_csv_has_bom_header_and_a_row_per_method(page, server, sample_evaluation):
    open_page(page, server, f"/evaluations/{sample_evaluation}")
    with page.expect_download() as info:
        page.get_by_role("link", name="Download CSV").click()
    download = info.value
    assert download.suggested_filename == f"sample_data-{sample_evaluation}.csv"  # named by its file and id
    data = Path(download.path()).read_bytes()

    assert data.startswith(BOM), data[:20]
    rows = list(csv.reader(io.StringIO(data[len(BOM):].decode("utf-8"))))
    assert rows[0][:2] == ["method", "avg"], rows[0]
    assert [row[0] for row in rows[1:]] == SAMPLE_METHODS
    for row in rows[1:]:
        assert len(row) == len(rows[0])
        assert 0 <= float(row[1]) <= 100, row


def test_markup_in_uploaded_data_is_shown_as_text_never_run(page, watch, server, tmp_path):
    sessions = [{"session_id": XSS_1, "user_profile": XSS_2, "user_personality": XSS_4,
                 "rounds": [{"round": 1, "user_message": XSS_3,
                             "responses": {"Plain": f"{XSS_1} [[score=80]] [[keep=1]]",
                                           XSS_METHOD: f"{XSS_2} {XSS_3} [[score=60]] [[keep=0]]"}},
                            {"round": 2, "user_message": "and again " + XSS_2,
                             "responses": {"Plain": XSS_3, XSS_METHOD: XSS_1}}]},
                session_line("plain-session", 2, methods=("Plain", XSS_METHOD))]
    path = tmp_path / "xss.jsonl"
    path.write_bytes(jsonl(*sessions))
    assert upload_file(page, server, name=XSS_FILENAME, data=path.read_bytes()) == 302

    expect(page).to_have_url(re.compile(r"/uploads/[\w-]+$"))
    expect(page.locator("h1")).to_have_text(XSS_FILENAME)
    expect(page.locator("form.eval-form label.check", has_text=XSS_METHOD)).to_be_visible()
    assert page.evaluate("window.__xss") is None
    page.get_by_role("button", name="Evaluate").click()
    expect(page).to_have_url(re.compile(r"/evaluations/[\w-]+$"))
    wait_for_charts(page)
    expect(page.locator("#status")).to_have_text("done")

    session = page.locator("details.session", has=page.locator("summary code", has_text=XSS_1))
    session.locator("> summary").click()
    expect(session).to_have_attribute("open", "")
    expect(page.get_by_text(XSS_1, exact=False).first).to_be_visible()
    assert page.get_by_text(XSS_1, exact=False).count() >= 1
    for text in (XSS_2, XSS_3, XSS_4, XSS_METHOD):
        expect(session.get_by_text(text, exact=False).first).to_be_visible()
    # The method name is also a chart legend entry: drawn as text there too.
    expect(page.locator("#chart-al .legendtext", has_text=XSS_METHOD)).to_have_count(1)

    assert page.evaluate("window.__xss") is None
    assert watch.dialogs == []
    assert watch.errors == [], watch.errors
    # An <img src=x> that was parsed as markup would have requested .../x.
    assert not [url for url in watch.requests if url.rstrip("/").endswith("/x")], watch.requests


def test_invalid_upload_lists_problems_inline_with_line_numbers(page, watch, server):
    data = jsonl(session_line("same-id"), session_line("same-id"))
    assert upload_file(page, server, name="dupes.jsonl", data=data) == 400

    problems = page.locator("#problems")
    expect(problems).to_be_visible()
    expect(problems.locator("h2")).to_contain_text("dupes.jsonl")
    rows = problems.locator("tbody tr")
    expect(rows).to_have_count(1)
    cells = rows.first.locator("td")
    expect(cells.nth(0)).to_have_text("2")
    expect(cells.nth(1)).to_have_text("session_id")
    expect(cells.nth(2)).to_contain_text("line 1")
    # Still on the upload form, ready for the fixed file.
    expect(page.locator("#file")).to_be_visible()
    # The browser logs the 400 of the rejected upload itself; nothing else may go wrong.
    expected = [e for e in watch.console_errors if "status of 400" in e and "/uploads" in e]
    assert len(expected) == 1 and watch.console_errors == expected, watch.console_errors
    assert watch.page_errors == [], watch.page_errors


def drop_file(page, name: str, data: bytes) -> None:
    """Drop a file with these bytes on the upload form's drop zone, as a person dragging it from their desktop."""
    transfer = page.evaluate_handle("""([name, encoded]) => {
        const bytes = Uint8Array.from(atob(encoded), c => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], name));
        return transfer;
    }""", [name, base64.b64encode(data).decode()])
    page.dispatch_event("#dropzone", "drop", {"dataTransfer": transfer})


def read_later(path: Path):
    """A function giving a file's bytes, read when the test runs (the shared data's tests skip when it is absent)."""
    return lambda: path.read_bytes()


@pytest.mark.parametrize("name,data,kind,message", [
    pytest.param("chart.jsonl", read_later(SCREENSHOT), "",
                 "chart.jsonl is not a text file: it holds binary data (an image, an archive, a program, ...), and no "
                 "kind reads it. The files each kind takes: Dialogue (persona alignment): .jsonl, one session per "
                 "line; ", id="png"),
    pytest.param("package.json", read_later(ROOT / "package.json"), "",
                 "package.json is not a file of any kind this dashboard reads: nothing in it looks like one.",
                 id="package.json"),
    pytest.param("gyration_radius.csv", read_later(GROUNDTRUTH / "gyration_radius.csv"), "",
                 "gyration_radius.csv looks like a file of the kind Mobility (DailyMobility). It holds one of the four "
                 "arrays of a DailyMobility groundtruth folder (gyration_radius)",
                 id="mobility-array", marks=needs_shared_data),
    pytest.param("0.json", read_later(CONVERSATION), "dialogue",
                 "0.json is not a file of the kind Dialogue (persona alignment): it looks like one of the kind "
                 "Conversations (Human-vs-Agent). Upload it again with the kind Conversations (Human-vs-Agent) "
                 "(conversation), or without choosing a kind: it is recognised.",
                 id="conversation-as-dialogue", marks=needs_shared_data),
    pytest.param("overall.json", read_later(OVERALL), "mobility",
                 "overall.json is not a file of the kind Mobility (DailyMobility): it looks like one of the kind "
                 "AgentBench outputs.", id="overall-as-mobility", marks=needs_shared_data),
])
def test_a_dropped_file_of_the_wrong_sort_gets_one_message_that_fits_it(page, watch, server, name, data, kind,
                                                                         message):
    open_page(page, server, "/")
    drop_file(page, name, data())
    expect(page.locator("#chosen")).to_contain_text(name)
    if kind:
        page.locator("select[name=kind]").select_option(kind)
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/uploads")) as response:
        page.locator("form.upload-form button[type=submit]").click()
    assert response.value.status == 400

    problems = page.locator("#problems")
    expect(problems.locator("h2")).to_contain_text(name)
    expect(problems).to_contain_text("1 problem was found.")
    rows = problems.locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("td").nth(0)).to_have_text("—")
    expect(rows.first.locator("td").nth(2)).to_contain_text(message)
    expect(page.locator("select[name=kind]")).to_have_value(kind)  # the form keeps the kind chosen
    expected = [e for e in watch.console_errors if "status of 400" in e and "/uploads" in e]
    assert len(expected) == 1 and watch.console_errors == expected, watch.console_errors
    assert watch.page_errors == [], watch.page_errors


def test_settings_test_connection_shows_the_judges_answer(page, watch, server, judge):
    before = judge.requests_by_mode["other"]
    open_page(page, server, "/settings")
    expect(page.locator("#test-result")).to_have_count(0)
    page.get_by_role("button", name="Test connection").click()

    result = page.locator("#test-result")
    expect(result).to_be_visible()
    expect(result).to_have_class(re.compile(r"\bok-notice\b"))
    expect(result).to_contain_text("The judge answered")
    expect(result.locator("code")).to_have_text("OK")
    assert judge.requests_by_mode["other"] == before + 1
    assert "sk-browser-test" not in page.content()
    assert watch.errors == [], watch.errors


def test_rubrics_are_added_viewed_downloaded_picked_and_deleted_in_the_browser(page, watch, server, tmp_path):
    from kinds import rubrics
    from tests.kinds.dialogue.test_rubric_pages import lab

    open_page(page, server, "/settings")
    page.get_by_role("link", name="Rubrics: the judging protocols (add, view, download, delete)").click()
    expect(page).to_have_url(re.compile(r"/settings/rubrics$"))
    listed = page.locator("#rubrics table.grid tbody tr")
    expect(listed).to_have_count(2)
    form = page.locator("#add-rubric")
    broken = lab(**{"scale: {min: 1, max: 7}": "scale: {min: 7, max: 1}"})
    form.locator("input[type=file]").set_input_files({"name": "lab.yaml", "mimeType": "application/yaml",
                                                      "buffer": broken})
    with page.expect_navigation():
        form.get_by_role("button", name="Add").click()
    problems = page.locator("#rubric-problems tbody tr")
    expect(problems).to_have_count(4)  # the scale, and its three levels now off it
    expect(problems.first).to_contain_text("12")
    expect(problems.first).to_contain_text("dimensions[0].scale")
    expect(problems.first).to_contain_text("The scale's min (7) must be below its max (1).")
    expect(listed).to_have_count(2)  # nothing was stored

    form.locator("input[type=file]").set_input_files({"name": "lab.yaml", "mimeType": "application/yaml",
                                                      "buffer": lab()})
    with page.expect_navigation():
        form.get_by_role("button", name="Add").click()
    added = page.locator("#rubrics tr.highlight")
    expect(added).to_contain_text("Persona consistency (lab)")
    expect(added).to_contain_text("Fits the profile 1–7")
    expect(listed).to_have_count(3)
    assert axe_violations(page) == []

    added.get_by_role("link", name="Persona consistency (lab)").click()
    expect(page.locator("#dimensions tbody tr")).to_have_count(3)
    rubric = rubrics.read(lab())
    expect(page.locator("dl.facts").first).to_contain_text(rubric.headline_text())
    assert axe_violations(page) == []
    with page.expect_download() as info:
        page.get_by_role("link", name="Download as YAML").click()
    info.value.save_as(tmp_path / "lab-copy.yaml")
    assert rubrics.read((tmp_path / "lab-copy.yaml").read_bytes()).sha256 == rubric.sha256

    upload_id = server.upload(jsonl(session_line("r1", 2, ("A", "B"))), "rubric.jsonl")
    open_page(page, server, f"/uploads/{upload_id}")
    picker = page.locator("#rubric-picker")
    expect(picker.locator("input[type=radio]")).to_have_count(3)
    expect(picker.locator("input[value=personasteer]")).to_be_checked()
    assert axe_violations(page) == []
    picker.locator("label", has_text="Persona consistency (lab)").click()
    expect(picker.locator(f"input[value='{rubric.sha256}']")).to_be_checked()
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/evaluate")) as started:
        page.get_by_role("button", name="Evaluate").click()
    assert started.value.status == 302 and "rubric=" + rubric.sha256 in (started.value.request.post_data or "")
    evaluation_id = started.value.headers["location"].rsplit("/", 1)[1]
    assert server.call(f"/api/evaluations/{evaluation_id}")["id"] == evaluation_id
    assert watch.page_errors == [], watch.page_errors

    open_page(page, server, "/settings/rubrics")
    watch.accept_dialogs = True
    with page.expect_navigation():
        page.locator("#rubrics tr", has_text="Persona consistency (lab)").get_by_role("button", name="Delete").click()
    assert "Delete the rubric lab-consistency 1?" in watch.dialogs[-1]
    expect(listed).to_have_count(2)


# -- screenshots for the docs: python -m tests.web.test_browser --screenshots ---------------------------

def test_share_link_opens_read_only_in_a_fresh_browser(page, watch, browser, server, sample_evaluation):
    open_page(page, server, f"/evaluations/{sample_evaluation}")
    page.get_by_role("button", name="Create share link").click()
    link = page.locator("#share input[readonly]").first.input_value()
    assert re.fullmatch(re.escape(server.url) + r"/share/[\w-]{32,}", link), link

    stranger = new_context(browser)  # no cookies, no history: only the link
    try:
        shared = stranger.new_page()
        shared_watch = PageWatch(shared)
        response = shared.goto(link)
        assert response is not None and response.ok and response.headers["x-robots-tag"] == "noindex, nofollow"
        wait_for_charts(shared)
        assert shared.locator("form").count() == 0
        assert shared.locator("header nav a").count() == 0
        assert shared.locator(".method-picker a").first.get_attribute("href").startswith("/share/")
        assert shared.locator("a[href*='/evaluations/'], a[href*='/settings'], a[href*='/api/']").count() == 0
        session = shared.locator("details.session").first
        session.locator("> summary").click()
        expect(session.locator(".reply").first).to_be_visible()  # the detail loads under the share link
        assert shared_watch.errors == [], shared_watch.errors
    finally:
        stranger.close()

    page.get_by_role("button", name="Revoke").first.click()  # asks first; "Cancel" keeps the link
    assert len(watch.dialogs) == 1 and "Revoke this share link?" in watch.dialogs[0]
    kept = new_context(browser)
    try:
        assert kept.new_page().goto(link).status == 200
    finally:
        kept.close()
    watch.accept_dialogs = True
    with page.expect_navigation():
        page.get_by_role("button", name="Revoke").first.click()
    revoked = new_context(browser)
    try:
        assert revoked.new_page().goto(link).status == 404
    finally:
        revoked.close()
    assert watch.errors == [], watch.errors


def test_method_picker_hides_a_method_from_table_and_charts(page, watch, server, sample_evaluation):
    open_page(page, server, f"/evaluations/{sample_evaluation}")
    page.locator(".method-picker a.chip", has_text="CoT").click()
    expect(page).to_have_url(re.compile(r"methods=Base%2CPersonaSteer$|methods=Base,PersonaSteer$"))
    wait_for_charts(page)
    expect(page.locator("#chart-al .legendtext")).to_have_text(["Base", "PersonaSteer"])
    rows = page.locator("table.metrics").first.locator("tbody th")
    expect(rows).to_have_text(["Base", "PersonaSteer"])
    page.reload()  # the choice is in the address: a reload or a shared URL shows the same view
    expect(page.locator("#chart-al .legendtext")).to_have_text(["Base", "PersonaSteer"])
    assert watch.errors == [], watch.errors


def test_compare_view_draws_overlaid_curves(page, watch, server, judge, sample_evaluation, tmp_path):
    latency, judge.latency_s = judge.latency_s, 0.0
    try:
        other = server.evaluate(server.upload(SAMPLE.read_bytes(), "sample_data.jsonl"),
                                judge={"model": "judge-other"})
    finally:
        judge.latency_s = latency
    assert other["status"] == "done", other
    open_page(page, server, "/evaluations")
    page.locator(f"input[name=ids][value='{sample_evaluation}']").check()
    page.locator(f"input[name=ids][value='{other['id']}']").check()
    page.get_by_role("button", name="Compare selected").click()
    expect(page).to_have_url(re.compile(r"/compare\?"))
    page.locator(".main-svg").first.wait_for(state="attached")
    # two runs x three methods, one line each, in the AL(k) chart
    assert page.locator(".main-svg").count() >= 2
    assert page.locator(".legendtext").count() >= 6
    # the picker lists the newest first, so the address names the new run first; the baseline is still the old one
    assert page.url.index(other["id"]) < page.url.index(sample_evaluation)
    expect(page.locator("#paired-baseline")).to_have_value(sample_evaluation)
    baseline_label = page.locator("#paired-baseline option:checked").inner_text()
    expect(page.locator("#differences .hint")).to_contain_text(f"minus the baseline, {baseline_label}")
    check_widths(page, tmp_path, "compare")
    assert watch.errors == [], watch.errors


def test_compare_page_paired_differences_switch_baseline_and_pass_axe(page, watch, server, judge, sample_evaluation,
                                                                     tmp_path):
    other = quick_evaluation(server, judge, "again.jsonl")
    open_page(page, server, f"/compare?ids={sample_evaluation}&ids={other}")
    section = page.locator("#paired")
    expect(section.get_by_role("heading", name="Paired differences")).to_be_visible()
    # the same file judged twice by the same judge: three methods x seven metrics, every difference 0
    expect(section.locator("tbody tr")).to_have_count(21)
    page.locator("#paired-baseline").select_option(other)
    page.locator("#paired-correction").select_option("bh")
    section.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(rf"baseline={other}.*correction=bh"))
    expect(page.locator("#paired-baseline")).to_have_value(other)
    href = section.get_by_role("link", name="paired.csv").get_attribute("href")
    assert f"baseline={other}" in href
    assert axe_violations(page) == []
    check_widths(page, tmp_path, "compare-paired")
    assert watch.errors == [], watch.errors


def mobility_evaluation(server) -> str | None:
    """A finished DailyMobility evaluation: a generated set made from the real reference (None without it)."""
    import numpy as np
    groundtruth = ROOT.parent / "shared" / "data" / "dailymobility" / "groundtruth"
    if not groundtruth.exists():
        return None
    boundary = "refzip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in groundtruth.glob("*.npy"):
            archive.write(path, f"groundtruth/{path.name}")
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nbeijing\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"groundtruth.zip\"\r\n"
            "Content-Type: application/zip\r\n\r\n").encode() + buffer.getvalue() + f"\r\n--{boundary}--\r\n".encode()
    server.call("/api/references", body, {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    rng = np.random.default_rng(7)
    pick = rng.integers(0, 100, 300)
    generated = {
        "gyration_radius": (np.load(groundtruth / "gyration_radius.npy")[pick] * rng.uniform(0.6, 1.8, 300)).tolist(),
        "daily_location_numbers": (np.load(groundtruth / "daily_location_numbers.npy")[pick]
                                   + rng.integers(0, 2, 300)).tolist(),
        "intention_sequences": np.roll(np.load(groundtruth / "daily_intentions_2d.npy")[pick], 2, axis=1).tolist(),
        "intention_proportions": rng.dirichlet(np.ones(7) * 2, size=300).tolist()}
    upload_id = server.upload(json.dumps(generated).encode(), "my_agent.json")
    created = server.call("/api/evaluations", json.dumps({"upload_id": upload_id, "reference": "beijing"}).encode(),
                          {"Content-Type": "application/json"})
    return created["id"]


def make_screenshots(out: Path) -> list[Path]:
    """Walk through the dashboard once and save full-page PNGs of its main pages."""
    import tempfile

    out.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []

    def shot(page, name: str, full_page: bool = True) -> None:
        if full_page:
            draw_every_chart(page)
        page.wait_for_timeout(300)  # let layout and fonts settle
        path = out / name
        page.screenshot(path=str(path), full_page=full_page)
        shots.append(path)
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size // 1024} KB", file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp, JudgeServer(latency_s=0.05) as judge, \
            dashboard_server(Path(tmp), judge.url) as server, sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        ctx = new_context(chromium)
        ctx.set_default_timeout(TIMEOUT_MS)
        page = ctx.new_page()
        watch = PageWatch(page)

        open_page(page, server, "/")
        shot(page, "upload.png")

        upload_file(page, server, SAMPLE)
        page.wait_for_url(re.compile(r"/uploads/[\w-]+$"))
        shot(page, "upload-detail.png")

        judge.latency_s = 0.3
        page.get_by_role("button", name="Evaluate").click()
        page.wait_for_url(re.compile(r"/evaluations/[\w-]+$"))
        page.wait_for_function("() => { const b = document.querySelector('#progress progress');"
                               " return b !== null && b.value >= 0.3 * b.max; }", timeout=RUN_TIMEOUT_MS)
        page.wait_for_function("() => document.getElementById('progress-speed').textContent.trim() !== ''")
        shot(page, "progress.png")
        judge.latency_s = 0.0

        wait_for_charts(page)
        result_url = page.url
        shot(page, "result.png")

        page.get_by_role("button", name="Create share link").click()
        link = page.locator("#share input[readonly]").first.input_value()
        stranger = new_context(chromium)
        shared = stranger.new_page()
        shared.goto(link)
        wait_for_charts(shared)
        shot(shared, "share.png")
        stranger.close()

        judge.latency_s = 0.0
        other = server.evaluate(server.upload(SAMPLE.read_bytes(), "sample_data.jsonl"), judge={"model": "judge-b"})
        first = result_url.rsplit("/", 1)[-1]
        open_page(page, server, f"/compare?ids={first},{other['id']}")
        page.locator(".main-svg").first.wait_for(state="attached")
        shot(page, "compare.png")
        open_page(page, server, f"/evaluations/{first}/view/grid?sort=spread")
        shot(page, "grid.png", full_page=False)  # the first rows of the sample grid
        page.goto(result_url)
        wait_for_charts(page)

        page.locator("header .lang a[lang=zh]").click()
        wait_for_charts(page)
        shot(page, "result-zh.png")

        page.locator("header .lang a[lang=en]").click()
        mobility_id = mobility_evaluation(server)
        if mobility_id:
            open_page(page, server, f"/evaluations/{mobility_id}")
            wait_for_chart(page, "[data-figure=slots]")
            shot(page, "mobility.png")

        open_page(page, server, "/settings")
        page.get_by_role("button", name="Test connection").click()
        page.locator("#test-result").wait_for()
        shot(page, "settings.png")

        from tests.simulate.support import Recorder
        from tests.web.test_simulation_browser import run_a_simulation

        Recorder(judge)  # the judge server plays the simulated user and the methods
        run_a_simulation(page, server, out)  # simulation-run.png and simulation-status.png
        shots += [out / "simulation-run.png", out / "simulation-status.png"]

        chromium.close()
        if watch.errors:
            raise SystemExit("errors in the pages: " + json.dumps(watch.errors, indent=1))
    return shots


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Browser screenshots of the dashboard for the docs.")
    parser.add_argument("--screenshots", action="store_true", help="write full-page PNGs of the main pages")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="folder for the PNGs")
    args = parser.parse_args(argv)
    if not args.screenshots:
        parser.print_help()
        return 2
    if not CHROMIUM.exists():
        print(f"Chromium not found at {CHROMIUM}", file=sys.stderr)
        return 1
    make_screenshots(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def test_conversation_upload_with_llm_annotation(page, watch, server, judge, tmp_path):
    items = conversation_items()
    wide = " | ".join(f"column {k}" for k in range(30))
    items[2]["history"][1]["content"] = ("**Day 1**: West Lake\n\n### Where to eat\n\n- Lou Wai Lou\n\n"
                                         f"| {wide} |\n|{'---|' * 30}\n| {' | '.join('x' * 30)} |\n\n"
                                         f"```\n{'long_code_line_' * 40}\n```\n[[annotate=2,2,2,0]]")
    items[2]["history"][0]["content"] = '{"ask": "Plan a weekend in Hangzhou", "days": 2}'
    assert upload_file(page, server, name="simulator.json", data=json.dumps(items).encode()) == 302
    expect(page.locator("h1")).to_have_text("simulator.json")
    page.locator("input[name=annotate]").check()
    page.locator("input[name=model]").fill("judge-annotate-browser")
    page.get_by_role("button", name="Evaluate").click()
    expect(page).to_have_url(re.compile(r"/evaluations/[\w-]+$"))
    expect(page.locator("#annotation h3", has_text="Agreement with people")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#status")).to_have_text("done")
    for chart in ("turns", "intents"):
        wait_for_chart(page, f"[data-figure={chart}]")
        expect(page.locator(f"[data-figure={chart}] .main-svg").first).to_be_visible()
    row = page.locator("#annotation table").nth(1).locator("tbody tr", has_text="Practical Utility")
    expect(row.locator("td").nth(1)).to_have_text("2")  # two real users answered the questionnaire
    expect(row.locator("td").nth(2)).to_have_text("100.0")  # their Availability equals the judge's utility
    check_widths(page, tmp_path, "conversation")
    page.get_by_role("link", name=re.compile("^Read the conversations")).click()
    # the table: sort by the judge's Diversity, highest first, then only the simulated users
    rows = page.locator("#conversations-table tbody tr")
    expect(rows).to_have_count(4)
    page.locator("#conversations-table thead").get_by_role("link", name="Diversity", exact=True).click()
    expect(page).to_have_url(re.compile(r"sort=diversity"))
    page.locator("#conversations-table thead").get_by_role("link", name="Diversity", exact=True).click()
    expect(page).to_have_url(re.compile(r"sort=diversity&desc=1"))
    expect(page.locator("#conversations-table th[aria-sort=descending]")).to_contain_text("Diversity")
    expect(rows.first.locator("th")).to_have_text("simulator.json[2]")  # diversity 2
    assert page.locator("#conversations-table thead").bounding_box()["height"] < 80  # one line of headings
    page.get_by_label("Sort by").focus()  # every sort is one menu, chosen with the keyboard
    page.keyboard.press("End")  # its last choice
    assert page.get_by_label("Sort by").input_value() == page.evaluate(
        "() => [...document.querySelectorAll('#sort-menu option')].pop().value")
    page.get_by_label("Sort by").select_option("diversity")
    page.get_by_label("Source").select_option("agent")
    page.get_by_role("button", name="Show").click()
    expect(rows).to_have_count(2)
    expect(page).to_have_url(re.compile(r"sort=diversity&desc=1"))  # filtering keeps the order
    check_widths(page, tmp_path, "conversations")
    # a transcript: the reply as Markdown (its wide table scrolls in its own region), the JSON question pretty
    rows.first.get_by_role("link").click()
    expect(page.locator("#annotation h2")).to_have_text("The judge's annotation")
    expect(page.locator(".transcript .rich strong", has_text="Day 1")).to_be_visible()
    expect(page.locator(".transcript .rich pre.json")).to_contain_text('"days": 2')
    expect(page.locator(".transcript .md-table[tabindex='0'][role=region]")).to_be_visible()
    check_widths(page, tmp_path, "transcript")
    page.get_by_role("link", name="Show the replies as written (raw text)").click()
    expect(page).to_have_url(re.compile(r"raw=1#transcript$"))
    expect(page.locator(".transcript pre.raw-text").nth(1)).to_contain_text("**Day 1**: West Lake")
    expect(page.locator(".transcript .rich")).to_have_count(0)
    check_widths(page, tmp_path, "transcript-raw")
    assert watch.errors == [], watch.errors
    assert judge.requests_by_mode["annotate"] >= 4


def test_agentbench_outputs_zip_charts_and_samples(page, watch, server, tmp_path):
    assert upload_file(page, server, name="outputs.zip", data=outputs_zip()) == 302
    expect(page.locator("p.ok")).to_contain_text("AgentBench")
    page.get_by_role("button", name="Evaluate").click()
    expect(page).to_have_url(re.compile(r"/evaluations/[\w-]+$"))
    for chart in ("status", "radar"):
        wait_for_chart(page, f"[data-figure={chart}]", RUN_TIMEOUT_MS)
    expect(page.locator("#scores tbody tr").first).to_contain_text(f"{OA_A:.2f}")
    page.locator("[data-figure=radar]").screenshot(path=str(tmp_path / "agentbench-radar.png"))
    check_widths(page, tmp_path, "agentbench")
    result_url = page.url
    # Its offline report draws the same charts from the file alone.
    report, loaded = open_offline_report(page, watch, tmp_path)
    for chart in ("status", "radar"):
        wait_for_chart(page, f"[data-figure={chart}]", RUN_TIMEOUT_MS)
    expect(page.locator("#scores tbody tr").first).to_contain_text(f"{OA_A:.2f}")
    assert loaded() == [report.as_uri()], loaded()  # nothing but the file itself
    # A static bundle of it from the list of evaluations.
    open_page(page, server, "/evaluations")
    page.locator(f"input[name=ids][value='{result_url.rsplit('/', 1)[-1]}']").check()
    with page.expect_download() as info:
        page.get_by_role("button", name="Download a static bundle").click()
    bundle = zipfile.ZipFile(info.value.path())
    assert "bundle/index.html" in bundle.namelist() and len(bundle.namelist()) == 3
    page.goto(result_url)
    page.get_by_role("link", name="2 samples").click()
    page.get_by_text("Conversation history").last.click()
    # the history rendered (as Markdown): the script is text on the page
    expect(page.locator(".rich p", has_text="<script>alert('x')</script>")).to_be_visible()
    assert watch.errors == [], watch.errors


def wait_for_csp_violations(page, count: int, timeout_ms: int = 5_000) -> list[str]:
    """The CSP violations recorded so far, once there are at least `count` (or the timeout passed)."""
    for _ in range(timeout_ms // 100):
        if len(csp_violations) >= count:
            break
        page.wait_for_timeout(100)
    return csp_violations[:]


def test_the_policy_blocks_inline_script_and_eval_and_the_guard_sees_it(page, server, sample_evaluation):
    response = page.goto(f"{server.url}/evaluations/{sample_evaluation}")
    assert "script-src 'self';" in response.headers["content-security-policy"]
    wait_for_charts(page)  # Plotly drew every chart under the policy, with no violation (checked by conftest)
    with page.expect_navigation(wait_until="load"):  # the page's scripts, its focus handler among them, have run
        page.get_by_role("button", name="Create share link").click()
    link = page.locator("#share input[readonly]").first
    link.focus()  # the share panel's field selects its address (static/js/result.js, no inline handler)
    assert page.evaluate("() => { const i = document.activeElement; return i.selectionEnd - i.selectionStart; }") \
        == len(link.input_value())
    assert csp_violations == [], csp_violations
    # (eval straight in page.evaluate would not count: DevTools' own evaluation is exempt, a later task is not)
    page.evaluate("() => { const s = document.createElement('script'); s.textContent = 'window.__inline = 1';"
                  " document.body.append(s); setTimeout(() => { try { eval('window.__eval = 1'); } catch (e) {} }); }")
    seen = wait_for_csp_violations(page, 2)
    assert page.evaluate("[window.__inline, window.__eval]") == [None, None]
    assert any("script-src" in v and "inline" in v for v in seen), seen
    assert any("unsafe-eval" in v or "eval" in v.lower() for v in seen), seen
    csp_violations.clear()  # seen on purpose: this test must not fail for it


def test_offline_report_draws_its_charts_under_its_own_hash_policy(page, watch, server, sample_evaluation, tmp_path):
    open_page(page, server, f"/evaluations/{sample_evaluation}")
    report, loaded = open_offline_report(page, watch, tmp_path)
    wait_for_charts(page)
    expect(page.locator("#chart-al .legendtext")).to_have_count(len(SAMPLE_METHODS))
    expect(page.locator("#chart-length .legendtext")).to_have_count(len(SAMPLE_METHODS))  # the length bias scatter
    assert page.locator("meta[http-equiv=Content-Security-Policy]").get_attribute("content").count("'sha256-") == 2
    assert watch.errors == [], watch.errors
    assert loaded() == [report.as_uri()], loaded()  # nothing but the file itself


def test_judge_panel_with_samples_and_pairwise_mode_shows_agreement_consistency_and_win_rates(page, watch, server, judge,
                                                                                               tmp_path):
    judge.models = {"judge-b": (8, True)}
    latency, judge.latency_s = judge.latency_s, 0.0
    try:
        upload_id = server.upload(SAMPLE.read_bytes(), "sample_data.jsonl")
        created = server.call("/api/evaluations", json.dumps({
            "upload_id": upload_id, "judge": {"temperature": 0.7}, "samples": 2, "pairwise": True,
            "judges": [{"model": "judge-test"}, {"model": "judge-b"}]}).encode(), {"Content-Type": "application/json"})
        open_page(page, server, f"/evaluations/{created['id']}")
        wait_for_charts(page)
    finally:
        judge.latency_s = latency
        judge.models = {}
    # People's ratings of a few replies, attached through the page's form.
    ratings = "session_id,round,method,total,binary\n" + "".join(
        f"{sid},1,{m},{40 + 4 * i},{i % 2}\n" for i, (sid, m) in enumerate(
            (sid, m) for sid in SAMPLE_IDS[:4] for m in SAMPLE_METHODS))
    page.locator("#human input[type=file]").set_input_files(
        {"name": "people.csv", "mimeType": "text/csv", "buffer": ratings.encode()})
    page.locator("#human").get_by_role("button", name="Attach").click()
    # a rescore job takes them into the figures; the page reloads once it is over
    expect(page.locator("#human")).to_contain_text("12 ratings from people.csv are attached", timeout=60_000)
    expect(page.locator("#human table").first).to_be_visible(timeout=60_000)
    wait_for_charts(page)
    wait_for_chart(page, "#chart-agreement")
    wait_for_chart(page, "#chart-winrate")
    assert {"heatmap", "bar"} <= figure_trace_types(page) <= PLOTLY_TRACES  # the agreement, the win rates' error bars
    expect(page.locator("#chart-winrate .legendtext")).to_have_count(3)  # win, tie, loss
    expect(page.locator("#judges thead")).to_contain_text("judge-b")
    expect(page.locator("#agreement")).to_contain_text("Krippendorff")
    expect(page.locator("#consistency tbody tr")).to_have_count(2 * len(SAMPLE_METHODS))
    draw_every_chart(page)
    for width in (1280, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.locator("#judges").screenshot(path=str(tmp_path / f"panel-{width}.png"))
        page.locator("#agreement").screenshot(path=str(tmp_path / f"agreement-{width}.png"))
        page.locator("#pairwise").screenshot(path=str(tmp_path / f"pairwise-{width}.png"))
        page.locator("#human").screenshot(path=str(tmp_path / f"human-{width}.png"))
        # Nothing of the panel's cards overflows its card.
        for card in ("#judges", "#agreement", "#consistency", "#pairwise", "#human"):
            assert page.evaluate("(card) => { const c = document.querySelector(card); "
                                 "return c.scrollWidth <= c.clientWidth + 1; }", card), (card, width)
    assert watch.errors == [], watch.errors
    print(f"screenshots in {tmp_path}")


def test_a_file_over_the_limit_goes_up_in_chunks_and_resumes_after_an_interruption(browser, judge, tmp_path):
    from tests.browser_support import DashboardServer

    small = DashboardServer(tmp_path / "small-limit", judge.url)
    small.config["MAX_CONTENT_LENGTH"] = 40_000  # so chunks of 20,000 bytes
    small.start()
    context = new_context(browser)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    watch = PageWatch(page)
    try:
        data = jsonl(*(session_line(f"c{i}", 4) for i in range(200)))
        assert len(data) > 100_000
        offsets = []
        page.on("request", lambda r: offsets.append(int(r.url.rsplit("offset=", 1)[1])) if r.method == "PUT" else None)
        dropped = []

        def drop_the_third_chunk(route):
            if len(dropped) == 0 and route.request.url.endswith("offset=40000"):
                dropped.append(route.request.url)
                route.abort()
            else:
                route.continue_()

        page.route("**/api/uploads/chunked/*", drop_the_third_chunk)
        file = tmp_path / "big.jsonl"  # a file on disk, so that choosing it again gives the same file (and mtime)
        file.write_bytes(data)
        open_page(page, small, "/")
        page.locator("#file").set_input_files(str(file))
        page.locator("form.upload-form button[type=submit]").click()
        expect(page.locator("#client-error")).to_contain_text(f"The upload stopped at {100 * 40_000 // len(data)}%")
        expect(page.locator("#upload-progress")).to_be_visible()
        page.screenshot(path=str(tmp_path / "interrupted.png"))
        before = len(offsets)
        page.locator("#file").set_input_files(str(file))  # the same file again: it goes on from byte 40,000
        page.locator("form.upload-form button[type=submit]").click()
        page.wait_for_url("**/uploads/*")
        assert offsets[:3] == [0, 20_000, 40_000] and offsets[before] == 40_000, offsets
        assert sorted(set(offsets)) == list(range(0, len(data), 20_000))
        expect(page.locator("h1")).to_contain_text("big.jsonl")
        # The one console error is the chunk this test dropped.
        assert [e for e in watch.errors if not ("ERR_FAILED" in e and dropped[0] in e)] == [], watch.errors
    finally:
        context.close()
        small.stop()


def test_rename_tag_filter_and_delete_an_evaluation(page, watch, server, judge, tmp_path):
    evaluation_id = quick_evaluation(server, judge, "manage.jsonl")
    open_page(page, server, f"/evaluations/{evaluation_id}")
    panel = page.locator("#manage")
    panel.get_by_label("Title").fill("Sample <i>run</i>")
    panel.get_by_label("Tags (separated by commas)").fill("pilot, 2026")
    with page.expect_navigation():
        panel.get_by_role("button", name="Save").click()
    expect(page.locator("h1")).to_have_text("Sample <i>run</i>")  # shown as text
    page.locator("#manage").screenshot(path=str(tmp_path / "manage-panel.png"))

    open_page(page, server, "/evaluations")
    page.locator("a.tag", has_text="pilot").first.click()
    expect(page).to_have_url(re.compile(r"/evaluations\?tag=pilot$"))
    rows = page.locator("table.evaluations tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Dialogue (persona alignment)")
    expect(rows.first).to_contain_text("Average AL")
    draw_every_chart(page)
    for width in (1280, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        page.screenshot(path=str(tmp_path / f"evaluations-{width}.png"), full_page=True)
    if os.environ.get("SCREENSHOT_DIR"):  # to look at them
        shutil.copytree(tmp_path, os.environ["SCREENSHOT_DIR"], dirs_exist_ok=True)

    open_page(page, server, f"/evaluations/{evaluation_id}")
    page.get_by_role("button", name="Delete this evaluation").click()  # asks; "Cancel" keeps it
    assert "Delete this evaluation with its judgments" in watch.dialogs[-1]
    expect(page).to_have_url(re.compile(rf"/evaluations/{evaluation_id}$"))
    watch.accept_dialogs = True
    with page.expect_navigation():
        page.get_by_role("button", name="Delete this evaluation").click()
    expect(page).to_have_url(re.compile(r"/evaluations$"))
    assert page.locator(f"a[href='/evaluations/{evaluation_id}']").count() == 0
    assert watch.errors == [], watch.errors
    assert page.goto(f"{server.url}/evaluations/{evaluation_id}").status == 404


def test_sample_grid_sorts_filters_and_opens_a_judgment(page, watch, server, sample_evaluation, tmp_path):
    open_page(page, server, f"/evaluations/{sample_evaluation}")
    page.get_by_role("link", name="Look at every sample: the methods side by side, sorted and filtered").click()
    rows = page.locator("#samples-grid tbody tr")
    expect(rows.first).to_be_visible()
    total = rows.count()
    page.get_by_label("Sort").select_option("spread")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"sort=spread&order=desc"))
    assert rows.count() == total
    check_widths(page, tmp_path, "grid")
    page.get_by_label("Text (regular expression)").fill("(")
    page.get_by_role("button", name="Show").click()
    expect(page.locator(".notice.error")).to_contain_text("not a valid regular expression")
    page.go_back()
    rows.first.locator("details summary").first.click()
    with page.expect_navigation():
        rows.first.get_by_role("link", name="fine").first.click()
    expect(page.locator("h2", has_text="The prompt as sent")).to_be_visible()
    expect(page.locator("pre.prompt").first).not_to_be_empty()
    assert watch.errors == [], watch.errors


def test_review_a_judgment_and_see_the_metrics_with_the_override(page, watch, server, judge, tmp_path):
    evaluation_id = quick_evaluation(server, judge, "review.jsonl")
    open_page(page, server, f"/evaluations/{evaluation_id}/view/prompt?index=0&round=1&method=Base&mode=fine")
    form = page.locator("form.review-form")
    form.get_by_label("Override with").check()
    form.get_by_label("fine score (0-100)").fill("5")
    form.get_by_label("Comment").fill("misses the user's profile")
    with page.expect_navigation():
        form.get_by_role("button", name="Save the review").click()
    expect(page.locator("#review")).to_contain_text("Overridden with: 5.0.")
    check_widths(page, tmp_path, "judgment")
    open_page(page, server, f"/evaluations/{evaluation_id}")
    expect(page.locator("#reviews")).to_contain_text("1 judgment reviewed by people: 0 agreed with, 1 overridden.")
    page.get_by_role("link", name="Show them with the overrides applied").click()
    expect(page).to_have_url(re.compile(r"overrides=1"))
    expect(page.locator("#reviews strong")).to_contain_text("with the overrides applied")
    wait_for_charts(page)
    check_widths(page, tmp_path, "overrides")
    assert watch.errors == [], watch.errors


def test_row_level_diff_filters_flipped_verdicts_and_fits_the_width(page, watch, server, judge, sample_evaluation,
                                                                    tmp_path):
    latency, judge.latency_s = judge.latency_s, 0.0
    judge.models = {**judge.models, "judge-rows": (7, True)}  # every fine total +7 (clamped), every verdict flipped
    try:
        other = server.evaluate(server.upload(SAMPLE.read_bytes(), "sample_data.jsonl"), judge={"model": "judge-rows"})
    finally:
        judge.latency_s = latency
    assert other["status"] == "done", other
    open_page(page, server, f"/compare/rows?ids={sample_evaluation}&ids={other['id']}&metric=binary_rate&changed=1")
    rows = page.locator("#row-diff tbody tr")
    pairs = sum(len(json.loads(line)["rounds"]) * len(SAMPLE_METHODS) for line in SAMPLE.read_text("utf-8").splitlines())
    assert rows.count() == min(pairs, 50)  # every verdict flipped: every pair changed, 50 on a page
    summary = page.locator("#row-diff-summary")
    improved, regressed = (int(summary.locator(f"[data-count={c}]").inner_text().split()[0])
                           for c in ("improved", "regressed"))
    assert improved + regressed == pairs
    region = page.get_by_role("region", name="Rows of the two runs")
    region.focus()
    expect(region).to_be_focused()
    page.get_by_label("Sort").select_option("delta")
    page.get_by_label("Metric").select_option("avg")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"sort=delta"))
    check_widths(page, tmp_path, "row-diff")
    assert watch.errors == [], watch.errors


# -- the partial Plotly bundle and charts drawn when they come into view -------------------------------------------

PLOTLY_TRACES = {"scatter", "bar", "scatterpolar", "heatmap"}  # vendor/plotly-bundle/entry.js registers these


def figure_trace_types(page) -> set[str]:
    """The trace types of every figure in the page's figures JSON."""
    return set(page.evaluate("() => Object.values(JSON.parse(document.getElementById('figures').textContent))"
                             ".flatMap(figure => figure.data.map(trace => trace.type || 'scatter'))"))


def test_charts_below_the_fold_are_drawn_when_scrolled_into_view(page, watch, server, sample_evaluation):
    open_page(page, server, f"/evaluations/{sample_evaluation}")
    wait_for_chart(page, "#chart-al")  # in view: drawn at once
    page.wait_for_timeout(500)  # time enough to draw anything else it would draw unasked
    below = page.locator("#chart-length")
    # below the fold, and beyond the 200 px ahead of it that the page draws in advance
    assert page.evaluate("() => document.getElementById('chart-length').getBoundingClientRect().top") > 900 + 200
    expect(below.locator(".main-svg")).to_have_count(0)
    below.scroll_into_view_if_needed()
    expect(below.locator(".main-svg").first).to_be_attached()
    expect(below.locator(".legendtext")).to_have_count(len(SAMPLE_METHODS))
    assert watch.errors == [], watch.errors


def test_before_printing_every_chart_is_drawn(page, watch, server, sample_evaluation):
    open_page(page, server, f"/evaluations/{sample_evaluation}")
    page.emulate_media(media="print")
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")  # what the browser sends when asked to print
    charts = page.locator("[data-figure]")
    assert charts.count() >= 4
    for i in range(charts.count()):
        expect(charts.nth(i).locator(".main-svg").first).to_be_attached()
    assert watch.errors == [], watch.errors


def test_the_partial_plotly_draws_every_kinds_charts(page, watch, server, sample_evaluation):
    """Plotly as served holds the trace types of the figures, and draws every chart of the result pages of the
    dialogue, AgentBench and (with ../shared/data) DailyMobility kinds with no error; the judge panel's heatmap and
    error bars are drawn by test_judge_panel_with_samples_and_pairwise_mode_..., the conversation kind's charts by
    test_conversation_upload_with_llm_annotation."""
    pages = [f"/evaluations/{sample_evaluation}",
             f"/evaluations/{server.evaluate(server.upload(outputs_zip(), 'outputs.zip'))['id']}"]
    mobility_id = mobility_evaluation(server)
    if mobility_id:
        pages.append(f"/evaluations/{mobility_id}")
    seen: set[str] = set()
    for path in pages:
        open_page(page, server, path)
        draw_every_chart(page)  # Plotly is loaded once a chart is to be drawn
        page.wait_for_function("() => window.Plotly !== undefined")
        assert set(page.evaluate("() => Object.keys(Plotly.PlotSchema.get().traces)")) == PLOTLY_TRACES
        assert page.evaluate("() => Plotly.version") == "4.1.1"
        charts = page.locator("[data-figure]")
        for i in range(charts.count()):
            expect(charts.nth(i).locator(".main-svg").first).to_be_attached()
        seen |= figure_trace_types(page)
    assert {"scatter", "scatterpolar", "bar"} <= seen <= PLOTLY_TRACES, seen
    assert watch.errors == [], watch.errors

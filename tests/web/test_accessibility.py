"""Every page of every kind, in English, Chinese and Korean: axe-core finds no critical or serious violation, and at
1280, 1440 and 1920 px nothing is clipped.

axe-core is npm's, at the version package.json pins (`npm ci` puts it in node_modules/; without it these tests
skip, or fail when CI is set). The pages are those a user reaches: upload, an upload's page, a result of each kind
and each of its views, the offline report, the list, each kind's compare, the compare picker, the row-level diff,
settings, the rubrics and one rubric's page, the references page, a share link and its views, a dataset's
leaderboard and its share link, a dialogue result's
Ask people page and a rating link's pages, a conversation result
with behaviour labels (the paper's analysis), its labelling pages and the humanness page, and the "not found" page
(a dialogue session's detail is a fragment the result page loads into itself: it is audited there); a dialogue result
while it runs, with its live view (the figures so far, marked partial); and a dialogue
result with people's ratings, its figures calibrated to people, and its offline report. Each page is loaded once per
language in that language's browser context; axe runs on it, then the window is resized to each width and the
clipped elements measured. The keyboard test tabs through a result page.
"""
from __future__ import annotations

import html
import re
import time
import urllib.error
import urllib.request

import pytest

from simulate.personas import BUILTIN as BUILTIN_PERSONAS
from tests.browser_support import CHROMIUM, SAMPLE, DashboardServer, axe_violations, new_context, require_axe, tab

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Chromium not found at {CHROMIUM}")

if CHROMIUM.exists():
    from tests.web.test_browser import judge, mobility_evaluation, sample_evaluation, server  # noqa: F401

LANGUAGES = ("en", "zh", "ko")
WIDTHS = (1280, 1440, 1920)
PAGES = ("upload", "upload detail", "result", "grid", "prompt", "report", "list", "compare", "compare picker",
         "row diff", "settings", "rubrics", "rubric", "share", "share grid", "share report", "share row diff", "not found",
         "ask people", "rate start", "rate",
         "conversation result", "conversations", "transcript", "transcript raw", "conversation compare",
         "conversation analysis", "labelling", "label", "humanness",
         "mobility result", "references", "mobility compare",
         "agentbench result", "samples", "agentbench compare", "personas upload", "run a simulation", "simulations",
         "simulation", "simulation samples", "leaderboard", "share leaderboard", "login", "account")
AUTH_PAGES = {"login": "/login", "account": "/account"}  # served by a second server, with accounts on
PASSWORD = "correct horse battery staple"

# The elements whose text must fit them: cards, table cells, buttons, labels, chips, badges, headings. One is
# clipped when its content is wider than its box (or an ellipsis cuts it) and no ancestor scrolls sideways to show it.
CLIPPED = """() => {
  const scrolls = el => { for (let a = el.parentElement; a; a = a.parentElement) {
      const x = getComputedStyle(a).overflowX; if (x === 'auto' || x === 'scroll') return true; } return false; };
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      [...el.classList].map(c => '.' + c).join('');
  return [...document.querySelectorAll(
      '.card, td, th, button, label, .chip, .badge, .status, h1, h2, h3, h4, summary, .button-link')]
    .filter(el => {
      const style = getComputedStyle(el);
      if (style.display === 'inline' || style.display === 'none' || !el.clientWidth) return false;
      // Plotly's charts are drawings (SVG text it lays out itself); their card clips a pixel or two of the drawing
      if (el.closest('.js-plotly-plot')) return false;
      if (style.overflowX === 'auto' || style.overflowX === 'scroll') return false;
      const wider = el.scrollWidth > el.clientWidth + 1;
      return wider && !scrolls(el);
    })
    .map(el => name(el) + ' "' + el.textContent.trim().replace(/\\s+/g, ' ').slice(0, 40) + '" ' +
                el.scrollWidth + ' > ' + el.clientWidth);
}"""


def _get(server, path: str) -> str:
    with urllib.request.urlopen(server.url + path, timeout=30) as response:
        return response.read().decode("utf-8")


def _link(server, path: str, pattern: str) -> str:
    """The first link on a page whose address matches `pattern` (a regex), unescaped."""
    found = re.search(rf'href="([^"]*{pattern}[^"]*)"', _get(server, path))
    assert found, f"no link matching {pattern} on {path}"
    return html.unescape(found.group(1))


def _finished(server, evaluation_id: str) -> str:
    deadline = time.monotonic() + 60
    while server.call(f"/api/evaluations/{evaluation_id}")["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"evaluation {evaluation_id} did not finish"
        time.sleep(0.1)
    return evaluation_id


def _again(server, evaluation_id: str, **extra) -> str:
    """A second evaluation of the same upload (something to compare with)."""
    import json

    upload_id = server.call(f"/api/evaluations/{evaluation_id}")["upload_id"]
    created = server.call("/api/evaluations", json.dumps({"upload_id": upload_id, **extra}).encode(),
                          {"Content-Type": "application/json"})
    return _finished(server, created["id"])


def _share(server, evaluation_id: str) -> str:
    made = server.call(f"/api/evaluations/{evaluation_id}/shares", b"{}", {"Content-Type": "application/json"})
    return "/" + made["url"].split("/", 3)[3]


@pytest.fixture(scope="module")
def pages(server, judge, sample_evaluation, tmp_path_factory) -> dict[str, str]:  # noqa: F811
    """Paths (or file:// addresses) of every kind of page, made through the API."""
    evaluation = server.call(f"/api/evaluations/{sample_evaluation}")
    upload_id, method = evaluation["upload_id"], evaluation["methods"][0]
    other = server.evaluate(server.upload(SAMPLE.read_bytes(), "second.jsonl"))["id"]
    share, other_share = _share(server, sample_evaluation), _share(server, other)
    folder = tmp_path_factory.mktemp("reports")
    reports = {}
    for name, path in (("report", f"/evaluations/{sample_evaluation}/report.html"), ("share report", share + "/report.html")):
        reports[name] = folder / f"{name.replace(' ', '-')}.html"
        reports[name].write_text(_get(server, path), "utf-8")
    found = {
        "upload": "/", "upload detail": f"/uploads/{upload_id}", "result": f"/evaluations/{sample_evaluation}",
        "grid": f"/evaluations/{sample_evaluation}/view/grid",
        "prompt": f"/evaluations/{sample_evaluation}/view/prompt?index=0&round=1&method={method}&mode=fine",
        "report": reports["report"].as_uri(), "list": "/evaluations", "settings": "/settings",
        "rubrics": "/settings/rubrics", "rubric": "/settings/rubrics/personasteer",
        "compare": f"/compare?ids={sample_evaluation}&ids={other}", "compare picker": "/compare",
        "row diff": f"/compare/rows?ids={sample_evaluation}&ids={other}",
        "share": share, "share grid": share + "/view/grid", "share report": reports["share report"].as_uri(),
        "share row diff": f"{share}/compare/rows?other={other_share.rsplit('/', 1)[1]}",
        "not found": "/evaluations/no-such-evaluation",
        **_rating_pages(server, sample_evaluation),
        **_leaderboard_pages(server, sample_evaluation),
    }
    conversation = _conversation_upload()
    if conversation:
        first = server.evaluate(server.upload(*conversation))["id"]
        found["conversation result"] = f"/evaluations/{first}"
        found["conversations"] = _link(server, found["conversation result"], "/view/conversations")
        found["transcript"] = _link(server, found["conversations"], "/view/transcript")
        found["transcript raw"] = found["transcript"] + "&raw=1"
        found["conversation compare"] = f"/compare?ids={first}&ids={_again(server, first)}"
    labelled = _labelled_upload()
    if labelled:
        analysed = server.evaluate(server.upload(*labelled))["id"]
        found["conversation analysis"] = f"/evaluations/{analysed}?labels=gpt&reference=human"
        found["labelling"] = f"/evaluations/{analysed}/labelling"
        found["label"] = f"/evaluations/{analysed}/labelling/0"
        found["humanness"] = f"/conversation/humanness?simulated={analysed}&real={analysed}&simulated_labels=gpt"
    mobility = mobility_evaluation(server)
    if mobility:
        found["mobility result"] = f"/evaluations/{_finished(server, mobility)}"
        found["references"] = "/references"
        found["mobility compare"] = f"/compare?ids={mobility}&ids={_again(server, mobility, reference='beijing')}"
    agentbench = server.evaluate(server.upload(*_agentbench_upload()))["id"]
    found["agentbench result"] = f"/evaluations/{agentbench}"
    found["samples"] = _link(server, found["agentbench result"], "/view/samples")
    found["agentbench compare"] = f"/compare?ids={agentbench}&ids={_again(server, agentbench)}"
    found["personas upload"] = f"/uploads/{server.upload(BUILTIN_PERSONAS.read_bytes(), 'personas.jsonl')}"
    simulation = _simulation(server, upload_id)
    found.update({"run a simulation": "/simulations/new", "simulations": "/simulations",
                  "simulation": f"/simulations/{simulation}", "simulation samples": f"/simulations/{simulation}/samples"})
    return found


def _leaderboard_pages(server, evaluation_id: str) -> dict[str, str]:
    """The leaderboard of the sample file's dataset (its two runs above) and a share link of it."""
    dataset = server.call(f"/api/evaluations/{evaluation_id}/dataset")["dataset"]
    shared = server.call(f"/api/datasets/{dataset}/shares", b"{}", {"Content-Type": "application/json"})
    return {"leaderboard": f"/datasets/{dataset}", "share leaderboard": "/" + shared["url"].split("/", 3)[3]}


def _rating_pages(server, evaluation_id: str) -> dict[str, str]:
    """Ask people with a slice of 12 drawn, a rater's progress and a link, and that link's pages (made in the
    server's database, as its pages would)."""
    from kinds import registry
    from kinds.dialogue import rating_links, rating_slice, rating_store
    from storage.store import Store

    store = Store(server.config["DATABASE"], registry.tables())
    record = store.get_evaluation(evaluation_id, with_result=False)
    items = rating_slice.draw(rating_slice.strata(rating_slice.judged_replies(store, record), record["methods"]), 12, 1)
    rating_slice.save_slice(store, evaluation_id, 1, 12, items, None)
    _link, token = rating_links.create(store, evaluation_id, "Zoë", None)
    rating_store.save_rating(store, evaluation_id, "Zoë", *items[0], {"total": 62, "verdict": 1, "style": 14,
                                                                      "content": 12, "naturalness": 12,
                                                                      "personalization": 12, "conversation": 12})
    return {"ask people": f"/evaluations/{evaluation_id}/rating", "rate start": f"/rate/{token}",
            "rate": f"/rate/{token}/0"}


def _simulation(server, personas_upload_id: str) -> str:
    """A finished simulation (two methods, the sample's personas, the judge server answering for every model)."""
    import json

    started = server.call("/api/simulations", json.dumps({
        "personas_upload_id": personas_upload_id, "simulator": {"model": "sim-model"}, "rounds": 2,
        "methods": [{"name": "Base", "model": "model-a"}, {"name": "Ours", "model": "model-b"}]}).encode(),
        {"Content-Type": "application/json"})
    deadline = time.monotonic() + 60
    while (body := server.call(f"/api/simulations/{started['id']}"))["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"simulation {started['id']} did not finish"
        time.sleep(0.1)
    assert body["status"] == "done", body
    return started["id"]


def _conversation_upload() -> tuple[bytes, str] | None:
    from tests.kinds.conversation.test_conversation_pipeline import SAMPLE as CONVERSATIONS
    from tests.kinds.conversation.test_conversation_pipeline import sample_zip

    return (sample_zip(), "RecLLMSim.zip") if CONVERSATIONS.exists() else None


def _labelled_upload(each: int = 10) -> tuple[bytes, str] | None:
    """The first `each` simulated users' and real people's conversations of the labelled release, as a ZIP of the
    dataset's folders: their behaviour labels fill the analysis, the labelling pages and the humanness page."""
    import io
    import zipfile

    from tests.kinds.conversation.test_humanness import LABELLED

    if not LABELLED.exists():
        return None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for side in ("LLM_agent_user", "real_human_user"):
            for path in sorted((LABELLED / side).rglob("*.json"))[:each]:
                archive.write(path, str(path.relative_to(LABELLED)))
    return buffer.getvalue(), "labelled.zip"


def _agentbench_upload() -> tuple[bytes, str]:
    from tests.kinds.agentbench.test_agentbench_pipeline import outputs_zip

    return outputs_zip(), "outputs.zip"


@pytest.fixture(scope="module")
def contexts(browser):
    """One browser context per language, reused by every page (its Accept-Language picks the language)."""
    made = {language: new_context(browser, locale=language, extra_http_headers={"Accept-Language": language})
            for language in LANGUAGES}
    yield made
    for context in made.values():
        context.close()


@pytest.fixture(scope="module")
def accounts_server(tmp_path_factory, judge):  # noqa: F811
    """A second dashboard with accounts on (AUTH=on) and one user, `ada`, for the sign-in and account pages."""
    from app import create_app
    from web import accounts

    server = DashboardServer(tmp_path_factory.mktemp("accounts"), judge.url)
    server.config["AUTH"] = "on"
    accounts.create_user(create_app(dict(server.config)).extensions["store"], "ada", PASSWORD, is_admin=True)
    # "localhost", not 127.0.0.1: its session cookie must not reach the other server (cookies ignore the port)
    server.url = server.url.replace("127.0.0.1", "localhost")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def signed_in(browser, accounts_server):
    """Per language, a context signed in as `ada` on the server with accounts on."""
    made = {}
    for language in LANGUAGES:
        made[language] = new_context(browser, locale=language, extra_http_headers={"Accept-Language": language})
        page = made[language].new_page()
        page.goto(accounts_server.url + "/login")
        page.locator("input[name=name]").fill("ada")
        page.locator("input[name=password]").fill(PASSWORD)
        page.locator("form button[type=submit]").first.click()
        page.wait_for_url(lambda url: "/login" not in url)
        page.close()
    yield made
    for context in made.values():
        context.close()


def open_in(contexts, server, pages, name: str, language: str, request=None):  # noqa: F811
    """A new page of the language's context showing the named page, loaded and idle."""
    require_axe()
    if name in AUTH_PAGES:
        assert request is not None
        contexts, server = request.getfixturevalue("signed_in"), request.getfixturevalue("accounts_server")
        pages = AUTH_PAGES
    if name not in pages:
        pytest.skip("its sample data (Human-vs-Agent, DailyMobility) is not in ../shared/data")
    address = pages[name] if pages[name].startswith("file:") else server.url + pages[name]
    page = tab(contexts[language])
    response = page.goto(address)
    expected = 404 if name == "not found" else 200
    assert response is not None and response.status == expected, (address, response and response.status)
    page.wait_for_load_state("networkidle")
    return page


def audit(page, name: str, language: str) -> None:
    """axe-core finds no critical or serious violation on the page, and nothing is clipped at any of WIDTHS."""
    found = axe_violations(page)
    assert not found, f"{name} in {language} ({page.url}):\n" + "\n".join(found)
    clipped = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(50)  # Plotly redraws on resize
        if found := page.evaluate(CLIPPED):
            clipped[width] = found
    assert not clipped, f"clipped on {name} in {language} ({page.url}): {clipped}"


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", PAGES)
def test_page_has_no_serious_violation_and_nothing_clipped(contexts, server, pages, name, language,  # noqa: F811
                                                           request):
    page = open_in(contexts, server, pages, name, language, request)
    audit(page, name, language)


@pytest.fixture(scope="module")
def running_evaluation(server, judge):  # noqa: F811
    """A dialogue evaluation left running with its live view filled in: the judge answers its first requests, then
    holds the others (test_live_results.Gate) until the module's tests are done; then it is cancelled."""
    import json

    from tests.web.test_live_results import Gate, answer_then_hold, scored_file

    gate = Gate("[[audit-live]]")
    previous, judge.hook = judge.hook, gate
    upload_id = server.upload(scored_file("[[audit-live]]"), "running.jsonl")
    evaluation_id = server.call("/api/evaluations", json.dumps({"upload_id": upload_id}).encode(),
                                {"Content-Type": "application/json"})["id"]
    try:
        answer_then_hold(gate, 12)
        deadline = time.monotonic() + 30
        while not server.call(f"/api/evaluations/{evaluation_id}")["progress"]["done"]:
            assert time.monotonic() < deadline, "no judgment was stored"
            time.sleep(0.1)
        # the server's first partial result loads the scoring libraries (seconds on a busy machine)
        urllib.request.urlopen(f"{server.url}/api/evaluations/{evaluation_id}/partial", timeout=120).close()
        yield evaluation_id
    finally:
        request = urllib.request.Request(f"{server.url}/api/evaluations/{evaluation_id}/cancel", data=b"",
                                         method="POST")
        try:
            urllib.request.urlopen(request, timeout=10).close()
        except urllib.error.HTTPError:
            pass  # it ended meanwhile
        gate.open()
        judge.hook = previous


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_running_result_with_its_live_view_has_no_serious_violation_and_nothing_clipped(contexts, server,  # noqa: F811
                                                                                        running_evaluation, language):
    require_axe()
    page = tab(contexts[language])
    response = page.goto(f"{server.url}/evaluations/{running_evaluation}")
    assert response is not None and response.status == 200
    page.locator("#live .status-partial").wait_for()
    page.locator("#live-chart-al .main-svg").first.wait_for(state="attached")
    assert page.locator("#progress progress").is_visible()
    audit(page, "running result", language)


def calibrated_evaluation(server) -> str:
    """An evaluation of sample_data.jsonl with people's ratings (issue 40, item 4): two raters rate sessions 0, 1,
    2, 4 and 6, each reply but CoT's round 7 of session 6 (CoT has no calibrated AVG nor curve: its round 7 has one
    rated reply). People rate Base 30 above the judge and PersonaSteer 30 below it (their calibrated order reverses
    the judge's), and answer PersonaSteer's yes/no question against the judge (the judge tells nothing of it)."""
    import hashlib
    import json

    evaluation_id = server.evaluate(server.upload(SAMPLE.read_bytes(), "calibrated.jsonl"))["id"]
    sessions = server.call(f"/api/evaluations/{evaluation_id}/sessions?per_page=50")["sessions"]
    rows = ["rater,session_id,round,method,total,binary,style"]
    for number, session in enumerate(sessions):
        if number not in (0, 1, 2, 4, 6):
            continue
        for rnd in session["rounds"]:
            for method, judged in rnd["methods"].items():
                if (method, number, rnd["round"]) == ("CoT", 6, 7):
                    continue
                total, verdict = judged["fine"]["total"], judged["binary"]["verdict"]
                shift = {"Base": 30, "PersonaSteer": -30}.get(method, 0)
                for rater, spread in (("Ana", -4), ("Bo", 4)):
                    noise = int(hashlib.sha256(f"{rater}{session['session_id']}{rnd['round']}{method}".encode())
                                .hexdigest(), 16) % 9 - 4
                    value = min(100, max(0, total + shift + spread + noise))
                    keep = 1 - verdict if method == "PersonaSteer" else verdict
                    rows.append(f"{rater},{session['session_id']},{rnd['round']},{method},{value},{keep},"
                                f"{min(20, max(0, round(value / 5)))}")
    boundary = "calibratedboundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"people.csv\"\r\n"
            "Content-Type: text/csv\r\n\r\n" + "\n".join(rows) + f"\n\r\n--{boundary}--\r\n").encode()
    server.call(f"/api/evaluations/{evaluation_id}/human-ratings", body,
                {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    deadline = time.monotonic() + 60  # the ratings are taken into the figures by a rescore job
    while server.call(f"/api/evaluations/{evaluation_id}/rescore")["status"] in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    calibration = server.call(f"/api/evaluations/{evaluation_id}")["result"]["calibration"]
    assert {w["code"] for w in calibration["warnings"]} == {"reversed_order", "uninformative_judge"}, \
        json.dumps(calibration["warnings"])
    return evaluation_id


@pytest.fixture(scope="module")
def calibrated_pages(server, tmp_path_factory) -> dict[str, str]:  # noqa: F811
    """A result page and its offline report with the figures calibrated to people."""
    evaluation_id = calibrated_evaluation(server)
    report = tmp_path_factory.mktemp("calibrated") / "report.html"
    report.write_text(_get(server, f"/evaluations/{evaluation_id}/report.html"), "utf-8")
    return {"calibrated result": f"/evaluations/{evaluation_id}", "calibrated report": report.as_uri()}


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", ("calibrated result", "calibrated report"))
def test_a_result_calibrated_to_people_has_no_serious_violation_and_nothing_clipped(contexts, server,  # noqa: F811
                                                                                     calibrated_pages, name, language):
    page = open_in(contexts, server, calibrated_pages, name, language)
    # what is audited: the calibrated rows, the warnings, the paired differences and the calibrated curves
    assert page.locator("tr.calibrated-row").count() == 6 and page.locator("#calibration-warnings li").count() == 2
    assert page.locator("#calibrated-differences tbody tr").count() == 6
    page.locator("#chart-al").scroll_into_view_if_needed()  # charts are drawn as they come into view
    page.wait_for_selector("#chart-al .scatterlayer .trace")
    # each method's band (one filled outline) and curve, and the calibrated curves of Base and PersonaSteer
    assert page.locator("#chart-al .scatterlayer .trace").count() == 3 + 3 + 2
    audit(page, name, language)


def test_clipping_check_sees_a_clipped_cell_and_spares_a_scrolled_one(contexts):
    page = tab(contexts["en"])
    page.set_content('<table><tr><td id="a" style="max-width:40px;overflow:hidden;white-space:nowrap">'
                     'a rather long piece of text</td></tr></table>'
                     '<div style="overflow-x:auto;width:60px"><table><tr><td id="b" style="max-width:40px;'
                     'overflow:hidden;white-space:nowrap">another long piece of text</td></tr></table></div>')
    found = page.evaluate(CLIPPED)
    assert len(found) == 1 and found[0].startswith('td#a "a rather long piece of text"'), found


FOCUS = """() => { const el = document.activeElement, style = getComputedStyle(el);
  return {tag: el.tagName.toLowerCase(), cls: el.className, label: el.getAttribute('aria-label') || '',
          role: el.getAttribute('role') || '', text: (el.textContent || '').trim().slice(0, 40),
          outlined: (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== 'none'};
}"""


def test_keyboard_reaches_chips_column_chooser_and_scroll_regions_with_a_visible_focus(contexts, server, pages):
    page = open_in(contexts, server, pages, "result", "en")
    seen = []
    for _ in range(200):
        page.keyboard.press("Tab")
        if (focused := page.evaluate(FOCUS))["tag"] == "body":  # past the last one: the browser's own UI
            break
        seen.append(focused)
    assert all(f["outlined"] for f in seen), [f for f in seen if not f["outlined"]][:5]
    assert any("chip" in f["cls"] for f in seen), "no method chip took the focus"
    assert any(f["role"] == "region" and "scroll" in f["cls"] and f["label"] for f in seen), \
        "no labelled scroll region took the focus"
    assert any(f["tag"] == "summary" and "Columns" in f["text"] for f in seen), "the column chooser is unreachable"



def test_column_chooser_hides_a_metric_column_and_keeps_it_in_the_address(contexts, server, pages):
    page = open_in(contexts, server, pages, "result", "en")
    methods = page.locator(".card", has=page.get_by_role("heading", name="Methods", exact=True))
    assert "Slope" in methods.locator("thead").inner_text()
    page.locator(".column-chooser summary").click()
    page.locator(".column-chooser input[value=slope]").uncheck()
    page.locator(".column-chooser").get_by_role("button", name="Apply").click()
    page.wait_for_load_state("networkidle")
    assert "cols=" in page.url and "slope" not in page.url, page.url
    assert "Slope" not in methods.locator("thead").inner_text()
    assert "AVG" in methods.locator("thead").inner_text()
    assert not page.locator(".column-chooser input[value=slope]").is_checked()
    page.locator(".chip").first.click()  # hiding a method keeps the columns chosen
    page.wait_for_load_state("networkidle")
    assert "methods=" in page.url and "cols=" in page.url, page.url

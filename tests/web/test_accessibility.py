"""Every page audited by axe-core in Chromium: no critical or serious violation, in English, Chinese and Korean.

axe-core is the copy the axe-playwright-python package ships (requirements-dev.txt). The pages are those a
user reaches: upload, an upload's page, a result of each kind, its views, the list, compare, settings, a share link
(a session's detail is a fragment the result page loads into itself: it is audited there).
"""
from __future__ import annotations

import time

import pytest

from simulate.personas import BUILTIN as BUILTIN_PERSONAS
from tests.browser_support import CHROMIUM, SAMPLE, axe_violations

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Chromium not found at {CHROMIUM}")

if CHROMIUM.exists():
    from tests.web.test_browser import browser, judge, mobility_evaluation, sample_evaluation, server  # noqa: F401


def violations(browser, url: str, language: str = "en") -> list[str]:  # noqa: F811
    """axe-core's critical and serious violations of a page opened in a fresh context in `language`."""
    context = browser.new_context(locale=language, viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_extra_http_headers({"Accept-Language": language})
        response = page.goto(url)
        assert response is not None and response.ok, url
        page.wait_for_load_state("networkidle")
        return axe_violations(page)
    finally:
        context.close()


@pytest.fixture(scope="module")
def pages(server, judge, sample_evaluation) -> dict[str, str]:  # noqa: F811
    """Paths of every kind of page, made through the API."""
    evaluation = server.call(f"/api/evaluations/{sample_evaluation}")
    upload_id, method = evaluation["upload_id"], evaluation["methods"][0]
    other = server.evaluate(server.upload(SAMPLE.read_bytes(), "second.jsonl"))["id"]
    share = server.call(f"/api/evaluations/{sample_evaluation}/shares", b"{}", {"Content-Type": "application/json"})
    found = {
        "upload": "/", "upload detail": f"/uploads/{upload_id}", "result": f"/evaluations/{sample_evaluation}",
        "list": "/evaluations", "settings": "/settings",
        "compare": f"/compare?ids={sample_evaluation}&ids={other}", "compare picker": "/compare",
        "row diff": f"/compare/rows?ids={sample_evaluation}&ids={other}",
        "grid": f"/evaluations/{sample_evaluation}/view/grid",
        "prompt": f"/evaluations/{sample_evaluation}/view/prompt?index=0&round=1&method={method}&mode=fine",
        "share": "/" + share["url"].split("/", 3)[3],
    }
    conversation = _conversation_upload()
    if conversation:
        found["conversation result"] = f"/evaluations/{server.evaluate(server.upload(*conversation))['id']}"
    mobility = mobility_evaluation(server)
    if mobility:
        deadline = time.monotonic() + 60
        while server.call(f"/api/evaluations/{mobility}")["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, "the mobility evaluation did not finish"
            time.sleep(0.1)
        found["mobility result"] = f"/evaluations/{mobility}"
    found["agentbench result"] = f"/evaluations/{server.evaluate(server.upload(*_agentbench_upload()))['id']}"
    found["personas upload"] = f"/uploads/{server.upload(BUILTIN_PERSONAS.read_bytes(), 'personas.jsonl')}"
    return found


def _conversation_upload() -> tuple[bytes, str] | None:
    from tests.benchmarks.conversation.test_conversation_pipeline import SAMPLE as CONVERSATIONS
    from tests.benchmarks.conversation.test_conversation_pipeline import sample_zip

    return (sample_zip(), "RecLLMSim.zip") if CONVERSATIONS.exists() else None


def _agentbench_upload() -> tuple[bytes, str]:
    from tests.benchmarks.agentbench.test_agentbench_pipeline import outputs_zip

    return outputs_zip(), "outputs.zip"


@pytest.mark.parametrize("name", ["upload", "upload detail", "result", "list", "settings", "compare",
                                  "compare picker", "row diff", "grid", "prompt", "share", "conversation result",
                                  "mobility result", "agentbench result", "personas upload"])
def test_page_has_no_serious_accessibility_violation(browser, server, pages, name):  # noqa: F811
    if name not in pages:
        pytest.skip("its sample data (Human-vs-Agent, DailyMobility) is not in ../shared/data")
    found = violations(browser, server.url + pages[name])
    assert not found, f"{name} ({pages[name]}):\n" + "\n".join(found)


@pytest.mark.parametrize("language", ["zh", "ko"])
def test_result_page_in_other_languages_has_no_serious_violation(browser, server, pages, language):  # noqa: F811
    found = violations(browser, server.url + pages["result"], language)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("language", ["zh", "ko"])
def test_personas_upload_page_in_other_languages_has_no_serious_violation(browser, server, pages,  # noqa: F811
                                                                        language):
    found = violations(browser, server.url + pages["personas upload"], language)
    assert not found, "\n".join(found)

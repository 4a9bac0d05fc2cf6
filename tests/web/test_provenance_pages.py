"""A result's provenance on the compare page (the fields in which runs differ, or a line saying they do not) and on
the result page of a result scored before provenance was kept ("not recorded")."""
from __future__ import annotations

import hashlib
import json
import re

from kinds import rubrics
from kinds.dialogue import prompts, rubric_store
from tests.conftest import jsonl, session_line, wait_for
from tests.web.test_api import upload

DATA = jsonl(session_line("a1", 2), session_line("a2", 2))


def run(client, rubric: str | None = None, **judge) -> str:
    """A finished dialogue evaluation of DATA under a rubric (the default) with these judge settings; its id."""
    upload_id = upload(client, DATA).get_json()["id"]
    created = client.post("/api/evaluations", json={"upload_id": upload_id, **({"judge": judge} if judge else {}),
                                                    **({"rubric": rubric} if rubric else {})})
    assert created.status_code in (200, 201, 202), created.get_json()
    assert wait_for(client, created.get_json()["id"])["status"] == "done"
    return created.get_json()["id"]


def provenance_section(client, *ids: str) -> str:
    resp = client.get("/compare?ids=" + ",".join(ids))
    assert resp.status_code == 200
    found = re.search(r'<section class="card provenance" id="provenance".*?</section>', resp.get_data(as_text=True),
                      re.S)
    assert found, "no provenance section"
    return found.group(0)


def table_rows(section: str) -> list[list[str]]:
    """The differences table as text cells, header first."""
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", section, re.S):
        rows.append([re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)])
    return rows


def test_runs_that_differ_in_the_judges_temperature_list_that_field(client):
    first, second = run(client, temperature=0.0), run(client, temperature=0.5)
    rows = table_rows(provenance_section(client, first, second))
    assert rows[1:] == [["judge temperature", "0.0", "0.5"]]
    assert len(rows[0]) == 3  # the field, then each run by its label
    assert "differ in 1 field" in provenance_section(client, first, second)


def test_identical_runs_say_so(client):
    first, second = run(client), run(client)
    section = provenance_section(client, first, second)
    assert "Same provenance" in section and "<table" not in section


def test_reworded_prompt_is_told_apart(app, client):
    """The same protocol with one more sentence in its instructions: a rubric of its own, told apart by its hash."""
    default = rubrics.builtin()
    document = json.loads(rubrics.canonical(default.document))
    document.update(id="personasteer-brief", version="1")
    document["prompts"]["en"]["system"] += "\nBe brief."
    brief = rubric_store.add(app.extensions["store"], rubrics.make(document))
    first, old = run(client), hashlib.sha256(prompts.template("fine", "en").encode()).hexdigest()
    second = run(client, rubric="personasteer-brief")
    new = hashlib.sha256(prompts.template("fine", "en", brief).encode()).hexdigest()
    assert new != old
    assert table_rows(provenance_section(client, first, second))[1:] == [
        ["prompt version", default.version, brief.cache_version], ["prompt SHA-256 (fine)", old, new],
        ["rubric", f"personasteer {default.version}", "personasteer-brief 1"],
        ["rubric SHA-256", default.sha256, brief.sha256]]


def test_a_result_without_provenance_still_shows(app, client):
    first, second = run(client, model="judge-test"), run(client, model="judge-other")
    store = app.extensions["store"]
    record = store.get_evaluation(first)
    old = {k: v for k, v in record["result"].items() if k != "provenance"}
    store.set_result(first, old, status="done", headline=record["headline"])
    page = client.get(f"/evaluations/{first}")
    assert page.status_code == 200 and "Not recorded" in page.get_data(as_text=True)
    report = client.get(f"/evaluations/{first}/report.html")
    assert report.status_code == 200 and "Not recorded" in report.get_data(as_text=True)
    section = provenance_section(client, first, second)
    assert "Provenance not recorded for" in section
    rows = table_rows(section)
    models = next(row for row in rows if row[0] == "judge model")
    assert models[1:] == ["—", "judge-other"]

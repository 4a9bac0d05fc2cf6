"""A result of many agents: the result page's tables with a row per agent x task show ten agents a page (the
rest a click away), so the page stays light; the offline report keeps every agent."""
from __future__ import annotations

import re

from tests.conftest import element_count
from tests.kinds.agentbench.test_agentbench import AGENT_A, make_zip, runs_line, tree
from tests.kinds.agentbench.test_agentbench_pipeline import RUN, evaluate, upload

AGENTS = [f"agent-{i:02d}" for i in range(25)]  # 25 agents x 8 tasks: 200 rows per table unpaged


def table_rows(html: str, section: str) -> list[str]:
    """The agent names heading the body rows of a section's table."""
    body = html.split(f'id="{section}"', 1)[1].split("</section>", 1)[0]
    return re.findall(r'<tr><th scope="row">([^<]+)</th>', body)


def many_agents(client) -> str:
    members = tree({name: AGENT_A for name in AGENTS}, run=RUN)
    for name in AGENTS:
        members[f"{RUN}/{name}/os-std/runs.jsonl"] = runs_line(0) + runs_line(1, "agent invalid action")
    response = upload(client, make_zip(members).getvalue(), "outputs.zip")
    assert response.status_code == 201, response.get_json()
    return evaluate(client, response.get_json()["id"])["id"]


def test_the_agent_x_task_tables_show_ten_agents_a_page(client):
    evaluation_id = many_agents(client)
    first = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    endings = table_rows(first, "endings")
    assert sorted(set(endings)) == AGENTS[:10] and len(endings) == 10 * 8  # the eight tasks of each
    assert table_rows(first, "samples") == AGENTS[:10]  # os-std's runs.jsonl, one row each
    assert "Page 1 of 3" in first and "agents_page=2#endings" in first and "agents_page=0" not in first
    assert all(f"<th scope=\"row\">{name}</th>" in first for name in AGENTS)  # the scores table keeps them all

    last = client.get(f"/evaluations/{evaluation_id}?agents_page=3").get_data(as_text=True)
    assert sorted(set(table_rows(last, "endings"))) == AGENTS[20:] and "Page 3 of 3" in last
    assert "agents_page=2#samples" in last and "agents_page=4" not in last
    for wrong in ("99", "0", "x"):  # out of range or not a number: the nearest page, never an error
        assert client.get(f"/evaluations/{evaluation_id}?agents_page={wrong}").status_code == 200
    report = client.get(f"/evaluations/{evaluation_id}/report.html").get_data(as_text=True)  # every agent
    assert element_count(first) < 2000 < element_count(report) and element_count(last) < 2000


def test_the_offline_report_lists_every_agent(client):
    evaluation_id = many_agents(client)
    report = client.get(f"/evaluations/{evaluation_id}/report.html").get_data(as_text=True)
    assert sorted(set(table_rows(report, "endings"))) == AGENTS and "Page 1 of" not in report

"""The HTML pages through the Flask test client."""
from __future__ import annotations

import csv
import io
import json
import re

from kinds.figures import PLOTLY_JS_FILE
from tests.conftest import jsonl, session_line, wait_for

XSS = "<script>alert(1)</script><img src=x onerror=alert(2)></script>"


def post_file(client, data: bytes, name: str = "log.jsonl"):
    return client.post("/uploads", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")


def finished_evaluation(client, data: bytes) -> str:
    upload_id = post_file(client, data).headers["Location"].rsplit("/", 1)[-1]
    resp = client.post(f"/uploads/{upload_id}/evaluate", data={"methods": ["A", "B"]})
    assert resp.status_code == 302
    evaluation_id = resp.headers["Location"].rsplit("/", 1)[-1]
    assert wait_for(client, evaluation_id)["status"] == "done"
    return evaluation_id


def test_home_page_has_form_and_sample_link(client):
    resp = client.get("/")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert 'enctype="multipart/form-data"' in html and "/sample_data.jsonl" in html
    assert "not configured" not in html


def test_home_page_says_what_to_configure_without_judge(make_app):
    client = make_app({}).test_client()
    html = client.get("/").get_data(as_text=True)
    assert html.count("No judge is configured.") == 1 and "JUDGE_API_KEY" in html  # said once
    assert '<a href="/settings">Set up the judge in Settings</a>' in html
    settings = client.get("/settings").get_data(as_text=True)  # the banner there does not link to itself
    assert "No judge is configured." in settings and "Set up the judge in Settings" not in settings


def test_sample_data_downloads_and_validates(client):
    resp = client.get("/sample_data.jsonl")
    assert resp.status_code == 200
    assert post_file(client, resp.data, "sample_data.jsonl").status_code == 302


def test_invalid_upload_lists_problems_inline(client):
    resp = post_file(client, jsonl(session_line("a"), session_line("a")))
    assert resp.status_code == 400
    html = resp.get_data(as_text=True)
    assert "was rejected" in html and "<td>2</td>" in html and "session_id" in html


def test_upload_form_without_file(client):
    resp = client.post("/uploads", data={}, content_type="multipart/form-data")
    assert resp.status_code == 400
    assert "Choose a file" in resp.get_data(as_text=True)


def test_upload_detail_shows_summary_and_warnings(client):
    s = session_line("p", 2)
    del s["user_personality"]
    resp = post_file(client, jsonl(s))
    page = client.get(resp.headers["Location"]).get_data(as_text=True)
    assert "The file is valid." in page and "Warnings" in page and "user_personality" in page
    assert 'name="methods" value="A"' in page


def test_result_page_shows_table_charts_and_detail(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("r1", 3)))
    html = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert 'id="chart-al"' in html and 'id="chart-radar"' in html and "/vendor/plotly.min.js" in html
    assert "Pairwise differences" in html and "By round" in html and "r1" in html
    fragment = client.get(f"/evaluations/{evaluation_id}/view/session?index=0").get_data(as_text=True)
    assert "reply 1 from A" in fragment and "reasoning" in fragment and "<html" not in fragment
    assert client.get(f"/evaluations/{evaluation_id}/view/session?index=5").status_code == 404
    assert client.get("/vendor/plotly.min.js").status_code == 200


def test_result_page_while_running_shows_progress(client, judge_server):
    judge_server.latency_s = 0.5
    upload_id = post_file(client, jsonl(session_line("slow", 4))).headers["Location"].rsplit("/", 1)[-1]
    evaluation_id = client.post(f"/uploads/{upload_id}/evaluate", data={}).headers["Location"].rsplit("/", 1)[-1]
    html = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "<progress" in html and "Cancel" in html
    client.post(f"/evaluations/{evaluation_id}/cancel")
    assert wait_for(client, evaluation_id)["status"] == "cancelled"


def test_user_text_is_escaped_everywhere(client):
    s = session_line(XSS, 2, methods=("A", "B"))
    s["user_profile"] = XSS
    s["rounds"][0]["user_message"] = XSS
    s["rounds"][0]["responses"]["A"] = XSS
    evaluation_id = finished_evaluation(client, jsonl(s))
    for url in (f"/evaluations/{evaluation_id}", "/evaluations", f"/evaluations/{evaluation_id}/view/session?index=0",
                f"/evaluations/{evaluation_id}/report.html"):
        html = client.get(url).get_data(as_text=True)
        assert "<script>alert(1)" not in html and "<img src=x" not in html, url
    assert "&lt;script&gt;alert(1)" in client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)


def test_exports(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("e1", 2)))
    data = client.get(f"/evaluations/{evaluation_id}.json").get_json()
    assert data["kind"] == "dialogue" and set(data["methods"]) == {"A", "B"}
    csv_resp = client.get(f"/evaluations/{evaluation_id}.csv")
    text = csv_resp.data.decode("utf-8")
    assert text.startswith("\ufeffmethod,avg,")
    assert len(text.strip().splitlines()) == 3


def test_evaluations_list(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("l1", 2)))
    html = client.get("/evaluations").get_data(as_text=True)
    assert f"/evaluations/{evaluation_id}" in html and "done" in html


def test_language_switch_sets_cookie_and_translates(client):
    resp = client.get("/lang/zh", headers={"Referer": "http://localhost/evaluations"})
    assert resp.status_code == 302 and resp.headers["Location"].endswith("/evaluations")
    assert "lang=zh" in resp.headers["Set-Cookie"]
    html = client.get("/").get_data(as_text=True)
    assert '<html lang="zh">' in html and "上传" in html


def test_language_from_accept_language(client):
    html = client.get("/", headers={"Accept-Language": "ko-KR,ko;q=0.9"}).get_data(as_text=True)
    assert '<html lang="ko">' in html and "업로드" in html


def test_language_switch_refuses_foreign_redirect(client):
    resp = client.get("/lang/en", headers={"Referer": "http://evil.example/x"})
    assert resp.headers["Location"] == "/"


def test_unknown_pages_are_404_pages(client):
    for url in ("/evaluations/nope", "/uploads/nope", "/evaluations/nope.csv"):
        resp = client.get(url)
        assert resp.status_code == 404
        assert "Not found" in resp.get_data(as_text=True)


def test_forms_carry_csrf_tokens_and_require_them(make_app, judge_env):
    app = make_app(judge_env, WTF_CSRF_ENABLED=True)
    client = app.test_client()
    html = client.get("/").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    rejected = post_file(client, jsonl(session_line()))
    assert rejected.status_code == 400 and "Reload the page" in rejected.get_data(as_text=True)
    accepted = client.post("/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "x.jsonl"),
                                             "csrf_token": token}, content_type="multipart/form-data")
    assert accepted.status_code == 302


def test_judgments_csv_has_a_row_per_judgment_with_the_answer_and_latency(client, judge_server):
    judge_server.latency_s = 0.05
    evaluation_id = finished_evaluation(client, jsonl(session_line("j1", 2)))
    resp = client.get(f"/evaluations/{evaluation_id}/judgments.csv")
    text = resp.data.decode("utf-8")
    assert text.startswith("\ufeffsession_id,round,method,mode,status,total,style,content,naturalness,personalization,"
                           "conversation,verdict,scores,error,")
    rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    assert len(rows) == 2 * 2 * 2 and list(rows[0])[-2:] == ["latency_ms", "answer"]
    assert (rows[0]["session_id"], rows[0]["round"], rows[0]["method"], rows[0]["mode"]) == ("j1", "1", "A", "binary")
    stored = client.application.extensions["store"].judgments(evaluation_id)
    assert [r["answer"] for r in rows] == [j["answer"] for j in stored] and "\n" in rows[0]["answer"]  # the reasoning
    # The dialogue scores spread out of each judgment's stored `scores` into their columns, none left for `scores`.
    fine = [(r, j["scores"]) for r, j in zip(rows, stored) if r["mode"] == "fine"]
    assert len(fine) == 4 and all(r["style"] == str(s["style"]) and r["conversation"] == str(s["conversation"])
                                  and r["scores"] == "" for r, s in fine)
    assert all(50 <= int(r["latency_ms"]) < 10_000 for r in rows)  # the judge answered after 50 ms


def test_html_report_is_self_contained(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("h1", 2)))
    html = client.get(f"/evaluations/{evaluation_id}/report.html").get_data(as_text=True)
    assert "<script src=" not in html and '<link rel="stylesheet"' not in html  # nothing to fetch
    ours = html.replace(PLOTLY_JS_FILE.read_text(encoding="utf-8"), "")  # Plotly's own attribution links aside
    assert len(ours) < len(html) and 'src="http' not in ours and 'href="http' not in ours
    assert "Plotly.newPlot" in html and 'id="chart-al"' in html and '"al_curve"' in html
    assert 'class="best"' in html


def test_plotly_is_served_gzipped_when_accepted(client):
    import gzip
    zipped = client.get("/vendor/plotly.min.js", headers={"Accept-Encoding": "gzip, deflate"})
    assert zipped.headers["Content-Encoding"] == "gzip" and len(zipped.data) < 2 * 1024 * 1024
    assert gzip.decompress(zipped.data) == PLOTLY_JS_FILE.read_bytes()
    plain = client.get("/vendor/plotly.min.js")
    assert "Content-Encoding" not in plain.headers and plain.data == PLOTLY_JS_FILE.read_bytes()


def test_template_download_is_a_valid_file(client):
    html = client.get("/").get_data(as_text=True)
    assert "/static/dialogue_template.jsonl" in html and 'id="dropzone"' in html
    template = client.get("/static/dialogue_template.jsonl").data
    assert post_file(client, template, "template.jsonl").status_code == 302


def test_methods_in_the_query_string_narrow_the_result_page(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("m1", 2, methods=("A", "B"))))
    html = client.get(f"/evaluations/{evaluation_id}?methods=B").get_data(as_text=True)
    figures = json.loads(re.search(r'<script id="figures" type="application/json">(.*?)</script>', html, re.S).group(1))
    names = {t.get("name") for t in figures["al_curve"]["data"] if t.get("name")}
    assert names == {"B"}
    # the toggle links: showing A again gives back the full page; B cannot be hidden as the only one left
    assert f'href="/evaluations/{evaluation_id}"' in html
    assert f'href="/evaluations/{evaluation_id}?methods=B"' in html
    full = client.get(f"/evaluations/{evaluation_id}?methods=nope").get_data(as_text=True)
    assert '"name": "A"' in full and '"name": "B"' in full


def test_upload_page_lists_every_kinds_format_with_literal_paths(client):
    html = client.get("/").get_data(as_text=True)
    assert html.count("&lt;run&gt;/&lt;agent&gt;/&lt;task&gt;/overall.json") == 2  # shown as text, not eaten as tags
    assert "<run>" not in html
    formats = html[html.index("File formats"):]
    # dialogue, the kind of any file no other kind claims, first; then the others
    assert formats.index("Each line is one session") < formats.index("DailyMobility outputs")


def test_the_round_table_shows_how_many_sessions_each_round_has(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("long", 3), session_line("short", 2)))
    html = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    table = html[html.index('id="rounds"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<th scope="row">(\d+)</th><td class="n">(\d+)</td>', table)
    assert rows == [("1", "2"), ("2", "2"), ("3", "1")]
    assert 'class="n">n=' not in table  # every method has the same sessions in each round: no per-cell n


def test_upload_page_says_rounds_per_session_once_when_every_session_has_as_many(client):
    from tests.web.test_api import upload

    even = upload(client, jsonl(session_line("a", 3), session_line("b", 3))).get_json()["id"]
    uneven = upload(client, jsonl(session_line("a", 3), session_line("b", 2))).get_json()["id"]
    assert "(3 per session)" in client.get(f"/uploads/{even}").get_data(as_text=True)
    assert "(2 to 3 per session)" in client.get(f"/uploads/{uneven}").get_data(as_text=True)


def test_evaluations_list_names_methods_or_agents_and_nothing_for_other_kinds(client):
    """The "Methods or agents" column: a dialogue run's methods, an AgentBench run's agents, a dash for a mobility
    run (its file's name is not a method)."""
    from tests.kinds.agentbench.test_agentbench_pipeline import evaluate, outputs_zip, upload
    from tests.kinds.mobility.test_mobility_pipeline import add_reference, synthetic, upload_generated

    evaluate(client, upload(client, outputs_zip(), "outputs.zip").get_json()["id"])
    add_reference(client, json.dumps(synthetic(seed=1)).encode(), "ref.json", "synthetic")
    mobility = upload_generated(client, synthetic(seed=2), "my_agent.json")
    assert wait_for(client, client.post("/api/evaluations", json={"upload_id": mobility["id"], "reference": "synthetic"})
                    .get_json()["id"])["status"] == "done"
    evaluate(client, upload(client, jsonl(session_line("s1", methods=("Alpha", "Beta"))), "log.jsonl").get_json()["id"])
    html = client.get("/evaluations").get_data(as_text=True)
    # each row's title begins with its file (a default title: file · judge model or reference set · date)
    cells = {row.split("</a>")[0].rsplit(">", 1)[-1].split(" · ")[0]: re.findall(r"<td>([^<]*)</td>", row)[1]
             for row in html.split("<tr>")[2:]}
    assert cells == {"log.jsonl": "Alpha, Beta", "outputs.zip": "agent-a, agent-b", "my_agent.json": "—"}

"""Responses are gzipped when the client accepts it (issue 15, item 4): result JSON and CSV exports; never HTML
pages, which carry a CSRF token and reflect what is typed into them (BREACH)."""
from __future__ import annotations

import gzip

from tests.conftest import jsonl, session_line, wait_for
from tests.test_api import upload


def finished(client) -> str:
    upload_id = upload(client, jsonl(*(session_line(f"s{i}", 3) for i in range(6)))).get_json()["id"]
    return wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])["id"]


def test_json_csv_and_html_are_gzipped_for_clients_that_accept_it(client):
    evaluation_id = finished(client)
    for path, mimetype in ((f"/evaluations/{evaluation_id}.json", "application/json"),
                           (f"/api/evaluations/{evaluation_id}", "application/json"),
                           (f"/evaluations/{evaluation_id}/judgments.csv", "text/csv"),
                           (f"/evaluations/{evaluation_id}.csv", "text/csv"),
                           ("/static/js/result.js", "text/javascript")):
        plain = client.get(path)
        packed = client.get(path, headers={"Accept-Encoding": "gzip, deflate"})
        assert plain.status_code == packed.status_code == 200, path
        assert "Content-Encoding" not in plain.headers and plain.mimetype == mimetype
        body = plain.get_data()
        if len(body) < 1024:  # too small to be worth it
            assert "Content-Encoding" not in packed.headers, path
            continue
        assert packed.headers["Content-Encoding"] == "gzip", path
        assert "Accept-Encoding" in packed.headers.get("Vary", ""), path
        assert gzip.decompress(packed.get_data()) == body, path
        assert len(packed.get_data()) < len(body), path


def test_clients_that_do_not_accept_gzip_get_plain_bytes(client):
    evaluation_id = finished(client)
    resp = client.get(f"/evaluations/{evaluation_id}.json", headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in resp.headers and resp.get_json()["kind"] == "dialogue"


def test_pages_are_never_compressed(client):
    evaluation_id = finished(client)
    page = client.get(f"/evaluations/{evaluation_id}?q=s1", headers={"Accept-Encoding": "gzip"})
    assert page.status_code == 200 and len(page.get_data()) > 1024
    assert "Content-Encoding" not in page.headers and b'name="csrf_token"' in page.get_data()

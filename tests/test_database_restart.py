"""A PostgreSQL restart under a running dashboard: requests made while it is down get 503 with Retry-After (pages a
short translated message, the API JSON), and once it is back the same app answers again, without a restart."""
from __future__ import annotations

from tests.conftest import jsonl
from tests.services import Postgres
from tests.test_api import scored_session, upload

MESSAGE = "The database cannot be reached right now"
MESSAGE_ZH = "目前无法连接数据库"
MESSAGE_KO = "지금은 데이터베이스에 연결할 수 없습니다"


def test_requests_during_a_database_restart_get_503_and_the_app_heals_by_itself(make_app, judge_env):
    server = Postgres()  # its own server: this test stops it
    try:
        client = make_app(judge_env, DATABASE_URL=server.url()).test_client()
        upload_id = upload(client, jsonl(scored_session("s1", [50, 60], 40))).get_json()["id"]
        pages = ["/evaluations", f"/uploads/{upload_id}"]
        api = ["/api/evaluations", f"/api/uploads/{upload_id}"]
        for path in pages + api:
            assert client.get(path).status_code == 200, path

        server.stop_server()
        for path in api:
            resp = client.get(path)
            assert resp.status_code == 503, (path, resp.status_code)
            assert resp.headers["Retry-After"] == "5"
            assert MESSAGE in resp.get_json()["error"]
        for path in pages:
            resp = client.get(path)
            assert resp.status_code == 503 and resp.headers["Retry-After"] == "5"
            assert resp.mimetype == "text/html" and MESSAGE in resp.get_data(as_text=True)
        for language, message in (("zh", MESSAGE_ZH), ("ko", MESSAGE_KO)):
            resp = client.get("/evaluations", headers={"Accept-Language": language})
            assert resp.status_code == 503 and message in resp.get_data(as_text=True)
        resp = client.post("/api/evaluations", json={"upload_id": upload_id})  # a write, too
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "5"

        server.start_server()
        for path in pages + api:
            assert client.get(path).status_code == 200, path
        assert client.get(f"/api/uploads/{upload_id}").get_json()["summary"]["sessions"] == 1

        # A restart between two requests: the pooled connections are dead, and noticed before use.
        server.restart()
        for path in pages + api:
            assert client.get(path).status_code == 200, path
    finally:
        server.stop()

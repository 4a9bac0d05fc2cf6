"""client.py against a live dashboard over real HTTP (a subprocess on a free port, accounts on, a 64 KiB request
limit, the local judge server), and `flask --app app score FILE --server URL` run as a user types it."""
from __future__ import annotations

import http.server
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from client import ApiError, Client, EvaluationError
from kinds import registry
from storage.store import Store
from tests.browser_support import DashboardServer
from tests.conftest import ROOT, jsonl, marked, session_line
from tests.doc_commands import commands, substitute
from tests.judge_server import JudgeServer
from tests.web.test_paired import OTHER_JUDGE, dialogue_file, shifted_judge
from web import accounts

LIMIT = 64 * 1024  # the server's single-request limit: its chunks are half of it
SERVER_CHUNK = LIMIT // 2
DIMENSIONS = ("style", "content", "naturalness", "personalization", "conversation")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A dashboard with accounts on and a small upload limit, judging with the local judge server; a member's token."""
    folder = tmp_path_factory.mktemp("live")
    with JudgeServer() as judge:
        judge.models[OTHER_JUDGE] = (shifted_judge, None)
        server = DashboardServer(folder / "server", judge.url)
        server.config.update({"AUTH": "on", "MAX_CONTENT_LENGTH": LIMIT})
        store = Store(server.config["DATABASE"], registry.tables())
        user = accounts.create_user(store, "ci", "correct horse battery")
        _record, token = accounts.create_token(store, user["id"], "tests")
        server.start()
        try:
            yield SimpleNamespace(url=server.url, token=token, judge=judge, folder=folder, server=server)
        finally:
            server.stop()


class Recording(Client):
    """A client that notes every request it sends and can be told to lose one answer, damage one chunk, or crash."""

    def __init__(self, *args, lose_answer_of_put: int | None = None, damage_put: int | None = None,
                 crash_after_puts: int | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[str, str, int]] = []
        self.lose, self.damage, self.crash = lose_answer_of_put, damage_put, crash_after_puts

    def puts(self) -> int:
        return sum(1 for method, _path, _status in self.sent if method == "PUT")

    def _send(self, method, path, body=None, headers=None, params=None):
        number = self.puts() + 1 if method == "PUT" else None
        if number is not None and number == self.crash:
            raise KeyboardInterrupt  # the script was stopped here
        if number is not None and number == self.damage and body:
            body = bytes([body[0] ^ 1]) + body[1:]  # a bit flipped on the way: the chunk's SHA-256 no longer matches
        status, answer_headers, raw = super()._send(method, path, body, headers, params)
        self.sent.append((method, path, status))
        if number is not None and number == self.lose:
            raise ConnectionResetError("the answer was lost")  # the chunk arrived; its answer did not
        return status, answer_headers, raw


def stored_bytes(live, upload_id: str) -> bytes:
    request = urllib.request.Request(f"{live.url}/uploads/{upload_id}/file",
                                     headers={"Authorization": f"Bearer {live.token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def big_file(tmp_path: Path, sessions: int = 8) -> Path:
    """A dialogue file over the server's 64 KiB request limit (long profiles)."""
    path = tmp_path / "big.jsonl"
    path.write_bytes(jsonl(*(session_line(f"b{i}", 2, user_profile=f"profile {i} " + "x" * 12_000)
                             for i in range(sessions))))
    assert path.stat().st_size > 1.4 * LIMIT
    return path


def test_a_small_file_goes_up_in_one_post(live, tmp_path):
    path = tmp_path / "small.jsonl"
    path.write_bytes(jsonl(session_line("s1", 2)))
    client = Recording(live.url, live.token)
    upload = client.upload(path)
    assert client.sent == [("POST", "/api/uploads", 201)]
    assert upload["kind"] == "dialogue" and upload["size"] == path.stat().st_size
    assert stored_bytes(live, upload["id"]) == path.read_bytes()


def test_a_big_file_goes_up_in_chunks_above_the_threshold_or_after_a_413(live, tmp_path):
    path = big_file(tmp_path)
    size = path.stat().st_size
    chunked = Recording(live.url, live.token, chunk_threshold=16 * 1024)
    upload = chunked.upload(path)
    assert chunked.sent[0] == ("POST", "/api/uploads/chunked", 201)
    assert chunked.puts() == math.ceil(size / SERVER_CHUNK)  # the server's chunk size: half its request limit
    assert chunked.sent[-1][0::2] == ("POST", 201) and chunked.sent[-1][1].endswith("/finish")
    assert stored_bytes(live, upload["id"]) == path.read_bytes()
    assert upload["summary"]["sessions"] == 8

    small_chunks = Recording(live.url, live.token, chunk_threshold=16 * 1024, chunk_bytes=10_000)
    small_chunks.upload(path)
    assert small_chunks.puts() == math.ceil(size / 10_000)  # the client's own, smaller chunk size wins

    refused = Recording(live.url, live.token)  # under the default threshold: one POST, which the server refuses
    upload = refused.upload(path)
    assert refused.sent[0] == ("POST", "/api/uploads", 413)
    assert refused.sent[1] == ("POST", "/api/uploads/chunked", 201)
    assert stored_bytes(live, upload["id"]) == path.read_bytes()


def test_a_chunked_upload_gets_over_a_lost_answer_and_a_damaged_chunk(live, tmp_path):
    path = big_file(tmp_path)
    lost = Recording(live.url, live.token, chunk_threshold=0, lose_answer_of_put=2, backoff_s=0.01)
    upload = lost.upload(path)
    statuses = [status for method, _path, status in lost.sent if method == "PUT"]
    # the second chunk arrived but its answer was lost: sent again at the same offset, the server answers 409 with
    # where the upload stands, and the client goes on from there
    assert statuses[:3] == [200, 200, 409] and statuses[3:] == [200] * (len(statuses) - 3)
    assert stored_bytes(live, upload["id"]) == path.read_bytes()

    damaged = Recording(live.url, live.token, chunk_threshold=0, damage_put=1)
    upload = damaged.upload(path)
    assert [s for m, _p, s in damaged.sent if m == "PUT"][:2] == [400, 200]  # refused by its SHA-256, sent again
    assert stored_bytes(live, upload["id"]) == path.read_bytes()


def test_an_interrupted_chunked_upload_resumes_from_the_servers_offset(live, tmp_path):
    path = big_file(tmp_path)
    first = Recording(live.url, live.token, chunk_threshold=0, crash_after_puts=2)
    with pytest.raises(KeyboardInterrupt):
        first.upload(path)
    upload_id = first.last_chunked_id
    assert first.puts() == 1
    state = json.loads(urllib.request.urlopen(urllib.request.Request(
        f"{live.url}/api/uploads/chunked/{upload_id}", headers={"Authorization": f"Bearer {live.token}"})).read())
    assert state["offset"] == SERVER_CHUNK

    again = Recording(live.url, live.token)
    upload = again.upload(path, resume=upload_id)
    assert again.sent[0] == ("GET", f"/api/uploads/chunked/{upload_id}", 200)
    # from the server's offset, in the chunks its status names: none refused
    rest = path.stat().st_size - SERVER_CHUNK
    assert state["chunk_bytes"] == SERVER_CHUNK and rest > LIMIT
    assert [s for m, _p, s in again.sent if m == "PUT"] == [200] * -(-rest // SERVER_CHUNK)
    assert stored_bytes(live, upload["id"]) == path.read_bytes()
    with pytest.raises(ApiError) as gone:  # finished: the chunked upload is gone
        Client(live.url, live.token).upload(path, resume=upload_id)
    assert gone.value.status == 404


def test_evaluate_wait_result_judgments_compare_and_share(live, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(dialogue_file())
    client = Client(live.url, live.token, poll_s=0.05)
    upload = client.upload(path)
    started = client.evaluate(upload["id"])
    assert started["status"] == "queued" and started["url"].startswith(live.url)
    seen: list[dict] = []
    final = client.wait(started["id"], on_progress=seen.append, timeout=120)
    assert final["status"] == "done"
    total = 10 * 2 * 2 * 2  # sessions x rounds x methods x (fine score, keep-chatting verdict)
    assert [p["total"] for p in seen] == [total] * len(seen)
    done = [p["done"] for p in seen]
    assert done == sorted(done) and done[-1] == total and len(set(done)) == len(done)

    result = client.result(started["id"])
    assert result == client.status(started["id"])["result"] == final["result"]
    assert result["methods"]["A"]["avg"] == pytest.approx(47.25)  # (40+..+49 + ten 50s) / 20

    frame = client.judgments(started["id"])
    assert len(frame) == total
    for column in ("round", "total", *DIMENSIONS, "prompt_tokens", "attempts", "latency_ms"):
        assert frame[column].dtype.kind in "if", column
    assert frame["session_id"].map(type).eq(str).all()
    fine = frame[frame["total"].notna()]
    by_method = fine.groupby("method")["total"].mean()
    assert by_method["A"] == pytest.approx(47.25)
    assert by_method["B"] == pytest.approx(sum([*range(30, 40), *range(60, 70)]) / 20)
    assert (fine[list(DIMENSIONS)].sum(axis=1) == fine["total"]).all()  # the five dimensions add up to the total

    worse = client.evaluate(upload["id"], judges=[{"model": OTHER_JUDGE}])
    client.wait(worse["id"], timeout=120)
    compared = client.compare([started["id"], worse["id"]], baseline=started["id"])
    assert compared["regression"] is True and compared["baseline"] == started["id"]
    a_avg = next(r for r in compared["paired"] if r["method"] == "A" and r["metric"] == "avg")
    assert a_avg["diff"] == pytest.approx(-5.0) and a_avg["n_pairs"] == 20
    assert client.compare([started["id"], worse["id"]], max_drop=6)["regression"] is False
    # the list, searched and sorted by the server: method A's average is 5 lower under the other judge
    ranked = client.evaluations(q=OTHER_JUDGE, sort="figure-high", figure="A")
    assert [e["id"] for e in ranked] == [worse["id"]] and ranked[0]["measured_with"] == OTHER_JUDGE
    assert [e["id"] for e in client.evaluations(sort="figure-low", figure="A", per_page=1)] == [worse["id"]]
    assert [e["id"] for e in client.evaluations(sort="figure-high", figure="A", per_page=1, page=1)] == [started["id"]]
    assert {e["started_by"] for e in client.evaluations(started_by="ci")} == {"ci"}  # the token's user started them
    with pytest.raises(ApiError) as refused:
        client.evaluations(page=0)
    assert refused.value.status == 400 and "'page'" in str(refused.value)

    url = client.share(started["id"])
    assert url.startswith(f"{live.url}/share/")
    with urllib.request.urlopen(url + ".json", timeout=10) as response:  # no token: the link is the key
        assert json.loads(response.read())["methods"] == result["methods"]

    fresh = tmp_path / "fresh.jsonl"  # replies the judge cache has never seen
    fresh.write_bytes(jsonl(session_line("never-judged", 1, methods=("C",))))
    live.judge.fail_always("400")  # every judgment refused: the evaluation cannot end done
    try:
        with pytest.raises(EvaluationError) as ended:  # score(): an evaluation that does not end done is an error
            client.score(fresh, timeout=120)
    finally:
        live.judge.fail_always(None)
    assert ended.value.status["status"] in ("incomplete", "failed") and ended.value.status["id"] in str(ended.value)


def test_score_is_upload_evaluate_wait_result(live, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(session_line("s1", 2)))
    progress: list[dict] = []
    document = Client(live.url, live.token, poll_s=0.05).score(path, methods=["A"], on_progress=progress.append)
    assert list(document["methods"]) == ["A"] and progress[-1]["done"] == progress[-1]["total"] == 4


def test_accounts_on_the_token_is_needed(live):
    for token in (None, "psb_not-a-real-token"):
        with pytest.raises(ApiError) as refused:
            Client(live.url, token).compare(["a", "b"])
        assert refused.value.status == 401
    with pytest.raises(ApiError) as unknown:
        Client(live.url, live.token).compare(["a", "b"])
    assert unknown.value.status == 404 and "a, b" in unknown.value.message


def test_a_rejected_file_is_an_api_error_with_its_problems(live, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl(session_line("x")) + b"[1, 2]\n")
    with pytest.raises(ApiError) as rejected:
        Client(live.url, live.token).upload(path)
    error = rejected.value
    assert error.status == 400 and error.problems and error.problems[0]["line"] == 2
    assert "line 2" in str(error) and error.problems[0]["message"] in str(error)
    big = big_file(tmp_path).read_bytes() + b"[1, 2]\n"  # the same problem found after a chunked upload
    (tmp_path / "big-bad.jsonl").write_bytes(big)
    with pytest.raises(ApiError) as chunked:
        Client(live.url, live.token, chunk_threshold=0).upload(tmp_path / "big-bad.jsonl")
    assert chunked.value.status == 400 and chunked.value.problems[0]["line"] == 9


def test_rubrics_are_listed_read_added_and_evaluated_under(live, tmp_path):
    from tests.kinds.dialogue.test_rubric_pages import LAB, lab

    store = Store(live.server.config["DATABASE"], registry.tables())
    admin = accounts.create_user(store, "rubric-admin", "correct horse battery", is_admin=True)
    _record, admin_token = accounts.create_token(store, admin["id"], "rubrics")
    (tmp_path / "lab.yaml").write_bytes(lab())
    (tmp_path / "broken.yaml").write_bytes(lab(**{"combine: weighted": "combine: mean"}))
    member, client = Client(live.url, live.token), Client(live.url, admin_token)
    with pytest.raises(ApiError) as refused:  # a member reads rubrics, an admin adds them
        member.add_rubric(tmp_path / "lab.yaml")
    assert refused.value.status == 403 and refused.value.message == "Only an administrator can change this."
    with pytest.raises(ApiError) as broken:
        client.add_rubric(tmp_path / "broken.yaml")
    assert broken.value.status == 400 and broken.value.problems == [
        {"line": 28, "path": "headline.weights", "message": "Weights go with combine: weighted."}]
    assert "line 28 headline.weights: Weights go with combine: weighted." in str(broken.value)
    assert LAB not in [r["id"] for r in member.rubrics()]

    added = client.add_rubric(tmp_path / "lab.yaml")
    assert (added["id"], added["version"], added["builtin"]) == (LAB, "1", False)
    assert [r["id"] for r in member.rubrics()][-1] == LAB
    assert member.rubric(added["sha256"])["document"]["headline"] == {"combine": "weighted", "weights": {
        "coherence": 1, "profile_fit": 2, "tone_fit": 1}}
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(marked(session_line("r1", 2, ("A", "B")), "[[dims=6,6,6]]")))
    upload = member.upload(path)
    final = member.wait(member.evaluate(upload["id"], rubric=LAB)["id"], timeout=60)
    assert final["status"] == "done" and final["result"]["rubric"]["sha256"] == added["sha256"]
    assert final["result"]["methods"]["A"]["dimensions"] == {"profile_fit": 6.0, "tone_fit": 6.0, "coherence": 6.0}


def test_peoples_ratings_are_added_read_exported_and_deleted(live, tmp_path):
    client = Client(live.url, live.token, poll_s=0.05)
    path = tmp_path / "log.jsonl"
    path.write_bytes(dialogue_file())
    evaluation_id = client.score(path, timeout=120)["evaluation_id"]
    # alice gives round 1's replies the judge's own totals (A: 40 + i, B: 30 + i), bob the reverse order on A's
    people = tmp_path / "people.csv"
    people.write_text("rater,session_id,round,method,total\n" + "".join(
        f"alice,s{i},1,A,{40 + i}\nalice,s{i},1,B,{30 + i}\nbob,s{i},1,A,{60 - i}\n" for i in range(5)),
                      encoding="utf-8")
    added = client.add_ratings(evaluation_id, people)
    assert (added["attached"], added["raters"], added["ratings"], added["replies"]) == (15, ["alice", "bob"], 15, 10)
    assert added["agreement"]["by_rater"]["judge-test"]["total"]["spearman"]["n"] == 10
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(json.dumps({"session_id": "s0", "round": 2, "method": "B", "binary": 0}) + "\n",
                        encoding="utf-8")
    assert client.add_ratings(evaluation_id, verdicts, rater="carol")["raters"] == ["carol"]
    everyone = client.ratings(evaluation_id)
    assert [(r["rater"], r["ratings"]) for r in everyone["raters"]] == [("alice", 10), ("bob", 5), ("carol", 1)]
    [carol] = client.ratings(evaluation_id, rater="carol")["ratings"]
    assert set(carol) == {"rater", "session_id", "round", "method", "total", "verdict", "source", "line",
                          "updated_at"}
    assert [carol[k] for k in ("rater", "session_id", "round", "method", "total", "verdict", "source", "line")] == [
        "carol", "s0", 2, "B", None, 0, "file", 1]
    text = client.export_ratings(evaluation_id, tmp_path / "bob.jsonl", format="jsonl", rater="bob")
    assert (tmp_path / "bob.jsonl").read_text(encoding="utf-8") == text
    assert [json.loads(line)["total"] for line in text.splitlines()] == [60.0, 59.0, 58.0, 57.0, 56.0]
    assert client.export_ratings(evaluation_id).splitlines()[0] == "rater,session_id,round,method,total,binary," \
        "style,content,naturalness,personalization,conversation"
    removed = client.delete_ratings(evaluation_id, rater="bob")
    assert removed["ratings"] == 11 and removed["rescore"]["status"] == "done"
    assert removed["agreement"]["by_rater"]["judge-test"]["total"]["spearman"]["n"] == 10  # alice's replies left
    started = client.add_ratings(evaluation_id, verdicts, rater="carol", wait=False)
    assert started["rescore"]["status"] in ("queued", "running", "done") and "agreement" not in started
    assert client.wait_rescored(evaluation_id, timeout=60)["status"] == "done"
    with pytest.raises(ApiError) as missing:
        client.delete_ratings(evaluation_id, rater="bob")
    assert missing.value.status == 404 and missing.value.message == "There are no ratings by bob."
    people.write_text("session_id,round,method,total\ns0,1,A,500\n", encoding="utf-8")
    with pytest.raises(ApiError) as refused:
        client.add_ratings(evaluation_id, people)
    assert refused.value.status == 400 and "line 2 total: Line 2: 'total' must be a number" in str(refused.value)
    emptied = client.delete_ratings(evaluation_id)
    assert emptied["ratings"] == 0 and emptied["agreement"] is None and client.ratings(evaluation_id)["raters"] == []


# -- the HTTP rules, against small servers of the test's own --------------------------------------------------

class Scripted(http.server.ThreadingHTTPServer):
    """A server that answers each request with the next of `answers` ((status, headers, body)), noting them."""

    def __init__(self, answers: list[tuple[int, dict, bytes]]) -> None:
        self.answers, self.seen = list(answers), []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                outer.seen.append((self.command, self.path, self.headers.get("Authorization")))
                status, headers, body = outer.answers.pop(0) if outer.answers else (200, {}, b"{}")
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


def test_the_token_never_follows_a_redirect_to_another_server():
    with Scripted([]) as elsewhere, Scripted([]) as server:
        server.answers = [(302, {"Location": f"{elsewhere.url}/api/compare"}, b""),
                          (302, {"Location": "/api/moved"}, b""), (200, {}, b'{"ok": true}')]
        client = Client(server.url, "psb_secret")
        with pytest.raises(ApiError) as redirected:
            client.compare(["a", "b"])
        assert redirected.value.status == 302 and elsewhere.url in redirected.value.message
        assert elsewhere.seen == []
        assert client.compare(["a", "b"]) == {"ok": True}  # within the same server it is followed
        assert [s[1].split("?")[0] for s in server.seen[1:]] == ["/api/compare", "/api/moved"]
        assert {s[2] for s in server.seen} == {"Bearer psb_secret"}


def test_503_is_retried_after_retry_after_for_gets_only():
    unavailable = (503, {"Retry-After": "0"}, b'{"error": "The database cannot be reached right now"}')
    as_date = (503, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, unavailable[2])  # in the past: at once
    unreadable = (503, {"Retry-After": "soon"}, unavailable[2])  # the client's own backoff
    with Scripted([unavailable, as_date, unreadable, (200, {}, b'{"id": "e1", "status": "done"}')]) as server:
        assert Client(server.url, backoff_s=0.01).status("e1") == {"id": "e1", "status": "done"}
        assert len(server.seen) == 4
    with Scripted([unavailable] * 5) as server:  # a few times only
        with pytest.raises(ApiError) as still:
            Client(server.url, retries=2).status("e1")
        assert still.value.status == 503 and len(server.seen) == 3
    with Scripted([unavailable, (202, {}, b'{"id": "e2"}')]) as server:
        with pytest.raises(ApiError) as refused:  # a POST that may have been applied is never sent again
            Client(server.url).evaluate("u1")
        assert refused.value.status == 503 and "database" in refused.value.message
        assert len(server.seen) == 1


def test_a_refused_connection_is_retried_then_reported(tmp_path):
    from tests.browser_support import free_port

    client = Client(f"http://127.0.0.1:{free_port()}", retries=2, backoff_s=0.01)
    with pytest.raises(ApiError) as unreachable:
        client.evaluate("u1")
    assert unreachable.value.status is None and "cannot reach" in unreachable.value.message


# -- the CLI's remote mode, run as typed --------------------------------------------------------------------------

def cli_env(tmp_path: Path, judge_url: str | None = None, **extra: str) -> dict:
    """The environment of a `flask` command in the repository with a store of the test's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "DATABASE", "CELERY_", "UPLOAD_",
                                                                    "RESULTS_", "STORAGE_", "AUTH", "PSB_"))}
    env.update({"INSTANCE_PATH": str(tmp_path / "instance"), "DATABASE": str(tmp_path / "cli.sqlite"),
                "UPLOAD_FOLDER": str(tmp_path / "uploads"), "RESULTS_FOLDER": str(tmp_path / "results"), **extra})
    if judge_url:
        env.update({"JUDGE_BASE_URL": judge_url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test"})
    return env


def flask(command: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, text=True, capture_output=True, timeout=300)


def test_remote_mode_writes_the_same_result_as_local_mode(live, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(dialogue_file())
    remote = flask(f"flask --app app score {path} --server {live.url} --token {live.token} "
                   f"--out {tmp_path / 'remote.json'}", cli_env(tmp_path))
    assert remote.returncode == 0, remote.stderr
    assert "80/80 judged" in remote.stderr and f"result written to {tmp_path / 'remote.json'}" in remote.stderr
    local = flask(f"flask --app app score {path} --out {tmp_path / 'local.json'}", cli_env(tmp_path, live.judge.url))
    assert local.returncode == 0, local.stderr
    remote_doc, local_doc = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("remote", "local"))
    assert remote_doc["kind"] == local_doc["kind"] == "dialogue"
    assert remote_doc["methods"] == local_doc["methods"] and remote_doc["methods"]["A"]["avg"] == 47.25
    remote_id = next(line.split()[1] for line in remote.stderr.splitlines() if line.startswith("evaluation "))
    assert Client(live.url, live.token).result(remote_id) == remote_doc

    # the token from PSB_TOKEN (out of the command line); the document on stdout without --out
    quiet = flask(f"flask --app app score {path} --server {live.url} --methods A", cli_env(tmp_path, PSB_TOKEN=live.token))
    assert quiet.returncode == 0, quiet.stderr
    assert list(json.loads(quiet.stdout)["methods"]) == ["A"]


def test_remote_mode_attaches_peoples_ratings_once_judged(live, tmp_path):
    path, people = tmp_path / "log.jsonl", tmp_path / "people.csv"
    path.write_bytes(dialogue_file())
    people.write_text("session_id,round,method,total\ns0,1,A,40\ns1,1,B,60\ns2,2,A,55\n", encoding="utf-8")
    env = cli_env(tmp_path, PSB_TOKEN=live.token)
    rated = flask(f"flask --app app score {path} --server {live.url} --ratings {people} --rater dana", env)
    assert rated.returncode == 0, rated.stderr
    assert "People's ratings of people.csv attached; the evaluation was scored again." in rated.stderr
    assert json.loads(rated.stdout)["agreement"]["human"]["ratings"] == 3  # the result scored again is printed
    evaluation_id = next(line.split()[1] for line in rated.stderr.splitlines() if line.startswith("evaluation "))
    assert [(r["rater"], r["ratings"]) for r in Client(live.url, live.token).ratings(evaluation_id)["raters"]] == [
        ("dana", 3)]
    people.write_text("session_id,round,method,total\ns0,1,A,500\n", encoding="utf-8")
    refused = flask(f"flask --app app score {path} --server {live.url} --ratings {people}", env)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.splitlines()[-2:] == [
        f"{people}: line 2 total: Line 2: 'total' must be a number from 0 to 100, found 500.",
        "The ratings file has problems; nothing was attached."]


def test_remote_mode_gates_like_local_mode(live, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(dialogue_file())
    env = cli_env(tmp_path, PSB_TOKEN=live.token)
    first = flask(f"flask --app app score {path} --server {live.url}", env)
    assert first.returncode == 0, first.stderr
    baseline = next(line.split()[1] for line in first.stderr.splitlines() if line.startswith("evaluation "))

    same = flask(f"flask --app app score {path} --server {live.url} --baseline {baseline} --fail-on-regression", env)
    assert same.returncode == 0, same.stderr
    assert f"Paired differences against {baseline}:" in same.stderr and "regression:" not in same.stderr

    worse = flask(f"flask --app app score {path} --server {live.url} --judge-model {OTHER_JUDGE} "
                  f"--baseline {baseline} --fail-on-regression --metric avg", env)
    assert worse.returncode == 1, worse.stderr
    assert "regression: A avg -5.000, 95% CI [-5.000, -5.000]" in worse.stderr and "regression: B" not in worse.stderr
    json.loads(worse.stdout)  # the result document is still printed

    tolerated = flask(f"flask --app app score {path} --server {live.url} --judge-model {OTHER_JUDGE} "
                      f"--baseline {baseline} --fail-on-regression --max-drop 6", env)
    assert tolerated.returncode == 0, tolerated.stderr

    low = flask(f"flask --app app score {path} --server {live.url} --fail-below avg=48", env)
    assert low.returncode == 1 and "below threshold: A avg 47.250 < 48.0" in low.stderr


def test_remote_mode_imports_scores_as_local_mode_does(live, tmp_path):
    path, scores = tmp_path / "log.jsonl", tmp_path / "scores.csv"
    path.write_bytes(jsonl(*(session_line(f"r{i}", 2) for i in range(3))))
    given = {(i, k, m): 10 * i + k + 0.5 * (m == "B") for i in range(3) for k in (1, 2) for m in "AB"}
    scores.write_text("session_id,round,method,total\n" + "".join(f"r{i},{k},{m},{v}\n" for (i, k, m), v in given.items()))
    asked = live.judge.requests
    remote = flask(f"flask --app app score {path} --server {live.url} --scores {scores} --out {tmp_path / 'remote.json'}",
                   cli_env(tmp_path, PSB_TOKEN=live.token))
    assert remote.returncode == 0, remote.stderr
    local = flask(f"flask --app app score {path} --scores {scores} --out {tmp_path / 'local.json'}", cli_env(tmp_path))
    assert local.returncode == 0, local.stderr  # no judge configured: none is needed
    remote_doc, local_doc = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("remote", "local"))
    assert remote_doc["methods"] == local_doc["methods"]
    for method in "AB":  # AVG: the mean over the rounds of the mean over the sessions
        rounds = [sum(given[(i, k, method)] for i in range(3)) / 3 for k in (1, 2)]
        assert remote_doc["methods"][method]["avg"] == pytest.approx(sum(rounds) / 2)
    assert remote_doc["provenance"]["scores"]["filename"] == "scores.csv" and remote_doc["provenance"]["judges"] == []
    assert live.judge.requests == asked

    scores.write_text(scores.read_text().replace("r1,2,B,12.5\n", ""))
    refused = flask(f"flask --app app score {path} --server {live.url} --scores {scores}",
                    cli_env(tmp_path, PSB_TOKEN=live.token))
    assert refused.returncode == 1, refused.stderr
    assert (f'{scores}: file: The upload\'s line 2 (session "r1"), round 2: the reply of "B" has no scores'
            in refused.stderr)


@pytest.mark.parametrize("args, code, message", [
    ("--baseline nope", 2, "No evaluation has the id nope."),
    ("--max-drop 2", 2, "--max-drop needs --baseline."),
    ("--methods Nope", 2, "Unknown methods: Nope"),
    ("--reference app.py", 2, "--reference applies to mobility uploads only."),
])
def test_remote_mode_refuses_what_local_mode_refuses(live, tmp_path, args, code, message):
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(session_line("s1", 2)))
    done = flask(f"flask --app app score {path} --server {live.url} {args}", cli_env(tmp_path, PSB_TOKEN=live.token))
    assert done.returncode == code and message in done.stderr, done.stderr


def test_remote_mode_errors_are_clear(live, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl(session_line("x")) + b"[1, 2]\n")
    env = cli_env(tmp_path)
    rejected = flask(f"flask --app app score {bad} --server {live.url} --token {live.token}", env)
    assert rejected.returncode == 1 and f"{bad}: line 2" in rejected.stderr and rejected.stdout == ""
    no_token = flask(f"flask --app app score {bad} --server {live.url}", env)
    assert no_token.returncode == 2 and "401" in no_token.stderr
    alone = flask(f"flask --app app score {bad} --token {live.token}", env)
    assert alone.returncode == 2 and "--token needs --server" in alone.stderr
    assert live.token not in alone.stderr + rejected.stderr + no_token.stderr


# -- docs/client.md, run as written ---------------------------------------------------------------------------------

CLIENT_PAGE = ROOT / "docs" / "client.md"


def doc_workspace(tmp_path: Path) -> Path:
    """A working folder with the file the examples name."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "sample_data.jsonl", work)
    return work


def test_the_notebook_example_runs_as_written(live, tmp_path):
    blocks = re.findall(r"^```python\n(.*?)^```", CLIENT_PAGE.read_text(encoding="utf-8"), flags=re.S | re.M)
    assert len(blocks) == 4
    env = cli_env(tmp_path, PSB_URL=live.url, PSB_TOKEN=live.token, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", "\n".join(blocks)], cwd=doc_workspace(tmp_path), env=env,
                          text=True, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "dialogue 8 sessions"
    progress = [line for line in lines if line.endswith(" judged")]
    sessions = [json.loads(line) for line in (ROOT / "sample_data.jsonl").read_text(encoding="utf-8").splitlines()]
    total = sum(len(s["rounds"]) for s in sessions) * 2 * 2  # rounds x the 2 methods x (score, verdict)
    assert progress[-1] == f"{total}/{total} judged"
    assert lines[len(progress) + 1].startswith("done {'Base': ")
    assert "regression: False" in lines and any(line.startswith(f"{live.url}/share/") for line in lines)
    rejected = next(i for i, line in enumerate(lines) if line.startswith("400 The file was rejected"))
    problems = lines[rejected + 1:]
    assert problems and all(line.startswith("line 1 ") for line in problems)
    assert "line 1 user_profile: Line 1: 'user_profile' is missing; add it as a string." in problems


def test_the_remote_mode_commands_run_as_written(live, tmp_path):
    work = doc_workspace(tmp_path)
    env = cli_env(tmp_path, PYTHONPATH=str(ROOT))
    evaluations: list[str] = []
    steps = commands(CLIENT_PAGE, "The CLI's remote mode")
    assert len(steps) == 3 and steps[0].startswith("export PSB_TOKEN=")
    for step in steps:
        step = substitute(step, {"http://lab-server.example:5000": live.url,
                                 "psb_your_token_from_the_account_page": live.token})
        step = step.replace("EVAL_ID", evaluations[0]) if evaluations else step
        if step.startswith("export "):  # kept for the next commands, as in the shell that typed it
            done = subprocess.run(["bash", "-c", f"{step} && env -0"], env=env, capture_output=True, timeout=30)
            env = dict(item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
            continue
        done = subprocess.run(["bash", "-c", step], cwd=work, env=env, text=True, capture_output=True, timeout=300)
        assert done.returncode == 0, f"{step}\n{done.stderr}"
        evaluations += re.findall(r"^evaluation (\w+)$", done.stderr, flags=re.M)
    assert env["PSB_TOKEN"] == live.token and len(evaluations) == 2
    document = json.loads((work / "result.json").read_text(encoding="utf-8"))
    assert document == Client(live.url, live.token).result(evaluations[0])
    assert f"Paired differences against {evaluations[0]}:" in done.stderr


def test_remote_mode_refuses_a_local_reference_path(live, tmp_path):
    from tests.kinds.mobility.test_mobility_pipeline import synthetic

    generated = tmp_path / "generated.json"
    generated.write_text(json.dumps(synthetic(seed=2)))
    done = flask(f"flask --app app score {generated} --kind mobility --reference {tmp_path} --server {live.url}",
                 cli_env(tmp_path, PSB_TOKEN=live.token))
    assert done.returncode == 2 and "--reference with a path works locally only" in done.stderr, done.stderr


def test_an_error_names_each_problem_by_its_line_or_field():
    error = ApiError(400, "The field 'judge.temperature' is wrong: ...", [
        {"path": "judge.temperature", "message": "Input should be a valid number"},
        {"line": 3, "path": "rounds[0]", "message": "missing"}, {"message": "empty file"}])
    assert str(error).splitlines() == ["The field 'judge.temperature' is wrong: ... (HTTP 400)",
                                       "  judge.temperature: Input should be a valid number",
                                       "  line 3 rounds[0]: missing", "  file: empty file"]

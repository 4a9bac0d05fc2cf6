"""`flask --app app ratings add|export` as a user types them (click's runner on the app, as the rubrics commands are
tested; docs/ratings.md's commands run as subprocesses in tests/test_docs_ratings.py): what was attached and the
agreement headline, problems by line with exit status 1, a request that cannot be served with 2, and the round trip
of an export added back."""
from __future__ import annotations

from tests.conftest import wait_rescored
from tests.kinds.dialogue.test_people_ratings import finished, kept, table

PEOPLE = table([("rater", "session_id", "round", "method", "total", "binary"), ("alice", "s0", 1, "A", 70, 1),
                ("alice", "s1", 2, "B", 35.5, 0), ("bob", "s0", 1, "A", 60, 1), ("bob", "s2", 1, "B", 20, None)])


def test_add_prints_what_was_attached_and_the_agreement(client, runner, judge_server, tmp_path):
    evaluation_id = finished(client)
    path = tmp_path / "people.csv"
    path.write_text(PEOPLE, encoding="utf-8")
    added = runner.invoke(args=["ratings", "add", evaluation_id, str(path)])
    assert added.exit_code == 0, added.output
    lines = added.stdout.splitlines()
    assert lines[0] == (f"Attached 4 ratings by alice, bob to evaluation {evaluation_id}; it has 4 ratings of 3 "
                        "replies now.")
    human = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["agreement"]["human"]
    rho, kappa = human["by_rater"]["judge-test"]["total"]["spearman"], human["by_rater"]["judge-test"]["binary"]["kappa"]
    assert lines[1] == "Agreement with people, over 3 replies in 3 sessions:"

    def shown(figure: dict) -> str:
        number = "—" if figure["value"] is None else f"{figure['value']:.2f}"
        return number if figure["low"] is None else f"{number} [{figure['low']:.2f}, {figure['high']:.2f}]"

    assert lines[2] == f"  judge-test: total: Spearman's rho {shown(rho)}; yes/no: Cohen's kappa {shown(kappa)}"
    assert len(lines) == 3

    # rows without a rater column are --rater's; carol's file replaces nobody else's
    carol = tmp_path / "mine.csv"
    carol.write_text("session_id,round,method,total\ns1,1,A,10\n", encoding="utf-8")
    added = runner.invoke(args=["ratings", "add", evaluation_id, str(carol), "--rater", "carol"])
    assert added.exit_code == 0, added.output
    assert added.stdout.startswith(f"Attached 1 ratings by carol to evaluation {evaluation_id}; it has 5 ratings of "
                                   "4 replies now.\n")
    assert [r[0] for r in kept(client, evaluation_id)] == ["alice", "alice", "bob", "bob", "carol"]


def test_add_refuses_a_file_by_line_and_an_evaluation_it_cannot_take(client, runner, judge_server, tmp_path):
    evaluation_id = finished(client)
    path = tmp_path / "people.csv"
    path.write_text("session_id,round,method,total,comment\ns0,1,A,500,x\ns0,1,Z,50,y\n", encoding="utf-8")
    refused = runner.invoke(args=["ratings", "add", evaluation_id, str(path)])
    assert refused.exit_code == 1 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        f"{path}: line 2 total: Line 2: 'total' must be a number from 0 to 100, found 500.",
        f"{path}: line 3 method: Line 3: method \"Z\" is not one of this evaluation's: A, B.",
        "The ratings file has problems; nothing was attached."]
    assert kept(client, evaluation_id) == []
    path.write_text("session_id,round,method,total\ns0,1,A,50\n", encoding="utf-8")
    unknown = runner.invoke(args=["ratings", "add", "nope", str(path)])
    assert unknown.exit_code == 2 and unknown.stderr == "error: There is no evaluation nope.\n"
    client.application.extensions["store"].set_status(evaluation_id, "running")
    running = runner.invoke(args=["ratings", "add", evaluation_id, str(path)])
    assert running.exit_code == 2
    assert running.stderr == "error: Attach people's ratings once the evaluation has finished.\n"
    assert runner.invoke(args=["ratings", "add", evaluation_id, str(tmp_path / "none.csv")]).exit_code == 2
    assert runner.invoke(args=["ratings", "export", "nope"]).exit_code == 2


def test_export_and_add_back_is_a_round_trip(client, runner, judge_server, tmp_path):
    evaluation_id = finished(client)
    (tmp_path / "people.csv").write_text(PEOPLE, encoding="utf-8")
    assert runner.invoke(args=["ratings", "add", evaluation_id, str(tmp_path / "people.csv")]).exit_code == 0
    before = kept(client, evaluation_id)
    url = f"/api/evaluations/{evaluation_id}/human-ratings"
    exported = runner.invoke(args=["ratings", "export", evaluation_id])
    assert exported.exit_code == 0  # the bytes written, CSV's line ends (\r\n) as they are
    assert exported.stdout_bytes.decode("utf-8") == client.get(f"{url}?format=csv").get_data(as_text=True)
    assert exported.stdout.splitlines()[:2] == ["rater,session_id,round,method,total,binary,style,content,"
                                                "naturalness,personalization,conversation",
                                                "alice,s0,1,A,70.0,1,,,,,"]
    out = tmp_path / "all.jsonl"
    written = runner.invoke(args=["ratings", "export", evaluation_id, "--format", "jsonl", "--output", str(out)])
    assert written.exit_code == 0 and written.stdout == "" and written.stderr == f"4 ratings written to {out}\n"
    assert out.read_text(encoding="utf-8") == client.get(f"{url}?format=jsonl").get_data(as_text=True)
    bob = runner.invoke(args=["ratings", "export", evaluation_id, "--rater", "bob", "--format", "jsonl"])
    assert bob.stdout.splitlines() == ['{"rater": "bob", "session_id": "s0", "round": 1, "method": "A", "total": '
                                       '60.0, "binary": 1}',
                                       '{"rater": "bob", "session_id": "s2", "round": 1, "method": "B", "total": '
                                       '20.0}']
    assert client.delete(url).get_json()["ratings"] == 0
    assert wait_rescored(client, evaluation_id)["status"] == "done"
    again = runner.invoke(args=["ratings", "add", evaluation_id, str(out)])
    assert again.exit_code == 0, again.output
    assert kept(client, evaluation_id) == before

"""The judge's circuit breaker (judge/breaker.py) driven through Judge.run against the local server: one call at a
time until the endpoint answers, none after an answer no retry changes or CONNECTION_FAILURES failed connections in
a row, and passing faults (timeouts, 429, 5xx, fewer dropped connections) retried as ever."""
from __future__ import annotations

import socket

import pytest

from judge import CONNECTION_FAILURES, Breaker, Breakers, EndpointDown, Judge, JudgeConfig, Prompt
from judge import breaker as breaker_module
from tests.judge_server import JudgeServer

FAST = {"max_retries": 3, "timeout_s": 0.5, "retry_base_s": 0.01, "retry_max_s": 0.05, "concurrency": 8}


def prompts(n: int) -> list[tuple[int, Prompt]]:
    """n distinct prompts the local server answers "OK" to (mode "other"), each tagged with its number."""
    return [(i, Prompt([{"role": "user", "content": f"Say OK ({i})."}], parse=lambda text: ({}, None), version="t"))
            for i in range(n)]


def run(config: JudgeConfig, n: int, breaker: Breaker) -> tuple[list, EndpointDown | None]:
    """The (tag, verdict) pairs a breaker-guarded run of n prompts yields, and the EndpointDown it ends with."""
    got: list = []
    try:
        with Judge(config, breaker=breaker) as judge:
            got.extend(judge.run(prompts(n)))
    except EndpointDown as exc:
        return got, exc
    return got, None


def guarded(server: JudgeServer, n: int, **settings) -> tuple[list, EndpointDown | None, Breaker]:
    config = JudgeConfig(base_url=server.url, api_key="sk-breaker-key", **{**FAST, **settings})
    breaker = Breakers().of(config)
    got, down = run(config, n, breaker)
    return got, down, breaker


@pytest.mark.parametrize("status", ["401", "403", "404"])
def test_an_answer_no_retry_changes_stops_the_run_after_the_probe(judge_server, status):
    judge_server.fail_always(status)
    got, down, breaker = guarded(judge_server, 50)
    assert judge_server.requests == 1 and judge_server.max_in_flight == 1  # the probe went alone
    assert got == []  # the refused judgment is the endpoint's failure, not its own: left for the next run
    assert down is not None and str(down) == breaker.reason and f"HTTP {status}" in str(down)
    assert "sk-breaker-key" not in str(down)


def test_connections_dropped_in_a_row_stop_the_run_one_call_at_a_time(judge_server):
    judge_server.fail_always("drop")
    got, down, _breaker = guarded(judge_server, 50)
    assert judge_server.requests == CONNECTION_FAILURES and judge_server.max_in_flight == 1
    assert got == [] and f"{CONNECTION_FAILURES} calls in a row could not reach it" in str(down)


def test_a_closed_port_stops_the_run():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = JudgeConfig(base_url=f"http://127.0.0.1:{port}/v1", **FAST)
    got, down = run(config, 50, Breakers().of(config))
    assert got == [] and "connection refused at http://127.0.0.1:" in str(down)


def test_once_answered_the_calls_go_out_together_and_a_later_refusal_stops_them(judge_server):
    judge_server.latency_s = 0.05
    judge_server.fail_next(1, "401", match=lambda request: "(30)" in str(request["body"]))
    got, down, _breaker = guarded(judge_server, 200)
    assert judge_server.max_in_flight > 1  # after the probe's answer, the endpoint's concurrency
    assert down is not None and "HTTP 401" in str(down)
    # the answers that came are yielded, the calls in flight when the 401 came back finished, nothing started after
    assert all(v.status == "ok" for _tag, v in got) and 30 <= len(got) < 200
    assert judge_server.requests <= len(got) + 1 + 2 * FAST["concurrency"], (judge_server.requests, len(got))


@pytest.mark.parametrize("kind", ["429", "500", "503", "timeout"])
def test_passing_faults_never_open_it(judge_server, kind):
    judge_server.retry_after_s = 0.01
    judge_server.hang_s = 1.0
    judge_server.fail_next(CONNECTION_FAILURES + 2, kind)  # more in a row than connection failures trip on
    got, down, breaker = guarded(judge_server, 20, max_retries=CONNECTION_FAILURES + 2)
    assert down is None and not breaker.open and breaker.reached
    assert len(got) == 20 and all(v.status == "ok" for _tag, v in got)


def test_fewer_connection_failures_in_a_row_than_the_limit_heal(judge_server):
    judge_server.fail_next(CONNECTION_FAILURES - 1, "drop")
    got, down, _breaker = guarded(judge_server, 20)
    assert down is None and len(got) == 20 and all(v.status == "ok" for _tag, v in got)
    assert judge_server.requests == 20 + CONNECTION_FAILURES - 1


def test_a_run_probes_each_endpoint_model_and_key_once(judge_server):
    breakers = Breakers()
    config = JudgeConfig(base_url=judge_server.url, api_key="sk-a", model="m1", **FAST)
    assert breakers.of(config) is breakers.of(JudgeConfig(base_url=judge_server.url + "/", api_key="sk-a",
                                                          model="m1", **FAST))
    assert breakers.of(config) is not breakers.of(JudgeConfig(base_url=judge_server.url, api_key="sk-a",
                                                              model="m2", **FAST))
    breaker = breakers.of(config)
    run(config, 5, breaker)
    assert breaker.reached and judge_server.requests == 5
    judge_server.latency_s = 0.05
    run(config, 20, breaker)  # a second block of the same run: no probe, the calls go out together at once
    assert judge_server.max_in_flight > 1


def test_a_runs_breakers_are_recent_while_every_endpoint_answered_within_probed_s(judge_server, monkeypatch):
    # what lets a process's next block of the run go on without a probe (tests/pipeline/test_dead_judge.py)
    config = JudgeConfig(base_url=judge_server.url, api_key="sk-a", model="m1", **FAST)
    breakers = Breakers()
    assert not breakers.recent()  # nothing asked yet: the run's first block probes
    run(config, 3, breakers.of(config))
    assert breakers.recent()
    monkeypatch.setattr(breaker_module, "PROBED_S", 0.0)
    assert not breakers.recent()  # answered too long ago: probed again


def test_the_manual_says_what_opens_the_breaker():
    from judge import DEAD_STATUSES
    from tests.conftest import ROOT

    text = " ".join((ROOT / "docs" / "judge.md").read_text(encoding="utf-8").split())
    first, second, last = sorted(DEAD_STATUSES)
    assert f"an HTTP {first}, {second} or {last} of the chat path" in text
    assert f"or on {CONNECTION_FAILURES} calls in a row whose connection failed" in text

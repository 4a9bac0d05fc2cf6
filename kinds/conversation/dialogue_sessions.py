"""A session of a dialogue file (the JSON Lines the dashboard's simulations write, docs/formats.md) read as
conversations: one per method, the user's messages and that method's replies, a simulated ("agent") user.

So the behaviour labeller (labeller.py) and the comparison with real people (humanness.py) work on a simulation's
file: upload it as this kind (`--kind conversation`, or the API's `kind`). The conversation's path is the session's
label and the method ("sim.jsonl:3#method-a"); its task is the session's `task` when it has one, else SIMULATED_TASK.
"""
from __future__ import annotations

from typing import Callable

from kinds.problems import describe
from translations import _

SIMULATED_TASK = "simulation"
SEPARATOR = "#"  # between a session's label and the method in a conversation's path


def is_session(value: object) -> bool:
    """Whether a parsed JSON value is a dialogue session (`rounds`, no `history`)."""
    return isinstance(value, dict) and "rounds" in value and "history" not in value


def histories(value: dict, problem: Callable[[str, str], None]) -> dict[str, list[dict]] | None:
    """Each method's conversation history of one session, in the order its first round names them; None after
    reporting what is wrong (`problem(json path, message)`)."""
    rounds = value["rounds"]
    if not isinstance(rounds, list) or not rounds:
        problem("rounds", _("'rounds' must be a non-empty list of rounds, found %(found)s.", found=describe(rounds)))
        return None
    methods: list[str] = []
    found: dict[str, list[dict]] = {}
    for i, rnd in enumerate(rounds):
        where = f"rounds[{i}]"
        message = rnd.get("user_message") if isinstance(rnd, dict) else None
        replies = rnd.get("responses") if isinstance(rnd, dict) else None
        if not isinstance(message, str):
            problem(f"{where}.user_message", _("%(path)s.user_message must be a string, found %(found)s.", path=where,
                                               found=describe(message)))
            return None
        if not isinstance(replies, dict) or not replies:
            problem(f"{where}.responses", _("%(path)s.responses must be an object of each method's reply, found "
                                            "%(found)s.", path=where, found=describe(replies)))
            return None
        methods = methods or [str(m) for m in replies]
        for method in methods:
            reply = replies.get(method)
            if not isinstance(reply, str):
                problem(f"{where}.responses.{method}", _("%(path)s.responses has no reply of %(method)s (a string), "
                                                         "found %(found)s.", path=where, method=method,
                                                         found=describe(reply)))
                return None
            found.setdefault(method, []).extend([{"role": "user", "content": message},
                                                 {"role": "assistant", "content": reply}])
    return found


def task_of(value: dict) -> str:
    """A session's task: its `task` when a non-empty string, else SIMULATED_TASK."""
    task = value.get("task")
    return task.strip() if isinstance(task, str) and task.strip() else SIMULATED_TASK


def path_of(label: str, method: str) -> str:
    """The path of one method's conversation in a session."""
    return f"{label}{SEPARATOR}{method}"

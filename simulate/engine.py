"""The simulation engine: waves of turns over the judge engine.

Each wave asks every turn that is ready (simulate/plan.py's `ready`): the user messages, written by the simulator
from the persona and the exchanges so far, and the methods' replies, each given the user's messages and its own
replies. Every speaker has its own `Judge` (its model@endpoint, temperature and max tokens), so the calls get the
judge's HTTP client, per-endpoint budget, retries with backoff and cache; the speakers of a wave run on threads
side by side. A turn is kept as soon as it completes, so a run that stops (cancelled, or its process killed) goes on
from the turns kept and asks again only the calls that were in flight.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from judge import Judge, JudgeConfig, Prompt, Verdict
from simulate import prompts
from simulate.plan import USER, Conversation, Plan, Speaker, Step, ready
from storage.store import JudgeCache, Store

METHOD_PROMPT_VERSION = "psb-method-1"  # part of a method turn's cache key


def _accept_reply(answer: str) -> tuple[dict | None, str | None]:
    """A method's reply is any non-empty text (the judge engine refuses an empty one)."""
    return {}, None


def _accept_user_message(answer: str) -> tuple[dict | None, str | None]:
    """The simulator's answer is the user's message when check_user_message finds nothing wrong with it."""
    problem = prompts.check_user_message(answer)
    return (None, problem) if problem else ({}, None)


class Engine:
    """Runs one simulation's turns with a Judge per speaker (`configs`: speaker name -> JudgeConfig), keeping each
    turn in the store as it completes; `personas` (first, last), when given, limits it to those personas'
    conversations (a Celery block)."""

    def __init__(self, store: Store, simulation_id: str, plan: Plan, configs: Mapping[str, JudgeConfig],
                 cache: Any = None, personas: tuple[int, int] | None = None) -> None:
        self.store = store
        self.simulation_id = simulation_id
        self.plan = plan
        self.configs = configs
        self.cache = JudgeCache(store) if cache is None else cache
        self.conversations = {c.index: c for c in plan.conversations()
                              if personas is None or personas[0] <= c.persona_index <= personas[1]}
        self.kept: dict[tuple[int, int, str], dict] = {}

    def load(self) -> None:
        """Read the turns kept so far."""
        self.kept = {(t["conversation"], t["round"], t["speaker"]): t
                     for t in self.store.simulation_turns(self.simulation_id)}

    def run(self, should_stop: Callable[[], bool] = lambda: False,
            on_progress: Callable[[dict], None] | None = None) -> None:
        """Ask every turn still missing, wave after wave, until none is ready or should_stop() is true."""
        self.load()
        while not should_stop():
            steps = self.ready_steps()
            if not steps:
                return
            by_speaker: dict[str, list[Step]] = {}
            for step in steps:
                by_speaker.setdefault(step.speaker, []).append(step)
            with ThreadPoolExecutor(max_workers=len(by_speaker), thread_name_prefix="simulate") as pool:
                for future in [pool.submit(self._ask, self.plan.speaker(name), group, should_stop, on_progress)
                               for name, group in by_speaker.items()]:
                    future.result()

    def ready_steps(self) -> list[Step]:
        """The turns that can be asked now; openings a persona gives are kept at once instead (no call)."""
        failed = {key[0] for key, turn in self.kept.items() if turn["status"] != "ok"}
        steps = []
        for conversation in self.conversations.values():
            if conversation.index in failed:
                continue
            for step in ready(conversation, self.plan.rounds, self.kept):
                if step.speaker == USER and step.round == 1 and conversation.persona.opening:
                    self._keep(step, {"text": conversation.persona.opening, "status": "ok"})
                    steps += ready(conversation, self.plan.rounds, self.kept)
                    break
                steps.append(step)
        return steps

    def prompt(self, step: Step, problem: str | None = None) -> Prompt:
        """What a turn sends: the simulator's messages for a user message (with why its last answer was refused),
        a method's for a reply."""
        conversation = self.conversations[step.conversation]
        speaker = self.plan.speaker(step.speaker)
        if step.speaker == USER:
            exchanges = [(self._text(conversation, k, USER), self._text(conversation, k, conversation.partner))
                         for k in range(1, step.round)]
            messages = prompts.simulator_messages(conversation.persona, exchanges, self.plan.language, problem)
            return Prompt(messages, _accept_user_message, self._version(prompts.PROMPT_VERSION, speaker))
        users = [self._text(conversation, k, USER) for k in range(1, step.round + 1)]
        own = [self._text(conversation, k, step.speaker) for k in range(1, step.round)]
        messages = prompts.method_messages(speaker.system_prompt or None, users, own)
        return Prompt(messages, _accept_reply, self._version(METHOD_PROMPT_VERSION, speaker))

    def _version(self, version: str, speaker: Speaker) -> str:
        """The prompt version in the cache key: with the sample's number when the speaker samples (temperature > 0)."""
        return f"{version}#sample{self.plan.sample}" if speaker.temperature > 0 else version

    def _text(self, conversation: Conversation, k: int, speaker: str) -> str:
        return self.kept[(conversation.index, k, speaker)]["text"]

    def _ask(self, speaker: Speaker, steps: list[Step], should_stop: Callable[[], bool],
             on_progress: Callable[[dict], None] | None) -> None:
        """Ask one speaker's turns of a wave; a simulator's answer that fails the checks is asked again with the
        reason, up to plan.user_retries times, and the turn fails after that."""
        config = self.configs[speaker.name]
        spent: dict[Step, list[int]] = {}  # attempts, prompt and completion tokens over a turn's tries
        tries = dict.fromkeys(steps, 0)
        items: list[tuple[object, Prompt]] = [(step, self.prompt(step)) for step in steps]
        with Judge(config, cache=self.cache) as judge:
            while items and not should_stop():
                again: list[tuple[object, Prompt]] = []
                for tag, verdict in judge.run(items, should_stop=should_stop):
                    step = cast(Step, tag)
                    total = spent.setdefault(step, [0, 0, 0])
                    total[0] += verdict.attempts
                    total[1] += verdict.prompt_tokens
                    total[2] += verdict.completion_tokens
                    problem = _problem(verdict)
                    if verdict.status == "unparsed" and speaker.name == USER and tries[step] < self.plan.user_retries:
                        tries[step] += 1
                        again.append((step, self.prompt(step, problem)))
                        continue
                    self._keep(step, {
                        "text": verdict.answer if verdict.status == "ok" else "",
                        "status": "ok" if verdict.status == "ok" else "failed", "problem": problem,
                        "attempts": total[0], "prompt_tokens": total[1], "completion_tokens": total[2],
                        "cached": int(verdict.cached), "model": config.model, "endpoint": speaker.endpoint})
                    if on_progress:
                        on_progress(self.store.simulation_progress(self.simulation_id))
                items = again

    def _keep(self, step: Step, fields: dict) -> None:
        turn = {"conversation": step.conversation, "round": step.round, "speaker": step.speaker, **fields}
        self.store.save_turns(self.simulation_id, [turn])
        self.kept[(step.conversation, step.round, step.speaker)] = {"problem": None, **turn}


def _problem(verdict: Verdict) -> str | None:
    """Why a turn's answer cannot be used: a check_user_message code ("empty" for an empty reply), the error of a
    failed call, or None."""
    if verdict.status == "ok":
        return None
    if verdict.status == "unparsed":
        return prompts.check_user_message(verdict.answer) or "empty"
    return verdict.error or "failed"

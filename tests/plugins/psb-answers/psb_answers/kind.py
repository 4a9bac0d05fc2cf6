"""Graded answers, a judged kind: questions with a reference answer and each method's answer, JSON Lines
({"id", "question", "reference", "answers": {method: answer}}), each answer graded 1-5 by the judge against the
reference; the result is each method's mean grade."""
from __future__ import annotations

import json
import re
from typing import BinaryIO, Iterator, Mapping

from judge import Prompt, judge_summary
from kinds.kind import Job, Judged, Plan, StartError, StartRequest, open_file
from kinds.problems import Problem, Report
from kinds.readers.jsonl import iter_lines
from translations import _
from translations import lazy_gettext as _l

MAX_LINE_BYTES = 1024 * 1024
MODE = "grade"  # the question each judgment asks: a judgment key's mode (judge.mode_key)
PROMPT_VERSION = "answers-1"  # part of the judge cache's key: change it when the prompt changes
SYSTEM = ('You grade an answer to a question against a reference answer. Reply with JSON only: {"grade": 1-5}, '
          "5 when the answer says what the reference says, 1 when it contradicts it.")
USER = "Question: {question}\nReference answer: {reference}\nAnswer to grade: {answer}"


class AnswersKind(Judged):
    """Questions answered by methods, each answer graded by the judge."""

    name = "answers"
    label = _l("Graded answers (example plug-in)")
    formats = _l(".jsonl, one question per line")
    extension = ".jsonl"
    headline_label = _l("Mean grade (1-5)")
    headline_digits = 2
    score_columns = ("grade",)  # its own column in judgments.csv

    def sniff(self, head: bytes, filename: str, path) -> bool:
        """JSON Lines whose first line has a "reference" and "answers"."""
        return head.lstrip().startswith(b"{") and b'"reference"' in head and b'"answers"' in head

    def validate(self, stream: BinaryIO, filename: str, options: Mapping[str, str]) -> Report:
        """Every line a question; the summary counts the questions and each method's answers."""
        return read(stream)[0]

    def start(self, upload: dict, request: StartRequest) -> Plan:
        """Some or all of the methods, one judgment per answer, by one judge (the judge settings go in the plan)."""
        answers = upload["summary"]["answers"]
        methods = list(request.methods or answers)
        unknown = [m for m in methods if m not in answers]
        if unknown:
            raise StartError(_("Unknown methods: %(unknown)s. This file has: %(available)s.",
                               unknown=", ".join(unknown), available=", ".join(answers)))
        settings = request.judge_settings()  # checked; the runner reads the judge's configuration from these
        if settings.get("judges"):
            raise StartError(_("Graded answers are graded by one judge, not a panel."))
        return Plan(methods, settings, total=sum(answers[m] for m in methods))

    def plan(self, job: Job) -> Iterator[tuple]:
        """A judgment per answer: (index, question id, round 0, method, mode)."""
        for index, question in enumerate(questions(job)):
            for method in job.evaluation["methods"]:
                if method in question["answers"]:
                    yield index, question["id"], 0, method, MODE

    def requests(self, job: Job, pending: set) -> Iterator[tuple[tuple, Prompt]]:
        """The prompt of each pending judgment, whose key is the plan's without the question id."""
        for index, question in enumerate(questions(job)):
            for method, answer in question["answers"].items():
                key = (index, 0, method, MODE)
                if key in pending:
                    yield key, prompt(question, answer)

    def prompt_templates(self, evaluation: dict, config, store=None) -> dict[str, tuple[str, str]]:
        """The one prompt, in English whatever the judge's language."""
        return {MODE: (PROMPT_VERSION, SYSTEM + "\n" + USER)}

    def score(self, job: Job) -> dict:
        """Each method's mean grade over its graded answers; those the judge's answer did not grade are counted."""
        methods, evaluation_id = job.evaluation["methods"], job.evaluation["id"]
        grades: dict[str, list[int]] = {m: [] for m in methods}
        ungraded = dict.fromkeys(methods, 0)
        for judgment in job.store.judgments(evaluation_id):
            if judgment["status"] == "ok":
                grades[judgment["method"]].append(judgment["scores"]["grade"])
            else:  # failed, unparsed, or still pending in a partial result
                ungraded[judgment["method"]] += 1
        prices = job.evaluation["settings"].get("prices")
        return {"kind": self.name, "evaluation_id": evaluation_id, "questions": job.upload["summary"]["questions"],
                "judge": judge_summary(job.config, job.store.usage(evaluation_id), prices, methods, PROMPT_VERSION),
                "methods": {m: {"mean": sum(g) / len(g) if g else None, "graded": len(g), "ungraded": ungraded[m]}
                            for m, g in grades.items()}}

    def csv(self, result: dict) -> tuple[tuple, list[tuple]]:
        """One row per method."""
        return ("method", "mean", "graded", "ungraded"), [
            (name, m["mean"], m["graded"], m["ungraded"]) for name, m in result["methods"].items()]

    def headline(self, result: dict) -> list[list]:
        """Each method's mean grade."""
        return [[name, m["mean"]] for name, m in result["methods"].items()]

    def participants(self, evaluation: dict) -> list[str]:
        """The methods graded."""
        return list(evaluation.get("methods") or [])

    def run_label(self, result: dict) -> str:
        """The judge model."""
        return result["judge"]["model"]

    def compare(self, runs: list[dict]) -> dict:
        """Every method of any run, each run's mean grade of it."""
        methods = list(dict.fromkeys(m for run in runs for m in run["result"]["methods"]))
        return {"runs": runs, "methods": methods}


def prompt(question: dict, answer: str) -> Prompt:
    """The judge's messages for one answer, and how its answer is read."""
    return Prompt([{"role": "system", "content": SYSTEM},
                   {"role": "user", "content": USER.format(answer=answer, **question)}], parse, PROMPT_VERSION)


def parse(answer: str) -> tuple[dict | None, str | None]:
    """The grade in the judge's answer as Verdict fields (judge.PROMPT_FIELDS: total, dims, verdict); else None and
    why the answer does not read."""
    found = re.search(r"\{[^{}]*\}", answer)
    try:
        grade = json.loads(found.group(0)).get("grade") if found else None
    except (ValueError, AttributeError):
        grade = None
    if type(grade) is not int or not 1 <= grade <= 5:
        return None, _("The answer holds no JSON object with a grade from 1 to 5.")
    return {"total": float(grade), "dims": {"grade": grade}}, None


def questions(job: Job) -> list[dict]:
    """The upload's questions, read once per run (`job.scratch` keeps them between plan, requests and score)."""
    if "questions" not in job.scratch:
        with open_file(job.path) as stream:
            job.scratch["questions"] = read(stream)[1]
    return job.scratch["questions"]


def read(stream: BinaryIO) -> tuple[Report, list[dict]]:
    """The report of a file (each problem with its line and field) and its questions, through the kinds' JSON Lines
    reader (the upload limits, a BOM, blank lines)."""
    report, found, ids = Report(), [], set()
    for line, value in iter_lines(stream, MAX_LINE_BYTES):
        problem = value if isinstance(value, Problem) else check(line, value, ids)
        if problem is not None:
            report.add(problem)
        else:
            found.append(value)
            ids.add(value["id"])
    if not found and report.ok:
        report.add(Problem(None, "", _("The file holds no question.")))
    answers: dict[str, int] = {}
    for question in found:
        for method in question["answers"]:
            answers[method] = answers.get(method, 0) + 1
    report.summary = {"questions": len(found), "answers": answers}
    return report, found


def check(line: int, value: object, ids: set[str]) -> Problem | None:
    """What is wrong with one line, naming the field, or None."""
    if not isinstance(value, dict):
        return Problem(line, "", _("Each line must be a JSON object with id, question, reference and answers."))
    for field in ("id", "question", "reference"):
        if not isinstance(value.get(field), str) or not value[field].strip():
            return Problem(line, field, _("%(field)s must be a text that is not empty.", field=field))
    if value["id"] in ids:
        return Problem(line, "id", _("The id %(id)s is taken by an earlier line.", id=value["id"]))
    answers = value.get("answers")
    if not isinstance(answers, dict) or not answers or not all(isinstance(a, str) for a in answers.values()):
        return Problem(line, "answers", _("answers must map each method to its answer, a text."))
    return None

"""The conversation kind: Human-vs-Agent task-oriented conversations, real users against simulated ones."""
from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Final, Iterable, Iterator, Mapping

import click

from common.contract import Flag
from judge import Prompt, judge_labels, judge_summary, panel_settings
from kinds import stats
from kinds.conversation import (
    analysis,
    analysis_figures,
    analysis_tables,
    annotation,
    figures,
    labeller,
    paired_samples,
    people_labels,
    views,
)
from kinds.conversation.behaviour import DIMENSIONS
from kinds.conversation.format import Conversation, holds_conversations, read_any
from kinds.conversation.label_sets import label_sets
from kinds.conversation.prompts import ANNOTATION_PROMPT_VERSION, ANNOTATION_SCALES
from kinds.conversation.prompts import template as annotation_template
from kinds.conversation.result import Annotation, ConversationResult, build_result
from kinds.host import Store
from kinds.kind import (
    Job,
    Judged,
    OwnPages,
    Paired,
    Plan,
    Sample,
    Site,
    StartError,
    StartRequest,
    as_flag,
    open_file,
    upload_as,
    upload_stem,
)
from kinds.problems import Report
from kinds.readers.zip import ZIP_MAGIC
from translations import _
from translations import lazy_gettext as _l

FIDELITY_COLUMNS: Final = ("turns", "user_message_length", "intents")


class ConversationKind(Judged[ConversationResult], Paired[ConversationResult], OwnPages):
    """RecLLMSim conversations (JSON, JSONL or a ZIP of the dataset's folders): statistics and simulator fidelity,
    and optionally the judge's annotation of every conversation."""

    name = "conversation"
    label = _l("Conversations (Human-vs-Agent)")
    formats = _l(".json (one conversation or a list of them), .jsonl, or a .zip of the dataset's folders")
    headline_label = _l("Intents JSD (bits)")
    headline_digits = 2
    headline_higher_is_better = False  # a divergence: lower is closer to real users
    format_version = 2  # 2: behaviour labels, self-report and chat_model read; the `analysis` block
    start_fields = ("annotate", "label")
    start_types = {"annotate": Flag, "label": Flag}
    cli_options = (click.Option(["--annotate"], is_flag=True, default=None,
                                help="Conversations: also have the judge annotate each conversation."),
                   click.Option(["--label"], is_flag=True, default=None,
                                help="Conversations: have the judge label each conversation's behaviour with the "
                                     "paper's prompts (the \"judge\" label set)."))
    tables = (people_labels.TABLE,)  # people's behaviour labels, made on the labelling pages

    def sniff(self, head: bytes, filename: str, path: Path | None) -> bool:
        """A ZIP (one AgentBench did not claim), or JSON with a `history` and no `rounds`."""
        return head.startswith(b"PK\x03\x04") or (b'"history"' in head and b'"rounds"' not in head)

    def upload_hint(self, head: bytes, filename: str, path: Path) -> str | None:
        """JSON with a `history`, as `sniff` sees it or further into the file than its start (any ZIP, which `sniff`
        claims when no kind before it did, is no sign of conversations)."""
        if head.startswith(ZIP_MAGIC):
            return None
        if self.sniff(head, filename, path):
            return upload_as(self, recognised=True)
        json_text = head.lstrip()[:1] in (b"{", b"[")
        return upload_as(self, recognised=False) if json_text and holds_conversations(path) else None

    def validate(self, stream: BinaryIO, filename: str, options: Mapping[str, str]) -> Report:
        """Read every conversation; problems name the uploaded file, never the temporary one."""
        return read_any(stream, filename or "upload")[0]

    def start(self, upload: dict, request: StartRequest) -> Plan:
        """Statistics in one step; with `annotate` one judgment per conversation; with `label` one per conversation,
        label group and judge (labeller.py)."""
        annotate, label = as_flag(request.options.get("annotate")), as_flag(request.options.get("label"))
        if annotate is None:
            raise StartError(_("'annotate' must be true or false."))
        if label is None:
            raise StartError(_("'label' must be true or false."))
        if not annotate and not label:
            return Plan([upload_stem(upload)], {})
        settings = request.judge_settings()
        if annotate and settings.get("judges"):
            raise StartError(_("A panel of judges is available for dialogue evaluations; a conversation annotation "
                               "has one judge."))
        conversations = upload["summary"]["conversations"]
        judges = len(panel_settings(settings))
        return Plan([upload_stem(upload)], {**({"annotate": True} if annotate else {}),
                                            **({"label": True} if label else {}), **settings},
                    conversations * (int(annotate) + len(labeller.GROUPS) * judges * int(label)))

    def provenance(self, job: Job) -> dict:
        """The bootstrap of the analysis's intervals."""
        return {"bootstrap": {"seed": stats.DEFAULT_SEED, "replicates": stats.DEFAULT_N_BOOT}}

    def needs_judge(self, evaluation: dict) -> bool:
        """Only an annotation or labelling run calls the judge."""
        return bool(evaluation["settings"].get("annotate") or evaluation["settings"].get("label"))

    @staticmethod
    def _conversations(job: Job) -> list[Conversation]:
        if "conversations" not in job.scratch:
            with open_file(job.path) as f:
                job.scratch["conversations"] = read_any(f, job.upload["filename"])[1]
        return job.scratch["conversations"]

    def plan(self, job: Job) -> list[tuple]:
        """One annotation per conversation, and its labelling judgments (one per group and judge)."""
        conversations, settings = self._conversations(job), job.evaluation["settings"]
        rows = annotation.plan_rows(conversations) if settings.get("annotate") else []
        if settings.get("label"):
            rows += labeller.plan_rows(conversations, len(panel_settings(settings)))
        return rows

    def requests(self, job: Job, pending: set) -> Iterator[tuple[tuple, Prompt]]:
        """The pending conversations' annotation requests in the judge's language, then their labelling requests (the
        paper's prompts, in English)."""
        conversations = self._conversations(job)
        yield from annotation.requests(conversations, pending, job.config.language)
        yield from labeller.requests(conversations, pending)

    def prompt_templates(self, evaluation: dict, config, store: Store | None = None) -> dict[str, tuple[str, str]]:
        """The annotation prompt in the judge's language; the labelling prompts of the four groups."""
        templates = {}
        if evaluation["settings"].get("annotate"):
            templates["annotation"] = (ANNOTATION_PROMPT_VERSION, annotation_template(config.language))
        if evaluation["settings"].get("label"):
            templates.update({labeller.mode(group): (labeller.PROMPT_VERSION, labeller.template(group))
                              for group in labeller.GROUPS})
        return templates

    def score(self, job: Job) -> ConversationResult:
        """Statistics of each source and, when annotated, the judge's ratings beside the people's."""
        conversations = self._conversations(job)
        evaluation, upload = job.evaluation, job.upload
        if not job.store.count_sessions(upload["id"]):  # where each conversation is, for the transcript views
            job.store.set_session_offsets(upload["id"], [(i, c.path, 0) for i, c in enumerate(conversations)])
        document = build_result(evaluation, upload, conversations)
        document["analysis"] = analysis.analysis(conversations, label_sets(job, conversations))
        if job.config is not None:
            usage, judgments = job.store.usage(evaluation["id"]), job.store.judgments(evaluation["id"])
            if evaluation["settings"].get("annotate"):
                document["annotation"] = {
                    "judge": judge_summary(job.config, [r for r in usage if r["method"] == annotation.METHOD],
                                           evaluation["settings"].get("prices"), [], ANNOTATION_PROMPT_VERSION),
                    **annotation.summarise(conversations, [j for j in judgments if j["method"] == annotation.METHOD])}
            if evaluation["settings"].get("label"):
                document["labelling"] = self._labelling(job, usage, judgments)
        return document

    @staticmethod
    def _labelling(job: Job, usage: list[dict], judgments: list[dict]) -> labeller.LabellingSummary:
        """The `labelling` block: per judge, its label set, settings, calls, tokens, cost and judgments by status."""
        settings = job.evaluation["settings"]
        panel, names = job.judges or [job.config], judge_labels(settings)
        by_judge = []
        for number, (config, recorded) in enumerate(zip(panel, panel_settings(settings))):
            rows = [r for r in usage if r["method"] == labeller.METHOD and labeller.group_of(r["mode"]) is not None
                    and labeller.judge_of((r["mode"],)) == number]
            by_judge.append({"label_set": labeller.set_name(number), "name": names[number],
                             "judge": judge_summary(config, rows, recorded.get("prices"), [], labeller.PROMPT_VERSION),
                             "counts": labeller.counts(judgments, number)})
        return {"prompt_version": labeller.PROMPT_VERSION, "groups": list(labeller.GROUPS), "by_judge": by_judge}

    def views(self) -> dict:
        """`conversations?q=&page=`: the conversations by path; `transcript?index=N`: one conversation's turns with
        the user's intents, the hallucination labels, satisfaction and, when annotated, the judge's annotation."""
        return {"conversations": views.listing, "transcript": views.transcript}

    paired_metrics = paired_samples.METRICS

    def paired_samples(self, record: dict, site: Site) -> Iterable[Sample]:
        """Each conversation, keyed by its path: its turns and the judge's annotation (paired_samples.py)."""
        return paired_samples.samples(record, site)

    def upload_context(self, upload: dict, site: Site) -> dict:
        """The sources' names, and the tasks'."""
        return {"source_labels": figures.source_labels(), "terms": figures.term_labels()}

    def result_context(self, record: dict, args: Mapping, site: Site) -> dict:
        """The tasks found in any source, and the sources' names."""
        result: ConversationResult | None = record.get("result")
        tasks = sorted({task for s in result["sources"].values() for task in s["by_task"]}) if result else []
        context = {"tasks": tasks, "source_labels": figures.source_labels(), "terms": figures.term_labels()}
        block = result.get("analysis") if result else None
        if block:  # the paper's analysis, as the query string chooses it
            chosen = analysis_figures.choices(block, args)
            context["analysis"] = {"block": block, "chosen": chosen,
                                   "view": analysis.chosen_view(block, chosen["chat_model"]),
                                   "dimensions": {d.key: d for d in DIMENSIONS},
                                   "measures": analysis_figures.measure_labels(),
                                   "rules": analysis_figures.rule_labels()}
        return context

    def figures(self, result: ConversationResult, record: dict, args: Mapping) -> dict:
        """Turns, intents and satisfaction of people and simulated users; the analysis's figures when it has one."""
        block = result.get("analysis")
        return {**figures.conversation_figures(result),
                **(analysis_figures.analysis_figures(block, args) if block else {})}

    def csv(self, result: ConversationResult) -> tuple[tuple, list[tuple]]:
        """Simulator fidelity, over all tasks and per task."""
        fidelity = result["fidelity"]
        return ("task", *FIDELITY_COLUMNS), [(task, *(f[k] for k in FIDELITY_COLUMNS))
                                             for task, f in {"all": fidelity, **fidelity["by_task"]}.items()]

    def downloads(self, result: ConversationResult) -> dict:
        """`annotations.csv` of an annotated result; each analysis figure's table (analysis_tables.py)."""
        tables = dict(analysis_tables.tables(result["analysis"])) if result.get("analysis") else {}
        return {**({"annotations": lambda: annotation_table(result["annotation"])} if result.get("annotation")
                   else {}), **tables}

    def headline(self, result: ConversationResult) -> list[list]:
        """How far simulated users' intents are from real users' (JS divergence, bits)."""
        return [["", result["fidelity"]["intents"]]]

    def run_label(self, result: ConversationResult) -> str:
        """The annotating judge's model, if any."""
        annotated = result.get("annotation")
        return (annotated["judge"].get("model") if annotated else None) or "—"

    def compare(self, runs: list[dict]) -> dict:
        """Simulator fidelity and, where annotated, the judge's ratings side by side."""
        return {"runs": runs, "annotated": any(run["result"].get("annotation") for run in runs)}

    def blueprints(self) -> list:
        """Each analysis figure's data as JSON (routes.py); the labelling pages (people label the users' behaviour)
        and their API (labelling_routes.py); the page "How human are simulated users" (humanness_routes.py)."""
        from kinds.conversation import humanness_routes, labelling_routes, routes  # Flask: only the web app's

        return [routes.bp, labelling_routes.bp, labelling_routes.api_bp, humanness_routes.bp]

    def cli_start(self, values: Mapping, site: Site) -> dict:
        """--annotate, --label."""
        return {key: True for key in ("annotate", "label") if values.get(key)}


def annotation_table(block: Annotation) -> tuple[tuple, list[tuple]]:
    """The judge's annotation of each conversation beside the people's own answers."""
    header = ("conversation", "source", "task", "status", *ANNOTATION_SCALES, "hallucination",
              *(f"questionnaire_{field}" for field in annotation.QUESTIONNAIRE_FIELDS.values()),
              "labelled_hallucination", "error")
    rows = []
    for r in block["conversations"]:
        scores = r["scores"] or {}
        rows.append((r["path"], r["source"], r["task"], r["status"],
                     *(scores.get(k) for k in (*ANNOTATION_SCALES, "hallucination")),
                     *(r["questionnaire"][k] for k in annotation.QUESTIONNAIRE_FIELDS), r["labelled_hallucination"],
                     r["error"]))
    return header, rows

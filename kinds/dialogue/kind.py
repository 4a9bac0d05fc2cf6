"""The dialogue kind: multi-turn persona-alignment logs, each reply judged by an LLM (fine score and verdict)."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator, Mapping

import click

from common.contract import Flag
from judge import JudgeConfig, Prompt, mode_key, panel_settings, sample_version, split_mode
from kinds import host, search
from kinds.agreement import Agreement
from kinds.dialogue import (
    columns,
    figures,
    imported,
    paired_samples,
    prompts,
    rating_links,
    rating_slice,
    rating_store,
    ratings_cli,
    ratings_files,
    result_rubric,
    review_steps,
    rubric_cli,
    rubric_files,
    rubric_routes,
    rubric_store,
    triage,
    views,
)
from kinds.dialogue import tables as dialogue_tables
from kinds.dialogue.format import Session, dialogue_lines, iter_sessions, iter_sessions_with_offsets, validate
from kinds.dialogue.human_agreement import ScoreAgreement, VerdictAgreement
from kinds.dialogue.metrics import MethodScores
from kinds.dialogue.pairwise_mode import (
    PAIR_MODES,
    PAIRWISE_PROMPT_VERSION,
    Pairwise,
    pair_method,
    pair_prompt,
    pair_template,
    pairs,
)
from kinds.dialogue.prompts import MODES, DialogueContext
from kinds.dialogue.records import CHUNK, STORED, judgment_table, reply_lengths
from kinds.dialogue.result import AgreementBlock, DialogueResult, JudgeScores, build_result
from kinds.dialogue.result_rubric import RubricBlock
from kinds.figures import method_colours
from kinds.host import Store
from kinds.kind import (
    Dialogue,
    HoldsPersonas,
    Job,
    JobFailed,
    Metric,
    OfflineReport,
    OwnCommands,
    OwnPages,
    Paired,
    Plan,
    RecordsDialogues,
    Sample,
    Site,
    StartError,
    StartRequest,
    StoredFile,
    TakesAttachments,
    TakesRatings,
    as_flag,
    upload_as,
)
from kinds.problems import Report
from kinds.rubrics import Rubric
from kinds.stats import DEFAULT_N_BOOT, DEFAULT_SEED
from translations import _, select_locale
from translations import lazy_gettext as _l

# The methods CSV's columns: these, the yes/no question's when the rubric asks one, one per dimension key of the
# rubric, then the counts.
CSV_COLUMNS = ("avg", "ci95_avg_low", "ci95_avg_high", "slope", "intercept", "r2", "n_ir", "n_r2")
CSV_BINARY = ("binary_rate", "ci95_binary_rate_low", "ci95_binary_rate_high", "binary_avg", "binary_n_ir",
              "binary_n_r2")
CSV_COUNTS = ("sessions", "judged", "unparsed", "failed")


def csv_columns(rubric: RubricBlock) -> tuple[str, ...]:
    """The metric columns of a result's methods CSV, after its rubric."""
    return (*CSV_COLUMNS, *(CSV_BINARY if result_rubric.has_binary(rubric) else ()), *result_rubric.keys(rubric),
            *CSV_COUNTS)


MAX_SAMPLES = 5  # times one judgment may be asked, for self-consistency
SESSION_KEY = re.compile(rb"""["'](?:session_id|rounds)["']\s*:""")  # a session's key, in double or single quotes


def _samples(value) -> int:
    """The `samples` start option: how many times each judgment is asked (1 to MAX_SAMPLES)."""
    if value in (None, ""):
        return 1
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if isinstance(value, bool) or not 1 <= number <= MAX_SAMPLES:
        raise StartError(_("'samples' must be a whole number from 1 to %(max)s, got %(value)s.", max=MAX_SAMPLES,
                           value=repr(value)))
    return number


def _modes(settings: dict, questions: tuple[str, ...] | None = None) -> list[str]:
    """The stored modes of one reply's judgments (each question its rubric asks, recorded as the settings' "modes";
    or one pair's, with PAIR_MODES in pairwise mode): each question, by each judge, each sample."""
    if questions == PAIR_MODES and not settings.get("pairwise"):
        return []
    questions = questions or tuple(settings.get("modes") or MODES)
    return [mode_key(base, judge, sample) for judge in range(len(panel_settings(settings)))
            for sample in range(settings.get("samples") or 1) for base in questions]


def _sampled(request: Prompt, mode: str) -> Prompt:
    """A judge request as asked for one sample: each sample is its own cache entry (the first, the request as it
    is)."""
    sample = split_mode(mode)[2]
    return replace(request, version=sample_version(request.version, sample)) if sample else request


def _requests(evaluation: dict, sessions: Iterable[tuple[int, int, Session]], language: str,
              wanted: Callable[[tuple], bool], rubric: Rubric) -> Iterator[tuple[tuple, Prompt]]:
    """The judge requests of the wanted judgments of these sessions ((index, offset, session), as
    iter_sessions_with_offsets gives them) under the evaluation's rubric, (key, Prompt), built lazily: what
    `requests` and `all_requests` ask."""
    settings, methods = evaluation["settings"], evaluation["methods"]
    modes, pair_modes = _modes(settings), _modes(settings, PAIR_MODES)
    for idx, _offset, session in sessions:
        for position, rnd in enumerate(session.rounds):
            contexts = {}
            for method in methods:
                history = [(r.user_message, r.responses[method]) for r in session.rounds[:position]]
                ctx = contexts[method] = DialogueContext(session.user_profile, session.user_personality, history,
                                                         rnd.user_message, rnd.responses[method])
                for mode in modes:
                    key = (idx, rnd.number, method, mode)
                    if wanted(key):
                        yield key, _sampled(prompts.prompt(split_mode(mode)[0], ctx, language, rubric), mode)
            for a, b in pairs(methods) if pair_modes else ():
                for mode in pair_modes:
                    key = (idx, rnd.number, pair_method(a, b), mode)
                    if wanted(key):
                        yield key, _sampled(pair_prompt(split_mode(mode)[0], contexts[a], contexts[b], language),
                                            mode)


def _rubric_value(rubric: Rubric) -> str:
    """How a form names a rubric: a built-in by its id, one added by its SHA-256 (an id may have several versions)."""
    return rubric.id if rubric.builtin else rubric.sha256


def _methods_table(methods: dict[str, MethodScores], rubric: RubricBlock) -> tuple[tuple, list[tuple]]:
    """One row per method of its metrics (csv_columns: each CSV_COLUMNS's, the yes/no question's when the rubric asks
    one, each dimension's), as the methods CSV has them."""
    columns = csv_columns(rubric)
    rows = []
    for name, m in methods.items():
        avg_low, avg_high = m["ci95"]["avg"] or (None, None)
        rate_low, rate_high = m["ci95"]["binary_rate"] or (None, None)
        flat = {**m, **m["dimensions"], "ci95_avg_low": avg_low, "ci95_avg_high": avg_high,
                "ci95_binary_rate_low": rate_low, "ci95_binary_rate_high": rate_high}
        rows.append((name, *(flat.get(c) for c in columns)))
    return ("method", *columns), rows


def _judges_table(result: DialogueResult, by_judge: dict[str, JudgeScores]) -> tuple[tuple, list[tuple]]:
    """Each judge's methods table, then the panel's, under the panel's rubric: `judges.csv`."""
    rubric = result_rubric.of(result)
    header, rows = _methods_table(result["methods"], rubric)
    own = [(label, *row) for label, doc in by_judge.items() for row in _methods_table(doc["methods"], rubric)[1]]
    return ("judge", *header), own + [("panel", *row) for row in rows]


def _figure(agreement: Agreement) -> tuple:
    """An agreement figure's (value, low, high, n) cells."""
    return agreement["value"], agreement["low"], agreement["high"], agreement["n"]


def _statistics(figures: ScoreAgreement | VerdictAgreement) -> list[tuple[str, Agreement]]:
    """A rater's figures against people on one score, by statistic, in the result's order."""
    if "kappa" in figures:
        return [("kappa", figures["kappa"]), ("alpha", figures["alpha"])]
    # results kept before Pearson and Kendall were added lack them
    return [(name, figures[name]) for name in ("spearman", "pearson", "kendall", "alpha") if name in figures]


def _agreement_table(agreement: AgreementBlock) -> tuple[tuple, list[tuple]]:
    """Every agreement figure (between a panel's judges, with people, and among people) as (statistic, score, raters,
    value, low, high, n) rows; a pair of judges has no kappa when the rubric asks no yes/no question."""
    header = ("statistic", "score", "raters", "value", "ci95_low", "ci95_high", "n")
    rows = [("krippendorff_alpha", field, "all judges", *_figure(a))
            for field, a in agreement.get("krippendorff_alpha", {}).items()]
    for p in agreement.get("pairs", []):
        judges = f"{p['a']} | {p['b']}"
        rows += [("spearman", "total", judges, *_figure(p["spearman"])),
                 *([("cohen_kappa", "binary", judges, *_figure(p["kappa"]))] if p["kappa"] else []),
                 ("kendall_tau_method_avg", "avg", judges, p["method_tau"], None, None, None)]
    human = agreement.get("human")
    if not human:
        return header, rows
    for label, f in human["by_rater"].items():
        raters = f"people | {label}"
        scores: list[tuple[str, ScoreAgreement | VerdictAgreement | None]] = [
            ("total", f.get("total")), ("binary", f.get("binary")), *f.get("dimensions", {}).items()]
        rows += [(statistic, score, raters, *_figure(value))
                 for score, figures in scores if figures for statistic, value in _statistics(figures)]
        ranking = human["ranking"]
        if label in ranking["kendall_tau"]:
            interval = ranking.get("kendall_tau_interval", {}).get(label)
            rows.append(("kendall_tau_method_mean", ranking["by"], raters, ranking["kendall_tau"][label],
                         *(_figure(interval)[1:] if interval else (None, None, None))))
    rows += [("krippendorff_alpha", field, "people", *_figure(a)) for field, a in human.get("people", {}).items()]
    return header, rows


def _pairwise_table(pairwise: Pairwise) -> tuple[tuple, list[tuple]]:
    """Pairwise mode's figures: per judge (and panel) and pair, the win / tie / loss rates with their intervals."""
    blocks = [*pairwise["judges"].items(), *([("panel", pairwise["panel"])] if pairwise.get("panel") else [])]
    rows = [(label, p["a"], p["b"], *(x for k in ("win", "tie", "loss") for x in (p[k]["rate"], *(p[k]["ci95"] or
                                                                                                   (None, None)))),
             p["position_consistency"], p["n"], block["bradley_terry"]["strengths"].get(p["a"]),
             block["bradley_terry"]["strengths"].get(p["b"]))
            for label, block in blocks for p in block["pairs"]]
    header = ("judge", "a", "b", *(f"{k}{suffix}" for k in ("win", "tie", "loss") for suffix in ("", "_low", "_high")),
              "position_consistency", "comparisons", "bradley_terry_a", "bradley_terry_b")
    return header, rows


class DialogueKind(RecordsDialogues[DialogueResult], Paired[DialogueResult], OfflineReport[DialogueResult],
                   TakesAttachments, TakesRatings[DialogueResult], HoldsPersonas, OwnPages, OwnCommands):
    """PersonaSteer / ALOE / RLPA style JSONL: sessions of rounds, one reply per method per round."""

    name = "dialogue"
    label = _l("Dialogue (persona alignment)")
    formats = _l(".jsonl, one session per line")
    headline_label = _l("Average AL")
    extension = ".jsonl"
    fallback = True  # any file no other kind claims is read as dialogue JSONL, whose problems say what is wrong
    format_version = 2  # 2: the length_bias block says whether the file tells reply length from method
    score_columns = prompts.DIMENSIONS  # the default rubric's; an evaluation's own are its rubric's keys
    # people's ratings (before step 19, and per rater) and reviews, the rubrics people add, the slice people rate in
    # the browser and its links
    tables = (*dialogue_tables.TABLES, rubric_store.TABLE, rating_store.TABLE, rating_slice.TABLE, rating_links.TABLE)
    paired_metrics = paired_samples.METRICS
    attachments = (imported.NAME,)  # the scores another judge gave the replies (imported.py)
    attachment_fields = ("rubric",)  # the rubric those scores are on
    start_fields = ("samples", "pairwise", "rubric", "scores")
    start_types = {"samples": int | str, "pairwise": Flag, "rubric": str, "scores": str}
    cli_options = (click.Option(["--rubric"], default=None, metavar="ID",
                                help="Dialogue: judge under this rubric, by id or SHA-256 (default: personasteer; "
                                     "`flask --app app rubrics list`); with --scores, the rubric those scores are "
                                     "on."),
                   click.Option(["--scores"], default=None, metavar="FILE",
                                type=click.Path(exists=True, dir_okay=False),
                                help="Dialogue: the scores another judge gave the replies (JSONL or CSV, "
                                     "docs/formats.md), imported instead of calling a judge."),
                   click.Option(["--samples"], type=int, default=None,
                                help="Dialogue: ask each judgment this many times (1-5, temperature > 0) to measure "
                                     "the judge's self-consistency."),
                   click.Option(["--pairwise"], is_flag=True, default=None,
                                help="Dialogue: also compare every two methods' replies at each round, in both "
                                     "orders (win rates and a Bradley-Terry ranking)."))

    nav = (("rubrics.page", _l("Rubrics")),)
    settings_nav = (("rubrics.page", _l("Rubrics: the judging protocols (add, view, download, delete)")),)
    admin_paths = rubric_routes.ADMIN_PATHS  # adding and deleting a rubric, as changing the judge settings
    link_endpoints = rating_links.ENDPOINTS  # a rating link's pages, /rate/<token>...

    def upload_hint(self, head: bytes, filename: str, path: Path) -> str | None:
        """A file with a session's keys ("session_id" or "rounds", also in single quotes, as Python writes them): the
        kind of any file no other kind claims, so it is recognised."""
        return upload_as(self, recognised=True) if SESSION_KEY.search(head) else None

    def validate(self, stream: BinaryIO, filename: str, options: Mapping[str, str]) -> Report:
        """Check every line of the JSONL file."""
        return validate(stream)

    def check_attachment(self, name: str, stream: BinaryIO, filename: str, upload: dict, options: Mapping[str, str],
                         site: Site) -> Report:
        """A scores file (imported.py, the one attachment): every reply it names is the upload's and scored once
        under the rubric named (`rubric`, else the default one, or bare totals), and every reply of the methods it
        scores has its scores."""
        return imported.check(stream, filename, upload, options, site)

    def attach_ratings(self, evaluation_id: str, stream: BinaryIO, filename: str, rater: str | None,
                       site: Site) -> Report:
        """A file of people's ratings (CSV or JSONL, docs/ratings.md) checked and kept as `ratings add` keeps it, in
        place of the ratings of the raters it names; its report (its problems, when nothing was kept)."""
        try:
            report, _rows = ratings_files.attach(site.store, evaluation_id, stream, filename, rater)
        except ratings_files.NotAttached as exc:
            if exc.args[2] is not None:
                return exc.args[2]
            raise StartError(exc.args[1]) from exc
        return report

    def personas(self, stream: BinaryIO) -> Iterator[dict]:
        """Each session's user: its session_id as persona_id, its profile and personality (no scenario nor
        opening)."""
        for session in iter_sessions(stream):
            yield {"persona_id": session.session_id, "user_profile": session.user_profile,
                   "user_personality": session.user_personality, "scenario": "", "opening": ""}

    def dialogue_file(self, dialogues: Iterable[Dialogue]) -> bytes:
        """A session per conversation (its persona's id as session_id), JSON Lines."""
        return dialogue_lines(dialogues)

    def needs_judge(self, evaluation: dict) -> bool:
        """Every dialogue evaluation is judged, but those of scores imported from another judge."""
        return not evaluation["settings"].get("scores")

    def start(self, upload: dict, request: StartRequest) -> Plan:
        """Some or all of the file's methods, two judgments (fine, binary) per reply by each judge, `samples`
        times each (self-consistency); or, with `scores`, the judgments of an attached scores file."""
        if request.options.get("scores") not in (None, ""):
            return self._start_imported(upload, request)
        available = upload["summary"]["methods"]
        methods = list(request.methods or available)
        unknown = [m for m in methods if m not in available]
        if unknown:
            raise StartError(_("Unknown methods: %(unknown)s. This file has: %(available)s.",
                               unknown=", ".join(unknown), available=", ".join(available)))
        samples = _samples(request.options.get("samples"))
        pairwise = as_flag(request.options.get("pairwise"))
        if pairwise is None:
            raise StartError(_("'pairwise' must be true or false."))
        if pairwise and len(methods) < 2:
            raise StartError(_("Pairwise mode compares methods: choose at least two."))
        rubric = rubric_store.chosen(request.store, request.options.get("rubric"))
        judge_settings = request.judge_settings()
        for judge in panel_settings(judge_settings):
            if (judge.get("language") or "en") not in rubric.languages:
                raise StartError(_("The rubric %(id)s has prompts in %(languages)s only; set the judge's language to "
                                   "one of them.", id=rubric.id, languages=", ".join(rubric.languages)))
        settings = {**judge_settings, "modes": list(prompts.modes(rubric)), "samples": samples,
                    **({"pairwise": True} if pairwise else {}),
                    **({"rubric": rubric.reference()} if rubric != prompts.DEFAULT else {})}
        if samples > 1 and any(s["temperature"] <= 0 for s in panel_settings(settings)):
            raise StartError(_("Asking each judgment %(samples)s times measures how consistent the judge is only "
                               "when it samples: set a temperature above 0 (0.7 is common).", samples=samples))
        per_round = len(methods) * len(_modes(settings)) + len(pairs(methods)) * len(_modes(settings, PAIR_MODES))
        return Plan(methods, settings, upload["summary"]["rounds"] * per_round)

    @staticmethod
    def _start_imported(upload: dict, request: StartRequest) -> Plan:
        """The judgments of a scores file attached to the upload, one per reply and question, under the rubric it was
        checked against; no judge is called, so no judge settings, samples nor pairwise mode."""
        name, store = request.options["scores"], request.store
        attachment = store.get_attachment(str(name)) if store is not None else None
        if attachment is None or (attachment["upload_id"], attachment["name"]) != (upload["id"], imported.NAME):
            raise StartError(_("No scores file %(id)s is attached to this upload; attach one first (POST "
                               "/api/uploads/%(upload)s/scores, or the upload's page).", id=repr(name),
                               upload=upload["id"]))
        if _samples(request.options.get("samples")) > 1 or as_flag(request.options.get("pairwise")):
            raise StartError(_("Imported scores are one judgment per reply: 'samples' and 'pairwise' ask a judge "
                               "and do not go with them."))
        summary = attachment["summary"]
        rubric = rubric_store.find(store, summary["rubric"]["sha256"]) if summary["rubric"] else (
            rubric_store.BARE_TOTALS)
        if rubric is None:
            raise StartError(_("The rubric %(id)s of the scores file %(file)s is not kept here.",
                               id=summary["rubric"]["id"], file=attachment["filename"]))
        named = request.options.get("rubric")
        if named not in (None, "") and rubric_store.chosen(store, named) != rubric:
            raise StartError(_("The scores file %(file)s was checked against %(rubric)s; attach it again naming the "
                               "rubric %(named)s to score it under that one.", file=attachment["filename"],
                               rubric=rubric.id, named=named))
        available = summary["methods"]
        methods = list(request.methods or available)
        unknown = [m for m in methods if m not in available]
        if unknown:
            raise StartError(_("The scores file %(file)s scores no reply of %(unknown)s; it scores %(available)s.",
                               file=attachment["filename"], unknown=", ".join(unknown),
                               available=", ".join(available)))
        modes = ["fine", "binary"] if summary["verdict"] else ["fine"]
        settings = {"modes": modes, "samples": 1,
                    "scores": {"id": attachment["id"], "filename": attachment["filename"],
                               "sha256": attachment["sha256"]},
                    **({"rubric": rubric.reference()} if rubric != prompts.DEFAULT else {})}
        return Plan(methods, settings, upload["summary"]["rounds"] * len(methods) * len(modes))

    def plan(self, job: Job) -> Iterator[tuple]:
        """Every (session, round, method, mode) to judge, a session at a time; once all are read, also records where
        each session starts in the file."""
        offsets = []
        settings, methods = job.evaluation["settings"], job.evaluation["methods"]
        modes, pair_modes = _modes(settings), _modes(settings, PAIR_MODES)
        for idx, offset, session in iter_sessions_with_offsets(job.path):
            offsets.append((idx, session.session_id, offset))
            for rnd in session.rounds:
                yield from ((idx, session.session_id, rnd.number, method, mode) for method in methods for mode in modes)
                yield from ((idx, session.session_id, rnd.number, pair_method(a, b), mode)
                            for a, b in pairs(methods) for mode in pair_modes)
        if not job.store.count_sessions(job.upload["id"]):
            job.store.set_session_offsets(job.upload["id"], offsets)

    def requests(self, job: Job, pending: set) -> Iterator[tuple[tuple, Prompt]]:
        """Judge requests for the pending judgments, (key, Prompt), built lazily one session at a time from the first
        session with a pending judgment (a block of sessions late in a large file does not read the file before it)."""
        first = min((key[0] for key in pending), default=0)
        found = job.store.session_offsets(job.upload["id"], first, 1) if first else []
        start = (found[0]["idx"], found[0]["offset"]) if found and found[0]["idx"] == first else (0, 0)
        return _requests(job.evaluation, iter_sessions_with_offsets(job.path, *start), job.config.language,
                         pending.__contains__, rubric_store.of_evaluation(job.store, job.evaluation))

    def all_requests(self, evaluation: dict, file: StoredFile, judges: list,
                     store: Store | None = None) -> Iterator[tuple[tuple, Prompt]]:
        """Every judgment's request, session by session, in the first judge's language (as `requests`)."""
        return _requests(evaluation, iter_sessions_with_offsets(file), judges[0].language, lambda key: True,
                         rubric_store.of_evaluation(store, evaluation))

    def given_judgments(self, job: Job) -> Iterator[tuple[tuple, dict]] | None:
        """The judgments of an evaluation of imported scores, read from its scores file; None for a judged one."""
        scores = job.evaluation["settings"].get("scores")
        return self._imported(job, scores) if scores else None

    @staticmethod
    def _imported(job: Job, scores: dict) -> Iterator[tuple[tuple, dict]]:
        attachment = job.store.get_attachment(scores["id"])
        file = job.site.file_of_attachment(attachment) if attachment else None
        if attachment is None or file is None or not file.exists():
            raise JobFailed(_("The scores file %(file)s of this evaluation is no longer kept; attach it again.",
                              file=scores["filename"]))
        rubric = rubric_store.of_evaluation(job.store, job.evaluation)
        indexes = {session.session_id: idx for idx, _offset, session in iter_sessions_with_offsets(job.path)}
        yield from imported.outcomes(file, attachment["filename"], None if rubric == rubric_store.BARE_TOTALS
                                     else rubric, indexes, job.evaluation["methods"], job.evaluation["settings"]["modes"])

    def score(self, job: Job) -> DialogueResult:
        """The dialogue result document from everything judged (or imported) so far."""
        evaluation_id = job.evaluation["id"]
        rubric = rubric_store.of_evaluation(job.store, job.evaluation)
        judgments = judgment_table(job.store.iter_judgments(evaluation_id, batch=CHUNK, columns=STORED),
                                   size=job.store.progress(evaluation_id)["total"], dimensions=rubric.keys)
        people = rating_store.people_ratings(job.store, evaluation_id)  # each rater's; their mean per reply below
        return build_result(job.evaluation, job.upload, judgments,
                            job.store.usage(evaluation_id), job.judges or [job.config],
                            reply_lengths(job.path, job.evaluation["methods"]),
                            rating_store.by_reply(people), dialogue_tables.reviews(job.store, evaluation_id), rubric,
                            per_rater=people)

    def prompt_templates(self, evaluation: dict, config: JudgeConfig, store: Store | None = None
                         ) -> dict[str, tuple[str, str]]:
        """The rubric's prompts in the judge's language (its dimensions' and its yes/no question's), and the pairwise
        one in pairwise mode."""
        rubric = rubric_store.of_evaluation(store, evaluation)
        templates = {mode: (rubric.cache_version, prompts.template(mode, config.language, rubric))
                     for mode in prompts.modes(rubric)}
        if evaluation["settings"].get("pairwise"):
            templates["pairwise"] = (PAIRWISE_PROMPT_VERSION, pair_template(config.language))
        return templates

    def provenance(self, job: Job) -> dict:
        """The rubric judged under (id, version, SHA-256 of its canonical form), the scores file the judgments were
        imported from (when they were) and the bootstrap behind every interval of the result (metrics, pairwise,
        agreement)."""
        scores = job.evaluation["settings"].get("scores")
        return {"rubric": rubric_store.of_evaluation(job.store, job.evaluation).reference(),
                **({"scores": {"imported": True, "filename": scores["filename"], "sha256": scores["sha256"]}}
                   if scores else {}),
                "bootstrap": {"seed": DEFAULT_SEED, "replicates": DEFAULT_N_BOOT}}

    def result_context(self, record: dict, args: Mapping, site: Site) -> dict:
        """Colours, the methods and columns shown (`methods`, `cols` in the query), the tables, a page of sessions,
        and the state of the rescore job updating the figures after people's ratings changed."""
        context = {"colours": method_colours(record["methods"]),
                   **result_rubric.page_values(result_rubric.of_record(record, site.store))}
        if record.get("result"):
            full: DialogueResult = record["result"]
            overrides = args.get("overrides") == "1" and "overrides" in full  # people's overrides applied
            if overrides:
                full = {**full, "methods": full["overrides"]["methods"]}
            chosen = views.chosen_methods(list(full["methods"]), args)
            result = views.with_methods(full, chosen)
            tables = views.result_tables(result)
            context["overrides_applied"] = overrides
            context.update(result=result, toggles=views.method_toggles(list(record["result"]["methods"]), chosen),
                           columns=columns.chosen(args, tables["rubric"], tables["by_round_dimensions"]),
                           human_info=rating_store.human_ratings_info(site.store, record["id"]),
                           rescore=host.rescores().state(record["id"]),  # the figures, being updated
                           detail=views.session_list(record, args, site.store),
                           failures=views.failures(record, site.store), **tables)
        return context

    def figures(self, result: DialogueResult, record: dict, args: Mapping) -> dict:
        """Curves and radar, each method in the colour it has in the whole result."""
        return figures.dialogue_figures(result, method_colours(record["methods"]))

    def csv(self, result: DialogueResult) -> tuple[tuple, list[tuple]]:
        """One row per method: every metric with its confidence intervals, the yes/no question's when its rubric
        asks one, and each dimension's mean under its key."""
        return _methods_table(result["methods"], result_rubric.of(result))

    def score_columns_of(self, record: dict, store: Store | None = None) -> tuple[str, ...]:
        """The dimension keys of the evaluation's rubric, in its order."""
        return result_rubric.keys(result_rubric.of_record(record, store))

    def downloads(self, result: DialogueResult) -> dict:
        """`comparisons.csv`: every pairwise method difference with its interval, p-value and Holm's correction;
        with a panel `judges.csv` (each judge's metrics) and `agreement.csv` (every agreement figure)."""
        header = ("a", "b", "metric", "diff", "ci95_low", "ci95_high", "significant", "sessions", "p_value", "p_holm",
                  "significant_holm")
        tables = {"comparisons": lambda: (header, [
            tuple((c.get("ci95") or (None, None))[0 if k == "ci95_low" else 1] if k.startswith("ci95") else c.get(k)
                  for k in header) for c in result["comparisons"]])}
        by_judge, agreement, pairwise = result.get("by_judge"), result.get("agreement"), result.get("pairwise")
        if by_judge:
            tables["judges"] = lambda: _judges_table(result, by_judge)
        if agreement:
            tables["agreement"] = lambda: _agreement_table(agreement)
        if pairwise:
            tables["pairwise"] = lambda: _pairwise_table(pairwise)
        return tables

    def blueprints(self) -> list:
        """Attaching people's ratings to an evaluation, rating in the browser, reviewing single judgments, and the
        rubrics: pages and API."""
        from kinds.dialogue import rating_routes, routes  # Flask is only needed by the web app

        return [routes.ratings_bp, routes.ratings_api_bp, routes.reviews_bp, routes.reviews_api_bp,
                rubric_routes.bp, rubric_routes.api_bp, rating_routes.bp]

    def cli_commands(self) -> list:
        """`flask --app app rubrics list|show|add|check` and `flask --app app ratings add|export`."""
        return [rubric_cli.rubrics_group, ratings_cli.ratings_group]

    def upload_context(self, upload: dict, site: Site) -> dict:
        """The rubrics the evaluation form offers (the default first), each with its dimensions and scales; the
        rubrics a scores file may be on, for the form that attaches one."""
        listed = rubric_store.listed(site.store)
        return {"rubrics": [rubric_files.summary(r) for r in listed], "default_rubric": prompts.DEFAULT.id,
                "score_rubrics": listed}

    def start_choices(self, site: Site) -> dict[str, list[tuple[str, str]]]:
        """`rubric`: every rubric listed (the default first), by id for a built-in and by SHA-256 for one added."""
        language = select_locale()
        return {"rubric": [(_rubric_value(r), f"{r.title(language)} ({r.id} {r.version}): " + ", ".join(
            f"{d.label_in(language)} {d.scale_text()}" for d in r.dimensions)) for r in rubric_store.listed(site.store)]}

    def views(self) -> dict:
        """`session?index=N`: one session's rounds, replies and judgments, loaded when the reader opens it;
        `grid?...`: the sample grid (triage.py); `prompt?index=&round=&method=&mode=`: one judgment as asked and
        answered."""
        return {"session": self._session_view, "grid": self._grid_view, "prompt": self._prompt_view}

    @staticmethod
    def _grid_view(record: dict, args: Mapping, site: Site) -> tuple[str, dict] | None:
        methods = record["methods"]
        upload = site.store.get_upload(record["upload_id"])
        if upload is None:
            return None
        path = site.file_of(upload)
        rubric = result_rubric.of_record(record, site.store)
        context = {"colours": method_colours(methods), "methods": methods, "shown": methods, "toggles": [],
                   "grid_args": review_steps.grid_args(args), "error": None, "rows": [], "page": 1, **result_rubric.page_values(rubric),
                   "pages": 1, "count": 0, "query": {"sort": "round", "order": "asc", "q": "", "status": "",
                                                     "range": "", "min": None, "max": None}}
        keys = result_rubric.keys(rubric)
        try:
            rows, context["query"] = triage.grid(triage.score_table(site.store, record, keys), methods, args,
                                                 lambda pattern: triage.matching_rounds(path, methods, pattern), keys)
        except search.BadQuery as exc:
            context["error"] = str(exc)
            return "dialogue/grid.html", context
        context["rows"], context["page"], context["pages"] = triage.page_of(rows, args, path, site.store,
                                                                            record["upload_id"], methods, keys)
        context["count"] = len(rows)
        context["shown"] = views.chosen_methods(methods, args)  # the columns shown: `methods=A,B`
        context["toggles"] = views.method_toggles(methods, context["shown"])
        return "dialogue/grid.html", context

    def _prompt_view(self, record: dict, args: Mapping, site: Site) -> tuple[str, dict] | None:
        key: review_steps.Key | None = None
        if "index" in args:  # without a judgment named: the first of the grid's (the grid's "review" link)
            try:
                key = (int(args.get("index", "")), int(args.get("round", "")), str(args["method"]), str(args["mode"]))
            except (KeyError, ValueError):
                return None
        upload = site.store.get_upload(record["upload_id"])
        if upload is None:
            return None
        path, methods = site.file_of(upload), record["methods"]
        rubric = result_rubric.of_record(record, site.store)
        try:
            order, rows = review_steps.grid_sequence(site.store, record, args, result_rubric.keys(rubric),
                                                     lambda pattern: triage.matching_rounds(path, methods, pattern))
        except search.BadQuery:
            order, rows = [], None
        if key is None and not order:
            return None
        key = key or order[0]
        stored = next((j for j in site.store.judgments(record["id"], [key[0]])
                       if (j["round"], j["method"], j["mode"]) == key[1:]), None)
        if stored is None:
            return None
        job = Job(record, upload, path, site,
                  config=replace(JudgeConfig(), language=record["settings"].get("language") or JudgeConfig().language))
        asked = next((prompt for found, prompt in self.requests(job, {key}) if found == key),
                     None) if self.needs_judge(record) else None  # imported scores were asked nothing
        review = next((r for r in dialogue_tables.reviews(site.store, record["id"])
                       if (r["session_idx"], r["round"], r["method"], r["mode"]) == key), None)
        return "dialogue/prompt.html", {"key": key, "judgment": stored, "messages": asked.messages if asked else [],
                                        "version": asked.version if asked else None, "review": review,
                                        "question": split_mode(key[3])[0], "grid_args": review_steps.grid_args(args),
                                        "step": review_steps.step(order, rows, key) if rows is not None else None,
                                        **result_rubric.page_values(rubric)}

    @staticmethod
    def _session_view(record: dict, args: Mapping, site: Site) -> tuple[str, dict] | None:
        try:
            index = int(args.get("index", ""))
        except ValueError:
            return None
        session = views.session_detail(record, index, site)
        if session is None:
            return None
        return "dialogue/_session_detail.html", {"s": session, "colours": method_colours(record["methods"]),
                                                 **result_rubric.page_values(
                                                     result_rubric.of_record(record, site.store))}

    def paired_samples(self, record: dict, site: Site) -> Iterator[Sample]:
        """One sample per judged reply (session, round, method): its score, verdict and dimensions, its text."""
        return paired_samples.paired_samples(record, site)

    def paired_metrics_for(self, results: list[DialogueResult]) -> tuple[Metric, ...]:
        """AVG, the yes/no rate and each dimension when the runs share a rubric (the one asks a yes/no question);
        AVG only, the 0-100 headline every rubric has, when they were judged under different rubrics."""
        return paired_samples.metrics_for(results)

    def samples(self, record: dict, args: Mapping, site: Site) -> dict:
        """A page of sessions with every reply and judgment (`page`, `per_page`, `q` in the query)."""
        return views.session_page(record, args, site)

    def participants(self, evaluation: dict) -> list[str]:
        """The methods scored."""
        return list(evaluation.get("methods") or [])

    def headline(self, result: DialogueResult) -> list[list]:
        """Each method's average AL."""
        return [[name, method["avg"]] for name, method in result["methods"].items()]

    def headline_intervals(self, result: DialogueResult) -> dict[str, list[float]]:
        """Each method's AVG interval as the result document gives it (`ci95.avg`; a method without one has none)."""
        return {name: list(ci) for name, method in result["methods"].items()
                if (ci := (method.get("ci95") or {}).get("avg"))}

    def sample_ids(self, result: DialogueResult) -> list[str]:
        """The session ids of the sessions scored."""
        return [session["session_id"] for session in result.get("sessions") or []]

    def run_label(self, result: DialogueResult) -> str:
        """The judge model, or a panel's models; the file of imported scores."""
        scores = result["judge"].get("imported")
        if scores:
            return _("scores imported from %(file)s", file=scores["filename"])
        return " + ".join(result.get("judges") or [result["judge"]["model"]])

    def compare(self, runs: list[dict]) -> dict:
        """The merged table, overlaid curves, and differences between runs of the same method."""
        return views.comparison(runs)

    def report_context(self, record: dict) -> dict:
        """Figures and tables of the offline report."""
        result: DialogueResult = record["result"]
        colours = method_colours(record["methods"])
        return {"figures": figures.dialogue_figures(result, colours), "colours": colours,
                **views.result_tables(result)}

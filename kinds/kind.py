"""The interface of a benchmark kind: everything the pipeline asks of one, in one place.

A kind is a plug-in. The evaluations (pipeline/evaluations.py), the upload path (pipeline/ingest.py), the pages, the API, the exports, the
share view, the compare view, the simulations and the CLI only ever call the methods below; none of them names a kind.
Every kind subclasses `Kind`, the core all of them implement; what only some kinds do is a capability, a subclass of
`Kind` a kind also derives from, which the core discovers with `isinstance` (never by the kind's name):

- `Scored`: its uploads are evaluated (started, scored into a result document, shown, exported, compared); a kind
  that is not (personas: the simulated users of a simulation) is uploaded, validated and shown only;
- `Judged`: a scored kind whose evaluations call the judge (its judgment keys, prompts and parsers);
- `Paired`: a scored kind whose runs pair sample by sample (paired differences, the row-level diff);
- `OfflineReport`: a scored kind with its own self-contained report;
- `TakesAttachments`: files attached to a stored upload (dialogue: another judge's scores);
- `TakesRatings`: a scored kind whose finished evaluations take people's ratings from a file (dialogue);
- `HoldsPersonas`: a simulation may take its simulated users from an upload of the kind;
- `RecordsDialogues`: a judged kind whose files a simulation writes its conversations as;
- `OwnPages`, `OwnCommands`: Flask pages and `flask --app app` commands of its own.

`INTERFACE` lists them. A kind is registered by kinds/registry.py: the built-in ones by dotted name, those of installed
packages by their entry point (group `personasteer.kinds`), others by the setting PSB_KINDS.

The life of an upload, and which method answers each step:

1. detect    `Kind.sniff(head, filename, path)`: is this file of the kind? (first kind in registry order wins)
2. validate  `Kind.validate(stream, filename, options)` -> Report: streaming, problems located by line or path;
             when another kind refuses a file, `upload_hint(head, filename, path)` says whether it looks like
             one of this kind's, and how to upload it
   attach    `TakesAttachments.check_attachment(name, stream, filename, upload, options, site)` -> Report
3. start     `Scored.start(upload, request)` -> Plan: what an evaluation records (methods, settings, units of work)
4. run       `Judged.plan(job)` -> judgment keys, `Judged.requests(job, pending)` -> (key, judge.Prompt) judge calls,
             or `Judged.given_judgments(job)` -> (key, outcome) for an evaluation that brings its judgments with it
             (imported scores), then `Scored.score(job)` -> the result document (a kind without a judge has this one
             pure step)
5. show      `upload_context`, `result_context`, `figures`, `csv`, `downloads`, `views`, `compare`, with the
             templates `<name>/upload.html`, `<name>/result.html`, `<name>/compare.html` in `templates()`
6. CLI       `Scored.cli_options` (click options added to `flask score`) and `cli_start` (their values -> options);
             `OwnCommands.cli_commands` (commands of its own, `flask --app app <command>`)

What a kind uses of the app (the store, the stored files, the runner, its own tables `tables`) is typed in
kinds/host.py, the one module of the app a kind imports besides this one and the shared ones.
"""
from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, ClassVar, Generic, Iterable, Iterator, Mapping, TypeVar

import jinja2

# Site, StoredFile and open_file are the plug-in API's (kinds/host.py), named here too as kinds have imported them
from kinds.host import Site as Site
from kinds.host import Store, Table
from kinds.host import StoredFile as StoredFile
from kinds.host import open_file as open_file
from kinds.problems import Report
from kinds.result_document import ResultDocument
from translations import _

if TYPE_CHECKING:
    from judge import Prompt


class StartError(ValueError):
    """A request to start an evaluation that cannot be honoured; the message says why (a 400)."""


class JobFailed(Exception):
    """An evaluation that cannot go on (its reference set was removed, say); the message is shown as it is."""


@dataclass
class StartRequest:
    """What a user asked for when starting an evaluation of an upload.

    `options` holds the kind's own fields (those in `Kind.start_fields`), as sent by the form, the API or the
    CLI; `judge_settings()` checks the request's judge settings and returns what the evaluation records.
    """

    methods: list[str] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    judge_settings: Callable[[], dict] = dict
    store: Store | None = None


@dataclass
class Plan:
    """What `Kind.start` decides: the evaluation's methods, its recorded settings and its units of work."""

    methods: list[str]
    settings: dict
    total: int = 1


@dataclass
class Job:
    """One run of an evaluation, as the runner hands it to its kind.

    `path` is the upload's file (a StoredFile: read it with `open_file`); `config` the judge configuration when
    the evaluation uses one (`judges`, every judge's, for a panel); `site` the store (judgments, usage, reference
    sets) and the stored files; `scratch` a place to keep what was read from the file between `plan`, `requests`
    and `score` within one run.
    """

    evaluation: dict
    upload: dict
    path: StoredFile
    site: Site
    config: Any = None  # the judge's, or the first judge's of a panel
    judges: list = field(default_factory=list)  # a panel's configurations, in the order given
    scratch: dict = field(default_factory=dict)

    @property
    def store(self) -> Store:
        """The store the evaluation lives in."""
        return self.site.store


@dataclass(frozen=True)
class Metric:
    """A headline metric that pairs sample by sample between two runs (`Kind.paired_metrics`), computed from the
    paired samples exactly as the result document defines the figure of the same name: the mean of the samples'
    values (or, `per_stratum`, the mean over strata of each stratum's mean), times `scale`."""

    name: str  # its key in Sample.values and in the result document, e.g. "avg"
    label: Any  # a lazy translated string shown in tables
    binary: bool = False  # 0/1 verdicts (McNemar's test) rather than scores (a signed-rank or t test)
    scale: float = 1.0  # the result's figure is the mean x scale (a rate in %: 100)
    per_stratum: bool = False  # the mean over Sample.stratum of each stratum's mean (dialogue's AVG: over rounds)


@dataclass(frozen=True)
class Sample:
    """One sample of a finished run as a paired comparison sees it: the same `method` and `key` in two runs are one
    pair. `cluster` is the unit a bootstrap resamples (dialogue: the session, not the round); `values` holds the
    sample's value of each paired metric (None when it has none: a failed judgment); `stratum` groups the samples a
    `per_stratum` metric averages first (dialogue: the round); `text` is what was judged (a reply), shown by the
    row-level diff; `links` name the kind's view of the sample ({label: "view?query"})."""

    method: str
    key: tuple
    cluster: str
    values: Mapping[str, float | None]
    stratum: Any = None
    text: str | None = None
    links: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DialogueRound:
    """One round of a simulated conversation: what the simulated user said and each method's reply, by method."""

    number: int
    user_message: str
    replies: Mapping[str, str]


@dataclass(frozen=True)
class Dialogue:
    """A simulated user's conversation with the methods, as a simulation keeps it (`RecordsDialogues`): who the user
    is (a persona's id, profile and personality) and its complete rounds, in order."""

    persona_id: str
    user_profile: str
    user_personality: str
    rounds: tuple[DialogueRound, ...]


# The type of a kind's result document: a scored kind is a Scored[the TypedDict of its kinds/<name>/result.py] (or
# Judged[...], Paired[...]). The core holds kinds as plain Scored (of any document): it reads documents back as JSON,
# whose kind only their "kind" key tells.
ResultT = TypeVar("ResultT", bound=ResultDocument)


class Kind(ABC):
    """A benchmark kind: what every kind is and does. Its files are detected, validated and kept as uploads, each with
    its page (`<name>/upload.html`). Class attributes describe it; methods are called by the core (see the module)."""

    name: ClassVar[str]  # the `kind` of uploads and evaluations, the folder of its templates
    label: ClassVar[Any]  # a lazy translated string, e.g. _l("Dialogue (persona alignment)")
    # the files it takes, for people (the drop zone, and the message of a file no kind reads): a lazy translated
    # string, e.g. _l(".jsonl, one session per line")
    formats: ClassVar[Any] = ""
    # stored uploads are named <sha256><extension>; a kind that takes several formats names the stored file's own
    # in its validation report's summary ("extension")
    extension: ClassVar[str] = ""
    upload_fields: ClassVar[tuple[str, ...]] = ()  # form/API fields read at upload, passed to validate()
    fallback: ClassVar[bool] = False  # detected last: the kind of any file no other kind claims
    # tables only this kind keeps (kinds/host.py's Table), created with the store's schema steps
    tables: ClassVar[tuple[Table, ...]] = ()

    def sniff(self, head: bytes, filename: str, path: Path | None) -> bool:
        """Whether a file starting with `head` (BOM removed) is of this kind; `path` is the whole file. By default no
        file is: the kind is chosen by name (or is the `fallback`)."""
        return False

    @abstractmethod
    def validate(self, stream: BinaryIO, filename: str, options: Mapping[str, str]) -> Report:
        """Check a file, streaming; problems name a line or a path. `report.summary` is kept with the upload."""
        ...

    def upload_hint(self, head: bytes, filename: str, path: Path) -> str | None:
        """When a file another kind refused looks like one of this kind's, a sentence saying how to upload it (then
        it is the one message the upload gets); None when it does not. By default: what `sniff` claims."""
        return upload_as(self, recognised=True) if self.sniff(head, filename, path) else None

    def templates(self) -> jinja2.BaseLoader:
        """Where this kind's templates are: by default the `templates` folder beside the kind's module."""
        return jinja2.FileSystemLoader(Path(inspect.getfile(type(self))).parent / "templates")

    def template(self, page: str) -> str:
        """The template name of one of this kind's pages ("upload", "result", "compare", "report")."""
        return f"{self.name}/{page}.html"

    def upload_context(self, upload: dict, site: Site) -> dict:
        """Extra values for `<name>/upload.html` (the upload's page: its summary and, for a scored kind, the form that
        starts an evaluation)."""
        return {}


class Scored(Kind, Generic[ResultT]):
    """A kind whose uploads are evaluated: `start` plans an evaluation, `score` makes its result document (every
    result carries `"kind": <name>`), and the result is shown (`<name>/result.html`), exported (`csv`, `downloads`),
    listed (`headline`) and compared (`compare`, `<name>/compare.html`)."""

    start_fields: ClassVar[tuple[str, ...]] = ()  # form/API fields read when starting, in StartRequest.options
    # the JSON type of a start field in the API's contract (docs/api.md), e.g. {"annotate": Flag}; unlisted: any
    start_types: ClassVar[Mapping[str, Any]] = {}
    cli_options: ClassVar[tuple] = ()  # click.Option objects added to `flask score`
    headline_label: ClassVar[Any] = ""  # what headline() gives, e.g. _l("Average AL")
    headline_digits: ClassVar[int] = 1  # decimals of the headline numbers in lists of evaluations
    headline_higher_is_better: ClassVar[bool] = True  # how a leaderboard ranks the headline numbers
    # the version of what this kind reads and how it scores it: raised when the file format or the result document
    # changes, so that results of both can be told apart (the result's `provenance`)
    format_version: ClassVar[int] = 1

    @abstractmethod
    def start(self, upload: dict, request: StartRequest) -> Plan:
        """Check a request to evaluate an upload (StartError when it cannot be done) and plan the evaluation."""
        ...

    @abstractmethod
    def score(self, job: Job) -> ResultT:
        """The result document, from the file and (for a judge) the judgments stored so far; its "kind" is the kind's
        name."""
        ...

    @abstractmethod
    def csv(self, result: ResultT) -> tuple[tuple, Iterable[tuple]]:
        """The result's main table as (header, rows): the `.csv` export."""
        ...

    @abstractmethod
    def compare(self, runs: list[dict]) -> dict:
        """The values of `<name>/compare.html` (as `cmp` there; "figures" are drawn) for finished runs, each a
        dict of its "id", "label", "filename", "model" (run_label), "result" and "baseline" (true for the one run
        every difference shown is measured from)."""
        ...

    def provenance(self, job: Job) -> dict:
        """This kind's own part of the result's provenance, beside the common part (pipeline/provenance.py):
        "bootstrap" ({"seed", "replicates"} of its intervals) when it draws bootstrap intervals, "reference"
        ({"name", "sha256"}) when it scores against a reference set, "rubric" ({"id", "version", "sha256"}) when
        its judge asks under a rubric, "scores" ({"imported": true, "filename", "sha256"}) when its judgments were
        imported from a file. None of those by default."""
        return {}

    def result_context(self, record: dict, args: Mapping, site: Site) -> dict:
        """Extra values for `<name>/result.html` of a finished (or partial) result; `args` is the query string
        (the view's state). A "result" value replaces the document shown (narrowed to some methods, say)."""
        return {}

    def figures(self, result: ResultT, record: dict, args: Mapping) -> dict:
        """Plotly figures (plain JSON) of the result shown, by name; none by default."""
        return {}

    def downloads(self, result: ResultT) -> dict[str, Callable[[], tuple[tuple, Iterable[tuple]]]]:
        """More CSV tables of a result by name (served as `<name>.csv`), each a function giving (header, rows)."""
        return {}

    def views(self) -> dict[str, Callable[[dict, Mapping, Site], tuple[str, dict] | None]]:
        """Read-only views of one evaluation by name, served at `view/<name>` and on share pages: each
        takes (record, query string, site) and gives (template, values), or None for a 404."""
        return {}

    def samples(self, record: dict, args: Mapping, site: Site) -> dict | None:
        """A page of per-sample detail for the API (`/api/evaluations/<id>/sessions`), or None: no such thing (a 404,
        the default)."""
        return None

    def headline(self, result: ResultT) -> list[list]:
        """The few numbers a list of evaluations shows for a result: [name, value] pairs (a method, an agent)."""
        return []

    def headline_intervals(self, result: ResultT) -> dict[str, list[float]]:
        """The 95% interval [low, high] of each headline number the result document gives one for, by the name
        `headline` gives it; none by default."""
        return {}

    def sample_ids(self, result: ResultT) -> list[str] | None:
        """The ids of the samples a result scored (dialogue: its session ids), which make its dataset: runs that scored
        the same ids rank on one leaderboard; None (the default): runs of the same uploaded file do."""
        return None

    def participants(self, evaluation: dict) -> list[str]:
        """The methods or agents an evaluation measures (a row of `evaluation_list`), for lists; none by default."""
        return []

    def run_label(self, result: ResultT) -> str:
        """What a run was measured with (a judge model, a reference set), for compare and lists."""
        return "—"

    def cli_start(self, values: Mapping[str, Any], site: Site) -> dict:
        """The start options from this kind's CLI options (StartError on a bad value)."""
        return {k: values[k] for k in self.start_fields if values.get(k) is not None}


class Judged(Scored[ResultT]):
    """A scored kind whose evaluations call the judge: `plan` gives the judgment keys, `requests` the judge calls
    (each a `judge.Prompt` with the kind's own parser); the runner asks them, keeps every verdict, then `score`s.

    A judgment key is (index, session, round, method, mode): the judgment's place in the upload (a sample's index and
    id, a round within it: 0 or 1 when there is one), the method judged and the mode, the question asked, written by
    `judge.mode_key(question, judge, sample)` ("fine", "fine@1" by a panel's second judge, "binary#2" the third
    sample). The judge settings `StartRequest.judge_settings()` gives belong in `Plan.settings`, which the runner
    reads the judge's configuration from."""

    # judge scores shown as their own columns in judgments.csv, in order (the others stay in its `scores` column);
    # an evaluation's own may differ (`score_columns_of`)
    score_columns: ClassVar[tuple[str, ...]] = ()

    def needs_judge(self, evaluation: dict) -> bool:
        """Whether this evaluation calls the judge (then `plan` and `requests` give its calls): by default every one
        does; a kind whose judge is optional (conversation's annotation) says which."""
        return True

    @abstractmethod
    def plan(self, job: Job) -> Iterable[tuple]:
        """The judgment keys of an evaluation that uses a judge, as (index, session, round, method, mode); it may be
        a generator (it is consumed in chunks, outside any transaction of the store)."""
        ...

    @abstractmethod
    def requests(self, job: Job, pending: set) -> Iterator[tuple[tuple, Prompt]]:
        """Judge calls for the pending keys, as (key, judge.Prompt), built lazily, in the language of `job.config`
        (a panel's judges are asked one after the other, each with its own keys)."""
        ...

    @abstractmethod
    def prompt_templates(self, evaluation: dict, config: Any, store: Store | None = None) -> dict[str, tuple[str, str]]:
        """The prompt templates the judge `config` (one of a panel's) is sent in this evaluation, by name ("fine"):
        (prompt version, the template's text as filled in for each judgment); the result's provenance keeps the
        SHA-256 of each text, so that runs with differently worded prompts can be told apart. `store` holds what the
        evaluation's settings name (a dialogue rubric people added)."""
        ...

    def given_judgments(self, job: Job) -> Iterable[tuple[tuple, dict]] | None:
        """The judgments an evaluation brings with it instead of calling a judge (scores another judge gave,
        imported), as (key, outcome): a key of `plan` without its session id (index, round, method, mode) and the
        fields a judge's outcome is stored with (status "ok", total, verdict, scores). The runner plans and records
        them, once, before `score`. None (the default) for an evaluation that brings none."""
        return None

    def score_columns_of(self, record: dict, store: Store | None = None) -> tuple[str, ...]:
        """The judge scores of one evaluation (`record`, with or without its result; `store` to read what its
        settings name) shown as their own columns in its judgments.csv, in order: by default `score_columns`."""
        return self.score_columns


class Paired(Scored[ResultT]):
    """A scored kind whose runs pair sample by sample: the compare page's paired differences, `/api/compare`,
    `paired.csv`, the row-level diff of two runs and `flask score --baseline`. Runs of other kinds compare unpaired
    (their distributions side by side)."""

    # the headline metrics that pair sample by sample between runs (required)
    paired_metrics: ClassVar[tuple[Metric, ...]]

    @abstractmethod
    def paired_samples(self, record: dict, site: Site) -> Iterable[Sample]:
        """The samples of a finished run, for paired differences and the row-level diff of two runs (a generator is
        fine: it is read once)."""
        ...

    def paired_metrics_for(self, results: list[ResultT]) -> tuple[Metric, ...]:
        """The metrics these finished runs' result documents pair on (the first the default of a choice): by default
        `paired_metrics`; a kind whose metrics depend on how a run was scored (the dialogue kind's rubric) gives those
        every run has, on the same terms."""
        return self.paired_metrics

    def paired_aggregates(self, pairs: list[tuple[Sample, Sample]]) -> list[dict]:
        """Paired differences of metrics that are not a mean over samples (AgentBench's OA, a weighted sum over
        tasks), from the aligned (baseline, other) samples: rows shaped like the per-sample metrics' rows (method,
        metric, baseline_value, value, diff, ci95, p_value, n_pairs, test, mdd), before multiplicity correction.
        None by default."""
        return []


class OfflineReport(Scored[ResultT]):
    """A scored kind with a self-contained report of its own, `<name>/report.html` (others' report is their result
    page, offline)."""

    @abstractmethod
    def report_context(self, record: dict) -> dict:
        """Values of `<name>/report.html` for a finished evaluation."""
        ...


class TakesAttachments(Kind):
    """A kind whose stored uploads may have files attached (dialogue: "scores", the scores another judge gave its
    replies): each is checked by `check_attachment`, stored by content hash, and chosen for an evaluation by the start
    field of the same name (its id); the CLI option of that name attaches a file by path."""

    attachments: ClassVar[tuple[str, ...]]  # the names of the files that may be attached (required)
    attachment_fields: ClassVar[tuple[str, ...]] = ()  # form/API fields read with an attachment (dialogue: rubric)

    @abstractmethod
    def check_attachment(self, name: str, stream: BinaryIO, filename: str, upload: dict, options: Mapping[str, str],
                         site: Site) -> Report:
        """Check a file attached to a stored upload of this kind (`name`: one of `attachments`; `options`: the
        `attachment_fields` sent with it) against that upload, streaming; problems name a line and a field.
        `report.summary` is kept with the attachment (its "extension" names the stored file's)."""
        ...


class TakesRatings(Scored[ResultT]):
    """A scored kind whose finished evaluations take people's ratings of their samples from a file (dialogue: people's
    ratings of replies), which its result then compares the judge with and calibrates its figures to; `flask score
    --ratings FILE` attaches one to the evaluation it made and scores it again."""

    @abstractmethod
    def attach_ratings(self, evaluation_id: str, stream: BinaryIO, filename: str, rater: str | None,
                       site: Site) -> Report:
        """Check a ratings file against a finished evaluation of this kind and keep its ratings (`rater`: whose its
        rows that name none are); the report, whose problems name a line and a field (nothing is kept when it has
        any). StartError when the evaluation cannot take ratings. The caller scores the evaluation again."""
        ...


class HoldsPersonas(Kind):
    """A kind a simulation may take its simulated users from (personas files; dialogue files, their sessions'
    users)."""

    @abstractmethod
    def personas(self, stream: BinaryIO) -> Iterator[dict]:
        """The simulated users of a validated upload of this kind, read through the kinds' readers as `validate`
        reads the file, so that a BOM, CRLF line ends and blank lines read alike: dicts of persona_id,
        user_profile, user_personality, scenario and opening (empty texts when absent). ValueError at a line that
        does not read."""
        ...


class RecordsDialogues(Judged[ResultT]):
    """The judged kind whose files a simulation writes its conversations as (simulate/): they are uploaded as this
    kind, and scored by it when the simulation asks."""

    @abstractmethod
    def dialogue_file(self, dialogues: Iterable[Dialogue]) -> bytes:
        """A file of this kind holding these conversations, as `validate` reads it (its extension is `extension`)."""
        ...

    @abstractmethod
    def all_requests(self, evaluation: dict, file: StoredFile, judges: list,
                     store: Store | None = None) -> Iterator[tuple[tuple, Prompt]]:
        """Every judge call an evaluation of `file` makes (`evaluation`: the "methods" and "settings" `start`
        planned; `judges`: each judge's configuration), as (key, judge.Prompt), built as `requests` builds them but
        before the evaluation exists (`store` only to read what its settings name): what a simulation's estimate
        counts and measures."""
        ...

    def start_choices(self, site: Site) -> dict[str, list[tuple[str, str]]]:
        """The values forms offer for some of this kind's start fields, by field: (value, label) pairs, the default
        first (the simulation page's scoring fields use them). None by default."""
        return {}


class OwnPages(Kind):
    """A kind with Flask pages of its own beyond one evaluation's (mobility: its reference sets; dialogue: people's
    ratings, reviews and its rubrics)."""

    nav: ClassVar[tuple] = ()  # (endpoint, label) links this kind adds to the header
    settings_nav: ClassVar[tuple] = ()  # (endpoint, label) links this kind adds to the settings page
    # paths of this kind's pages and API under which a change (any request but GET, HEAD and OPTIONS) needs an
    # administrator when accounts are on, as the judge settings' do (those under /settings already do)
    admin_paths: ClassVar[tuple[str, ...]] = ()
    # endpoints of this kind's pages that a link's token in their address opens without signing in (the page checks
    # the token on every request, as share links do; dialogue: its rating links)
    link_endpoints: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def blueprints(self) -> list:
        """Flask blueprints of the kind's pages (those under /api skip CSRF)."""
        ...


class OwnCommands(Kind):
    """A kind with `flask --app app` commands of its own, beside `score`."""

    @abstractmethod
    def cli_commands(self) -> list:
        """Click commands (or groups) this kind adds to `flask --app app`; they run in the app's context
        (`kinds.host.store()` is its store)."""
        ...


# The interface: the core every kind implements, then each capability a kind may declare, in the order the docs give.
INTERFACE: tuple[type[Kind], ...] = (Kind, Scored, Judged, Paired, OfflineReport, TakesAttachments, TakesRatings,
                                     HoldsPersonas, RecordsDialogues, OwnPages, OwnCommands)


def capabilities(kind: Kind) -> list[str]:
    """The names of the capabilities a kind declares (`INTERFACE` beyond `Kind`), in their order."""
    return [cls.__name__ for cls in INTERFACE[1:] if isinstance(kind, cls)]


def calls_judge(kind: Kind, evaluation: dict) -> bool:
    """Whether an evaluation of a kind calls the judge: a `Judged` kind's that `needs_judge`."""
    return isinstance(kind, Judged) and kind.needs_judge(evaluation)


def attachment_names(kind: Kind) -> tuple[str, ...]:
    """The names of the files that may be attached to an upload of a kind (`TakesAttachments`); none for another."""
    return kind.attachments if isinstance(kind, TakesAttachments) else ()


def missing_attributes(kind: Kind) -> list[str]:
    """The class attributes the interface requires (those declared without a value) that a kind lacks, as
    "<capability>.<name>"."""
    return [f"{cls.__name__}.{name}" for cls in INTERFACE if isinstance(kind, cls)
            for name in cls.__annotations__ if not hasattr(kind, name)]


def upload_as(kind: Kind, recognised: bool) -> str:
    """How to upload a file as `kind`: with the kind chosen, or also without one when its `sniff` claims it."""
    if recognised:
        return _("Upload it again with the kind %(label)s (%(name)s), or without choosing a kind: it is recognised.",
                 label=kind.label, name=kind.name)
    return _("Upload it again with the kind %(label)s (%(name)s): it is not recognised without one.",
             label=kind.label, name=kind.name)


def as_flag(value: Any) -> bool | None:
    """A yes/no option as a form (1, on, "") or JSON (true, false) sends it; None when it is neither."""
    if value in (True, "1", "true", "on"):
        return True
    if value in (False, None, "0", "false", "off", ""):
        return False
    return None


def upload_stem(upload: dict) -> str:
    """The name of a kind's one "method" when a whole upload is scored: its file name without extension."""
    return Path(upload["filename"]).stem or upload["id"]


def list_arg(args: Mapping, name: str) -> list[str]:
    """A list from the query string, given as `name=a,b` and/or `name=a&name=b`: in order, no blanks or repeats."""
    values = args.getlist(name) if hasattr(args, "getlist") else [args.get(name, "")]
    items: list[str] = []
    for value in values:
        for part in str(value).split(","):
            part = part.strip()
            if part and part not in items:
                items.append(part)
    return items



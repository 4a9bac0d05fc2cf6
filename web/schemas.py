"""The models of the JSON API's requests and answers (common/contract.py): they check each request and make the
OpenAPI document. The kinds' own operations declare theirs beside their routes."""
from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from common.contract import NOT_BLANK, Answer, Answers, Count, Flag, Request
from kinds import registry
from kinds.kind import Scored
from pipeline.chunked_uploads import MAX_TOTAL_BYTES
from simulate.request import MAX_METHODS, MAX_ROUNDS

Id = Annotated[str, Field(min_length=1)]  # an item's id: never empty

# What the server checks itself, with messages of their own, the document states only (see NOT_BLANK):
Listed = Annotated[str, Field(json_schema_extra={"pattern": r"^[^\x00]*[^\s,\x00][^\x00]*$"})]  # ids, by commas
Temperature = Annotated[float | None, Field(json_schema_extra={"minimum": 0, "maximum": 2})]  # a speaker's
# other keys, refused by the server (which says why: a request never carries a URL or a key)
REFUSED_BY_THE_SERVER = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": False})


def _kinds(schema: dict[str, Any]) -> None:
    """The kinds registered when the document is made (a kind added later is in it too), or none: detected."""
    schema["enum"] = [*registry.names(), "", None]


KindName = Annotated[str | None, Field(json_schema_extra=_kinds)]  # a kind an upload names; others are refused


# -- requests --------------------------------------------------------------------------------------------------

class UploadForm(Request):
    """The multipart fields of an upload, beside its `file`."""

    kind: KindName = Field(None, description="dialogue, mobility, conversation, agentbench or personas; "
                                             "detected when left out")
    agent: str | None = Field(None, description="AgentBench: the agent of a lone overall.json")
    task: str | None = Field(None, description="AgentBench: the task of a lone overall.json")


class AttachmentForm(Request):
    """The multipart fields of a file attached to an upload, beside its `file` (left out with `source=upload`)."""

    rubric: str | None = Field(None, description="dialogue scores: the rubric they are on, by id or SHA-256 (default: "
                                                 "personasteer, or bare totals for a file that gives no dimension)")
    source: Literal["upload"] | None = Field(None, description="upload: attach the upload's own file, which carries "
                                                               "the scores (a dialogue file whose rounds have them)")


class ChunkedStart(Request):
    """A resumable upload announced: the file's name and size, and the upload fields."""

    filename: str = Field(json_schema_extra={"pattern": NOT_BLANK})
    size: int = Field(ge=1, le=MAX_TOTAL_BYTES)
    kind: KindName = None
    agent: str | None = None
    task: str | None = None


class ChunkQuery(Request):
    """Where a chunk goes: the upload's current offset."""

    offset: int = Field(ge=0, le=2**53)


class JudgeRequest(Request):
    """Judge settings a request may set (never the key: it stays on the server, bound to its endpoint). Other keys
    are refused with a 400 naming them."""

    model_config = REFUSED_BY_THE_SERVER
    endpoint: str | None = Field(None, description="the name of an endpoint the operator named (JUDGE_ENDPOINTS)")
    base_url: str | None = Field(None, description="instead of `endpoint`: the URL of one the operator named")
    model: str | None = None
    temperature: float | None = None
    language: str | None = Field(None, description="the judge prompt's language: en or zh")
    concurrency: Count | None = None
    max_tokens: Count | None = None
    timeout_s: float | None = None
    max_retries: Count | None = None
    use_cache: Flag | None = None
    batch: Flag | None = None


class EvaluationRequest(Request):
    """Start an evaluation of an upload, with the fields of the upload's kind (see `evaluation_request`)."""

    upload_id: Id
    methods: list[str] | None = Field(None, description="dialogue: the methods to score (default: all)")
    judge: JudgeRequest | None = None
    judges: list[JudgeRequest] | None = Field(None, description="a panel: each judge's settings over `judge`'s")


def evaluation_request() -> type[BaseModel]:
    """EvaluationRequest with every registered kind's start fields (Kind.start_fields, typed by Kind.start_types),
    so that a kind added later is in the contract too."""
    scored: list[Scored] = registry.having(Scored)
    kinds = tuple(scored)
    if kinds not in _WITH_KINDS:
        fields: dict[str, Any] = {name: (kind.start_types.get(name, Any) | None,
                                         Field(None, description=f"{kind.name}: an option of this kind"))
                                  for kind in kinds for name in kind.start_fields}
        _WITH_KINDS[kinds] = create_model("EvaluationRequest", __base__=EvaluationRequest,
                                          __doc__=EvaluationRequest.__doc__, **fields)
    return _WITH_KINDS[kinds]


_WITH_KINDS: dict[tuple, type[BaseModel]] = {}


class Speaker(Request):
    """The simulator of a simulation (other keys, a URL or a key among them, are refused with a 400 naming
    them)."""

    model_config = REFUSED_BY_THE_SERVER
    model: str = Field(json_schema_extra={"pattern": NOT_BLANK})
    endpoint: str | None = None
    temperature: Temperature = None
    max_tokens: Count | None = None
    language: Literal["en", "zh"] | None = None


class SimulatedMethod(Request):
    """A method a simulation talks with (other keys are refused with a 400 naming them)."""

    model_config = REFUSED_BY_THE_SERVER
    name: str
    model: str = Field(json_schema_extra={"pattern": NOT_BLANK})
    endpoint: str | None = None
    system_prompt: str | None = None
    temperature: Temperature = None
    max_tokens: Count | None = None


class SimulationRequest(Request):
    """Start a simulation: personas (the built-in set or an upload), the simulator, the methods, the rounds."""

    personas: Literal["builtin"] | None = None
    personas_upload_id: Id | None = None
    simulator: Speaker
    methods: list[SimulatedMethod] = Field(json_schema_extra={"minItems": 1, "maxItems": MAX_METHODS})
    rounds: Count = Field(json_schema_extra={"minimum": 1, "maximum": MAX_ROUNDS})
    protocol: Literal["shared", "independent"] | None = None
    reference: str | None = Field(None, description="shared protocol: the method the simulator hears")
    score: Flag | None = None
    judge: JudgeRequest | None = None
    judges: list[JudgeRequest] | None = None
    rubric: str | None = Field(None, description="with score: the rubric the files are scored under, by id or SHA-256 "
                                                 "(default: personasteer)")
    sample: Count | None = Field(None, description="a sample's number, for a new draw at temperature > 0")


class Labels(Request):
    """A new title and tags (a field left out keeps its value)."""

    title: str | None = None
    tags: list[str] | str | None = Field(None, description="a list, or one text with the tags separated by commas")


def _kind_filter(schema: dict[str, Any]) -> None:
    """The scored kinds registered when the document is made, or "" (any kind)."""
    scored: list[Scored] = registry.having(Scored)
    schema["enum"] = [*(kind.name for kind in scored), ""]


KindFilter = Annotated[str | None, Field(json_schema_extra=_kind_filter)]
Status = Literal["queued", "running", "done", "incomplete", "failed", "cancelled"]
Sort = Literal["newest", "oldest", "title", "figure-high", "figure-low"]
MAX_PER_PAGE = 500
# A day's shape, as the document states it beside `format: date` (so no NUL either); 2026-02-30 has it and is refused.
DAY = r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
MAX_SEARCH = 200


class ListQuery(Request):
    """The search, filters, sort and page of the list of evaluations (the page /evaluations takes the same)."""

    q: str | None = Field(None, max_length=MAX_SEARCH, description="words that must all be in the run's title, file "
                          "name, tags, methods, judge model(s) or reference set, or rubric (any case)")
    kind: KindFilter = Field(None, description="only evaluations of this kind")
    status: Status | Literal[""] | None = Field(None, description="only evaluations in this status")
    tag: str | None = Field(None, max_length=40, description="only evaluations with this tag (case counts)")
    started_by: str | None = Field(None, max_length=200, description="only evaluations this user started "
                                                                     "(with accounts on)")
    since: date | None = Field(None, description="only evaluations created on this day (UTC) or later, YYYY-MM-DD",
                               json_schema_extra={"pattern": DAY})
    until: date | None = Field(None, description="only evaluations created on this day (UTC) or earlier, YYYY-MM-DD",
                               json_schema_extra={"pattern": DAY})
    sort: Sort | Literal[""] | None = Field(
        None, description="newest (the default), oldest, title (a given title, else the file name), figure-high or "
                          "figure-low (by the headline figure `figure` names; runs without it last)")
    figure: str | None = Field(None, max_length=200, description="the method (or agent) whose headline figure the "
                                                                 "figure sorts read; empty: a run's unnamed figure")
    page: int | None = Field(None, ge=1, le=2**31 - 1, description="the page, from 1 (default 1)")
    per_page: int | None = Field(None, ge=1, le=MAX_PER_PAGE, description="evaluations per page (default 200 here, "
                                                                          "20 on the page)")


class SessionsQuery(Request):
    """A page of a dialogue evaluation's sessions."""

    page: Count | None = None
    per_page: Count | None = None
    q: str | None = None


class CompareQuery(Request):
    """The runs to compare (`ids` repeated), the baseline and the regression rule."""

    ids: Annotated[list[Listed], Field(min_length=2)] | Listed = Field(
        description="two or more evaluation ids (repeat `ids`, or separate by commas)")
    baseline: str | None = Field(None, description="one of `ids` (default: the earliest created)")
    correction: str | None = Field(None, description="holm (default) or bh",
                                   json_schema_extra={"enum": ["holm", "bh", ""]})
    metric: str | None = Field(None, description="a paired metric by its result-document name (default: the kind's "
                                                 "first); an unknown name is a 400 listing the kind's")
    max_drop: float | None = Field(None, description="points a metric may drop before it is a regression")


class DeleteUploadQuery(Request):
    """Whether an upload's evaluations go with it."""

    evaluations: Literal["delete", ""] | None = None


# -- answers ---------------------------------------------------------------------------------------------------

class Upload(Answer):
    """A stored upload: its kind, file, summary and the warnings of its validation."""

    id: Id
    kind: str
    filename: str
    size: int
    summary: dict[str, Any]
    warnings: list[Any]
    created_at: str


class Attachment(Answer):
    """A file attached to an upload: its name (dialogue: scores), content hash, file, summary and warnings."""

    id: Id
    upload_id: Id
    name: str
    sha256: str
    filename: str
    size: int
    summary: dict[str, Any]
    warnings: list[Any]
    created_at: str


class Attachments(Answers[Attachment]):
    """The files attached to an upload under one name, oldest first."""


class UploadAtPage(Upload):
    """A stored upload and its page."""

    url: str


class ChunkedUpload(Answer):
    """A resumable upload: where it stands."""

    id: Id
    offset: int
    size: int
    chunk_bytes: int


class ChunkOffset(Answer):
    """Where the upload stands after a chunk."""

    offset: int


class ChunkRefused(Answer):
    """A chunk that does not fit: why, and (409) where the upload stands."""

    error: str
    offset: int | None = None


class Started(Answer):
    """An evaluation or simulation started: its id and page."""

    id: Id
    status: str
    url: str


class Progress(Answer):
    """How far an evaluation has come."""

    done: int
    total: int
    failed: int | None = None
    unparsed: int | None = None
    cached: int | None = None
    rate_per_s: float | None = None
    eta_s: float | None = None
    waiting: Literal["worker", "retry"] | None = None


class EvaluationStatus(Answer):
    """An evaluation's status and progress."""

    id: Id
    upload_id: Id
    kind: str
    status: Literal["queued", "running", "done", "incomplete", "failed", "cancelled"]
    methods: list[str] | None
    error: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None
    progress: Progress
    failure: dict[str, Any] | None


class Evaluation(EvaluationStatus):
    """An evaluation with its result document (docs/result-documents.md) once it has one."""

    result: dict[str, Any] | None


class PartialResult(Answer):
    """A running evaluation's result document made from the judgments stored so far (`partial`), or, once it has
    ended, its final one."""

    id: Id
    status: Literal["queued", "running", "done", "incomplete", "failed", "cancelled"]
    partial: bool  # true while it runs: made from `judgments` of `total` judgments
    judgments: int  # judgments stored (answered, failed or unparsed) that the document was made from
    total: int
    result: dict[str, Any] | None  # null before the first judgment is stored, or for a kind scored in one step


class EvaluationListItem(Answer):
    """One evaluation of the list."""

    id: Id
    upload_id: Id
    kind: str
    status: str
    methods: list[str] | None
    created_at: str
    finished_at: str | None
    filename: str | None
    title: str | None
    tags: list[str]
    headline: list[Any] | None
    measured_with: str | None
    display_title: str = Field(description="the title, or one made of what tells the run apart: file, judge "
                                           "model(s), rubric, date")
    started_by: str | None = Field(description="who started it, with accounts on")


class EvaluationList(Answers[EvaluationListItem]):
    """One page of the evaluations that match, newest first unless sorted otherwise; the headers X-Total-Count
    (how many match), X-Page, X-Per-Page and Link (rel next and prev) page through them."""


class SimulationProgress(Answer):
    """How far a simulation has come."""

    done: int
    total: int
    failed: int
    cached: int
    rate: float | None
    eta_s: float | None


class Simulation(Answer):
    """A simulation's status, progress, files, evaluations and usage."""

    id: Id
    status: Literal["queued", "running", "done", "incomplete", "failed", "cancelled"]
    error: str | None
    created_at: str
    finished_at: str | None
    progress: SimulationProgress
    upload_ids: list[Id]
    evaluation_ids: list[Id]
    protocol: str
    rounds: int
    methods: list[str]
    personas: int
    rubric: str | None = Field(description="the rubric the files are scored under (its SHA-256 when one was named; "
                                           "null: the default, personasteer)")
    usage: list[dict[str, Any]]
    costs: dict[str, Any] = Field(description="per speaker (simulator, methods, judges): the estimate made before "
                                              "it started and what it has spent so far")
    url: str


class SimulationList(Answers[Simulation]):
    """Simulations, newest first."""


class Compared(Answer):
    """Paired differences against the baseline, and the regression flag."""

    baseline: Id
    runs: list[Any]
    paired: list[Any]
    regression: Any


class LabelsSet(Answer):
    """A row's title and tags as they are now."""

    id: Id
    title: str | None
    tags: list[str]


class UploadDeleted(Answer):
    """The evaluations deleted with an upload."""

    deleted_evaluations: list[Id]


class InUse(Answer):
    """Refused while something depends on it: which evaluations."""

    error: str
    evaluations: list[Any] | None = None


class Share(Answer):
    """A read-only share link."""

    id: Id
    evaluation_id: Id
    token: str
    url: str
    created_at: str
    revoked_at: str | None
    active: bool


class ShareList(Answers[Share]):
    """An evaluation's share links, revoked ones included."""


class LeaderboardQuery(Request):
    """Which run of each method ranks it."""

    choice: Literal["latest", "best", "tag"] | None = Field(
        None, description="latest (default): each method's latest run; best: its best; tag: its latest run tagged `tag`")
    tag: str | None = Field(None, description="with choice=tag: the tag a run must have")


class LeaderboardRow(Answer):
    """A method's place: its figure (the kind's headline) from the chosen run, with its 95% interval."""

    rank: int
    method: str
    value: float
    ci95: list[float] | None
    run: Id
    created_at: str
    runs: int


class Leaderboard(Answer):
    """A dataset's leaderboard (docs/leaderboard.md): the methods ranked, each method's trend over its runs (points
    {run, created_at, value, ci95}, oldest first), the runs and their tags."""

    dataset: Id
    kind: str
    headline: str
    higher_is_better: bool
    choice: Literal["latest", "best", "tag"]
    tag: str | None
    ranking: list[LeaderboardRow]
    trends: dict[str, list[Any]]
    runs: list[Any]
    tags: list[str]
    files: list[str]


class DatasetOf(Answer):
    """The dataset of a finished evaluation and its leaderboard's address."""

    dataset: Id
    url: str


class DatasetShare(Answer):
    """A read-only share link of a dataset's leaderboard."""

    id: Id
    dataset: Id
    token: str
    url: str
    created_at: str
    revoked_at: str | None
    active: bool


class DatasetShareList(Answers[DatasetShare]):
    """A dataset's share links, revoked ones included."""


class SessionsPage(Answer):
    """A page of per-sample detail (dialogue: replies, scores and the judge's reasoning)."""


class ResultDocument(Answer):
    """A result document (docs/result-documents.md): its keys depend on the kind."""


class OpenAPIDocument(Answer):
    """An OpenAPI 3.1 document."""

    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]

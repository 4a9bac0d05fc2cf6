"""What the rating pages compute: the form a rubric makes (its dimensions on their scales, its yes/no question, the
0-100 total when the headline is not made of dimensions), a rating read from that form, the reply in its context,
and each rater's progress through the slice.

The rating's `total`: under a rubric with dimensions the headline is made of them (result_rubric's block says how),
so it is computed from the rater's dimensions by the rubric's own rule, as the judge's is; under imported bare totals
(a rubric without dimensions) the rater gives it, 0-100."""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kinds.dialogue import result_rubric
from kinds.dialogue.format import read_session
from kinds.dialogue.rating_slice import Reply
from kinds.dialogue.result_rubric import RubricBlock
from kinds.host import Site
from kinds.rubrics import Rubric
from kinds.rubrics.templates import CONTEXT
from translations import _

TOTAL = (0.0, 100.0)


class RatingError(ValueError):
    """A rating that cannot be kept as given: `field` names the form field, the message says what to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Field:
    """One question of the rating form: its form `name`, the rating's `key` it fills, its label and scale; `choices`
    are its values as radio buttons (a scale of single digits, the yes/no question), none for a number input."""

    name: str
    key: str
    label: str
    low: float
    high: float
    integer: bool
    choices: tuple[tuple[int, str], ...] = ()  # (value, what it reads)
    levels: tuple[tuple[str, str], ...] = ()  # the rubric's words for ranges of its scale

    @property
    def bounds(self) -> tuple[str, str]:
        """The scale's lowest and highest value as written: ("0", "20")."""
        return plain(self.low), plain(self.high)

    @property
    def scale(self) -> str:
        """The scale as people read it: "0-20"."""
        return "-".join(self.bounds)


def plain(number: float) -> str:
    """A number without a needless ".0"."""
    return str(int(number)) if float(number).is_integer() else str(number)


def _level_start(level: tuple[str, str]) -> float:
    """Where a level ("10-14", "5") starts on its scale: levels are shown low to high (a rubric keeps them sorted as
    text, "10-14" before "5-9"); one that names no number goes last."""
    found = re.match(r"\s*(-?\d+(?:\.\d+)?)", level[0])
    return float(found.group(1)) if found else math.inf


def asks_total(block: RubricBlock) -> bool:
    """Whether raters give the 0-100 total themselves: the rubric's headline is not made of dimensions."""
    return not block["dimensions"]


def fields(rubric: Rubric, block: RubricBlock) -> list[Field]:
    """The rating form's questions under the evaluation's rubric: each dimension on its scale (radio buttons for a
    scale of single digits), the 0-100 total when the rubric has no dimensions, and its yes/no question."""
    labels = result_rubric.dimension_labels(block)
    found = []
    for d in rubric.dimensions:
        digits = d.integer and d.low >= 0 and d.high <= 9
        choices = tuple((v, str(v)) for v in range(int(d.low), int(d.high) + 1)) if digits else ()
        found.append(Field(f"dim-{d.key}", d.key, labels.get(d.key, d.label_in("en")), d.low, d.high, d.integer,
                           choices, tuple(sorted(d.levels.items(), key=_level_start))))
    if asks_total(block):
        found.append(Field("total", "total", _("Fine score"), *TOTAL, False))
    yesno = result_rubric.yes_no(block)
    if yesno is not None:
        found.append(Field("binary", "verdict", yesno["question"], 0, 1, True, ((1, yesno["yes"]), (0, yesno["no"]))))
    return found


def _value(field: Field, text: str) -> float | int:
    """One answer of the form, checked against its field; RatingError naming it."""
    if field.key == "verdict":
        if text not in ("0", "1"):
            raise RatingError(field.name, _("Answer %(question)s with yes or no.", question=field.label))
        return int(text)
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    whole = number.is_integer() if math.isfinite(number) else False
    if not (math.isfinite(number) and field.low <= number <= field.high) or (field.integer and not whole):
        message = _("%(label)s must be a whole number from %(min)s to %(max)s.") if field.integer else \
            _("%(label)s must be a number from %(min)s to %(max)s.")
        raise RatingError(field.name, message % {"label": field.label, "min": plain(field.low),
                                                 "max": plain(field.high)})
    return int(number) if field.integer else number


def form_rating(form: Mapping, rubric: Rubric, questions: Sequence[Field]) -> dict:
    """A rating from the rating form ({total, verdict, dimension key: value}), every question answered; the total
    computed from the dimensions by the rubric's headline when it has dimensions. RatingError naming the first field
    left empty or out of its scale."""
    rating: dict = {"total": None, "verdict": None}
    for field in questions:
        text = str(form.get(field.name) or "").strip()
        if not text:
            raise RatingError(field.name, _("Give %(label)s a value.", label=field.label))
        rating[field.key] = _value(field, text)
    if rubric.dimensions:
        rating["total"] = rubric.headline({d.key: rating[d.key] for d in rubric.dimensions})
    return rating


def form_values(rating: Mapping | None, questions: Sequence[Field]) -> dict[str, str]:
    """A kept rating as the form's values (by field name), to show it again."""
    if not rating:
        return {}
    return {f.name: plain(rating[f.key]) for f in questions if rating.get(f.key) is not None}


def in_context(site: Site, record: dict, reply: Reply, rubric: Rubric) -> dict | None:
    """The reply as the judge saw it: what the rubric's context declares of the session (profile, personality, the
    earlier rounds with this method's replies, the user's message; everything under a rubric that declares nothing,
    imported totals), the round and the reply; None when the upload no longer has it."""
    session_id, number, method = reply
    upload = site.store.get_upload(record["upload_id"])
    row = site.store.row("SELECT byte_offset FROM sessions WHERE upload_id = :upload AND session_id = :session",
                         {"upload": record["upload_id"], "session": session_id}) if upload else None
    if upload is None or row is None:
        return None
    session = read_session(site.file_of(upload), row["byte_offset"])
    position = next((i for i, r in enumerate(session.rounds) if r.number == number), None)
    if position is None or method not in session.rounds[position].responses:
        return None
    shows = set(rubric.context) or set(CONTEXT)
    current = session.rounds[position]
    return {"session_id": session_id, "round": number,
            "profile": session.user_profile if "profile" in shows else None,
            "personality": session.user_personality if "personality" in shows else None,
            "history": [{"round": r.number, "user": r.user_message, "reply": r.responses.get(method)}
                        for r in session.rounds[:position]] if "history" in shows else [],
            "message": current.user_message if "message" in shows else None,
            "reply": current.responses[method]}


def by_reply(rows: Iterable[dict]) -> dict[Reply, dict[str, dict]]:
    """People's ratings (rating_store.people_ratings) as {reply: {rater: rating}}."""
    found: dict[Reply, dict[str, dict]] = {}
    for row in rows:
        found.setdefault((row["session_id"], row["round"], row["method"]), {})[row["rater"]] = row
    return found


def rated_by(items: Sequence[Reply], ratings: Mapping[Reply, Mapping[str, dict]], rater: str) -> set[int]:
    """The positions of the slice a rater has rated."""
    return {position for position, item in enumerate(items) if rater in ratings.get(item, {})}


def progress(items: Sequence[Reply], ratings: Mapping[Reply, Mapping[str, dict]],
             rater: str | None = None) -> list[dict]:
    """Each rater who rated a reply of the slice (and `rater`, even before their first), by name: {rater, done,
    total}."""
    done: dict[str, int] = {rater: 0} if rater else {}
    for item in items:
        for name in ratings.get(item, {}):
            done[name] = done.get(name, 0) + 1
    return [{"rater": name, "done": count, "total": len(items)} for name, count in sorted(done.items())]


def next_unrated(size: int, rated: set[int], after: int = -1) -> int | None:
    """The first position after `after` not rated, else the first not rated before it (those skipped), else None."""
    later = (p for p in range(after + 1, size) if p not in rated)
    earlier = (p for p in range(0, min(after + 1, size)) if p not in rated)
    return next(later, next(earlier, None))


def slice_table(items: Sequence[Reply], strata: Mapping[tuple[str, int], Sequence[Reply]]) -> list[dict]:
    """Per stratum (method, round), in the strata's order: the replies judged, and how many the slice holds."""
    counts: dict[tuple[str, int], int] = {}
    for _session, number, method in items:
        counts[method, number] = counts.get((method, number), 0) + 1
    return [{"method": method, "round": number, "judged": len(members), "in_slice": counts.get((method, number), 0)}
            for (method, number), members in strata.items()]


def version(items: Sequence[Reply]) -> str:
    """A short fingerprint of a slice's items: a form posted for another draw is refused."""
    return hashlib.sha256(json.dumps([list(item) for item in items]).encode("utf-8")).hexdigest()[:16]

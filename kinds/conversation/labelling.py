"""What the labelling pages and the people's labels API compute: the slice of conversations people label, each
person's progress through it, Krippendorff's alpha between people per dimension, and a person's labels checked.

A slice is named by the query string: `slice` = all (default) | agent (simulated users) | human (real people) |
task (with `task=<name>`) | file (the conversations people labelled in the uploaded file, the file's `human` label
set) | sample (with `n=<N>` and `seed=<S>`: N conversations drawn at random without replacement by Python's
random.Random(S), in upload order). A value that is not one of these gives the whole upload, never an error."""
from __future__ import annotations

import random
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from common.lazy_modules import lazy
from kinds.agreement import bootstrap_alpha
from kinds.conversation import table
from kinds.conversation.behaviour import BY_KEY, DIMENSIONS, valid_value
from kinds.conversation.format import read_any
from kinds.conversation.label_sets import label_sets
from kinds.conversation.people_labels import MAX_PERSON
from kinds.kind import Job, Site, open_file
from translations import _

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

SLICES = ("all", "agent", "human", "task", "file", "sample")
MAX_SAMPLE = 100_000
CACHED_UPLOADS = 4  # which conversations of the last uploads people labelled in the file, by content hash

_file_cache: OrderedDict[str, list[bool]] = OrderedDict()
_lock = threading.Lock()


class LabelError(ValueError):
    """Labels that cannot be kept as given: `field` names the wrong one, the message says what to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Slice:
    """Which conversations people label (see the module)."""

    name: str = "all"
    task: str = ""
    n: int = 0
    seed: int = 0

    def query(self) -> dict[str, Any]:
        """The slice as query-string arguments, only those it needs."""
        extra = {"task": self.task} if self.name == "task" else {"n": self.n, "seed": self.seed} \
            if self.name == "sample" else {}
        return {"slice": self.name, **extra}


def _whole(text: Any, low: int, high: int) -> int | None:
    try:
        number = int(str(text))
    except ValueError:
        return None
    return number if low <= number <= high else None


def parse_slice(args: Mapping) -> Slice:
    """The slice the query string names; the whole upload for anything else."""
    name = args.get("slice", "all")
    if name == "task" and args.get("task"):
        return Slice("task", task=str(args["task"]))
    if name == "sample" and (n := _whole(args.get("n", ""), 1, MAX_SAMPLE)) is not None:
        return Slice("sample", n=n, seed=_whole(args.get("seed", "0"), 0, 2**31 - 1) or 0)
    return Slice(name) if name in ("agent", "human", "file") else Slice()


def labelled_in_file(record: dict, upload: dict, site: Site) -> list[bool]:
    """Per conversation in upload order, whether people labelled it in the file (the file's "human" label set); read
    once per upload, then kept for a few."""
    key = upload["sha256"]
    with _lock:
        if key in _file_cache:
            _file_cache.move_to_end(key)
            return _file_cache[key]
    job = Job(record, upload, site.file_of(upload), site)
    with open_file(job.path) as stream:
        conversations = read_any(stream, upload["filename"])[1]
    flags = [labels is not None for labels in label_sets(job, conversations).get("human", [])]
    with _lock:
        _file_cache[key] = flags
        while len(_file_cache) > CACHED_UPLOADS:
            _file_cache.popitem(last=False)
    return flags


def indexes(chosen: Slice, record: dict, upload: dict, site: Site) -> list[int]:
    """The conversations of a slice, by index in upload order."""
    rows = table.summaries(site, upload)
    if chosen.name in ("agent", "human"):
        return [r["index"] for r in rows if r["source"] == chosen.name]
    if chosen.name == "task":
        return [r["index"] for r in rows if r["task"] == chosen.task]
    if chosen.name == "file":
        return [i for i, labelled in enumerate(labelled_in_file(record, upload, site)) if labelled]
    if chosen.name == "sample":
        return sorted(random.Random(chosen.seed).sample(range(len(rows)), min(chosen.n, len(rows))))
    return [r["index"] for r in rows]


def progress(slice_indexes: Sequence[int], labelled: Mapping[int, Mapping[str, dict]],
             person: str | None = None) -> list[dict]:
    """Each person who labelled a conversation of the slice (and `person`, even before their first), by name: how
    many of the slice's conversations they labelled, of how many."""
    done: dict[str, int] = {person: 0} if person else {}
    for i in slice_indexes:
        for name in labelled.get(i, {}):
            done[name] = done.get(name, 0) + 1
    return [{"person": name, "done": count, "total": len(slice_indexes)} for name, count in sorted(done.items())]


def agreement(slice_indexes: Sequence[int], labelled: Mapping[int, Mapping[str, dict]]) -> list[dict]:
    """Krippendorff's alpha between the people who labelled the slice, per dimension (nominal for categories,
    interval for the 1-5 scales) with its 95% bootstrap interval over conversations: {key, level, value, low, high,
    n (conversations at least two people labelled)}."""
    units = [i for i in slice_indexes if labelled.get(i)]
    people = sorted({name for i in units for name in labelled[i]})
    out = []
    for dimension in DIMENSIONS:
        level = "interval" if dimension.is_scale else "nominal"
        matrix = [[labelled[i].get(name, {}).get(dimension.key) for name in people] for i in units]
        if dimension.is_scale:
            values: Any = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix], dtype=float)
        else:
            values = np.array(matrix, dtype=object)
        found = bootstrap_alpha(values.reshape(len(units), len(people)), list(range(len(units))), level) \
            if units and people else {"value": None, "low": None, "high": None, "n": 0}
        out.append({"key": dimension.key, "label": dimension.label, "level": level, **found})
    return out


def person_name(text: Any) -> str:
    """A person's name as typed (spaces around it dropped); LabelError when empty, too long or holding control
    characters."""
    name = str(text or "").strip()
    if not name:
        raise LabelError("person", _("Give your name ('person'), so that your labels are kept apart from other people's."))
    if len(name) > MAX_PERSON or any(unicodedata.category(c).startswith("C") for c in name):
        raise LabelError("person", _("A name ('person') has at most %(limit)s characters and no control characters.",
                                     limit=MAX_PERSON))
    return name


def checked_labels(given: Any, where: str = "labels") -> dict[str, Any]:
    """A person's labels of one conversation ({dimension key: value}; a missing or null dimension is left unlabelled)
    once each value is one of its dimension's; LabelError naming the field otherwise, or when no dimension has one."""
    if not isinstance(given, Mapping):
        raise LabelError(where, _("'%(field)s' must be an object of dimension: value.", field=where))
    for key, value in given.items():
        dimension = BY_KEY.get(key)
        if dimension is None:
            raise LabelError(f"{where}.{key}", _("'%(field)s' is not a behaviour dimension (they are: %(keys)s).",
                                                 field=f"{where}.{key}", keys=", ".join(BY_KEY)))
        if value is not None and not valid_value(dimension, value):
            raise LabelError(f"{where}.{key}", _("'%(field)s' must be one of %(values)s.", field=f"{where}.{key}",
                                                 values=", ".join(map(str, dimension.values))))
    labels = {d.key: given.get(d.key) for d in DIMENSIONS}
    if all(v is None for v in labels.values()):
        raise LabelError(where, _("'%(field)s' gives no dimension a value.", field=where))
    return labels


def form_labels(form: Mapping) -> dict[str, Any]:
    """The labels a labelling page's form sends (each dimension's radio group by its key; the scales as digits)."""
    labels: dict[str, Any] = {}
    for dimension in DIMENSIONS:
        value = form.get(dimension.key) or None
        if value is not None and dimension.is_scale:
            value = _whole(value, 1, 5) or value  # a wrong one stays as sent, for checked_labels to name
        labels[dimension.key] = value
    return checked_labels(labels)

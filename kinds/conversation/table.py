"""The conversations table: one row per conversation of an upload (source, task, turns, satisfaction, ratings and,
in an annotation run, the judge's status and scores), sorted and filtered as the query string says, so every view
is a permalink (on share pages too), like the dialogue kind's sample grid.

Query string: `sort` = index (file order) | path | source | task | turns | satisfaction | ratings (the mean of the
simulated user's `rating` fields) | rating:<field> | questionnaire:<field> | status | detail | diversity | utility
| hallucination; `desc=1` for the highest first (rows without the value go last either way, ties keep file order);
`q` = a part of the path (case-insensitive); `source` = agent | human; `task`; `status` = ok | unparsed | failed |
pending | problems (unparsed or failed); `page`. A value that is not one of these is ignored, never an error.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from kinds.conversation.annotation import FLAG
from kinds.conversation.format import SOURCES, Conversation, read_any
from kinds.conversation.metrics import satisfaction
from kinds.conversation.prompts import ANNOTATION_SCALES
from kinds.kind import Site, open_file

PER_PAGE = 50
SCALES = (*ANNOTATION_SCALES, FLAG)
PLAIN_SORTS = ("index", "path", "source", "task", "turns", "satisfaction", "ratings", "status", *SCALES)
STATUSES = ("ok", "unparsed", "failed", "pending", "problems")
MAX_QUERY = 200
CACHED_UPLOADS = 4  # summaries of the last uploads read, by content hash (a stored file never changes)

_cache: OrderedDict[str, list[dict]] = OrderedDict()
_lock = threading.Lock()


def summary(index: int, conv: Conversation) -> dict:
    """What the table shows of one conversation, without the judge's annotation."""
    values = [v for turn in conv.history if isinstance(turn, dict) and turn.get("role") != "user"
              for v in [satisfaction(turn)] if v is not None]
    ratings = dict(conv.ratings)
    return {"index": index, "path": conv.path, "source": conv.source, "task": conv.task, "turns": conv.turns,
            "satisfaction": sum(values) / len(values) if values else None, "ratings": ratings,
            "rating_mean": sum(ratings.values()) / len(ratings) if ratings else None,
            "questionnaire": dict(conv.questionnaire)}


def summaries(site: Site, upload: dict) -> list[dict]:
    """The summary of every conversation of an upload, in file order (read once, then kept for a few uploads)."""
    key = upload["sha256"]
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    with open_file(site.file_of(upload)) as stream:
        rows = [summary(i, conv) for i, conv in enumerate(read_any(stream, upload["filename"])[1])]
    with _lock:
        _cache[key] = rows
        while len(_cache) > CACHED_UPLOADS:
            _cache.popitem(last=False)
    return rows


def with_annotation(rows: list[dict], judgments: list[dict], annotated: bool) -> list[dict]:
    """The rows with the judge's `status`, `scores` and `error` (status "pending" until asked; None when the run
    does not annotate)."""
    by_index = {j["session_idx"]: j for j in judgments}
    out = []
    for row in rows:
        judged = by_index.get(row["index"]) or {}
        status = judged.get("status", "pending") if annotated else None
        scores = (judged.get("scores") or {}) if status == "ok" else {}
        out.append({**row, "status": status, "scores": {s: scores.get(s) for s in SCALES}, "error": judged.get("error")})
    return out


def query_of(args: Mapping, tasks: list[str], fields: dict[str, list[str]], annotated: bool) -> dict:
    """The query string as understood: anything unknown falls back to its default."""
    sort = str(args.get("sort", "index"))
    kind, _, name = sort.partition(":")
    known = sort in PLAIN_SORTS or (kind in fields and name in fields[kind])
    if not known or (not annotated and sort in ("status", *SCALES)):
        sort = "index"
    source, task, status = (str(args.get(name, "")) for name in ("source", "task", "status"))
    return {"sort": sort, "desc": args.get("desc") == "1", "q": str(args.get("q", ""))[:MAX_QUERY],
            "source": source if source in SOURCES else "", "task": task if task in tasks else "",
            "status": status if annotated and status in STATUSES else ""}


def _key(row: dict, sort: str):
    kind, _, name = sort.partition(":")
    if kind == "rating":
        return row["ratings"].get(name)
    if kind == "questionnaire":
        return row["questionnaire"].get(name)
    if sort in SCALES:
        return row["scores"][sort]
    if sort == "ratings":
        return row["rating_mean"]
    if sort == "path":
        return row["path"].casefold()
    return row[sort]


def table(rows: list[dict], args: Mapping, annotated: bool) -> tuple[list[dict], dict, dict]:
    """The rows the query string asks for, in its order; the query as understood; and the choices offered (tasks,
    rating and questionnaire fields)."""
    tasks = sorted({r["task"] for r in rows})
    fields = {"rating": sorted({f for r in rows for f in r["ratings"]}),
              "questionnaire": sorted({f for r in rows for f in r["questionnaire"]})}
    query = query_of(args, tasks, fields, annotated)
    needle = query["q"].casefold()
    wanted = ("unparsed", "failed") if query["status"] == "problems" else (query["status"],)
    shown = [r for r in rows if needle in r["path"].casefold()
             and query["source"] in ("", r["source"]) and query["task"] in ("", r["task"])
             and (not query["status"] or r["status"] in wanted)]
    if query["sort"] != "index":
        having = [r for r in shown if _key(r, query["sort"]) is not None]
        having.sort(key=lambda r: _key(r, query["sort"]), reverse=query["desc"])  # stable: ties keep file order
        shown = having + [r for r in shown if _key(r, query["sort"]) is None]
    elif query["desc"]:
        shown = shown[::-1]
    return shown, query, {"tasks": tasks, "fields": fields}


def page_of(rows: list[dict], args: Mapping) -> tuple[list[dict], int, int]:
    """The rows of the asked page (clamped to the pages there are): (rows, page, pages)."""
    pages = max(1, -(-len(rows) // PER_PAGE))
    try:
        page = min(max(int(args.get("page", 1)), 1), pages)
    except (TypeError, ValueError, OverflowError):
        page = 1
    return rows[(page - 1) * PER_PAGE: page * PER_PAGE], page, pages

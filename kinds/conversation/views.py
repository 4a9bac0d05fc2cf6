"""The conversation kind's reading views: the list of an upload's conversations and one conversation's transcript
(the user's intents, the assistant's hallucination labels and satisfaction, the judge's annotation and answer)."""
from __future__ import annotations

from collections.abc import Mapping

from judge import JudgeConfig
from kinds.conversation import annotation, figures, prompts, table
from kinds.conversation.format import read_one
from kinds.conversation.metrics import hallucination, satisfaction, user_intents
from kinds.kind import Site, open_file


def listing(record: dict, args: Mapping, site: Site) -> tuple[str, dict] | None:
    """`conversations?q=&source=&task=&status=&sort=&desc=&page=`: the conversations as a table (table.py)."""
    upload = site.store.get_upload(record["upload_id"])
    if upload is None:
        return None
    annotated = bool(record["settings"].get("annotate"))
    judgments = site.store.judgments(record["id"]) if annotated else []
    rows = table.with_annotation(table.summaries(site, upload), judgments, annotated)
    shown, query, choices = table.table(rows, args, annotated)
    page_rows, page, pages = table.page_of(shown, args)
    return "conversation/conversations.html", {
        "rows": page_rows, "query": query, "page": page, "pages": pages, "total": len(shown), "all": len(rows),
        "annotated": annotated, **choices, "scales": table.SCALES,
        "source_labels": figures.source_labels(), "terms": figures.term_labels()}


def transcript(record: dict, args: Mapping, site: Site) -> tuple[str, dict] | None:
    """`transcript?index=N`: one conversation, turn by turn, with what was labelled and judged about it."""
    try:
        index = int(args.get("index", ""))
    except ValueError:
        return None
    store = site.store
    upload = store.get_upload(record["upload_id"])
    if upload is None:
        return None
    found = store.session_offsets(record["upload_id"], index, 1) if index >= 0 else []
    if found and found[0]["idx"] == index:
        path = found[0]["session_id"]
    else:  # not scored yet: where each conversation is was not stored, the table knows
        rows = table.summaries(site, upload) if index >= 0 else []
        if index >= len(rows):
            return None
        path = rows[index]["path"]
    with open_file(site.file_of(upload)) as stream:
        conversation = read_one(stream, upload["filename"], path)
    if conversation is None:
        return None
    turns = [{"role": turn.get("role", ""), "content": turn.get("content", ""),
              "intents": user_intents(turn) if turn.get("role") == "user" else [],
              "hallucination": hallucination(turn) if turn.get("role") != "user" else None,
              "satisfaction": satisfaction(turn) if turn.get("role") != "user" else None}
             for turn in conversation.history if isinstance(turn, dict)]
    judged = next((j for j in store.judgments(record["id"], [index])), None)
    language = record["settings"].get("language") or JudgeConfig().language
    asked = prompts.prompt(annotation.context(conversation), language) if judged else None
    return "conversation/transcript.html", {
        "index": index, "c": conversation, "turns": turns, "judgment": judged,
        "messages": asked.messages if asked else [], "version": asked.version if asked else None,
        "scores": (judged["scores"] if judged else None) or {},
        "source_labels": figures.source_labels(), "terms": figures.term_labels()}

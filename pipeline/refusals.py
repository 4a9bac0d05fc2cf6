"""What a refused upload is told when its problems are not its kind's to tell: a file that looks like another kind's,
a binary file, a file no kind recognises. Each gets one message; any other file keeps its kind's problems. And what an
upload of a kind that is not scored is told when asked for an evaluation."""
from __future__ import annotations

from pathlib import Path

from kinds import registry
from kinds.kind import HoldsPersonas, Kind
from kinds.problems import LimitProblem, Problem, Report
from kinds.readers.jsonl import UTF8_BOM, wrong_encoding
from kinds.readers.text import has_json_line, is_binary, is_json_document
from translations import _

RUN_PAGE = "/simulations/new"  # where the personas of an upload are used: a simulation's Run page


def explain(report: Report, kind: Kind, chosen: bool, head: bytes, filename: str, path: Path) -> Report:
    """The report of a refused file read as `kind` (`chosen` by the user, or detected): one problem when the file is
    another kind's, binary, or no kind's; otherwise `report` itself. A file its kind's `sniff` claimed, or that its
    kind's `upload_hint` recognises before any other kind's does, keeps its kind's problems: they are the ones to
    fix; so does a file refused by a hard limit."""
    if not (chosen or kind.fallback) or any(isinstance(problem, LimitProblem) for problem in report.problems):
        return report
    head = head.removeprefix(UTF8_BOM)
    claim = _first_claim(kind, head, filename, path)
    if claim is None:
        message = _binary(kind, chosen, head, filename, path) or _no_kinds(kind, chosen, head, filename, path)
    elif claim[0] is kind:
        return report
    elif chosen:
        message = _("%(file)s is not a file of the kind %(kind)s: it looks like one of the kind %(other)s. %(hint)s",
                    file=filename, kind=kind.label, other=claim[0].label, hint=claim[1])
    else:
        message = _("%(file)s looks like a file of the kind %(other)s. %(hint)s", file=filename,
                    other=claim[0].label, hint=claim[1])
    return Report([Problem(None, "", message)]) if message else report


def _first_claim(kind: Kind, head: bytes, filename: str, path: Path) -> tuple[Kind, str] | None:
    """The first kind, in the order kinds are detected, whose `upload_hint` recognises the file, with its hint: `kind`
    itself, or another (never another fallback kind: it claims no file by itself)."""
    for candidate in sorted(registry.kinds(), key=lambda k: k.fallback):
        if candidate.fallback and candidate is not kind:
            continue
        hint = candidate.upload_hint(head, filename, path)
        if hint is not None:
            return candidate, hint
    return None


def _binary(kind: Kind, chosen: bool, head: bytes, filename: str, path: Path) -> str | None:
    """The message of a binary file that is none of the binary files the kind reads (which its `sniff` claims)."""
    if not is_binary(head) or kind.sniff(head, filename, path):
        return None
    if chosen:
        return _("%(file)s is not a text file: it holds binary data, not one of the files of the kind %(kind)s, which "
                 "takes %(formats)s.", file=filename, kind=kind.label, formats=kind.formats)
    return _("%(file)s is not a text file: it holds binary data (an image, an archive, a program, ...), and no kind "
             "reads it. The files each kind takes: %(formats)s.", file=filename, formats=every_format())


def _no_kinds(kind: Kind, chosen: bool, head: bytes, filename: str, path: Path) -> str | None:
    """The message of a text file no kind claimed, when it is one whole JSON document (package.json, say) or holds no
    line that starts like JSON (a README, a table): a JSON Lines file keeps the fallback kind's messages line by line,
    as do an empty file, a UTF-16 one and one past a hard limit."""
    if chosen or not head.strip() or wrong_encoding(head) is not None:
        return None
    if has_json_line(head) and not is_json_document(path):
        return None
    return _("%(file)s is not a file of any kind this dashboard reads: nothing in it looks like one. The files each "
             "kind takes: %(formats)s.", file=filename, formats=every_format())


def every_format() -> str:
    """What each registered kind takes, as the drop zone lists it: "Label: formats; ..." (the fallback first)."""
    kinds = sorted(registry.kinds(), key=lambda kind: not kind.fallback)
    return "; ".join(f"{kind.label}: {kind.formats}" if kind.formats else str(kind.label) for kind in kinds)


def not_scored(kind: Kind) -> str:
    """Why an upload of a kind that is not `Scored` gets no evaluation, and, when it holds personas, where it is used."""
    if isinstance(kind, HoldsPersonas):
        return _("An upload of the kind %(label)s is not scored: its personas are used to run a simulation, whose "
                 "dialogue file is then scored. Start one on the Run page (%(page)s) with this file's personas.",
                 label=kind.label, page=RUN_PAGE)
    return _("An upload of the kind %(label)s is not scored.", label=kind.label)

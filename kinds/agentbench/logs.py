"""Reading AgentBench's per-sample logs: runs.jsonl (finished samples) and error.jsonl (failed attempts)."""
from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Iterator
from typing import TypeGuard

from kinds.agentbench.tasks import Log
from kinds.kind import open_file
from kinds.problems import Problem, Report, describe, short_json
from kinds.readers import json_text
from kinds.readers import zip as zips
from kinds.readers.jsonl import UTF8_BOM, json_reason
from kinds.readers.limits import Limits
from kinds.readers.zip import ZipReader
from translations import _

MAX_SAMPLES = 1000  # runs.jsonl samples kept per agent x task (all are counted)
MAX_ERRORS = 2000  # error.jsonl entries kept per agent x task (all are counted)
MAX_MESSAGE_CHARS = 4000  # each history message is cut to this length
MAX_HISTORY_CHARS = 500_000  # history text kept per agent x task; later samples keep no history
MAX_RESULT_CHARS = 300
MAX_INFO_CHARS = 1000
MAX_LINE_WARNINGS = 5  # bad runs.jsonl / error.jsonl lines warned about one by one, per file

_SKIP = object()


# --- runs.jsonl and error.jsonl -------------------------------------------------------------------

def member_lines(reader: ZipReader, name: str, info: zipfile.ZipInfo,
                 report: Report) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of a JSONL member, within the ZIP limits; a read failure is a warning."""
    try:
        yield from reader.lines(name, info)
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
        report.warn(Problem(None, "", _("%(file)s in the ZIP cannot be read (%(reason)s).", file=name,
                                        reason=str(exc))))


class _BadLines:
    """Warnings for unusable JSONL lines: the first few one by one, then a count."""

    def __init__(self, file: str, report: Report) -> None:
        self.file, self.report, self.count = file, report, 0

    def add(self, lineno: int, path: str, message: str) -> None:
        """Warn about one line (skipped), or only count it once MAX_LINE_WARNINGS were shown."""
        self.count += 1
        if self.count <= MAX_LINE_WARNINGS:
            self.report.warn(Problem(lineno, path, message))

    def finish(self) -> None:
        """Warn with the number of bad lines not shown one by one."""
        if self.count > MAX_LINE_WARNINGS:
            self.report.warn(Problem(None, "", _("%(count)s more unusable lines in %(file)s were skipped.",
                                                 count=self.count - MAX_LINE_WARNINGS, file=self.file)))


def _parse_line(lineno: int, raw: bytes, bad: _BadLines, limits: Limits):
    """The JSON object of one line, or _SKIP (blank, or warned about); LimitError past a hard limit."""
    if lineno == 1 and raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM):]
    if not raw.strip():
        return _SKIP
    try:
        value = json_text.loads(raw.decode("utf-8"), limits, bad.file, lineno)
    except UnicodeDecodeError:
        bad.add(lineno, "", _("%(file)s line %(line)s is not valid UTF-8; the line is skipped.",
                              file=bad.file, line=lineno))
        return _SKIP
    except json.JSONDecodeError as exc:
        bad.add(lineno, "", _("%(file)s line %(line)s is not valid JSON at character %(column)s: %(reason)s. "
                              "The line is skipped.", file=bad.file, line=lineno, column=exc.colno,
                              reason=json_reason(exc)))
        return _SKIP
    if not isinstance(value, dict):
        bad.add(lineno, "", _("%(file)s line %(line)s must be a JSON object, found %(found)s; the line is "
                              "skipped.", file=bad.file, line=lineno, found=describe(value)))
        return _SKIP
    return value


def read_samples(lines: Iterator[tuple[int, bytes]], file: str, report: Report, limits: Limits,
                 keep: int = MAX_SAMPLES) -> Log:
    """The Log of a runs.jsonl: statuses of all samples counted, the first `keep` kept; bad lines warned."""
    log = Log(file=file, keep=keep)
    bad = _BadLines(file, report)
    offset = 0
    for lineno, raw in lines:
        line_offset, offset = offset, offset + len(raw)
        value = _parse_line(lineno, raw, bad, limits)
        if value is _SKIP:
            continue
        output = value.get("output")
        if not isinstance(output, dict) or not isinstance(output.get("status"), str):
            bad.add(lineno, "output.status", _(
                "%(file)s line %(line)s has no 'output' object with a 'status' string; the line is skipped.",
                file=file, line=lineno))
            continue
        log.offsets.append((line_offset, output["status"]))
        _add_sample(log, value, output)
    bad.finish()
    return log


def _add_sample(log: Log, value: dict, output: dict) -> None:
    status = output["status"]
    log.total += 1
    log.counts[status] += 1
    if len(log.items) >= log.keep:
        log.cut = True
        return
    log.items.append(_sample_item(value, output, log))


def _sample_item(value: dict, output: dict, log: Log) -> dict:
    """One sample as the samples page shows it: index, status, result, and its history within the log's budget."""
    history = output.get("history")
    index = value.get("index", output.get("index"))
    item = {"index": index if _is_scalar(index) else short_json(index), "status": output["status"],
            "result": _text(output.get("result"), MAX_RESULT_CHARS),
            "history_length": len(history) if isinstance(history, list) else None, "history": None}
    if isinstance(history, list):
        if log.history_chars < MAX_HISTORY_CHARS:
            item["history"] = [_message(turn, log) for turn in history]
        else:
            log.history_omitted += 1
    return item


def _message(turn, log: Log) -> dict:
    """One history message as {"role", "content", "cut"}, the content cut to MAX_MESSAGE_CHARS."""
    if isinstance(turn, dict):
        role = turn.get("role")
        content = turn.get("content")
    else:
        role, content = None, turn
    text = content if isinstance(content, str) else ("" if content is None else json.dumps(content, ensure_ascii=False))
    cut = len(text) > MAX_MESSAGE_CHARS
    if cut:
        text = text[:MAX_MESSAGE_CHARS]
        log.messages_cut += 1
    log.history_chars += len(text)
    return {"role": role if isinstance(role, str) else None, "content": text, "cut": cut}


def is_number(value: object) -> TypeGuard[float]:
    """True for an int or float (not bool) that is finite."""
    return (type(value) is int or type(value) is float) and math.isfinite(value)


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, str) or is_number(value)


def _text(value, limit: int) -> str | None:
    """A value as short text: strings as they are, other values as JSON; None stays None."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def read_errors(lines: Iterator[tuple[int, bytes]], file: str, report: Report, limits: Limits,
                keep: int = MAX_ERRORS, count_all: bool = True) -> Log:
    """The Log of an error.jsonl: error kinds of all entries counted (or, without `count_all`, of those read up to
    the `keep`th), the first `keep` kept; bad lines warned."""
    log = Log(file=file, keep=keep)
    bad = _BadLines(file, report)
    for lineno, raw in lines:
        value = _parse_line(lineno, raw, bad, limits)
        if value is _SKIP:
            continue
        kind = value.get("error")
        if not isinstance(kind, str) or not kind:
            bad.add(lineno, "error", _("%(file)s line %(line)s has no 'error' kind; the line is skipped.",
                                       file=file, line=lineno))
            continue
        log.total += 1
        log.counts[kind] += 1
        if len(log.items) >= log.keep:
            log.cut = True
            if not count_all:
                break
            continue
        time = value.get("time")
        index = value.get("index")
        log.items.append({"index": index if _is_scalar(index) else short_json(index), "kind": kind,
                          "info": _text(value.get("info"), MAX_INFO_CHARS),
                          "time": time.get("str") if isinstance(time, dict) and isinstance(time.get("str"), str)
                          else None})
    bad.finish()
    return log


def _stored_lines(path, file: str, limits: Limits) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of one member of a stored outputs ZIP, within the ZIP limits; nothing when it is absent."""
    with open_file(path) as stream, zips.open_zip_file(stream, limits) as archive:
        try:
            info = archive.getinfo(file)
        except KeyError:
            return
        yield from member_lines(ZipReader(archive, limits), file, info, Report())


def sample_page(path, samples: dict, limits: Limits, status: str, start: int, count: int) -> list[dict]:
    """The samples `start`..`start + count` of a stored runs.jsonl (those with `status`, when given; `samples` is
    the result document's entry of the file), read when a page shows them: by the byte offsets of its index."""
    index = samples.get("index")
    if index is None:  # a result document made before samples were indexed
        return _scanned_page(path, samples["file"], limits, status, start, count)
    wanted = index["statuses"].index(status) if status in index["statuses"] else None
    offsets = [offset for offset, code in index["lines"] if not status or code == wanted][start:start + count]
    log, page = Log(file=samples["file"]), []
    bad = _BadLines(samples["file"], Report())
    with open_file(path) as stream, zips.open_zip_file(stream, limits) as archive:
        if samples["file"] not in archive.NameToInfo:
            return []
        member = archive.open(samples["file"])
        for offset in offsets:
            member.seek(offset)  # forward only: a deflated member is decompressed, not parsed, up to the line
            value = _parse_line(1 if offset == 0 else 0, member.readline(limits.zip_member_bytes + 1), bad, limits)
            output = value.get("output") if value is not _SKIP else None
            if isinstance(output, dict):
                page.append(_sample_item(value, output, log))
    return page


def _scanned_page(path, file: str, limits: Limits, status: str, start: int, count: int) -> list[dict]:
    log, page, matched = Log(file=file), [], 0
    bad = _BadLines(file, Report())
    for lineno, raw in _stored_lines(path, file, limits):
        value = _parse_line(lineno, raw, bad, limits)
        output = value.get("output") if value is not _SKIP else None
        if not isinstance(output, dict) or not isinstance(output.get("status"), str):
            continue
        if status and output["status"] != status:
            continue
        if start <= matched < start + count:
            page.append(_sample_item(value, output, log))
        matched += 1
    return page


def stored_errors(path, file: str, limits: Limits, keep: int) -> list[dict]:
    """The first `keep` entries of a stored error.jsonl, read when a page shows them (and no further)."""
    return read_errors(_stored_lines(path, file, limits), file, Report(), limits, keep=keep, count_all=False).items


def stored_outputs(path, file: str, limits: Limits) -> Iterator[tuple[object, dict]]:
    """(index, output) of every sample of a stored runs.jsonl, in file order (unusable lines skipped)."""
    bad = _BadLines(file, Report())
    for lineno, raw in _stored_lines(path, file, limits):
        value = _parse_line(lineno, raw, bad, limits)
        output = value.get("output") if value is not _SKIP else None
        if isinstance(output, dict) and isinstance(output.get("status"), str):
            index = value.get("index", output.get("index"))
            yield (index if _is_scalar(index) else short_json(index)), output

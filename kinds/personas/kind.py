"""The personas kind: a file of simulated users, uploaded and checked like any other file but never scored (it is not
`Scored`, only `HoldsPersonas`); a simulation (the Run page, /simulations/new) talks to the methods as these users and
its dialogue file is scored."""
from __future__ import annotations

import json
from pathlib import Path
from typing import BinaryIO, Iterator, Mapping

from kinds.kind import HoldsPersonas, Site
from kinds.personas.format import MAX_LINE_BYTES, personas, validate
from kinds.problems import Report
from translations import _
from translations import lazy_gettext as _l

RUN_PAGE = "/simulations/new"  # where a personas upload is used (the simulation's Run page)


class PersonasKind(HoldsPersonas):
    """JSON Lines of personas (persona_id, user_profile, user_personality, scenario, opening)."""

    name = "personas"
    label = _l("Personas (simulated users)")
    formats = _l(".jsonl, one persona per line")
    extension = ".jsonl"

    def sniff(self, head: bytes, filename: str, path: Path | None) -> bool:
        """JSON Lines whose first object has "persona_id" and "user_profile" and no "rounds" (a dialogue file
        naming its personas keeps its rounds, and stays a dialogue file)."""
        if b'"persona_id"' not in head or b'"user_profile"' not in head:
            return False
        line = _first_line(head, path)
        try:
            first = json.loads(line)
        except ValueError:  # not JSON: a personas file with a broken line, which its validation then names
            return b'"rounds"' not in line
        return type(first) is dict and "persona_id" in first and "user_profile" in first and "rounds" not in first

    def validate(self, stream: BinaryIO, filename: str, options: Mapping[str, str]) -> Report:
        """Check every line of the personas file."""
        return validate(stream)

    def personas(self, stream: BinaryIO) -> Iterator[dict]:
        """Every persona of the file, a line each."""
        return personas(stream)

    def upload_context(self, upload: dict, site: Site) -> dict:
        """The Run page's address, the names of the summary's writings and fields."""
        return {"run_page": RUN_PAGE, "script_labels": script_labels(), "field_labels": field_labels()}


def script_labels() -> dict[str, str]:
    """What each writing of format.script is called on the upload page."""
    return {"zh": _("Chinese"), "ja": _("Japanese"), "ko": _("Korean"),
            "latin": _("English or another Latin-script language"), "other": _("Other or undetected")}


def field_labels() -> dict[str, str]:
    """What each optional field of a persona is called on the upload page."""
    return {"user_personality": _("Personality"), "scenario": _("Scenario"), "opening": _("Opening message")}


def _first_line(head: bytes, path: Path | None) -> bytes:
    """The first non-blank line of a file: from `head`, or read from `path` when it is longer than `head`."""
    text = head.lstrip()
    end = text.find(b"\n")
    if end >= 0 or path is None:
        return text[:end] if end >= 0 else text
    with open(path, "rb") as f:
        while (line := f.readline(MAX_LINE_BYTES + 2)) and not line.strip():
            pass
    return line.removeprefix(b"\xef\xbb\xbf").strip()

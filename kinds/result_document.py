"""The keys every result document has, whatever its kind (docs/result-documents.md).

Each kind types its own document as a TypedDict in kinds/<kind>/result.py that extends ResultDocument, and is a
`Scored[<that TypedDict>]` (or `Judged[...]`, `Paired[...]`; kinds/kind.py): its `score` returns one, and its tables,
figures and pages read one.
"""
from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class UploadInput(TypedDict):
    """The `input` block: the upload a result scored (a kind adds its own counts)."""

    upload_id: str
    filename: str
    sha256: str  # of the uploaded file's bytes


class ResultDocument(TypedDict):
    """What every result document carries."""

    kind: str  # the kind's name, always the first key
    evaluation_id: str
    # what produced the numbers (code, upload, judges, prompts, libraries, times): added by the runner
    # (pipeline/provenance.py) once the kind has scored; absent only from results kept before it existed
    provenance: NotRequired[dict[str, Any]]

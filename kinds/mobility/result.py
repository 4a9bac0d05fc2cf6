"""The mobility result document (docs/result-documents.md) from a generated set and its reference."""
from __future__ import annotations

from typing import Any, TypedDict

from kinds.mobility import format as mobility
from kinds.mobility import metrics
from kinds.result_document import ResultDocument, UploadInput


class Reference(TypedDict):
    """The reference set scored against."""

    id: str
    name: str
    users: int


class Generated(TypedDict):
    """The generated set: the upload's users."""

    users: int


class MobilityResult(ResultDocument):
    """A mobility evaluation's result document; every key is always present (kind "mobility")."""

    method: str  # the generated set's name: the upload's file name without extension
    input: UploadInput
    reference: Reference
    generated: Generated
    official: metrics.Variant  # AgentSociety's JS distances and final score
    strict: metrics.Variant  # JS divergences in bits on shared bins, and their final score
    distributions: metrics.Distributions  # what the charts draw
    warnings: list[dict[str, Any]]  # arrays whose shape differs from the reference's, as problems {line, path, message}


def build_result(evaluation: dict, upload: dict, reference_record: dict, reference: mobility.MobilityData,
                 generated: mobility.MobilityData) -> MobilityResult:
    """Both variants' JSDs and final scores, the distributions behind them, and shape warnings."""
    slots = (metrics.slot_counts(reference.intention_sequences), metrics.slot_counts(generated.intention_sequences))
    scores = metrics.score(reference, generated, slots)
    return {
        "kind": "mobility",
        "evaluation_id": evaluation["id"],
        "method": evaluation["methods"][0],
        "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"]},
        "reference": {"id": reference_record["id"], "name": reference_record["name"],
                      "users": int(len(reference.gyration_radius))},
        "generated": {"users": int(len(generated.gyration_radius))},
        "official": scores["official"],
        "strict": scores["strict"],
        "distributions": metrics.distributions(reference, generated, slots),
        "warnings": [w.to_dict() for w in mobility.shape_warnings(reference, generated)],
    }

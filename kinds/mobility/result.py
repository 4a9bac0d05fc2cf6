"""The mobility result document (docs/result-documents.md) from a generated set and its reference."""
from __future__ import annotations

from kinds.mobility import format as mobility
from kinds.mobility import metrics


def build_result(evaluation: dict, upload: dict, reference_record: dict, reference: mobility.MobilityData,
                 generated: mobility.MobilityData) -> dict:
    """Both variants' JSDs and final scores, the distributions behind them, and shape warnings."""
    slots = (metrics.slot_counts(reference.intention_sequences), metrics.slot_counts(generated.intention_sequences))
    return {
        "kind": "mobility",
        "evaluation_id": evaluation["id"],
        "method": evaluation["methods"][0],
        "input": {"upload_id": upload["id"], "filename": upload["filename"], "sha256": upload["sha256"]},
        "reference": {"id": reference_record["id"], "name": reference_record["name"],
                      "users": int(len(reference.gyration_radius))},
        "generated": {"users": int(len(generated.gyration_radius))},
        **metrics.score(reference, generated, slots),
        "distributions": metrics.distributions(reference, generated, slots),
        "warnings": [w.to_dict() for w in mobility.shape_warnings(reference, generated)],
    }

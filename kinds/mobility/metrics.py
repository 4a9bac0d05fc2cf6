"""Every number the mobility kind computes (docs/metrics.md#mobility): per distribution the Jensen-Shannon value
of the reference against the generated set, in the `official` and the `strict` variant, each variant's final
score, and the binned distributions the charts draw. The Jensen-Shannon arithmetic itself is kinds.stats'.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from common.lazy_modules import lazy
from kinds import stats
from kinds.mobility.format import FIRST_CODE, LAST_CODE, ONE_D, MobilityData

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy


class Divergences(TypedDict):
    """One Jensen-Shannon value per distribution (format.KEYS, in its order)."""

    gyration_radius: float
    daily_location_numbers: float
    intention_sequences: float
    intention_proportions: float


class Variant(TypedDict):
    """One variant of the score: its four Jensen-Shannon values and the final score they make."""

    jsd: Divergences
    final_score: float


class Scores(TypedDict):
    """The benchmark score in both variants."""

    official: Variant  # AgentSociety's: JS distances (natural log), each set binned over its own range
    strict: Variant  # JS divergences in bits, on bins both sets share


class Histogram(TypedDict):
    """Shares of users per bin, on bins both sets share."""

    edges: list[float]
    reference: list[float]
    generated: list[float]


class SlotShares(TypedDict):
    """Each intention's share (columns, from FIRST_CODE) per time slot (rows), of each set."""

    reference: list[list[float]]
    generated: list[list[float]]


class Proportions(TypedDict):
    """The mean proportion of the day of each intention, of each set."""

    reference: list[float]
    generated: list[float]


class Distributions(TypedDict):
    """The charts' data (never per-user values)."""

    gyration_radius: Histogram
    daily_location_numbers: Histogram
    slots: SlotShares
    proportions: Proportions


def score(reference: MobilityData, generated: MobilityData,
          slots: tuple[np.ndarray, np.ndarray] | None = None) -> Scores:
    """The benchmark score: the four Jensen-Shannon values and the final score, in the official and the strict
    variant; `slots` are both sets' slot_counts when they are already known."""
    ref_slots, gen_slots = slots or (slot_counts(reference.intention_sequences),
                                     slot_counts(generated.intention_sequences))
    return {"official": variant(official_divergences(reference, generated, ref_slots, gen_slots)),
            "strict": variant(strict_divergences(reference, generated, ref_slots, gen_slots))}


def official_divergences(reference: MobilityData, generated: MobilityData, ref_slots: np.ndarray,
                         gen_slots: np.ndarray) -> Divergences:
    """Official JSD of each distribution: AgentSociety's JS distance (natural log) of 50-bin densities, each set
    over its own range, sequences and proportions flattened."""
    return {
        "gyration_radius": stats.official_jsd(reference.gyration_radius, generated.gyration_radius),
        "daily_location_numbers": stats.official_jsd(reference.daily_location_numbers,
                                                     generated.daily_location_numbers),
        "intention_sequences": stats.official_js_distance(
            code_density(ref_slots, reference.intention_sequences.dtype),
            code_density(gen_slots, generated.intention_sequences.dtype)),
        "intention_proportions": stats.official_jsd(reference.intention_proportions,
                                                    generated.intention_proportions),
    }


def strict_divergences(reference: MobilityData, generated: MobilityData, ref_slots: np.ndarray,
                       gen_slots: np.ndarray) -> Divergences:
    """Strict JSD of each distribution: the JS divergence in bits on shared bins (see the three functions below)."""
    return {
        "gyration_radius": shared_bins_divergence(reference.gyration_radius, generated.gyration_radius),
        "daily_location_numbers": shared_bins_divergence(reference.daily_location_numbers,
                                                         generated.daily_location_numbers),
        "intention_sequences": slot_divergence(ref_slots, gen_slots),
        "intention_proportions": proportions_divergence(reference.intention_proportions,
                                                        generated.intention_proportions),
    }


def variant(jsd: Divergences) -> Variant:
    """One variant of the result document: the four JSD values and their final_score."""
    return {"jsd": {"gyration_radius": float(jsd["gyration_radius"]),
                    "daily_location_numbers": float(jsd["daily_location_numbers"]),
                    "intention_sequences": float(jsd["intention_sequences"]),
                    "intention_proportions": float(jsd["intention_proportions"])},
            "final_score": final_score(jsd)}


def final_score(jsd: Divergences) -> float:
    """Final score = 100 x the mean of (1 - JSD) over the four distributions, written as AgentSociety's code writes
    it (same rounding)."""
    jsd_gyration = jsd["gyration_radius"]
    jsd_locations = jsd["daily_location_numbers"]
    jsd_sequences = jsd["intention_sequences"]
    jsd_proportions = jsd["intention_proportions"]
    final_score = ((1-jsd_gyration + 1-jsd_locations + 1-jsd_sequences + 1-jsd_proportions) / 4) * 100
    return float(final_score)


def slot_counts(sequences: np.ndarray) -> np.ndarray:
    """counts[t, c]: how many users have intention code c (0-7; column 0 stays 0) in slot t."""
    if sequences.ndim != 2 or sequences.dtype.kind not in "iu":
        raise ValueError("intention sequences must be a 2-D integer array")
    if sequences.size and (sequences.min() < FIRST_CODE or sequences.max() > LAST_CODE):
        raise ValueError("intention codes must be 1-7")
    counts = np.empty((sequences.shape[1], LAST_CODE + 1), dtype=np.int64)
    for slot in range(sequences.shape[1]):
        # One column at a time: bincount copies its input to intp, so this keeps the copy to one column.
        counts[slot] = np.bincount(sequences[:, slot], minlength=LAST_CODE + 1)
    return counts


def code_density(counts: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The official density of the flattened intention codes, computed from their slot_counts.

    numpy.histogram of the distinct codes weighted by their counts uses the same range (the smallest
    and largest code present), the same bins and the same arithmetic as on the flattened array, so the
    result is identical to the last bit; the codes are passed in the data's own dtype for that reason.
    """
    totals = counts.sum(axis=0)
    present = np.flatnonzero(totals)
    low, high = int(present[0]), int(present[-1])
    codes = np.arange(low, high + 1).astype(dtype)
    return stats.official_density(codes, weights=totals[low:high + 1].astype(np.float64))


def shared_bins_divergence(reference: np.ndarray, generated: np.ndarray) -> float:
    """Strict JSD of one value per user (radius, locations): JS divergence in bits of both sets' histograms on 50
    shared bins over their joint range."""
    _edges, ref_counts, gen_counts = stats.shared_histograms(reference, generated)
    return stats.js_divergence_bits(ref_counts, gen_counts)


def slot_divergence(ref_counts: np.ndarray, gen_counts: np.ndarray) -> float:
    """Strict JSD of the intention sequences: JS divergence in bits of the (slot, intention) distributions."""
    return stats.js_divergence_bits(*padded_slot_counts(ref_counts, gen_counts))


def padded_slot_counts(ref_counts: np.ndarray, gen_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (slot, intention) counts of both sets over the union of their slots, zeros where a set has none."""
    slots = max(len(ref_counts), len(gen_counts))
    padded = []
    for counts in (ref_counts, gen_counts):
        table = np.zeros((slots, LAST_CODE), dtype=np.int64)
        table[:len(counts)] = counts[:, FIRST_CODE:]
        padded.append(table)
    return padded[0], padded[1]


def proportions_divergence(reference: np.ndarray, generated: np.ndarray) -> float:
    """Strict JSD of the intention proportions: mean over the intentions present in both of the JS divergence in
    bits of that column's histograms on 50 bins over [0, 1]."""
    columns = min(reference.shape[1], generated.shape[1])
    values = []
    for column in range(columns):
        _edges, ref_counts, gen_counts = stats.shared_histograms(
            reference[:, column], generated[:, column], value_range=(0.0, 1.0))
        values.append(stats.js_divergence_bits(ref_counts, gen_counts))
    return sum(values) / columns


def distributions(reference: MobilityData, generated: MobilityData,
                  slots: tuple[np.ndarray, np.ndarray] | None = None) -> Distributions:
    """The charts' data: shares of users per shared bin (radius, locations), each intention's share per slot, and
    the mean proportion of each intention; never per-user values; `slots` as in score()."""
    histograms = {key: _histogram(getattr(reference, key), getattr(generated, key)) for key in ONE_D}
    ref_slots, gen_slots = slots or (slot_counts(reference.intention_sequences),
                                     slot_counts(generated.intention_sequences))
    return {"gyration_radius": histograms["gyration_radius"],
            "daily_location_numbers": histograms["daily_location_numbers"],
            "slots": {"reference": _slot_shares(ref_slots), "generated": _slot_shares(gen_slots)},
            "proportions": {"reference": reference.intention_proportions.mean(axis=0).tolist(),
                            "generated": generated.intention_proportions.mean(axis=0).tolist()}}


def _histogram(reference: np.ndarray, generated: np.ndarray) -> Histogram:
    edges, ref_counts, gen_counts = stats.shared_histograms(reference, generated)
    return {"edges": edges.tolist(), "reference": shares(ref_counts), "generated": shares(gen_counts)}


def _slot_shares(counts: np.ndarray) -> list[list[float]]:
    coded = counts[:, FIRST_CODE:]
    return (coded / coded.sum(axis=1, keepdims=True)).tolist()


def shares(counts: np.ndarray) -> list[float]:
    """Each bin's count as a share of all the counts."""
    return (counts / counts.sum()).tolist()

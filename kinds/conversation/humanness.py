"""How human are simulated users (docs/metrics.md#how-human-are-simulated-users): a labelled set of simulated users'
conversations against real people's, on the eleven behaviour dimensions.

Per dimension, the Jensen-Shannon divergence in bits of the two label distributions (kinds.stats.js_divergence_bits,
the function the mobility kind's strict variant uses: scipy's jensenshannon(p, q, base=2) squared), over the
conversations that have a label on that dimension, with a percentile bootstrap interval that resamples each set's
labelled conversations (with replacement, seeded). The summary figure, the behaviour gap, is the mean of the
per-dimension divergences over the dimensions both sets have labels on (0: the same behaviour on every dimension,
1: disjoint on every one), its interval from the same resamples.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, TypedDict

from common.lazy_modules import lazy
from kinds import stats
from kinds.conversation.behaviour import DIMENSIONS

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

SEED = 0


class DimensionGap(TypedDict):
    """One dimension: how many conversations of each set carry a label, each set's shares, and the divergence."""

    dimension: str
    n_simulated: int
    n_real: int
    simulated: dict[str, float]  # share of each value (keys as strings, in the taxonomy's order)
    real: dict[str, float]
    jsd: float | None  # bits; None when a set has no label on the dimension
    ci95: list[float] | None


class Humanness(TypedDict):
    """The comparison: per dimension, and the behaviour gap (mean over dimensions) with its interval."""

    dimensions: list[DimensionGap]
    gap: float | None
    gap_ci95: list[float] | None
    gap_dimensions: int  # how many dimensions the gap averages
    n_simulated: int  # conversations with at least one label
    n_real: int
    bootstrap: dict[str, int]  # {"seed", "replicates"}


def _codes(labels: Sequence[dict | None]) -> np.ndarray:
    """Labelled conversations x dimensions: each label's position among its dimension's values, -1 where none."""
    rows = [[d.values.index(row[d.key]) if row.get(d.key) in d.values else -1 for d in DIMENSIONS]
            for row in labels if row is not None]
    return np.asarray(rows, dtype=int).reshape(len(rows), len(DIMENSIONS))


def _counts(codes: np.ndarray, column: int, size: int) -> np.ndarray:
    """Counts of each value of one dimension over the last-but-one axis (conversations); -1 is not counted."""
    column_codes = codes[..., column]
    return np.stack([(column_codes == v).sum(axis=-1) for v in range(size)], axis=-1)


def _interval(values: list[float], level: float) -> list[float] | None:
    if len(values) < 2:
        return None
    tail = (1 - level) / 2
    low, high = np.quantile(np.asarray(values), [tail, 1 - tail])
    return [float(low), float(high)]


def _shares(counts: np.ndarray, values: tuple) -> dict[str, float]:
    total = counts.sum()
    return {str(v): (float(c) / total if total else 0.0) for v, c in zip(values, counts)}


def behaviour_gap(simulated: Sequence[dict | None], real: Sequence[dict | None], n_boot: int = stats.DEFAULT_N_BOOT,
                  seed: int = SEED, level: float = stats.DEFAULT_LEVEL) -> Humanness:
    """Per dimension the JS divergence (bits) of the simulated and real label distributions with its bootstrap
    interval, and their mean over dimensions (the behaviour gap); labels one dict per conversation (None: none)."""
    sim, hum = _codes(simulated), _codes(real)
    rng = np.random.default_rng(seed)
    draws = (rng.integers(0, len(sim), (n_boot, len(sim))) if len(sim) else None,
             rng.integers(0, len(hum), (n_boot, len(hum))) if len(hum) else None)
    resampled = [sim[draws[0]] if draws[0] is not None else None, hum[draws[1]] if draws[1] is not None else None]
    rows: list[DimensionGap] = []
    per_boot = np.full((n_boot, len(DIMENSIONS)), np.nan)
    for column, d in enumerate(DIMENSIONS):
        size = len(d.values)
        a, b = _counts(sim, column, size), _counts(hum, column, size)
        jsd = stats.js_divergence_bits(a, b) if a.sum() and b.sum() else None
        if jsd is not None and resampled[0] is not None and resampled[1] is not None:
            boot_a, boot_b = _counts(resampled[0], column, size), _counts(resampled[1], column, size)
            for i in range(n_boot):
                if boot_a[i].sum() and boot_b[i].sum():
                    per_boot[i, column] = stats.js_divergence_bits(boot_a[i], boot_b[i])
        ci = _interval([v for v in per_boot[:, column] if not np.isnan(v)], level) if jsd is not None else None
        rows.append({"dimension": d.key, "n_simulated": int(a.sum()), "n_real": int(b.sum()),
                     "simulated": _shares(a, d.values), "real": _shares(b, d.values), "jsd": jsd, "ci95": ci})
    present = [r["jsd"] for r in rows if r["jsd"] is not None]
    kept = [column for column, r in enumerate(rows) if r["jsd"] is not None]
    boot_means = [float(np.nanmean(per_boot[i, kept])) for i in range(n_boot)
                  if kept and not np.isnan(per_boot[i, kept]).all()]
    return {"dimensions": rows, "gap": float(np.mean(present)) if present else None,
            "gap_ci95": _interval(boot_means, level) if present else None, "gap_dimensions": len(present),
            "n_simulated": len(sim), "n_real": len(hum), "bootstrap": {"seed": seed, "replicates": n_boot}}


def table(result: Humanness) -> tuple[tuple, list[tuple]]:
    """humanness.csv: one row per dimension, then the behaviour gap."""
    header = ("dimension", "n_simulated", "n_real", "jsd_bits", "ci95_low", "ci95_high", "simulated_shares",
              "real_shares")
    rows = [(r["dimension"], r["n_simulated"], r["n_real"], r["jsd"], *(r["ci95"] or (None, None)),
             "; ".join(f"{k}={v:.4f}" for k, v in r["simulated"].items()),
             "; ".join(f"{k}={v:.4f}" for k, v in r["real"].items())) for r in result["dimensions"]]
    rows.append(("behaviour_gap (mean)", result["n_simulated"], result["n_real"], result["gap"],
                 *(result["gap_ci95"] or (None, None)), "", ""))
    return header, rows

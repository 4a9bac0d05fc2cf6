"""Inter-rater agreement: Krippendorff's alpha, Cohen's kappa, rank correlations and a cluster bootstrap.

Raters (judge models or people) rate the same items; a rating is an interval-scale number (a fine total,
a dimension score) or a nominal label (a verdict). None or NaN marks an item a rater did not rate. Every
function returns a plain Python float, or None where the statistic is undefined, never NaN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence, TypedDict

from common.lazy_modules import lazy
from kinds.stats import (
    DEFAULT_LEVEL,
    DEFAULT_N_BOOT,
    as_float,
    percentile_interval,
    resample_indices,
    resample_weights,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

    # One rater's ratings, aligned by item: numbers or labels, None (or NaN) for an item it did not rate.
    Ratings = Sequence[object] | np.ndarray
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

LEVELS = ("interval", "nominal")


class Agreement(TypedDict):
    """An agreement statistic with its cluster-bootstrap interval (bootstrap_agreement)."""

    value: float | None  # None where the statistic is undefined
    low: float | None  # the interval's bounds: None when it cannot be drawn (see bootstrap_agreement)
    high: float | None
    n: int  # the items at least two raters rated


class LabelAgreement(TypedDict):
    """Two raters' labels on the same items (label_agreement)."""

    pairs: int
    exact: float | None  # the share of equal labels; None without pairs
    kappa: float | None  # Cohen's; None when undefined


def _with_mask(values) -> tuple[np.ndarray, np.ndarray]:
    """Return (array, present mask): a float array where the values are numbers, else an object array."""
    try:
        arr = np.asarray(values, dtype=float)
        return arr, ~np.isnan(arr)
    except (TypeError, ValueError):  # labels that are not numbers, e.g. strings
        arr = np.asarray(values, dtype=object)
        present = np.frompyfunc(lambda v: v is not None and v == v, 1, 1)(arr).astype(bool)  # NaN != NaN
        return arr, present


def _label_codes(values: np.ndarray) -> np.ndarray:
    """Integer codes 0..k-1 of the distinct labels in a 1-D array."""
    return np.unique(values, return_inverse=True)[1].ravel()


def krippendorff_alpha(ratings, level: str = "interval") -> float | None:
    """Krippendorff's alpha of a units x raters matrix (None/NaN = missing); None if undefined."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    arr, present = _with_mask(ratings)
    if arr.ndim != 2:
        raise ValueError("ratings must be a 2-D units x raters matrix")
    if level == "interval" and arr.dtype == object:
        raise ValueError("interval alpha needs numeric ratings")
    m_u = present.sum(axis=1)
    pairable = m_u >= 2
    arr, present, m_u = arr[pairable], present[pairable], m_u[pairable]
    n = int(m_u.sum())
    if n < 2:
        return None
    if level == "interval":
        # Squared-difference metric: the sum of (x_i - x_j)^2 over ordered pairs i != j of m values is
        # 2 m SS with SS the sum of squares about their mean, so no values x values matrix is needed.
        x = np.where(present, arr, 0.0)
        unit_mean = x.sum(axis=1) / m_u
        unit_ss = np.where(present, (x - unit_mean[:, None]) ** 2, 0.0).sum(axis=1)
        # Units whose values are all equal add exactly 0 (the mean can carry rounding dust).
        flat = np.where(present, arr, -np.inf).max(axis=1) == np.where(present, arr, np.inf).min(axis=1)
        unit_ss[flat] = 0.0
        values = arr[present]
        if np.ptp(values) == 0:
            return None
        d_o = float(np.sum(2.0 * m_u * unit_ss / (m_u - 1))) / n
        d_e = 2.0 * float(np.sum((values - values.mean()) ** 2)) / (n - 1)
    else:
        # Ordered pairs i != j with different labels: m^2 - sum_c n_c^2 within a unit, n^2 - sum_c n_c^2 overall.
        codes = _label_codes(arr[present])
        units = np.nonzero(present)[0]  # row-major order, aligned with arr[present]
        n_codes = int(codes.max()) + 1
        keys, per_unit_label = np.unique(units.astype(np.int64) * n_codes + codes, return_counts=True)
        same_u = np.bincount(keys // n_codes, weights=per_unit_label.astype(float) ** 2, minlength=m_u.size)
        label_counts = np.bincount(codes).astype(float)
        mismatch_e = n * n - float(np.sum(label_counts ** 2))
        if mismatch_e == 0:
            return None
        d_o = float(np.sum((m_u.astype(float) ** 2 - same_u) / (m_u - 1))) / n
        d_e = mismatch_e / (n * (n - 1))
    return as_float(1.0 - d_o / d_e)


def _paired(a, b) -> tuple[np.ndarray, np.ndarray]:
    """The values of a and b on the items both rated."""
    a, present_a = _with_mask(a)
    b, present_b = _with_mask(b)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError("both raters must rate the same items (two 1-D sequences of one length)")
    both = present_a & present_b
    return a[both], b[both]


def cohen_kappa(first: Ratings, second: Ratings) -> float | None:
    """Unweighted Cohen's kappa of two raters' labels over the items both rated; None if undefined."""
    a, b = _paired(first, second)
    n = a.size
    if n == 0:
        return None
    codes = _label_codes(np.concatenate([a, b]))
    k = int(codes.max()) + 1
    confusion = np.bincount(codes[:n] * k + codes[n:], minlength=k * k).reshape(k, k)
    observed = np.trace(confusion) / n
    expected = float(confusion.sum(axis=1) @ confusion.sum(axis=0)) / (n * n)
    if expected >= 1.0:
        return None
    return as_float((observed - expected) / (1.0 - expected))


def _quadratic_weights(k: int) -> np.ndarray:
    """Disagreement weights (i - j)^2 / (k - 1)^2 of k ordered categories."""
    positions = np.arange(k, dtype=float)
    return (positions[:, None] - positions[None, :]) ** 2 / max(k - 1, 1) ** 2


def _weighted_kappas(confusions: np.ndarray, disagreement: np.ndarray) -> np.ndarray:
    """1 - sum(W O) / sum(W E) of each of a stack of k x k confusion tables (NaN where undefined)."""
    n = confusions.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.einsum("...i,...j->...ij", confusions.sum(axis=-1), confusions.sum(axis=-2)) / n[..., None, None]
        observed = (confusions * disagreement).sum(axis=(-2, -1))
        chance = (expected * disagreement).sum(axis=(-2, -1))
        return np.where((n > 0) & (chance > 0), 1.0 - observed / chance, np.nan)


def _ordered_cells(a: np.ndarray, b: np.ndarray, values: Sequence) -> np.ndarray:
    """The confusion-table cell (row: a's category, column: b's) of each pair, categories in `values`' order."""
    position = {value: i for i, value in enumerate(values)}
    try:
        return np.array([position[x] * len(values) + position[y] for x, y in zip(a.tolist(), b.tolist())], dtype=int)
    except KeyError as exc:
        raise ValueError(f"{exc.args[0]!r} is not one of the ordered values {list(values)!r}") from None


def quadratic_kappa(first: Ratings, second: Ratings, values: Sequence) -> float | None:
    """Cohen's kappa with quadratic weights of two raters' ordered labels (`values`, in order) over the items both
    rated; None if undefined."""
    a, b = _paired(first, second)
    k = len(values)
    confusion = np.bincount(_ordered_cells(a, b, values), minlength=k * k).reshape(k, k).astype(float)
    return as_float(_weighted_kappas(confusion, _quadratic_weights(k)))


def label_agreement(a: Sequence, b: Sequence) -> LabelAgreement:
    """Two raters' labels on the same items: {pairs, exact (share equal), kappa (Cohen's, None if undefined)}."""
    if len(a) != len(b):
        raise ValueError("both raters must label the same items")
    if not len(a):
        return {"pairs": 0, "exact": None, "kappa": None}
    return {"pairs": len(a), "exact": sum(x == y for x, y in zip(a, b)) / len(a), "kappa": cohen_kappa(a, b)}


def _correlation(test, a, b) -> float | None:
    a, b = _paired(a, b)
    a, b = a.astype(float), b.astype(float)
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return as_float(test(a, b).statistic)


def pearson(a: Ratings, b: Ratings) -> float | None:
    """Pearson's r over the items both rated; None with fewer than 3 pairs or a constant side."""
    from scipy.stats import pearsonr  # slow to import: on first use

    return _correlation(pearsonr, a, b)


def spearman(a: Ratings, b: Ratings) -> float | None:
    """Spearman's rho over the items both rated; None with fewer than 3 pairs or a constant side."""
    from scipy.stats import spearmanr

    return _correlation(spearmanr, a, b)


def kendall_tau(a: Ratings, b: Ratings) -> float | None:
    """Kendall's tau-b over the items both rated; None with fewer than 3 pairs or a constant side."""
    from scipy.stats import kendalltau

    return _correlation(kendalltau, a, b)


def _cluster_draws(codes: np.ndarray, n_clusters: int, n_boot: int, seed: int):
    """Yield, per bootstrap replicate, the item indices of n_clusters clusters drawn with replacement."""
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=n_clusters)
    starts = np.cumsum(sizes) - sizes
    for drawn in resample_indices(n_clusters, n_boot, seed):
        lengths = sizes[drawn]
        # Position within the sorted items: each drawn cluster's start, then 0, 1, ... along the cluster.
        offsets = np.repeat(starts[drawn] - (np.cumsum(lengths) - lengths), lengths) + np.arange(lengths.sum())
        yield order[offsets]


def bootstrap_agreement(
    stat: Callable[..., float | None],
    columns: Sequence[Sequence],
    clusters: Sequence,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> Agreement:
    """Cluster bootstrap of stat(*columns): {value, low, high, n}, resampling whole clusters with replacement.

    columns holds one sequence of ratings per rater, aligned by item; clusters the cluster (session) of
    each item, since items of one session are not independent. For alpha pass e.g.
    ``lambda *cols: krippendorff_alpha(np.column_stack(cols), "interval")``. n counts the items at least two
    raters rated. Replicates where stat is None are skipped; low/high are None when fewer than half of them
    are defined, when there are fewer than 2 clusters, or when the point estimate is undefined.
    """
    cols = [np.asarray(c) for c in columns]
    n_items = len(clusters)
    if not cols or any(c.ndim != 1 or c.size != n_items for c in cols):
        raise ValueError("columns must be 1-D sequences with one value per item, as many as clusters")
    present = np.zeros(n_items, dtype=int)
    for c in cols:
        present += _with_mask(c)[1]
    value = as_float(stat(*cols))
    out: Agreement = {"value": value, "low": None, "high": None, "n": int(np.sum(present >= 2))}
    codes = _label_codes(np.asarray(clusters)) if n_items else np.zeros(0, dtype=int)
    n_clusters = int(codes.max()) + 1 if n_items else 0
    if value is None or n_clusters < 2:
        return out
    replicates = [as_float(stat(*[c[idx] for c in cols])) for idx in _cluster_draws(codes, n_clusters, n_boot, seed)]
    defined = [r for r in replicates if r is not None]
    interval = percentile_interval(defined, level) if len(defined) * 2 >= n_boot else None
    if interval is not None:
        out["low"], out["high"] = interval
    return out


# --- the same cluster bootstraps, vectorised -----------------------------------------------------
# bootstrap_agreement calls its statistic once per replicate: a few ms each over thousands of replies, so
# seconds per figure. The statistics below are sums over items, or ranks built from sums over groups of equal
# values, so each replicate is a product of the resample's cluster weights with per-cluster sums. They give the
# same numbers as bootstrap_agreement with the same statistic (same draws: stats.resample_weights and
# resample_indices share a seed), checked in tests/kinds/test_agreement_stats.py.

_BLOCK = 64  # replicates computed at once by bootstrap_spearman (its matrices are replicates x items)


def _interval_from(value: float | None, replicates: np.ndarray, n: int, n_clusters: int, n_boot: int,
                   level: float) -> Agreement:
    """The {value, low, high, n} of bootstrap_agreement from replicates (NaN where undefined)."""
    out: Agreement = {"value": value, "low": None, "high": None, "n": n}
    drawn = value is not None and n_clusters >= 2
    defined = replicates[~np.isnan(replicates)] if drawn else np.zeros(0)
    interval = percentile_interval(defined, level) if drawn and len(defined) * 2 >= n_boot else None
    if interval is not None:
        out["low"], out["high"] = interval
    return out


def _cluster_weights(clusters: np.ndarray, n_boot: int, seed: int) -> tuple[np.ndarray, int, np.ndarray | None]:
    """(cluster code of each item, number of clusters, replicates x clusters weights or None with fewer than 2)."""
    codes = _label_codes(clusters) if clusters.size else np.zeros(0, dtype=int)
    n_clusters = int(codes.max()) + 1 if clusters.size else 0
    weights = resample_weights(n_clusters, n_boot, seed) if n_clusters >= 2 else None
    return codes, n_clusters, weights


def _per_cluster(codes: np.ndarray, n_clusters: int, values: np.ndarray) -> np.ndarray:
    return np.bincount(codes, weights=values, minlength=n_clusters)


def bootstrap_alpha(ratings, clusters: ArrayLike, level: str = "interval", n_boot: int = DEFAULT_N_BOOT,
                    ci_level: float = DEFAULT_LEVEL, seed: int = 0) -> Agreement:
    """bootstrap_agreement of krippendorff_alpha(ratings, level) for a units x raters matrix, vectorised."""
    arr, present = _with_mask(ratings)
    cluster_of = np.asarray(clusters)
    if arr.ndim != 2 or arr.shape[0] != cluster_of.size:
        raise ValueError("ratings must be a units x raters matrix with one cluster per unit")
    value = krippendorff_alpha(ratings, level)
    m_u = present.sum(axis=1)
    codes, n_clusters, weights = _cluster_weights(cluster_of, n_boot, seed)
    n_units = int(np.sum(m_u >= 2))
    if weights is None or value is None:
        return _interval_from(value, np.zeros(0), n_units, n_clusters, n_boot, ci_level)
    keep = m_u >= 2
    arr, present, m_u, codes = arr[keep], present[keep], m_u[keep].astype(float), codes[keep]
    n = weights @ _per_cluster(codes, n_clusters, m_u)
    if level == "interval":
        x = np.where(present, arr, 0.0).astype(float)
        unit_mean = x.sum(axis=1) / m_u
        unit_ss = np.where(present, (x - unit_mean[:, None]) ** 2, 0.0).sum(axis=1)
        flat = np.where(present, arr, -np.inf).max(axis=1) == np.where(present, arr, np.inf).min(axis=1)
        unit_ss[flat] = 0.0
        d_o = weights @ _per_cluster(codes, n_clusters, 2.0 * m_u * unit_ss / (m_u - 1))
        sx = weights @ _per_cluster(codes, n_clusters, x.sum(axis=1))
        sxx = weights @ _per_cluster(codes, n_clusters, (x ** 2).sum(axis=1))
        # A replicate whose values are all equal has no expected disagreement: alpha undefined, as in the function.
        low = np.full(n_clusters, np.inf)
        high = np.full(n_clusters, -np.inf)
        np.minimum.at(low, codes, np.where(present, arr, np.inf).min(axis=1))
        np.maximum.at(high, codes, np.where(present, arr, -np.inf).max(axis=1))
        drawn = weights > 0
        spread = np.where(drawn, high, -np.inf).max(axis=1) > np.where(drawn, low, np.inf).min(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            d_e = 2.0 * (sxx - sx ** 2 / n) / (n - 1)
            replicates = np.where(spread & (n >= 2), 1.0 - (d_o / n) / d_e, np.nan)
    else:
        labels = _label_codes(arr[present])
        k = int(labels.max()) + 1
        rows = np.nonzero(present)[0]
        per_unit = np.bincount(rows * k + labels, minlength=arr.shape[0] * k).reshape(-1, k).astype(float)
        mismatch = (m_u ** 2 - (per_unit ** 2).sum(axis=1)) / (m_u - 1)
        d_o = weights @ _per_cluster(codes, n_clusters, mismatch)
        by_label = weights @ np.stack([_per_cluster(codes, n_clusters, per_unit[:, c]) for c in range(k)], axis=1)
        mismatch_e = n * n - (by_label ** 2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            replicates = np.where((mismatch_e > 0) & (n >= 2), 1.0 - (d_o / n) / (mismatch_e / (n * (n - 1))), np.nan)
    return _interval_from(value, replicates, n_units, n_clusters, n_boot, ci_level)


def bootstrap_kappa(a: Ratings, b: Ratings, clusters: ArrayLike, n_boot: int = DEFAULT_N_BOOT,
                    level: float = DEFAULT_LEVEL, seed: int = 0) -> Agreement:
    """bootstrap_agreement of cohen_kappa over two raters' labels, vectorised."""
    a_arr, present_a = _with_mask(a)
    b_arr, present_b = _with_mask(b)
    both = present_a & present_b
    value = cohen_kappa(a, b)
    codes, n_clusters, weights = _cluster_weights(np.asarray(clusters), n_boot, seed)
    if weights is None or value is None:
        return _interval_from(value, np.zeros(0), int(both.sum()), n_clusters, n_boot, level)
    labels = _label_codes(np.concatenate([a_arr[both], b_arr[both]]))
    k = int(labels.max()) + 1
    m = int(both.sum())
    confusion = _replicate_confusions(labels[:m] * k + labels[m:], k, codes[both], n_clusters, weights)
    n = confusion.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.trace(confusion, axis1=1, axis2=2) / n
        expected = np.einsum("ri,ri->r", confusion.sum(axis=2), confusion.sum(axis=1)) / (n * n)
        replicates = np.where((n > 0) & (expected < 1.0), (observed - expected) / (1.0 - expected), np.nan)
    return _interval_from(value, replicates, m, n_clusters, n_boot, level)


def _replicate_confusions(cells: np.ndarray, k: int, codes: np.ndarray, n_clusters: int,
                          weights: np.ndarray) -> np.ndarray:
    """Per bootstrap replicate, the k x k confusion matrix of the items its clusters drew (`cells`: each item's
    row * k + column, `codes`: its cluster)."""
    per_cell = np.stack([_per_cluster(codes, n_clusters, (cells == c).astype(float)) for c in range(k * k)], axis=1)
    return (weights @ per_cell).reshape(-1, k, k)


def bootstrap_quadratic_kappa(a: Ratings, b: Ratings, values: Sequence, clusters: ArrayLike,
                              n_boot: int = DEFAULT_N_BOOT, level: float = DEFAULT_LEVEL, seed: int = 0) -> Agreement:
    """bootstrap_agreement of quadratic_kappa over two raters' ordered labels, vectorised."""
    a_arr, present_a = _with_mask(a)
    b_arr, present_b = _with_mask(b)
    both = present_a & present_b
    value = quadratic_kappa(a, b, values)
    codes, n_clusters, weights = _cluster_weights(np.asarray(clusters), n_boot, seed)
    if weights is None or value is None:
        return _interval_from(value, np.zeros(0), int(both.sum()), n_clusters, n_boot, level)
    k = len(values)
    cells = _ordered_cells(a_arr[both], b_arr[both], values)
    confusions = _replicate_confusions(cells, k, codes[both], n_clusters, weights)
    replicates = _weighted_kappas(confusions, _quadratic_weights(k))
    return _interval_from(value, replicates, int(both.sum()), n_clusters, n_boot, level)


def _group_sizes(values: np.ndarray, codes: np.ndarray, n_clusters: int,
                 weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each item's group of equal values, and per replicate how many items of each group it drew."""
    groups = np.unique(values, return_inverse=True)[1].ravel()
    n_groups = int(groups.max()) + 1
    per_cluster = np.bincount(codes * n_groups + groups, minlength=n_clusters * n_groups).reshape(n_clusters, -1)
    return groups, weights @ per_cluster  # replicates x groups


def _group_ranks(values: np.ndarray, codes: np.ndarray, n_clusters: int, weights: np.ndarray):
    """Each item's group of equal values, and per replicate each group's average rank and weight."""
    groups, sizes = _group_sizes(values, codes, n_clusters, weights)
    ranks = np.cumsum(sizes, axis=1) - sizes + (sizes + 1.0) / 2.0  # average rank of the ties of each group
    return groups, ranks, sizes


def _varied(sizes: np.ndarray) -> np.ndarray:
    """Per replicate, whether it drew more than one distinct value (sizes: replicates x groups of equal values)."""
    return (sizes > 0).sum(axis=1) > 1


def bootstrap_spearman(a: Ratings, b: Ratings, clusters: ArrayLike, n_boot: int = DEFAULT_N_BOOT,
                       level: float = DEFAULT_LEVEL, seed: int = 0) -> Agreement:
    """bootstrap_agreement of spearman over the items both rated, vectorised: a replicate's rho is the weighted
    Pearson correlation of the average ranks its draws give each value."""
    a_arr, present_a = _with_mask(a)
    b_arr, present_b = _with_mask(b)
    both = present_a & present_b
    value = spearman(a, b)
    codes, n_clusters, weights = _cluster_weights(np.asarray(clusters), n_boot, seed)
    if weights is None or value is None:
        return _interval_from(value, np.zeros(0), int(both.sum()), n_clusters, n_boot, level)
    codes, x, y = codes[both], a_arr[both].astype(float), b_arr[both].astype(float)
    groups_x, ranks_x, sizes_x = _group_ranks(x, codes, n_clusters, weights)
    groups_y, ranks_y, sizes_y = _group_ranks(y, codes, n_clusters, weights)
    replicates = np.full(n_boot, np.nan)
    for start in range(0, n_boot, _BLOCK):
        block = slice(start, start + _BLOCK)
        w = weights[block][:, codes]
        rx, ry = ranks_x[block][:, groups_x], ranks_y[block][:, groups_y]
        n = w.sum(axis=1)
        mx, my = (w * rx).sum(axis=1) / n, (w * ry).sum(axis=1) / n
        cov = (w * (rx - mx[:, None]) * (ry - my[:, None])).sum(axis=1)
        vx = (w * (rx - mx[:, None]) ** 2).sum(axis=1)
        vy = (w * (ry - my[:, None]) ** 2).sum(axis=1)
        varied = _varied(sizes_x[block]) & _varied(sizes_y[block]) & (n >= 3)
        with np.errstate(divide="ignore", invalid="ignore"):
            replicates[block] = np.where(varied, cov / np.sqrt(vx * vy), np.nan)
    return _interval_from(value, replicates, int(both.sum()), n_clusters, n_boot, level)


def _both_rated(a: Ratings, b: Ratings, clusters: ArrayLike, n_boot: int, seed: int):
    """The items both rated: their cluster codes and values (floats), and the clusters' count and weights."""
    a_arr, present_a = _with_mask(a)
    b_arr, present_b = _with_mask(b)
    both = present_a & present_b
    codes, n_clusters, weights = _cluster_weights(np.asarray(clusters), n_boot, seed)
    return codes[both], a_arr[both].astype(float), b_arr[both].astype(float), n_clusters, weights


def bootstrap_pearson(a: Ratings, b: Ratings, clusters: ArrayLike, n_boot: int = DEFAULT_N_BOOT,
                      level: float = DEFAULT_LEVEL, seed: int = 0) -> Agreement:
    """bootstrap_agreement of pearson over the items both rated, vectorised: a replicate's r from its clusters'
    sums of x, y, x^2, y^2 and x y (the values centred first)."""
    value = pearson(a, b)
    codes, x, y, n_clusters, weights = _both_rated(a, b, clusters, n_boot, seed)
    if weights is None or value is None:
        return _interval_from(value, np.zeros(0), x.size, n_clusters, n_boot, level)
    x, y = x - x.mean(), y - y.mean()
    sums = weights @ np.stack([_per_cluster(codes, n_clusters, v) for v in (np.ones_like(x), x, y, x * x, y * y,
                                                                               x * y)], axis=1)
    n, sx, sy, sxx, syy, sxy = sums.T
    varied = _varied(_group_sizes(x, codes, n_clusters, weights)[1]) & \
        _varied(_group_sizes(y, codes, n_clusters, weights)[1]) & (n >= 3)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (sxy - sx * sy / n) / np.sqrt((sxx - sx ** 2 / n) * (syy - sy ** 2 / n))
        replicates = np.where(varied, np.clip(r, -1.0, 1.0), np.nan)
    return _interval_from(value, replicates, x.size, n_clusters, n_boot, level)


def _concordance(x: np.ndarray, y: np.ndarray, codes: np.ndarray, n_clusters: int) -> np.ndarray:
    """clusters x clusters: for clusters c and d, the sum over their items' pairs of sign(dx) sign(dy)."""
    order = np.argsort(codes, kind="stable")
    x, y, sorted_codes = x[order], y[order], codes[order]
    bounds = np.searchsorted(sorted_codes, np.arange(n_clusters + 1))  # each cluster's items, in sorted order
    out = np.zeros((n_clusters, n_clusters))
    for start in range(0, x.size, _BLOCK):
        rows = slice(start, start + _BLOCK)
        signs = np.sign(x[rows, None] - x[None, :]) * np.sign(y[rows, None] - y[None, :])
        running = np.concatenate([np.zeros((signs.shape[0], 1)), np.cumsum(signs, axis=1)], axis=1)
        np.add.at(out, sorted_codes[rows], running[:, bounds[1:]] - running[:, bounds[:-1]])
    return out


def bootstrap_kendall(a: Ratings, b: Ratings, clusters: ArrayLike, n_boot: int = DEFAULT_N_BOOT,
                      level: float = DEFAULT_LEVEL, seed: int = 0) -> Agreement:
    """bootstrap_agreement of kendall_tau (tau-b) over the items both rated, vectorised: a replicate's
    concordant less discordant pairs are w K w / 2 (w its cluster weights, K the clusters' concordance), its ties
    counted by groups of equal values."""
    value = kendall_tau(a, b)
    codes, x, y, n_clusters, weights = _both_rated(a, b, clusters, n_boot, seed)
    if weights is None or value is None:
        return _interval_from(value, np.zeros(0), x.size, n_clusters, n_boot, level)
    concordance = _concordance(x, y, codes, n_clusters)
    sizes_x = _group_sizes(x, codes, n_clusters, weights)[1].astype(float)
    sizes_y = _group_sizes(y, codes, n_clusters, weights)[1].astype(float)
    n = sizes_x.sum(axis=1)
    pairs = n * (n - 1) / 2.0
    untied_x = pairs - (sizes_x * (sizes_x - 1) / 2.0).sum(axis=1)
    untied_y = pairs - (sizes_y * (sizes_y - 1) / 2.0).sum(axis=1)
    net = np.empty(n_boot)
    for start in range(0, n_boot, _BLOCK):
        w = weights[start:start + _BLOCK].astype(float)
        net[start:start + _BLOCK] = ((w @ concordance) * w).sum(axis=1) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = net / np.sqrt(untied_x * untied_y)
        replicates = np.where((n >= 3) & (untied_x > 0) & (untied_y > 0), np.clip(tau, -1.0, 1.0), np.nan)
    return _interval_from(value, replicates, x.size, n_clusters, n_boot, level)


def _method_means(values: np.ndarray, methods: np.ndarray, n_methods: int) -> np.ndarray:
    """Each method's mean of the values (NaN where it has none)."""
    counts = np.bincount(methods, minlength=n_methods)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.bincount(methods, weights=values, minlength=n_methods) / counts


def bootstrap_method_tau(a: Ratings, b: Ratings, methods: Sequence, clusters: ArrayLike,
                         n_boot: int = DEFAULT_N_BOOT, level: float = DEFAULT_LEVEL, seed: int = 0) -> Agreement:
    """Kendall's tau between the methods' orders by two raters' mean ratings over the items both rated (items
    labelled by method), with bootstrap_agreement's interval: each replicate ranks the methods by its own means."""
    a_arr, present_a = _with_mask(a)
    b_arr, present_b = _with_mask(b)
    labels = np.asarray(methods, dtype=object)
    both = present_a & present_b
    if labels.shape != a_arr.shape:
        raise ValueError("methods must name the method of each item")
    codes, n_clusters, weights = _cluster_weights(np.asarray(clusters), n_boot, seed)
    x, y, codes = a_arr[both].astype(float), b_arr[both].astype(float), codes[both]
    kinds = _label_codes(labels[both]) if both.any() else np.zeros(0, dtype=int)
    k = int(kinds.max()) + 1 if kinds.size else 0
    value = kendall_tau(_method_means(x, kinds, k), _method_means(y, kinds, k)) if k else None
    if weights is None or value is None:
        return _interval_from(value, np.zeros(0), x.size, n_clusters, n_boot, level)
    cells = codes * k + kinds
    per_cluster = [np.bincount(cells, weights=v, minlength=n_clusters * k).reshape(n_clusters, k)
                   for v in (np.ones_like(x), x, y)]
    counts, sum_x, sum_y = (weights @ c for c in per_cluster)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_x, mean_y = sum_x / counts, sum_y / counts  # replicates x methods, NaN where a method was not drawn
    first, second = np.triu_indices(k, 1)
    drawn = (counts[:, first] > 0) & (counts[:, second] > 0)
    sign_x = np.where(drawn, np.sign(mean_x[:, first] - mean_x[:, second]), 0.0)
    sign_y = np.where(drawn, np.sign(mean_y[:, first] - mean_y[:, second]), 0.0)
    untied_x, untied_y = (sign_x != 0).sum(axis=1), (sign_y != 0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = (sign_x * sign_y).sum(axis=1) / np.sqrt(untied_x * untied_y)
        replicates = np.where(((counts > 0).sum(axis=1) >= 3) & (untied_x > 0) & (untied_y > 0), tau, np.nan)
    return _interval_from(value, replicates, x.size, n_clusters, n_boot, level)

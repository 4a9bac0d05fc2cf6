"""The judge calibrated to people: prediction-powered means (PPI++) of people's ratings, with their intervals.

People rated a slice of the replies (Y); the judge scored every reply (f), the rated ones included (`judge_all`).
PPI++ (Angelopoulos, Duchi and Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference") estimates people's
mean over all the replies as

    theta = mean(Y rated) + lambda * (mean(f all) - mean(f rated))

with the power-tuning weight lambda that minimises the estimate's variance, clipped to [0, 1]: 0 gives the
people-only mean of the slice, 1 the judge's mean corrected by its error on the slice. For one stratum lambda is
cov(Y, f) over the rated (divided by n) / var(f) over all N replies (divided by N - 1): the slope of people's
ratings on the judge's scores, near 1 for a judge that agrees with people, near 0 for one that tells nothing.

PPI++ takes an unlabelled set independent of the labelled one, and ppi_python's functions take it so. Here the
unlabelled set is the replies nobody rated (judge_all less the rated ones, u = N - n of them): mean(f all) -
mean(f rated) = (u / N) (mean(f unrated) - mean(f rated)), so theta is ppi_python 0.2.3's estimate on (the rated,
the unrated) with its lambda (lam=None) equal to ours times u / N, to the last digits; where ppi_python's lambda
would pass u / N (a judge whose scale is narrower than people's) ours stops at 1: the judge's mean corrected by
its error on the slice, its differences never amplified. Handing ppi_python every reply as unlabelled, the rated too, would count the rated replies twice and
make its variance too small (with 10 rated of 40: standard errors 21% too small, 95% intervals that cover 87%;
tests/kinds/test_calibration.py).

A stratified estimate (an AVG over rounds, a keep-chatting rate) is a weighted mean of strata (a method's rounds),
each estimated as above, with one lambda for all: the one that minimises the variance of the weighted mean (for
strata h of weight w_h: sum(w_h^2 a_h c_h / n_h) / sum(w_h^2 v_h (a_h^2 / n_h + u_h / N_h^2)), a_h = u_h / N_h,
c_h and v_h the stratum's covariance and variance above). A lambda per stratum, from 10 rated replies each,
varies too much: in bench/bench_calibration.py's settings such intervals covered 88-95% for 95%.

The variance is the jackknife's, leaving out one session at a time (every stratum's replies of that session, and
for a difference both methods'), lambda estimated anew each time, so that its own variability counts; the
replies of one session in several rounds (and methods) are not independent, and this keeps them together. Without
sessions each reply is left out alone, within its group (a stratum's rated replies, its unrated ones), the
stratified jackknife: with lambda held fixed it equals the plug-in variance var(Y - k f over the rated) / n +
k^2 var(f over the unrated) / u of each stratum (k = lambda u / N; each variance divided by its count less one),
times w_h^2, summed. The interval is value +- t se, Student's t with (rated replies - strata) degrees of freedom
(judged replies for the judge-only mean), at most (sessions - 1). The plug-in variance (lambda taken as known)
with the normal quantile, as ppi_python's intervals, covered 91-94% for 95% in bench/bench_calibration.py's
settings (10 rated replies per round); this covers 93-96% (docs/benchmarks.md).

Every number is a plain float; where none exists it is None with a `reason` code, never a default.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, Mapping, NamedTuple, Sequence, TypedDict

from common.lazy_modules import lazy

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

DEFAULT_CONFIDENCE = 0.95
MIN_RATED = 3  # rated replies a stratum needs for an estimate: with 2, 95% intervals of a keep-chatting rate covered 0.92 (bench/bench_calibration.py --rated 2), with 3 at least 0.957
LOW_WEIGHT = 0.1  # a power-tuning weight below this: the judge tells almost nothing of people's ratings
# Why an estimate (or its interval) is missing:
TOO_FEW_RATED = "too_few_rated"  # a stratum has fewer than MIN_RATED rated replies: no estimate
NO_JUDGED = "no_judged"  # a stratum has no reply the judge scored: no judge-only estimate
NO_VARIANCE = "no_variance"  # no interval: the standard error is 0, or no degree of freedom is left
Weighting = Literal["equal", "judged"]  # strata weights: equal (AVG over rounds), or by their replies judged (a rate)
_Source = Literal["ppi", "people", "judge"]
# The sums a stratum's estimate is made of, in this order (each cluster's share of them, then the totals):
# rated replies n, sum of Y, of f (rated), of Y f, of f^2 (rated); judged replies N, sum of f (all), of f^2 (all).
_N, _SY, _SFR, _SYF, _SFFR, _NALL, _SF, _SFF = range(8)


class Estimate(TypedDict):
    """An estimate of people's mean with its interval (value, low, high, se None when missing, see reason)."""

    value: float | None
    low: float | None
    high: float | None
    n_rated: int  # the rated replies it used
    n_judged: int  # the replies the judge scored (the rated ones included)
    weight: float | None  # PPI++'s power-tuning lambda (a difference: the mean of both methods'); None when not PPI
    se: float | None  # the standard error
    reason: str | None  # why value (or low and high) is None: TOO_FEW_RATED, NO_JUDGED, NO_VARIANCE; else None


class Stratum(NamedTuple):
    """One stratum's scores (method x round): the judge's and people's on the rated replies, the judge's on all.

    With the sessions (rated_sessions aligned with judge_rated, all_sessions with judge_all, each session once in a
    stratum), the rated replies are found among all by their session, and the variance leaves out whole sessions.
    """

    judge_rated: Sequence[float] | np.ndarray
    people_rated: Sequence[float] | np.ndarray
    judge_all: Sequence[float] | np.ndarray
    rated_sessions: Sequence | None = None
    all_sessions: Sequence | None = None


class _Checked(NamedTuple):
    """A stratum checked: the rated replies' scores, the unrated replies' judge scores, and their sessions."""

    judge_rated: np.ndarray
    people_rated: np.ndarray
    judge_unrated: np.ndarray
    rated_sessions: list | None
    unrated_sessions: list | None


class _Design(NamedTuple):
    """One method's strata as each cluster's share of each stratum's sums, for the estimate and its jackknife."""

    shares: np.ndarray  # (8, clusters, strata): the sums above, scores less the stratum's shift
    shifts: np.ndarray  # (strata,): each stratum's scores are centred on its judge's mean (exact sums of squares)
    scales: np.ndarray  # (strata,): each stratum's weight in the estimate, summing to 1
    kappa: np.ndarray | None  # (strata,): with a fixed lambda, its coefficient of the unrated-rated difference


def _numbers(values: ArrayLike, what: str) -> np.ndarray:
    """A 1-D float array of values, or ValueError naming `what` when one is missing or not a number."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must hold numbers only") from None
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a 1-D sequence of numbers")
    if not np.isfinite(arr).all():
        raise ValueError(f"{what} holds a missing or infinite value: leave out the replies without a score")
    return arr


def _checked(stratum: Stratum) -> _Checked:
    """A stratum's scores checked, its unrated replies found (by session, else by value) among all."""
    judge_rated = _numbers(stratum.judge_rated, "judge_rated")
    people_rated = _numbers(stratum.people_rated, "people_rated")
    judge_all = _numbers(stratum.judge_all, "judge_all")
    if judge_rated.size != people_rated.size:
        raise ValueError("judge_rated and people_rated must hold one score per rated reply, in the same order")
    if (stratum.rated_sessions is None) != (stratum.all_sessions is None):
        raise ValueError("give the sessions of both the rated replies and all replies, or of neither")
    if stratum.rated_sessions is None or stratum.all_sessions is None:
        left = Counter(judge_rated.tolist())
        unrated = []
        for value in judge_all.tolist():
            if left[value] > 0:
                left[value] -= 1
            else:
                unrated.append(value)
        if +left:
            raise ValueError("judge_rated must be among judge_all: the judge's scores of every reply, the rated ones "
                             "included")
        return _Checked(judge_rated, people_rated, np.array(unrated, dtype=float), None, None)
    rated, everyone = list(stratum.rated_sessions), list(stratum.all_sessions)
    if len(rated) != judge_rated.size or len(everyone) != judge_all.size:
        raise ValueError("the sessions must be aligned with the scores: one session per reply")
    if len(set(everyone)) != len(everyone) or len(set(rated)) != len(rated):
        raise ValueError("a session appears twice in one stratum: a stratum holds one reply per session")
    position = {session: i for i, session in enumerate(everyone)}
    missing = [s for s in rated if s not in position]
    if missing:
        raise ValueError(f"rated session {missing[0]!r} is not among all the judged replies of its stratum")
    if not np.array_equal(judge_all[[position[s] for s in rated]], judge_rated):
        raise ValueError("the judge's score of a rated reply differs from its score among all the replies")
    taken = set(rated)
    keep = np.array([s not in taken for s in everyone], dtype=bool)
    return _Checked(judge_rated, people_rated, judge_all[keep], rated, [s for s in everyone if s not in taken])


def _scales(strata: Sequence[_Checked], weighting: Weighting) -> np.ndarray:
    """Each stratum's share of the estimate: equal, or by its replies judged."""
    if weighting == "equal":
        sizes = np.ones(len(strata))
    elif weighting == "judged":
        sizes = np.array([s.judge_rated.size + s.judge_unrated.size for s in strata], dtype=float)
    else:
        raise ValueError(f"weighting must be 'equal' or 'judged', got {weighting!r}")
    return sizes / sizes.sum() if sizes.sum() else sizes


class _Clusters:
    """The clusters the jackknife leaves out: sessions (one group), else single replies (a group per sample)."""

    def __init__(self) -> None:
        self.codes: dict[object, int] = {}
        self.groups: list[int] = []  # each cluster's group
        self.sessions: bool | None = None
        self.samples = 0  # groups so far

    def group(self) -> int:
        """A new group of clusters (a sample of replies each its own cluster); sessions are all in group 0."""
        self.samples += 1
        return self.samples

    def of(self, sessions: list | None, count: int, group: int) -> np.ndarray:
        """The cluster codes of `count` replies: their sessions', else a new cluster each in this group."""
        if self.sessions is not None and self.sessions != (sessions is not None):
            raise ValueError("give the sessions of every stratum, or of none")
        self.sessions = sessions is not None
        if sessions is None:
            first = len(self.groups)
            self.groups.extend([group] * count)
            return np.arange(first, first + count)
        new = [s for s in dict.fromkeys(sessions) if s not in self.codes]
        for session in new:
            self.codes[session] = len(self.groups)
            self.groups.append(0)
        return np.array([self.codes[s] for s in sessions], dtype=int)


def _designs(methods: Sequence[Sequence], weighting: Weighting, weight: float | None,
             clusters: _Clusters) -> list[tuple[_Design, list[_Checked]]]:
    """Each method's strata as a _Design over clusters shared by all the methods."""
    placed = []
    for strata in methods:
        if not strata:
            raise ValueError("there must be at least one stratum")
        checked = [_checked(Stratum(*s)) for s in strata]
        rows = []
        for h, s in enumerate(checked):
            judged = np.concatenate([s.judge_rated, s.judge_unrated])
            shift = float(judged.mean()) if judged.size else 0.0
            rated = clusters.of(s.rated_sessions, s.judge_rated.size, clusters.group())
            unrated = clusters.of(s.unrated_sessions, s.judge_unrated.size, clusters.group())
            rows.append((shift, rated, unrated))
        placed.append((checked, rows))
    designs = []
    size = len(clusters.groups)
    for checked, rows in placed:
        count = len(checked)
        shifts = np.array([shift for shift, _, _ in rows])
        # Every reply's share of each sum (fields x replies), rated replies then unrated, scores less their shift.
        counts_r = np.array([s.people_rated.size for s in checked])
        counts_u = np.array([s.judge_unrated.size for s in checked])
        y = np.concatenate([s.people_rated for s in checked]) - np.repeat(shifts, counts_r)
        f = np.concatenate([s.judge_rated for s in checked]) - np.repeat(shifts, counts_r)
        g = np.concatenate([s.judge_unrated for s in checked]) - np.repeat(shifts, counts_u)
        ones, none = np.ones_like(y), np.zeros_like(g)
        values = np.concatenate([np.stack([ones, y, f, y * f, f * f, ones, f, f * f]),
                                 np.stack([none, none, none, none, none, np.ones_like(g), g, g * g])], axis=1)
        codes = np.concatenate([r[1] for r in rows] + [r[2] for r in rows]).astype(int)
        stratum = np.concatenate([np.repeat(np.arange(count), counts_r), np.repeat(np.arange(count), counts_u)])
        cells = codes * count + stratum
        shares = np.stack([np.bincount(cells, weights=v, minlength=size * count) for v in values])
        shares = shares.reshape(8, size, count)
        scales = _scales(checked, weighting)
        kappa = None
        if weight is not None:
            sizes = np.array([s.judge_rated.size + s.judge_unrated.size for s in checked], dtype=float)
            kappa = weight * np.array([s.judge_unrated.size for s in checked]) / np.maximum(sizes, 1.0)
        designs.append((_Design(shares, shifts, scales, kappa), checked))
    return designs


def _estimates(sums: np.ndarray, design: _Design, source: _Source) -> tuple[np.ndarray, np.ndarray]:
    """Per stratum the estimate on centred scores, and lambda, from stratum sums (8, ..., strata)."""
    n, sy, sfr, syf, sffr, total, sf, sff = sums
    unrated = total - n
    with np.errstate(divide="ignore", invalid="ignore"):
        if source == "judge":
            return sf / total, np.zeros(sf.shape[:-1])
        mean_y, mean_rated = sy / n, sfr / n
        mean_unrated = (sf - sfr) / unrated
        if source == "people":
            lam = np.zeros(sy.shape[:-1])
            kappa = np.zeros_like(sy)
        elif design.kappa is not None:
            lam = np.full(sy.shape[:-1], np.nan)
            kappa = np.broadcast_to(design.kappa, sy.shape)
        else:
            share = unrated / total
            covariance = syf / n - mean_y * mean_rated
            spread = np.maximum((sff - sf ** 2 / total) / (total - 1), 0.0)
            used = (n >= MIN_RATED) & (unrated >= 1) & (total >= 2)
            square = design.scales ** 2
            num = np.where(used, square * share * covariance / n, 0.0).sum(axis=-1)
            den = np.where(used, square * spread * (share ** 2 / n + unrated / total ** 2), 0.0).sum(axis=-1)
            lam = np.clip(np.where(den > 0, num / den, 0.0), 0.0, 1.0)
            kappa = lam[..., None] * share
        term = np.where(unrated >= 1, kappa * (mean_unrated - mean_rated), 0.0)
        return mean_y + term, lam


def _jackknife(replicates: np.ndarray, groups: np.ndarray) -> float:
    """The jackknife variance: sum over groups of (m - 1) / m times the squared deviations of its m replicates."""
    count = np.bincount(groups).astype(float)
    mean = np.bincount(groups, weights=replicates) / np.maximum(count, 1.0)
    factor = np.where(count > 1, (count - 1) / np.maximum(count, 1.0), 0.0)
    return float(np.sum(factor[groups] * (replicates - mean[groups]) ** 2))


@lru_cache(maxsize=256)
def _quantile(confidence: float, df: int) -> float:
    """Student's t quantile of a two-sided interval of this confidence."""
    from scipy.stats import t as student_t  # slow to import: on first use

    return float(student_t.ppf(0.5 + confidence / 2.0, df))


def _check_confidence(confidence: float) -> None:
    """ValueError unless 0 < confidence < 1 (checked first: a call with too few ratings is refused the same)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def _interval(value: float, variance: float, df: int, confidence: float, n_rated: int, n_judged: int,
              weight: float | None) -> Estimate:
    """The Estimate of a value with its variance: value +- t(df) se; no interval when se is 0 or df < 1."""
    se = float(np.sqrt(max(variance, 0.0)))
    out: Estimate = {"value": value, "low": None, "high": None, "n_rated": n_rated, "n_judged": n_judged,
                     "weight": weight, "se": se, "reason": None}
    if se > 0.0 and df >= 1:
        half = _quantile(confidence, df) * se
        out["low"], out["high"] = value - half, value + half
    else:
        out["reason"] = NO_VARIANCE
    return out


def _missing(reason: str, n_rated: int, n_judged: int) -> Estimate:
    """An Estimate without a value, saying why."""
    return {"value": None, "low": None, "high": None, "n_rated": n_rated, "n_judged": n_judged, "weight": None,
            "se": None, "reason": reason}


def _counts(checked: Sequence[_Checked]) -> tuple[int, int]:
    """The replies rated and judged in these strata."""
    return (sum(s.people_rated.size for s in checked),
            sum(s.people_rated.size + s.judge_unrated.size for s in checked))


def enough_rated(n_rated: int, n_judged: int) -> bool:
    """Whether a stratum has ratings enough for an estimate: MIN_RATED of its replies, or every one when it has fewer
    (a round that only some sessions reach, all of its replies rated: nothing of it is left to estimate)."""
    return n_rated >= max(1, min(MIN_RATED, n_judged))


def _short(checked: Sequence[_Checked], source: _Source) -> str | None:
    """Why these strata give no estimate by source, or None."""
    if source == "judge":
        return NO_JUDGED if any(s.judge_rated.size + s.judge_unrated.size == 0 for s in checked) else None
    return None if all(enough_rated(*_counts([s])) for s in checked) else TOO_FEW_RATED


def _df(checked: Sequence[_Checked], source: _Source, clusters: _Clusters) -> int:
    """Degrees of freedom: (rated replies, or judged for the judge) - strata, at most clusters - 1 with sessions."""
    rated, judged = _counts(checked)
    df = (judged if source == "judge" else rated) - len(checked)
    return min(df, len(clusters.groups) - 1) if clusters.sessions else df


def _replicates(design: _Design, source: _Source) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stratum the estimate on all the data, each leave-one-cluster-out replicate's (clusters x strata), lambda."""
    totals = design.shares.sum(axis=1)
    whole, lam = _estimates(totals, design, source)
    left_out, _ = _estimates(totals[:, None, :] - design.shares, design, source)
    return whole + design.shifts, left_out + design.shifts, lam


def _stratified(strata: Sequence, source: _Source, confidence: float, weighting: Weighting,
                weight: float | None = None) -> Estimate:
    """The weighted mean of the strata's estimates by source, with its jackknife interval."""
    _check_confidence(confidence)
    clusters = _Clusters()
    ((design, checked),) = _designs([strata], weighting, weight, clusters)
    n_rated, n_judged = _counts(checked)
    reason = _short(checked, source)
    if reason:
        return _missing(reason, n_rated, n_judged)
    whole, left_out, lam = _replicates(design, source)
    variance = _jackknife(left_out @ design.scales, np.array(clusters.groups, dtype=int))
    reported = None if source != "ppi" else float(lam) if weight is None else weight
    return _interval(float(whole @ design.scales), variance, _df(checked, source, clusters), confidence, n_rated,
                     n_judged, reported)


def ppi_mean(judge_rated: ArrayLike, people_rated: ArrayLike, judge_all: ArrayLike,
             confidence: float = DEFAULT_CONFIDENCE, weight: float | None = None) -> Estimate:
    """PPI++ estimate of people's mean over all replies (power tuned, or with this lambda), with its interval."""
    return stratified_ppi_mean([(judge_rated, people_rated, judge_all)], confidence, weight=weight)


def stratified_ppi_mean(strata: Sequence, confidence: float = DEFAULT_CONFIDENCE, weighting: Weighting = "equal",
                        weight: float | None = None) -> Estimate:
    """Weighted mean of the strata's PPI++ estimates (each a Stratum or a 3- or 5-tuple), one lambda for all."""
    return _stratified(strata, "ppi", confidence, weighting, weight)


def ppi_strata(strata: Sequence, confidence: float = DEFAULT_CONFIDENCE,
               weighting: Weighting = "equal") -> list[Estimate]:
    """Each stratum's PPI++ estimate with stratified_ppi_mean's lambda (an AL(k) curve whose weighted mean is it)."""
    _check_confidence(confidence)
    clusters = _Clusters()
    ((design, checked),) = _designs([strata], weighting, None, clusters)
    whole, left_out, lam = _replicates(design, "ppi")
    groups = np.array(clusters.groups, dtype=int)
    out = []
    for h, stratum in enumerate(checked):
        n_rated, n_judged = _counts([stratum])
        if not enough_rated(n_rated, n_judged):
            out.append(_missing(TOO_FEW_RATED, n_rated, n_judged))
            continue
        df = n_rated - 1 if not clusters.sessions else min(n_rated - 1, len(groups) - 1)
        out.append(_interval(float(whole[h]), _jackknife(left_out[:, h], groups), df, confidence, n_rated, n_judged,
                             float(lam)))
    return out


def people_only_mean(people_rated: ArrayLike, confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """Mean of people's ratings of the slice alone, with its t interval."""
    people = _numbers(people_rated, "people_rated")
    # The stratum needs judge scores of its rated replies; with people's as stand-ins, none was judged.
    return {**stratified_people_mean([(people, people, people)], confidence), "n_judged": 0}


def stratified_people_mean(strata: Sequence, confidence: float = DEFAULT_CONFIDENCE,
                           weighting: Weighting = "equal") -> Estimate:
    """Weighted mean of the strata's means of people's ratings of the slice alone, with its interval."""
    return _stratified(strata, "people", confidence, weighting)


def judge_only_mean(judge_all: ArrayLike, confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """Mean of the judge's scores of every reply, with its t interval (the judge taken as people)."""
    return stratified_judge_mean([((), (), _numbers(judge_all, "judge_all"))], confidence)


def stratified_judge_mean(strata: Sequence, confidence: float = DEFAULT_CONFIDENCE,
                          weighting: Weighting = "equal") -> Estimate:
    """Weighted mean of the strata's means of the judge's scores of every reply, with its interval."""
    return _stratified(strata, "judge", confidence, weighting)


def ppi_difference(first: Sequence, second: Sequence, confidence: float = DEFAULT_CONFIDENCE,
                   weighting: Weighting = "equal") -> Estimate:
    """PPI++ estimate of first's stratified mean less second's (two methods' strata), with its interval.

    Each method has its own lambda (as in stratified_ppi_mean; the Estimate's weight is their mean). The two
    methods' slices are different replies drawn independently within their strata: without sessions the variance
    is the sum of the two. With sessions, the jackknife leaves a session out of both methods at once, so what the
    methods share through their sessions (the persona, the user's turns) counts: it narrows the interval when both
    methods' scores move with the session.
    """
    _check_confidence(confidence)
    clusters = _Clusters()
    (one, checked_one), (two, checked_two) = _designs([first, second], weighting, None, clusters)
    n_rated, n_judged = _counts(checked_one + checked_two)
    if _short(checked_one, "ppi") or _short(checked_two, "ppi"):
        return _missing(TOO_FEW_RATED, n_rated, n_judged)
    whole_one, left_one, lam_one = _replicates(one, "ppi")
    whole_two, left_two, lam_two = _replicates(two, "ppi")
    value = float(whole_one @ one.scales - whole_two @ two.scales)
    variance = _jackknife(left_one @ one.scales - left_two @ two.scales, np.array(clusters.groups, dtype=int))
    return _interval(value, variance, _df(checked_one + checked_two, "ppi", clusters), confidence, n_rated, n_judged,
                     (float(lam_one) + float(lam_two)) / 2.0)


def uninformative_judge(estimate: Estimate, threshold: float = LOW_WEIGHT) -> bool:
    """Whether the judge carries almost no information about people: a power-tuning weight below threshold."""
    return estimate["weight"] is not None and estimate["weight"] < threshold


def reversed_orders(calibrated: Mapping[str, Estimate], judge_only: Mapping[str, Estimate]) -> list[tuple[str, str]]:
    """The pairs (a, b) of methods that the calibrated values rank a over b and the judge-only values b over a."""
    values = {m: (calibrated[m]["value"], judge_only[m]["value"]) for m in calibrated if m in judge_only}
    known = {m: (c, j) for m, (c, j) in values.items() if c is not None and j is not None}
    return [(a, b) for a, (calibrated_a, judge_a) in known.items() for b, (calibrated_b, judge_b) in known.items()
            if calibrated_a > calibrated_b and judge_a < judge_b]

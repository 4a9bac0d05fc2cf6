"""Whether the judge's figures calibrated to people (PPI++, kinds/calibration.py) cover people's true means.

Run: python bench/bench_calibration.py [--simulations 1000] [--seed 0] [--sessions 40] [--rated 10] [--json].
Each simulated evaluation has 3 methods x 5 rounds x --sessions sessions, every reply judged; people rate --rated
replies of each method x round stratum, drawn uniformly without replacement (numpy's default_rng(seed)). A reply's
quality is its method's mean at that round, plus its session's effect (shared by every round and method: some
personas are harder), plus the reply's own; people's rating is the quality plus a rater's noise, so people's true
mean of a method at a round is known, and their AVG (the mean over rounds) too. The judge sees the quality through
its own bias and noise, in five settings:

  unbiased      the judge's score is the quality plus noise (sd 10)
  biased        the same, 8 points too high for every method
  reversing     a bias by method (A -2, B +6, C 0) that ranks B above A, whom people rank 4 points higher
  uninformative the judge's score barely depends on the quality (0.05 x quality + noise sd 15)
  binary        keep-chatting verdicts: people say yes when their rating exceeds 65, the judge when its biased
                noisy score does (the rate x 100 is estimated, its true value from the normal distribution)

For each setting and method: the coverage of the calibrated 95% intervals of the AVG (stratified_ppi_mean over the
rounds, sessions as clusters; PASS needs >= 0.93 for every method and setting), their mean width beside that of the
people-only intervals from the slice alone (stratified_people_mean), and the coverage of the judge-only intervals
(stratified_judge_mean, the judge taken as people: fails under bias); the calibrated intervals' coverage when the
sessions are ignored (each reply independent, the variance the sum of the strata's); the coverage of each round's
calibrated interval (ppi_strata, the points of a calibrated AL(k) curve) of people's mean at that round; and for the
paired difference A - B (ppi_difference), its calibrated coverage (PASS needs >= 0.93 too) and mean width. An
interval that could not be drawn counts as a miss. Exits 1 on FAIL.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import NormalDist
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kinds.calibration import (  # noqa: E402
    Estimate,
    Stratum,
    ppi_difference,
    ppi_strata,
    stratified_judge_mean,
    stratified_people_mean,
    stratified_ppi_mean,
)

MIN_COVERAGE = 0.93
METHODS = ("A", "B", "C")
BASES = {"A": 70.0, "B": 66.0, "C": 58.0}  # people's AVG of each method
SLOPES = {"A": 1.5, "B": -1.0, "C": 0.5}  # how their mean moves per round
ROUNDS = 5
SESSION_SD, REPLY_SD, RATER_SD = 8.0, 10.0, 6.0
YES_ABOVE = 65.0  # the binary setting: people (and the judge) say yes above this score
SETTINGS = ("unbiased", "biased", "reversing", "uninformative", "binary")


def people_means(setting: str) -> dict[str, np.ndarray]:
    """People's true mean of each method at each round (the keep-chatting rate x 100 in the binary setting)."""
    means = {}
    for method in METHODS:
        quality = BASES[method] + SLOPES[method] * (np.arange(ROUNDS) - (ROUNDS - 1) / 2)
        if setting == "binary":
            spread = float(np.sqrt(SESSION_SD ** 2 + REPLY_SD ** 2 + RATER_SD ** 2))
            quality = np.array([100 * (1 - NormalDist(q, spread).cdf(YES_ABOVE)) for q in quality])
        means[method] = quality
    return means


def judge_scores(setting: str, method: str, quality: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The judge's score of replies of this quality, in a setting."""
    if setting == "unbiased":
        return quality + rng.normal(0, 10, quality.shape)
    if setting == "biased":
        return quality + 8 + rng.normal(0, 10, quality.shape)
    if setting == "reversing":
        return quality + {"A": -2.0, "B": 6.0, "C": 0.0}[method] + rng.normal(0, 10, quality.shape)
    if setting == "uninformative":
        return 50 + 0.05 * quality + rng.normal(0, 15, quality.shape)
    return 100.0 * (quality + 5 + rng.normal(0, 10, quality.shape) > YES_ABOVE)  # binary: biased towards yes


def simulate(setting: str, sessions: int, rated: int, rng: np.random.Generator) -> dict[str, list[Stratum]]:
    """One evaluation: each method's strata (rounds), with the sessions, people's ratings of the slice only."""
    session_effect = rng.normal(0, SESSION_SD, sessions)
    ids = [f"s{i}" for i in range(sessions)]
    strata: dict[str, list[Stratum]] = {}
    for method in METHODS:
        strata[method] = []
        for k in range(ROUNDS):
            mean = BASES[method] + SLOPES[method] * (k - (ROUNDS - 1) / 2)
            quality = mean + session_effect + rng.normal(0, REPLY_SD, sessions)
            judge = judge_scores(setting, method, quality, rng)
            people = quality + rng.normal(0, RATER_SD, sessions)
            if setting == "binary":
                people = 100.0 * (people > YES_ABOVE)
            chosen = np.sort(rng.choice(sessions, size=rated, replace=False))
            strata[method].append(Stratum(judge[chosen], people[chosen], judge, [ids[i] for i in chosen], ids))
    return strata


def without_sessions(strata: list[Stratum]) -> list[Stratum]:
    """The same strata with the sessions left out: every reply taken as independent."""
    return [Stratum(s.judge_rated, s.people_rated, s.judge_all) for s in strata]


class Tally:
    """Coverage and width of a series of intervals of one known value."""

    def __init__(self) -> None:
        self.covered = self.drawn = self.missing = 0
        self.widths: list[float] = []

    def add(self, estimate: Estimate, truth: float) -> None:
        """Count one interval (one without an interval counts as not covering)."""
        low, high = estimate["low"], estimate["high"]
        if low is None or high is None:
            self.missing += 1
            return
        self.drawn += 1
        self.covered += low <= truth <= high
        self.widths.append(high - low)

    def summary(self) -> dict[str, float | int | None]:
        """Coverage (over every simulation, a missing interval counting as a miss) and mean width."""
        total = self.drawn + self.missing
        return {"coverage": self.covered / total if total else None,
                "mean_width": float(np.mean(self.widths)) if self.widths else None, "missing": self.missing}


def run_setting(setting: str, simulations: int, sessions: int, rated: int, seed: int) -> dict:
    """Every simulation of one setting: per method and for A - B, the tallies' summaries."""
    rng = np.random.default_rng([seed, SETTINGS.index(setting)])
    round_means = people_means(setting)
    truth = {m: float(v.mean()) for m, v in round_means.items()}
    estimators: dict[str, Callable[[list[Stratum]], Estimate]] = {
        "calibrated": stratified_ppi_mean, "people_only": stratified_people_mean, "judge_only": stratified_judge_mean,
        "calibrated_without_sessions": lambda strata: stratified_ppi_mean(without_sessions(strata))}
    tallies = {m: {name: Tally() for name in estimators} for m in METHODS}
    difference = Tally()
    rounds = {m: Tally() for m in METHODS}  # every round's calibrated interval (ppi_strata) of its true mean
    weights: dict[str, list[float]] = {m: [] for m in METHODS}
    for _ in range(simulations):
        strata = simulate(setting, sessions, rated, rng)
        for method in METHODS:
            for name, estimator in estimators.items():
                estimate = estimator(strata[method])
                tallies[method][name].add(estimate, truth[method])
                if name == "calibrated" and estimate["weight"] is not None:
                    weights[method].append(estimate["weight"])
            for point, mean in zip(ppi_strata(strata[method]), round_means[method]):
                rounds[method].add(point, float(mean))
        difference.add(ppi_difference(strata["A"], strata["B"]), truth["A"] - truth["B"])
    methods = {}
    for method in METHODS:
        summary = {name: tally.summary() for name, tally in tallies[method].items()}
        methods[method] = {"truth": truth[method], "mean_weight": float(np.mean(weights[method])), **summary,
                           "rounds": rounds[method].summary()}
    return {"methods": methods, "difference_a_b": {"truth": truth["A"] - truth["B"], **difference.summary()}}


def passed(report: dict) -> bool:
    """PASS: every calibrated coverage (each method's AVG, and A - B) at least MIN_COVERAGE."""
    coverages = [figures["calibrated"]["coverage"] for setting in report["settings"].values()
                 for figures in setting["methods"].values()]
    coverages += [setting["difference_a_b"]["coverage"] for setting in report["settings"].values()]
    return all(c is not None and c >= MIN_COVERAGE for c in coverages)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=1000, help="simulated evaluations per setting")
    parser.add_argument("--seed", type=int, default=0, help="of numpy's default_rng")
    parser.add_argument("--sessions", type=int, default=40, help="sessions of each evaluation (replies per stratum)")
    parser.add_argument("--rated", type=int, default=10, help="replies people rate in each method x round stratum")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document, then the verdict")
    args = parser.parse_args(argv)
    if not 2 <= args.rated <= args.sessions:
        parser.error("--rated must lie between 2 and --sessions")
    report = {"simulations": args.simulations, "seed": args.seed, "sessions": args.sessions, "rated": args.rated,
              "rounds": ROUNDS, "methods": list(METHODS), "min_coverage": MIN_COVERAGE,
              "settings": {s: run_setting(s, args.simulations, args.sessions, args.rated, args.seed)
                           for s in SETTINGS}}
    report["passed"] = passed(report)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{args.simulations} simulated evaluations per setting: {len(METHODS)} methods x {ROUNDS} rounds x "
              f"{args.sessions} sessions, {args.rated} replies rated per method x round; nominal 95% intervals")
        print(f"{'setting':<14}{'method':<7}{'lambda':>7}{'calibrated':>12}{'width':>7}{'people':>8}{'ratio':>7}"
              f"{'judge':>7}{'no sessions':>12}{'rounds':>8}")
        for setting, figures in report["settings"].items():
            for method, f in figures["methods"].items():
                width, people = f["calibrated"]["mean_width"], f["people_only"]["mean_width"]
                print(f"{setting:<14}{method:<7}{f['mean_weight']:>7.2f}{f['calibrated']['coverage']:>12.3f}"
                      f"{width:>7.2f}{people:>8.2f}{width / people:>7.2f}{f['judge_only']['coverage']:>7.3f}"
                      f"{f['calibrated_without_sessions']['coverage']:>12.3f}{f['rounds']['coverage']:>8.3f}")
            d = figures["difference_a_b"]
            print(f"{setting:<14}{'A - B':<7}{'':>7}{d['coverage']:>12.3f}{d['mean_width']:>7.2f}")
        print("calibrated, judge: coverage of the calibrated and of the judge-only intervals; width: mean width of the "
              "calibrated ones, people: of the people-only ones (the slice alone), ratio: calibrated / people; "
              "no sessions: the calibrated coverage with every reply taken as independent; rounds: the coverage of each "
              "round's calibrated interval (ppi_strata) of people's mean at that round")
    print("PASS" if report["passed"] else "FAIL")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())

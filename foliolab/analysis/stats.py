"""Statistics: pure functions, no I/O.

Per metric and variant: n, mean (arithmetic for times and counts, harmonic
for rates, as mmtests does), stddev, CoeffVar, min, median, max. Between
variants: the patched/vanilla ratio of means with a percentile-bootstrap 95%
CI and a two-sided Mann-Whitney U p-value.

A row is significant only when the CI excludes 1 *and* p < 0.05. The
bootstrap CI alone is somewhat narrow at n=10 (its A/A false-positive rate
is above 5%); requiring the rank test too keeps it at or below 5%, which
tests/host/test_stats.py checks by simulation.

That is the rule of one test. A run tests every metric of every workload,
about 150 secondary ones in a default run, where 5% each would give about
7 false verdicts by chance: bh_adjust() gives the Benjamini-Hochberg
adjusted p (q-value) that analysis/fdr.py decides the secondary metrics
with. two_modes() finds a kernel's samples that split into two modes,
whose mean is no kernel's typical value.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

BOOTSTRAP_RESAMPLES = 10000
ALPHA = 0.05
# Below this many samples per kernel a bootstrap CI is no interval at all
# (two values resample to three means): the reports print none.
MIN_N_FOR_CI = 3


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    stddev: float
    coeffvar: float  # percent
    min: float
    median: float
    max: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def mean(values: npt.ArrayLike, harmonic: bool = False) -> float:
    a = np.asarray(values, dtype=float)
    if harmonic:
        if np.any(a <= 0):
            return float("nan")
        return float(len(a) / np.sum(1.0 / a))
    return float(np.mean(a))


def summarize(values: npt.ArrayLike, harmonic: bool = False) -> Summary:
    a = np.asarray(values, dtype=float)
    n = len(a)
    if n == 0:
        nan = float("nan")
        return Summary(0, nan, nan, nan, nan, nan, nan)
    m = mean(a, harmonic)
    # equal values have no spread: np.std's rounding would give 1e-17,
    # which reports printed as a CoeffVar of 1.3e-14%
    same = bool(a.min() == a.max())
    sd = float(np.std(a, ddof=1)) if n > 1 and not same else 0.0
    cv = 100.0 * sd / m if m else float("nan")
    return Summary(
        n, m, sd, cv, float(a.min()), float(np.median(a)), float(a.max())
    )


@dataclass(frozen=True)
class Comparison:
    ratio: float  # patched mean / vanilla mean
    ci_low: float
    ci_high: float
    p_value: float
    significant: bool


def _mann_whitney_p(
    a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]
) -> float:
    # scipy.stats takes ~0.4 s to import: a comparison pays it, not the
    # start of every command (cli loads every command's module)
    from scipy import stats as sps

    return float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def _bootstrap_means(
    a: npt.NDArray[np.float64], rng: np.random.Generator, harmonic: bool
) -> npt.NDArray[np.float64]:
    idx = rng.integers(0, len(a), size=(BOOTSTRAP_RESAMPLES, len(a)))
    s = a[idx]
    if harmonic:
        return cast(npt.NDArray[np.float64], len(a) / np.sum(1.0 / s, axis=1))
    return cast(npt.NDArray[np.float64], s.mean(axis=1))


def compare(
    vanilla: npt.ArrayLike,
    patched: npt.ArrayLike,
    harmonic: bool = False,
    seed: int = 0,
) -> Comparison:
    """Ratio patched/vanilla with a 95% bootstrap CI and a rank-test p."""
    a = np.asarray(vanilla, dtype=float)
    b = np.asarray(patched, dtype=float)
    nan = float("nan")
    if len(a) < 2 or len(b) < 2:
        ma, mb = (
            mean(a, harmonic) if len(a) else nan,
            mean(b, harmonic) if len(b) else nan,
        )
        return Comparison(mb / ma if ma else nan, nan, nan, nan, False)
    ma, mb = mean(a, harmonic), mean(b, harmonic)
    if ma == 0:
        # A counter that is zero on vanilla: no ratio, only the rank test.
        ratio = 1.0 if mb == 0 else math.inf
        lo = hi = ratio
    else:
        ratio = mb / ma
        rng = np.random.default_rng(seed)
        ba = _bootstrap_means(a, rng, harmonic)
        bb = _bootstrap_means(b, rng, harmonic)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = bb / ba
        r = r[np.isfinite(r)]
        lo, hi = (float(x) for x in np.percentile(r, [2.5, 97.5]))
    if np.all(a == a[0]) and np.all(b == b[0]):
        p = 1.0 if a[0] == b[0] else 0.0
    else:
        p = _mann_whitney_p(a, b)
    significant = bool((lo > 1 or hi < 1) and p < ALPHA)
    return Comparison(ratio, lo, hi, p, significant)


def pct_diff(vanilla_mean: float, patched_mean: float, better: str) -> float:
    """mmtests' %diff: positive means patched is better; for a metric with
    no better direction (``better`` neither "lower" nor "higher"),
    positive means larger, as pct_change."""
    if not vanilla_mean:
        return 0.0
    if better == "lower":
        return 100.0 - patched_mean * 100.0 / vanilla_mean
    return patched_mean * 100.0 / vanilla_mean - 100.0


def pct_change(base_mean: float, mean: float) -> float | None:
    """LKP's %change: ``mean`` against ``base_mean``, + = larger whatever
    the better direction; None when the base is 0 (a change from 0 has no
    percentage)."""
    if (
        not base_mean
        or not math.isfinite(base_mean)
        or not math.isfinite(mean)
    ):
        return None
    return 100.0 * (mean / base_mean - 1.0)


def min_p_value(n_a: int, n_b: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney test can give for
    samples of these sizes (complete separation, no ties): 2 / C(n_a +
    n_b, n_a). At 3 vs 3 that is 0.1, so no row can be significant."""
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


def constant(values: Sequence[float]) -> bool:
    """Two or more values, all equal: an exact count that repeats."""
    return len(values) >= 2 and all(v == values[0] for v in values)


def runs_needed(alpha: float = ALPHA) -> int:
    """The fewest runs per kernel at which a row can reach ``alpha``."""
    n = 1
    while min_p_value(n, n) >= alpha:
        n += 1
    return n


@dataclass(frozen=True)
class Paired:
    """The ratio of two kernels over rounds of an interleaved run: the
    geometric mean of the per-round ratios with a bootstrap 95% CI over
    rounds. Pairing removes what the two boots of one round share (the
    host's state at the time), so it is often tighter than the unpaired
    ratio of means."""

    n: int
    ratio: float
    ci_low: float
    ci_high: float
    # Wilcoxon's signed-rank test of the per-round log ratios: the paired
    # counterpart of compare()'s rank test, required with the CI for the
    # same reason (the bootstrap CI alone is narrow at small n)
    p_value: float = float("nan")

    @property
    def significant(self) -> bool:
        return bool(
            (self.ci_low > 1 or self.ci_high < 1) and self.p_value < ALPHA
        )


def paired_min_p(n: int) -> float:
    """The smallest two-sided p an exact signed-rank test can give over
    ``n`` pairs (every ratio on one side): 2 / 2^n, 0.0625 at 5 pairs."""
    return 1.0 if n < 1 else min(1.0, 2.0 / 2**n)


def _paired_rounds_needed(alpha: float = ALPHA) -> int:
    n = 1
    while paired_min_p(n) >= alpha:
        n += 1
    return n


# The fewest rounds at which the paired test can reach ALPHA (6): below
# it the paired CI cannot decide a row, so the ratio of means does.
PAIRED_MIN_ROUNDS = _paired_rounds_needed()


def _signed_rank_p(logs: npt.NDArray[np.float64]) -> float:
    if not np.any(logs != 0):
        return 1.0  # every round gave both kernels the same value
    from scipy import stats as sps  # see _mann_whitney_p()

    with warnings.catch_warnings():
        # ties at 0 (rounds that gave both kernels one value) make scipy
        # say it falls back to the normal approximation: a known cost,
        # not news for a report's reader
        warnings.simplefilter("ignore", UserWarning)
        return float(sps.wilcoxon(logs).pvalue)


def paired_ratio(pairs: list[tuple[float, float]], seed: int = 0) -> Paired:
    """``pairs``: (baseline, other) per round, both positive."""
    nan = float("nan")
    r = np.asarray([b / a for a, b in pairs if a > 0 and b > 0], dtype=float)
    if len(r) < 2:
        return Paired(
            len(r),
            float(np.exp(np.mean(np.log(r)))) if len(r) else nan,
            nan,
            nan,
        )
    logs = np.log(r)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(logs), size=(BOOTSTRAP_RESAMPLES, len(logs)))
    boot = np.exp(logs[idx].mean(axis=1))
    lo, hi = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
    return Paired(
        len(r), float(np.exp(logs.mean())), lo, hi, _signed_rank_p(logs)
    )


def trend(values: list[float]) -> tuple[float, float]:
    """Spearman's rho of ``values`` against their order, and its p: a
    steady drift of the host over a run shows as a trend in the
    baseline's samples."""
    if len(values) < 4 or len(set(values)) < 2:
        return 0.0, 1.0
    from scipy import stats as sps  # see _mann_whitney_p()

    res = sps.spearmanr(range(len(values)), values)
    return float(res.statistic), float(res.pvalue)


# The false discovery rate the secondary metrics of a run are held to.
FDR_Q = 0.05


def bh_adjust(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the order
    given: the i-th smallest p of m becomes min over j >= i of p_(j) m / j,
    at most 1. A test whose adjusted p is below q belongs to the largest
    set BH rejects at false discovery rate q.

    Why BH and not Holm or Benjamini-Yekutieli: Holm controls the chance
    of even one false verdict (the family-wise rate), which over ~150
    metrics asks each for p below 0.05/150 and loses nearly every real
    change; BY controls the FDR under any dependence but pays a factor of
    sum(1/i) (about 5.6 at 150). The metrics of one run are positively
    dependent (the same boots, a slower host slows every time, counts
    move together with the work done), and BH controls the FDR under
    positive regression dependence (PRDS; Benjamini and Yekutieli 2001),
    so BY's price buys nothing here."""
    m = len(p_values)
    if m == 0:
        return []
    p = np.asarray(p_values, dtype=float)
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError(f"p-values must be in [0, 1]: {list(p_values)}")
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    # the step-up: each rank takes the smallest scaled p at or above it
    stepped = np.minimum.accumulate(scaled[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return [float(x) for x in adjusted]


# two_modes()'s thresholds: a kernel's samples split into two modes only
# when there are at least MODES_MIN_N of them, at least MODES_MIN_SIDE on
# each side of the split, the gap between the sides is at least
# MODES_GAP_SPREAD times the wider side's range, and the upper mode is at
# least twice the lower one in size (MODES_GAP_SCALE of the larger
# mode's median). Chosen by simulation (10,000 samples each): with these,
# normal, lognormal (sigma 1), exponential, uniform and Poisson(3)
# samples are flagged in under 2% of samples of 6 and under 0.3% of
# samples of 10; with 4 or 5 samples every choice flags several per cent
# of them, hence no verdict of two modes below 6.
MODES_MIN_N = 6
MODES_MIN_SIDE = 2
MODES_GAP_SPREAD = 4.0
MODES_GAP_SCALE = 0.5


@dataclass(frozen=True)
class Modes:
    """A kernel's samples of a metric in two modes: ``low_n`` of ``n``
    near ``low`` (the lower side's median), the others near ``high``."""

    n: int
    low_n: int
    low: float
    high: float

    @property
    def high_n(self) -> int:
        return self.n - self.low_n

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "high_n": self.high_n}


def two_modes(values: Sequence[float]) -> Modes | None:
    """The two modes of ``values``, or None when they are one.

    Concretely: sort the samples and split them at the largest gap that
    leaves at least MODES_MIN_SIDE on each side; they are two modes when
    that gap is at least MODES_GAP_SPREAD times the wider side's range
    and at least half the larger side's median (so the upper mode is
    twice the lower or more: below that a mean still sits among values
    of the same size, and the rank test reads it as a shift). Conservative
    on purpose, since a metric in two modes loses its verdict:
    - fewer than MODES_MIN_N samples are never two modes (a gap among 4
      or 5 samples of one smooth distribution is common);
    - a single far sample is an outlier, not a mode (MODES_MIN_SIDE);
    - samples of only two distinct values are a count's resolution (0 or
      1 IPI per folio, one scan or two), not two modes, and for integer
      samples a range of less than 1 is taken as 1 for the same reason.
    The case that motivated it: KSM's merge time with 8 of 10 samples
    near 1 ms and 2 near 0.2 s (one more KSM scan), whose ratio of means
    read as +4,916%."""
    a = np.sort(np.asarray(values, dtype=float))
    n = len(a)
    if n < MODES_MIN_N or not np.all(np.isfinite(a)):
        return None
    if len(np.unique(a)) <= 2:
        return None
    resolution = 1.0 if np.all(a == np.round(a)) else 0.0
    # a split after index i leaves a[: i + 1] low, a[i + 1 :] high
    splits = range(MODES_MIN_SIDE - 1, n - MODES_MIN_SIDE)
    i = max(splits, key=lambda j: (a[j + 1] - a[j], -j))
    low, high = a[: i + 1], a[i + 1 :]
    gap = float(a[i + 1] - a[i])
    spread = max(float(np.ptp(low)), float(np.ptp(high)), resolution)
    low_mid, high_mid = float(np.median(low)), float(np.median(high))
    scale = max(abs(low_mid), abs(high_mid))
    if gap < MODES_GAP_SPREAD * spread or gap < MODES_GAP_SCALE * scale:
        return None
    return Modes(n, len(low), low_mid, high_mid)

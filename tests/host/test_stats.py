import numpy as np
import pytest

from foliolab.analysis import stats


def test_summary_fields():
    s = stats.summarize([1.0, 2.0, 3.0, 4.0])
    assert s.n == 4 and s.mean == 2.5 and s.median == 2.5
    assert s.min == 1.0 and s.max == 4.0
    assert s.stddev == pytest.approx(np.std([1, 2, 3, 4], ddof=1))
    assert s.coeffvar == pytest.approx(100 * s.stddev / 2.5)


def test_harmonic_mean_for_rates():
    assert stats.mean([1.0, 4.0], harmonic=True) == pytest.approx(1.6)
    assert stats.summarize([1.0, 4.0], harmonic=True).mean == pytest.approx(
        1.6
    )


def test_pct_diff_positive_is_better():
    assert stats.pct_diff(100, 80, "lower") == pytest.approx(20)
    assert stats.pct_diff(100, 80, "higher") == pytest.approx(-20)
    # no better direction: + = larger, as pct_change
    assert stats.pct_diff(100, 80, "none") == pytest.approx(-20)


def test_pct_change_is_signed_larger_and_none_from_zero():
    assert stats.pct_change(100, 80) == pytest.approx(-20)
    assert stats.pct_change(100, 120) == pytest.approx(20)
    assert stats.pct_change(0, 5) is None
    assert stats.pct_change(float("nan"), 5) is None


def test_aa_false_positive_rate_at_most_5_percent():
    """Samples from one distribution: significant in <= 5% of trials."""
    rng = np.random.default_rng(1234)
    trials, hits = 400, 0
    for t in range(trials):
        a = rng.normal(100, 5, 10)
        b = rng.normal(100, 5, 10)
        hits += stats.compare(a, b, seed=t).significant
    assert hits / trials <= 0.05, hits


def test_paired_aa_false_positive_rate_at_most_5_percent():
    """Paired rounds of one distribution, each round's host speed its
    own: the paired decision (CI and signed-rank p) significant in about
    5% of trials. The exact signed-rank test's size at 10 pairs is 0.049
    (the bootstrap CI alone: about 10%); over 1000 trials the rate's
    standard error is 0.007, hence the bound."""
    rng = np.random.default_rng(4321)
    trials, hits = 1000, 0
    for t in range(trials):
        host = rng.uniform(0.7, 1.3, 10)
        a = 100 * host * rng.normal(1, 0.05, 10)
        b = 100 * host * rng.normal(1, 0.05, 10)
        hits += stats.paired_ratio(list(zip(a, b)), seed=t).significant
    assert hits / trials <= 0.065, hits


def test_aa_rates_with_harmonic_mean():
    rng = np.random.default_rng(99)
    hits = sum(
        stats.compare(
            rng.normal(50, 4, 10), rng.normal(50, 4, 10), harmonic=True, seed=t
        ).significant
        for t in range(200)
    )
    assert hits / 200 <= 0.05


def test_twenty_percent_shift_is_detected():
    """n=10 per side, 5% noise, patched 20% lower: always significant."""
    rng = np.random.default_rng(7)
    for t in range(50):
        a = rng.normal(100, 5, 10)
        b = rng.normal(80, 4, 10)
        c = stats.compare(a, b, seed=t)
        assert c.significant
        assert c.ci_low < 0.8 * 1.07 and c.ci_high < 1
        assert c.ratio == pytest.approx(b.mean() / a.mean())


def test_ci_contains_true_ratio_usually():
    rng = np.random.default_rng(3)
    inside = 0
    for t in range(100):
        c = stats.compare(
            rng.normal(100, 5, 10), rng.normal(90, 4.5, 10), seed=t
        )
        inside += c.ci_low <= 0.9 <= c.ci_high
    assert inside >= 85


def test_identical_constant_counters_are_not_significant():
    c = stats.compare([4096] * 5, [4096] * 5)
    assert c.ratio == 1 and not c.significant


def test_too_few_samples_no_ci():
    c = stats.compare([1.0], [2.0])
    assert not c.significant and np.isnan(c.ci_low)


def test_equal_values_have_no_spread():
    """0.1 three times: np.std's rounding gave a CoeffVar of ~1e-14%,
    printed as float noise in the report."""
    s = stats.summarize([0.1, 0.1, 0.1])
    assert s.stddev == 0.0 and s.coeffvar == 0.0

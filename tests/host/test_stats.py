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


def test_bh_adjust_by_hand():
    """Benjamini-Hochberg on four p-values, worked by hand: sorted
    0.005, 0.01, 0.03, 0.04 times m/rank = 0.02, 0.02, 0.04, 0.04,
    already non-decreasing; returned in the order given."""
    assert stats.bh_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx(
        [0.02, 0.04, 0.04, 0.02]
    )


def test_bh_adjust_steps_up():
    """0.03, 0.035, 0.04 times 3/rank = 0.09, 0.0525, 0.04: each rank
    takes the smallest at or above it, so all three are 0.04 and all
    hold at 5% (Bonferroni and Holm would keep none: 0.03 * 3 > 0.05)."""
    assert stats.bh_adjust([0.035, 0.04, 0.03]) == pytest.approx(
        [0.04, 0.04, 0.04]
    )
    assert stats.bh_adjust([0.2, 0.5]) == pytest.approx([0.4, 0.5])
    assert stats.bh_adjust([0.9, 0.8, 0.7]) == pytest.approx([0.9] * 3)
    assert stats.bh_adjust([]) == []
    with pytest.raises(ValueError):
        stats.bh_adjust([0.1, float("nan")])


def _fdr_verdicts(pairs, seed=0):
    """compare() over (a, b) pairs: the raw verdicts (CI excludes 1 and
    p < 0.05 each) and the BH ones (CI excludes 1 and q < 0.05)."""
    cs = [stats.compare(a, b, seed=seed + i) for i, (a, b) in enumerate(pairs)]
    qs = stats.bh_adjust([c.p_value for c in cs])
    raw = [c.significant for c in cs]
    ci_out = [c.ci_low > 1 or c.ci_high < 1 for c in cs]
    bh = [o and q < stats.FDR_Q for o, q in zip(ci_out, qs)]
    return raw, bh


def test_bh_known_nulls():
    """200 metrics, both kernels' 10 samples from one distribution: the
    rule of one test calls about 5% significant (here 10), BH none."""
    rng = np.random.default_rng(61)
    pairs = [
        (rng.normal(100, 5, 10), rng.normal(100, 5, 10)) for _ in range(200)
    ]
    raw, bh = _fdr_verdicts(pairs)
    assert 4 <= sum(raw) <= 16, sum(raw)
    assert sum(bh) <= 2, sum(bh)


def test_bh_known_effects_survive():
    """180 nulls and 20 metrics shifted by 20% (4 sd): BH keeps the
    shifted ones and calls no null significant."""
    rng = np.random.default_rng(62)
    pairs = [
        (rng.normal(100, 5, 10), rng.normal(100, 5, 10)) for _ in range(180)
    ]
    pairs += [
        (rng.normal(100, 5, 10), rng.normal(120, 5, 10)) for _ in range(20)
    ]
    raw, bh = _fdr_verdicts(pairs)
    assert all(bh[180:]), bh[180:]
    assert not any(bh[:180]) and any(raw[:180]), sum(raw[:180])


def test_two_modes_found():
    """KSM's case: 8 of 10 samples near 1 ms, 2 near 200 ms."""
    rng = np.random.default_rng(5)
    values = [*rng.normal(1.0, 0.1, 8), 195.0, 210.0]
    m = stats.two_modes(values)
    assert m is not None
    assert (m.n, m.low_n, m.high_n) == (10, 8, 2)
    assert m.low == pytest.approx(1.0, abs=0.1) and m.high == 202.5


def test_one_mode_is_not_two():
    rng = np.random.default_rng(7)
    assert stats.two_modes(rng.normal(100, 5, 10)) is None
    assert stats.two_modes(rng.normal(0, 1, 10)) is None
    assert stats.two_modes(rng.lognormal(0, 1, 10)) is None
    # too few samples, an outlier alone, a count's two values, two modes
    # not far enough apart, adjacent integers
    assert stats.two_modes([1.0, 1.1, 1.0, 200.0, 201.0]) is None
    assert stats.two_modes([1.0, 1.1, 1.0, 0.9, 1.05, 200.0]) is None
    assert stats.two_modes([0.0, 0.0, 0.0, 1.2e-4, 1.2e-4, 0.0]) is None
    assert stats.two_modes([10, 10.1, 10.2, 15, 15.1, 15.2]) is None
    assert stats.two_modes([3, 3, 4, 4, 5, 5, 3, 4]) is None


def test_two_modes_rarely_flags_one_distribution():
    """The thresholds' simulation, cut short: 2,000 samples of 10 from a
    skewed distribution (lognormal, sigma 1) flag under 1% (the full
    simulation: 0.28% of 10,000)."""
    rng = np.random.default_rng(8)
    hits = sum(
        stats.two_modes(rng.lognormal(0, 1, 10)) is not None
        for _ in range(2000)
    )
    assert hits < 20, hits

"""Confidence intervals: a 95% interval of a known distribution covers its mean about 95% of the time."""

from __future__ import annotations

import numpy as np
import pytest

from navi_actor.evaluation import stats


def test_bootstrap_interval_of_a_known_distribution_covers_its_mean() -> None:
    rng = np.random.default_rng(0)
    trials, covered = 200, 0
    for trial in range(trials):
        values = rng.exponential(scale=3.0, size=60)  # skewed, like coverage; true mean 3
        strata = np.repeat(np.arange(6), 10)
        found = stats.interval(stats.mean_of("x"), {"x": values}, strata, seed=trial)
        assert found.low <= found.value <= found.high
        covered += found.low <= 3.0 <= found.high
    assert 0.88 <= covered / trials <= 0.99


def test_rate_is_a_ratio_of_sums_and_strata_keep_their_sizes() -> None:
    columns = {"collisions": np.array([1.0, 0.0, 3.0]), "length": np.array([10.0, 10.0, 20.0])}
    found = stats.interval(stats.ratio_of_sums("collisions", "length"), columns, np.array([0, 0, 1]))
    assert found.value == pytest.approx(4.0 / 40.0)
    index = stats.resample_indices(np.array([0, 0, 1, 1, 1]), resamples=50, seed=1)
    assert index.shape == (50, 5)
    assert np.isin(index[:, :2], [0, 1]).all() and np.isin(index[:, 2:], [2, 3, 4]).all()


def test_paired_ratio_and_difference() -> None:
    strata = np.zeros(40, dtype=int)
    rng = np.random.default_rng(3)
    base = rng.uniform(10, 20, size=40)
    first, second = {"x": base}, {"x": 3.0 * base}
    ratio = stats.paired(stats.mean_of("x"), first, second, strata, stats.ratio)
    assert ratio.value == pytest.approx(3.0) and ratio.low == pytest.approx(3.0)
    assert ratio.high == pytest.approx(3.0)  # paired: the same episodes in numerator and denominator
    diff = stats.paired(stats.mean_of("x"), first, second, strata, stats.difference)
    assert diff.value == pytest.approx(2.0 * base.mean()) and diff.low < diff.value < diff.high

"""Confidence intervals for evaluation metrics: stratified percentile bootstrap, paired when compared.

Point estimates of a few dozen noisy episodes mislead (rliable, "Deep RL at the Edge of the
Statistical Precipice", 2021): every aggregate is reported with a 95% interval. Episodes are
resampled *within their scene* (each scene keeps its K episodes), so a resample never over-weights
one scene. A comparison of two policies flown on the same plan resamples the same episode indices
for both, which is what makes the interval of a difference or a ratio paired (and much narrower
than two independent intervals).

A statistic is a function of resampled metric columns: ``mean`` for per-episode quantities, and a
ratio of sums for rates (collisions per step = total collisions / total steps).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

Columns = Mapping[str, np.ndarray]
Statistic = Callable[[Columns], np.ndarray]  # columns [R, N] each -> [R]

RESAMPLES = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval."""

    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        """``{"value", "ci95_low", "ci95_high"}`` rounded for JSON."""
        return {"value": _round(self.value), "ci95_low": _round(self.low), "ci95_high": _round(self.high)}


def _round(value: float) -> float:
    return round(float(value), 6) if np.isfinite(value) else float("nan")


def mean_of(name: str) -> Statistic:
    """Mean of column ``name`` over episodes (NaN entries ignored)."""
    return lambda columns: np.nanmean(columns[name], axis=-1)


def ratio_of_sums(numerator: str, denominator: str, scale: float = 1.0) -> Statistic:
    """``scale * sum(numerator) / sum(denominator)`` over episodes (a rate)."""

    def statistic(columns: Columns) -> np.ndarray:
        total = np.sum(columns[denominator], axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(total > 0, scale * np.sum(columns[numerator], axis=-1) / total, np.nan)

    return statistic


def resample_indices(strata: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """[R, N] episode indices drawn with replacement within each stratum (scene).

    Args:
        strata: [N] stratum label of each episode (episodes of one stratum need not be adjacent).
        resamples: R.
        seed: generator seed (same seed, same intervals).
    """
    rng = np.random.default_rng(seed)
    columns = []
    for label in np.unique(strata):
        members = np.flatnonzero(strata == label)
        columns.append(members[rng.integers(0, len(members), size=(resamples, len(members)))])
    return np.concatenate(columns, axis=1)


def _percentiles(samples: np.ndarray) -> tuple[float, float]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = 100.0 * (1.0 - LEVEL) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def interval(statistic: Statistic, columns: Columns, strata: np.ndarray, seed: int = 0) -> Interval:
    """The statistic on all episodes with its stratified bootstrap interval."""
    full = {key: value[None, :] for key, value in columns.items()}
    index = resample_indices(strata, RESAMPLES, seed)
    samples = statistic({key: value[index] for key, value in columns.items()})
    return Interval(float(statistic(full)[0]), *_percentiles(samples))


def paired(
    statistic: Statistic,
    first: Columns,
    second: Columns,
    strata: np.ndarray,
    combine: Callable[[np.ndarray, np.ndarray], np.ndarray],
    *,
    seed: int = 0,
) -> Interval:
    """``combine(stat(second), stat(first))`` with a paired bootstrap interval (same indices for both).

    ``first`` and ``second`` must be the same planned episodes in the same order.
    """
    index = resample_indices(strata, RESAMPLES, seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        point = combine(
            statistic({k: v[None, :] for k, v in second.items()}),
            statistic({k: v[None, :] for k, v in first.items()}),
        )
        samples = combine(
            statistic({k: v[index] for k, v in second.items()}),
            statistic({k: v[index] for k, v in first.items()}),
        )
    return Interval(float(point[0]), *_percentiles(samples))


def difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b``."""
    return a - b


def ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b`` (NaN where ``b`` is 0)."""
    return np.where(b != 0, a / np.where(b != 0, b, 1.0), np.nan)

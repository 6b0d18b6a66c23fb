"""The value-fit statistic and the metric names an update reports."""

from __future__ import annotations

import pytest
import torch

from navi_actor.algorithms.update_metrics import METRIC_NAMES, OPTIONAL_METRICS, explained_variance


def test_explained_variance_known_answers() -> None:
    returns = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert float(explained_variance(returns, returns)) == pytest.approx(1.0)
    assert float(explained_variance(torch.full((4,), 2.5), returns)) == pytest.approx(0.0)
    # values that explain half the spread: residual variance = Var(returns) / 4 -> 0.75
    assert float(explained_variance(returns * 0.5 + 1.25, returns)) == pytest.approx(0.75)
    assert torch.isnan(explained_variance(returns, torch.ones(4)))


def test_explained_variance_over_one_rank_matches_the_local_statistic() -> None:
    """The data-parallel path (sums reduced over ranks) gives the plain answer when one rank holds all."""
    generator = torch.Generator().manual_seed(0)
    returns = torch.randn(6, 5, generator=generator)
    values = returns + 0.3 * torch.randn(6, 5, generator=generator)
    reduced = explained_variance(values, returns, all_reduce=lambda tensor: None)
    assert float(reduced) == pytest.approx(float(explained_variance(values, returns)), rel=1e-5)
    assert torch.isnan(explained_variance(values, torch.ones(6, 5), all_reduce=lambda tensor: None))


def test_metric_names_are_distinct() -> None:
    assert len(set(METRIC_NAMES + OPTIONAL_METRICS)) == len(METRIC_NAMES) + len(OPTIONAL_METRICS)

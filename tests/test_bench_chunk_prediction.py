"""scripts/bench_chunk_prediction.py: the per-k comparison of chunk entries with later means.

The diagnosis of issue 20's chunked brain rests on these numbers, so the arithmetic is pinned on
hand-made rollouts: a perfect chunk has zero error, a shrunk one shows its ratio, holding is scored
against the right tick, and pairs across an episode end are left out.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from script_module import load_script


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script("bench_chunk_prediction")


def ramp(ticks: int, drones: int = 1) -> np.ndarray:
    """Means [T, B, 4]: forward = t / 10, other components 0."""
    means = np.zeros((ticks, drones, 4))
    means[:, :, 0] = np.arange(ticks)[:, None] / 10.0
    return means


def perfect_chunks(means: np.ndarray, horizon: int) -> np.ndarray:
    ticks = means.shape[0]
    return np.stack([means[np.minimum(np.arange(ticks) + k, ticks - 1)] for k in range(horizon)], axis=2)


def test_a_perfect_chunk_has_no_error_and_holding_has_the_drift(bench: ModuleType) -> None:
    means = ramp(10)
    rows = bench.chunk_prediction_stats(perfect_chunks(means, 4), means, np.zeros((10, 1), bool))
    assert [row["k"] for row in rows] == [1, 2, 3]
    for row in rows:
        assert row["count"] == 10 - row["k"]
        assert row["mse_chunk"][0] == pytest.approx(0.0)
        assert row["mse_hold"][0] == pytest.approx((row["k"] / 10.0) ** 2)  # held t, true t + k
        assert row["abs_ratio"][0] == pytest.approx(1.0) and row["std_ratio"][0] == pytest.approx(1.0)


def test_a_shrunk_chunk_shows_its_ratio(bench: ModuleType) -> None:
    means = ramp(12) + 0.5
    chunks = perfect_chunks(means, 3) * 0.5
    rows = bench.chunk_prediction_stats(chunks, means, np.zeros((12, 1), bool))
    assert rows[0]["abs_ratio"][0] == pytest.approx(0.5) and rows[0]["std_ratio"][0] == pytest.approx(0.5)
    assert rows[0]["mean_pred"][0] == pytest.approx(0.5 * rows[0]["mean_true"][0])


def test_pairs_across_an_episode_end_are_left_out(bench: ModuleType) -> None:
    means = ramp(6)
    ended = np.zeros((6, 1), bool)
    ended[2, 0] = True  # the step of tick 2 ended the episode: tick 3 starts a new one
    rows = bench.chunk_prediction_stats(perfect_chunks(means, 3), means, ended)
    # k = 1: pairs (0,1), (1,2), (3,4), (4,5); k = 2: (0,2), (3,5)
    assert [row["count"] for row in rows] == [4, 2]


def test_mismatched_shapes_are_refused_in_one_line(bench: ModuleType) -> None:
    with pytest.raises(ValueError, match="do not match"):
        bench.chunk_prediction_stats(np.zeros((5, 1, 3, 4)), np.zeros((5, 2, 4)), np.zeros((5, 1), bool))

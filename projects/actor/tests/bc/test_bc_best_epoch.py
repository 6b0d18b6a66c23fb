"""Cloning ends with the best held-out epoch's weights (``bc.keep_best``) and can stop early
(``bc.patience``).

The demonstrations are random actions over random views: nothing generalises, so the held-out
MSE wanders while the training MSE falls, the case the options exist for.
"""

from __future__ import annotations

import pytest
import torch

from navi_actor.bc import BCConfig
from navi_actor.bc.dataset import DemoData
from navi_actor.bc.trainer import BCHistory, sequence_mse, train_bc
from navi_actor.models import NaviPolicy, PolicyConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")

EPISODE = 16


def random_episodes(episodes: int, seed: int) -> DemoData:
    gen = torch.Generator().manual_seed(seed)
    frames = episodes * EPISODE
    starts = torch.arange(frames) % EPISODE == 0
    bounds = torch.tensor([[s, s + EPISODE] for s in range(0, frames, EPISODE)])
    obs = torch.rand(frames, 3, 16, 8, generator=gen)
    actions = torch.rand(frames, 4, generator=gen) * 1.6 - 0.8
    return DemoData(obs, actions, starts, bounds, [])


def cloned(**options: object) -> tuple[NaviPolicy, DemoData, BCHistory]:
    torch.manual_seed(0)
    config = PolicyConfig(
        visit_input=False, temporal_core="gru", azimuth=16, elevation=8, embed_dim=32, vit_dim=32,
        vit_layers=1,
    )  # fmt: skip
    policy = NaviPolicy(config)
    train, holdout = random_episodes(12, seed=1), random_episodes(3, seed=2)
    bc = BCConfig(epochs=12, sequence_length=8, streams=4, learning_rate=1e-2, **options)  # type: ignore[arg-type]
    return policy, holdout, train_bc(policy, train, holdout, bc, torch.Generator().manual_seed(0))


def test_the_clone_keeps_the_weights_of_its_lowest_held_out_epoch() -> None:
    policy, holdout, history = cloned()
    assert len(history.holdout_mse) == 12  # no early stop by default
    best = min(range(12), key=lambda i: history.holdout_mse[i])
    assert history.best_epoch == best + 1 < 12, history.holdout_mse  # the case is one where the last is worse
    assert history.kept_holdout_mse == history.holdout_mse[best]
    assert sequence_mse(policy, holdout, 4, 8) == pytest.approx(history.holdout_mse[best], rel=1e-6)


def test_without_keep_best_the_clone_ends_with_its_last_epoch() -> None:
    policy, holdout, history = cloned(keep_best=False)
    assert history.best_epoch == 12 and history.kept_holdout_mse == history.holdout_mse[-1]
    assert sequence_mse(policy, holdout, 4, 8) == pytest.approx(history.holdout_mse[-1], rel=1e-6)


def test_patience_stops_that_many_epochs_after_the_best() -> None:
    policy, holdout, history = cloned(patience=2)
    run = len(history.holdout_mse)
    assert run == history.best_epoch + 2 < 12, history.holdout_mse
    assert min(history.holdout_mse[history.best_epoch :]) >= history.kept_holdout_mse  # no later improvement
    assert sequence_mse(policy, holdout, 4, 8) == pytest.approx(history.kept_holdout_mse, rel=1e-6)


def test_without_held_out_episodes_every_epoch_runs_and_the_last_is_kept() -> None:
    torch.manual_seed(0)
    policy = NaviPolicy(PolicyConfig(visit_input=False, temporal_core="gru", azimuth=16, elevation=8,
                                     embed_dim=32, vit_dim=32, vit_layers=1))  # fmt: skip
    empty = random_episodes(1, seed=3).select_episodes(torch.tensor([], dtype=torch.long))
    bc = BCConfig(epochs=3, sequence_length=8, streams=4, patience=1)
    history = train_bc(policy, random_episodes(6, seed=1), empty, bc, torch.Generator().manual_seed(0))
    assert len(history.train_nll) == 3 and history.best_epoch == 3 and history.kept_holdout_mse is None

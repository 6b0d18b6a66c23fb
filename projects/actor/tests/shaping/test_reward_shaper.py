"""Reward shaper: each term on hand-built cases, and the owning RewardShaper end to end."""

from __future__ import annotations

import pytest
import torch

from navi_actor.curiosity import LinearAnneal
from navi_actor.memory import EpisodicMemoryConfig
from navi_actor.shaping import SHAPING_TERMS, RewardShaper, ShapingConfig, shaping_terms


def test_terms_on_hand_built_case() -> None:
    cfg = ShapingConfig(
        velocity_weight=0.1,
        novelty=LinearAnneal(start=0.5, end=0.1, steps=100),
        loop_weight=0.2,
        loop_threshold=0.5,
    )
    terms = shaping_terms(
        cfg,
        env_reward=torch.tensor([1.0, 0.0, -1.0]),
        speed=torch.tensor([0.0, 2.0, 4.0]),
        novelty=torch.tensor([1.0, 2.0, 0.0]),
        loop_score=torch.tensor([0.2, 0.75, 1.0]),
        step=50,
    )
    assert tuple(terms) == SHAPING_TERMS
    torch.testing.assert_close(terms["existential"], torch.full((3,), -0.02))
    torch.testing.assert_close(terms["velocity"], torch.tensor([0.0, 0.2, 0.4]))
    torch.testing.assert_close(terms["novelty"], torch.tensor([0.3, 0.6, 0.0]))  # weight 0.3 at step 50
    torch.testing.assert_close(terms["loop"], torch.tensor([0.0, -0.1, -0.2]))
    torch.testing.assert_close(terms["total"], torch.tensor([1.28, 0.68, -0.82]))


def test_defaults_tax_and_zero_velocity_weight() -> None:
    cfg = ShapingConfig()
    assert cfg.existential_tax == -0.02 and cfg.velocity_weight == 0.0
    terms = shaping_terms(
        cfg,
        env_reward=torch.zeros(2),
        speed=torch.tensor([5.0, 1.0]),
        novelty=torch.zeros(2),
        loop_score=torch.zeros(2),
        step=0,
    )
    torch.testing.assert_close(terms["velocity"], torch.zeros(2))
    torch.testing.assert_close(terms["total"], torch.full((2,), -0.02))


def test_config_is_frozen_and_validated() -> None:
    cfg = ShapingConfig()
    with pytest.raises(ValueError):
        cfg.loop_weight = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        ShapingConfig(existential_tax=0.5)


def test_reward_shaper_penalises_loops_and_rewards_novelty() -> None:
    torch.manual_seed(0)
    cfg = ShapingConfig(
        memory=EpisodicMemoryConfig(exclusion_window=1, write_every=1, age_decay=1.0, center_momentum=0.0)
    )
    shaper = RewardShaper(cfg, num_drones=2, embed_dim=8, azimuth=32, elevation=8)
    obs = torch.rand(2, 3, 32, 8)
    places = torch.eye(8)[:2]  # drone 0 at place 0, drone 1 at place 1
    zeros, no_start = torch.zeros(2), torch.zeros(2, dtype=torch.bool)
    first = shaper.step(obs, places, no_start, env_reward=zeros, speed=zeros, step=0)
    assert (first["novelty"] > 0).all() and (first["loop"] == 0).all()
    shaper.step(obs, torch.eye(8)[2:4], no_start, env_reward=zeros, speed=zeros, step=1)
    back = torch.stack([places[0], torch.eye(8)[5]])  # drone 0 returns, drone 1 goes somewhere new
    third = shaper.step(obs, back, no_start, env_reward=zeros, speed=zeros, step=2)
    assert third["loop"][0] == pytest.approx(-cfg.loop_weight) and third["loop"][1] == 0.0
    assert torch.isfinite(third["total"]).all()


def test_spin_term_charges_a_sustained_turn_not_a_brief_one() -> None:
    cfg = ShapingConfig(spin_weight=0.1, spin_window=4, spin_free=0.5)
    terms = shaping_terms(
        cfg, env_reward=torch.zeros(3), speed=torch.zeros(3), novelty=torch.zeros(3),
        loop_score=torch.zeros(3), step=0, turning=torch.tensor([0.25, -0.75, 1.0]),
    )  # fmt: skip
    torch.testing.assert_close(terms["spin"], torch.tensor([0.0, -0.05, -0.1]))
    torch.testing.assert_close(terms["total"], torch.tensor([-0.02, -0.07, -0.12]))
    shaper = RewardShaper(cfg, num_drones=2, embed_dim=8, azimuth=16, elevation=8)
    obs, embedding = torch.zeros(2, 3, 16, 8), torch.zeros(2, 8)
    start = torch.tensor([True, True])
    spins: list[torch.Tensor] = []
    for step in range(12):  # drone 0 circles at full yaw; drone 1 alternates left and right
        yaw = torch.tensor([1.0, 1.0 if step % 2 else -1.0])
        spins.append(shaper.step(obs, embedding, start, env_reward=torch.zeros(2), speed=torch.zeros(2),
                                 step=step, yaw=yaw)["spin"])  # fmt: skip
        start = torch.tensor([False, False])
    assert float(spins[-1][0]) < -0.05 and float(spins[-1][1]) == 0.0
    reset = shaper.step(obs, embedding, torch.tensor([True, False]), env_reward=torch.zeros(2),
                        speed=torch.zeros(2), step=12, yaw=torch.ones(2))["spin"]  # fmt: skip
    assert float(reset[0]) == 0.0  # a new episode starts with no turning history
    assert float(shaping_terms(ShapingConfig(spin_weight=0.0), env_reward=torch.zeros(1),
                               speed=torch.zeros(1), novelty=torch.zeros(1), loop_score=torch.zeros(1),
                               step=0, turning=torch.ones(1))["spin"]) == 0.0  # weight 0: off  # fmt: skip
    assert float(shaping_terms(ShapingConfig(), env_reward=torch.zeros(1), speed=torch.zeros(1),
                               novelty=torch.zeros(1), loop_score=torch.zeros(1), step=0,
                               turning=torch.ones(1))["spin"]) < 0.0  # on by default  # fmt: skip

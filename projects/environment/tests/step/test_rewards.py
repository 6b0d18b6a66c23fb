"""Each of the ten reward terms on hand-built observations."""

from __future__ import annotations

import math

import pytest
import torch

from navi_environment.config import PhysicsSettings, RewardSettings
from navi_environment.step.rewards import REWARD_TERMS, RewardInputs, Rewards

AZ, EL, H = 8, 4, 30.0
R = AZ * EL
FORWARD = torch.tensor([0, 1, 2, 3])  # azimuth bin 0, every elevation


def unit_weights(**overrides: float) -> RewardSettings:
    weights = dict.fromkeys(REWARD_TERMS, 1.0)
    weights.update(overrides)
    return RewardSettings(heading_bins=8, **weights)  # 8 sectors: the heading rules are under test


def obs_with(depth_m: float, valid: float = 1.0, B: int = 1) -> torch.Tensor:
    obs = torch.zeros(B, 3, AZ, EL)
    obs[:, 0] = depth_m / H if valid else 1.0
    obs[:, 2] = valid
    return obs


def inputs(
    obs: torch.Tensor, *, position=None, yaw=None, spawn=None, collided=None, impact=None
) -> RewardInputs:  # type: ignore[no-untyped-def]
    B = obs.shape[0]
    depth = obs[:, 0].reshape(B, -1)
    return RewardInputs(
        obs=obs, nearest_m=depth.amin(dim=1) * H, hit_share=obs[:, 2].reshape(B, -1).mean(dim=1),
        position=torch.zeros(B, 3) if position is None else position,
        yaw=torch.zeros(B) if yaw is None else yaw, spawn=torch.zeros(B, 3) if spawn is None else spawn,
        collided=torch.zeros(B, dtype=torch.bool) if collided is None else collided,
        impact_speed=torch.zeros(B) if impact is None else impact, forward_rays=FORWARD, horizon=H,
    )  # fmt: skip


def term(terms: torch.Tensor, name: str) -> torch.Tensor:
    return terms[REWARD_TERMS.index(name)]


def fresh(settings: RewardSettings | None = None, B: int = 1, clearance: float = 2.0) -> Rewards:
    rewards = Rewards(settings or unit_weights(), PhysicsSettings(), B, torch.device("cpu"))
    rewards.reset_rows(torch.arange(B), torch.full((B,), clearance))
    return rewards


def test_reward_is_the_sum_of_weighted_terms() -> None:
    rewards = fresh(unit_weights(exploration=2.0, proximity=3.0))
    reward, terms, _ = rewards.compute(inputs(obs_with(0.5)))
    assert torch.allclose(reward, terms.sum(dim=0))
    unweighted = fresh().compute(inputs(obs_with(0.5)))[1]
    assert torch.allclose(term(terms, "exploration"), 2.0 * term(unweighted, "exploration"))
    assert torch.allclose(term(terms, "proximity"), 3.0 * term(unweighted, "proximity"))


def test_exploration_pays_new_cells_and_headings_once_and_is_gated_by_clearance() -> None:
    rewards = fresh()
    obs = obs_with(20.0)  # open: frontier = 1
    first = term(rewards.compute(inputs(obs))[1], "exploration")
    assert math.isclose(float(first), 1.0 + 0.25 + 0.05, rel_tol=1e-6)
    same = term(rewards.compute(inputs(obs))[1], "exploration")
    assert float(same) == 0.0  # hovering earns nothing, however open the view
    turned = term(rewards.compute(inputs(obs, yaw=torch.tensor([math.pi])))[1], "exploration")
    assert math.isclose(float(turned), 0.05, rel_tol=1e-6)
    assert float(term(rewards.compute(inputs(obs, yaw=torch.tensor([math.pi])))[1], "exploration")) == 0.0
    moved = term(rewards.compute(inputs(obs, position=torch.tensor([[10.0, 0.0, 0.0]])))[1], "exploration")
    assert float(moved) > 1.0
    cramped = fresh()
    gated = term(cramped.compute(inputs(obs_with(0.2)))[1], "exploration")
    assert float(gated) == 0.0
    assert float(rewards.coverage[0]) == 2.0


def test_progress_rewards_only_new_farthest_distance_scaled_by_clearance() -> None:
    rewards = fresh()
    far = inputs(obs_with(5.0), position=torch.tensor([[3.0, 4.0, 0.0]]))
    assert math.isclose(float(term(rewards.compute(far)[1], "progress")), 5.0, rel_tol=1e-6)
    back = inputs(obs_with(5.0), position=torch.tensor([[1.0, 0.0, 0.0]]))
    assert float(term(rewards.compute(back)[1], "progress")) == 0.0
    tight = inputs(obs_with(0.5), position=torch.tensor([[6.0, 8.0, 0.0]]))
    assert math.isclose(float(term(rewards.compute(tight)[1], "progress")), 5.0 * 0.5, rel_tol=1e-6)


def test_clearance_delta_is_the_clipped_change() -> None:
    rewards = fresh(clearance=2.0)
    assert math.isclose(
        float(term(rewards.compute(inputs(obs_with(2.5)))[1], "clearance_delta")), 0.5, rel_tol=1e-5
    )
    assert float(term(rewards.compute(inputs(obs_with(0.5)))[1], "clearance_delta")) == -1.0


def test_starvation_is_minus_the_share_of_empty_rays() -> None:
    obs = obs_with(5.0)
    obs[0, 2, :2] = 0.0  # 2 of 8 azimuth columns see nothing
    obs[0, 0, :2] = 1.0
    assert math.isclose(float(term(fresh().compute(inputs(obs))[1], "starvation")), -0.25, rel_tol=1e-6)


@pytest.mark.parametrize(("nearest", "expected"), [(0.25, -0.75), (1.0, 0.0), (3.0, 0.0)])
def test_proximity_penalty_below_one_metre(nearest: float, expected: float) -> None:
    assert math.isclose(
        float(term(fresh().compute(inputs(obs_with(nearest)))[1], "proximity")), expected, abs_tol=1e-6
    )


@pytest.mark.parametrize(("nearest", "expected"), [(0.5, 0.0), (2.0, 1.0), (6.0, 0.0)])
def test_structure_band_pays_a_new_cell_in_the_band(nearest: float, expected: float) -> None:
    rewards = fresh()
    assert float(term(rewards.compute(inputs(obs_with(nearest)))[1], "structure_band")) == expected
    assert float(term(rewards.compute(inputs(obs_with(nearest)))[1], "structure_band")) == 0.0  # same cell


def full_turn_and_new_cell(settings: RewardSettings) -> tuple[float, float]:
    """(what a full turn in a visited cell pays, what entering that cell paid), close structure ahead."""
    rewards = fresh(settings)
    obs = obs_with(20.0)
    obs[0, 0, 0, :] = 2.0 / H  # close structure ahead: inspection and forward structure pay too
    entered = float(term(rewards.compute(inputs(obs, yaw=torch.tensor([0.2])))[1], "exploration"))
    turned = sum(
        float(rewards.compute(inputs(obs, yaw=torch.tensor([(k + 0.5) * 2 * math.pi / 8])))[0])
        - float(rewards.compute(inputs(obs, yaw=torch.tensor([(k + 0.5) * 2 * math.pi / 8])))[0])
        for k in range(1, 8)
    )
    return turned, entered


def test_a_full_turn_is_worth_less_than_entering_one_new_cell() -> None:
    """With 8 heading sectors, collecting every one of a cell pays less than one new cell."""
    turned, entered = full_turn_and_new_cell(RewardSettings(heading_bins=8))
    assert 0.0 < turned < 0.6 * entered  # and a full turn takes ~21 steps at the top yaw rate


def test_by_default_turning_in_a_visited_cell_pays_nothing() -> None:
    """One heading sector per cell (the default): a drifting circle cannot farm headings."""
    turned, entered = full_turn_and_new_cell(RewardSettings())
    assert abs(turned) < 1e-6 and entered > 1.0


def test_no_positive_reward_for_hovering_or_circling_in_one_cell() -> None:
    """The exploit PPO found: circle in a spot with a good view and farm per-step bonuses."""
    rewards = fresh(unit_weights(proximity=0.0, starvation=0.0, clearance_delta=0.0))
    obs = obs_with(20.0)
    obs[0, 0, 0, :2] = 2.0 / H  # structure ahead inside the band, open frontier beside it
    for turn in range(8):  # one lap: every heading sector of the cell once
        rewards.compute(inputs(obs, yaw=torch.tensor([(turn + 0.5) * 2 * math.pi / 8])))
    later = [float(rewards.compute(inputs(obs, yaw=torch.tensor([k * 0.3])))[0]) for k in range(100)]
    assert max(later) == 0.0


def test_forward_structure_counts_only_the_forward_cone() -> None:
    obs = obs_with(20.0)
    obs[0, 0, 0, :2] = 2.0 / H  # half of the forward cone sees structure within the band
    rewards = fresh()
    assert math.isclose(float(term(rewards.compute(inputs(obs))[1], "forward_structure")), 0.5, rel_tol=1e-6)
    assert float(term(rewards.compute(inputs(obs))[1], "forward_structure")) == 0.0  # same heading again
    side = obs_with(20.0)
    side[0, 0, 4] = 2.0 / H  # behind the drone: does not count
    assert float(term(fresh().compute(inputs(side))[1], "forward_structure")) == 0.0


def test_inspection_needs_close_structure_and_a_new_heading() -> None:
    rewards = fresh()
    obs = obs_with(2.0)
    assert math.isclose(float(term(rewards.compute(inputs(obs))[1], "inspection")), 1.0, rel_tol=1e-6)
    assert float(term(rewards.compute(inputs(obs))[1], "inspection")) == 0.0  # same heading again
    assert float(term(fresh().compute(inputs(obs_with(10.0)))[1], "inspection")) == 0.0


def test_collision_penalty_grows_with_impact_speed() -> None:
    rewards = fresh(B=3)
    out = rewards.compute(
        inputs(
            obs_with(2.0, B=3),
            collided=torch.tensor([False, True, True]),
            impact=torch.tensor([4.0, 1.0, 5.0]),
        )
    )
    penalty = term(out[1], "collision")
    assert float(penalty[0]) == 0.0
    assert math.isclose(float(penalty[1]), -(0.5 + 1.0 / 5.0), rel_tol=1e-6)
    assert math.isclose(float(penalty[2]), -(0.5 + 1.0), rel_tol=1e-6)


def test_revisit_charges_moving_back_into_a_visited_cell_not_staying() -> None:
    """There and back: only the step into the cell seen before is charged, once per re-entry."""
    rewards = fresh()
    obs = obs_with(20.0)
    path = [(0.5, 0.5), (0.7, 0.5), (1.5, 0.5), (1.6, 0.5), (0.5, 0.5), (0.4, 0.5), (1.5, 0.5), (2.5, 0.5)]
    charged = [
        float(term(rewards.compute(inputs(obs, position=torch.tensor([[x, y, 1.0]])))[1], "revisit"))
        for x, y in path
    ]
    assert charged == [0.0, 0.0, 0.0, 0.0, -1.0, 0.0, -1.0, 0.0]
    rewards.reset_rows(torch.tensor([0]), torch.tensor([2.0]))
    back = rewards.compute(inputs(obs, position=torch.tensor([[0.5, 0.5, 1.0]])))[1]
    assert float(term(back, "revisit")) == 0.0  # a new episode remembers nothing


def test_revisit_is_off_by_default() -> None:
    rewards = fresh(RewardSettings())
    obs = obs_with(20.0)
    for x in (0.5, 1.5, 0.5):
        _, terms, _ = rewards.compute(inputs(obs, position=torch.tensor([[x, 0.5, 1.0]])))
    assert float(term(terms, "revisit")) == 0.0


@pytest.mark.parametrize("columns", [False, True])
def test_novelty_columns_pay_a_column_once_while_coverage_counts_3d_cells(columns: bool) -> None:
    """Climbing through three cells of one column: 3D novelty pays each, column novelty only the
    first; coverage counts the three cells either way, so it means the same whatever the reward."""
    rewards = fresh(RewardSettings(heading_bins=1, novelty_columns=columns))
    obs = obs_with(2.0)
    paid = []
    for z in (0.5, 1.5, 2.5, 1.5):
        terms = rewards.compute(inputs(obs, position=torch.tensor([[0.5, 0.5, z]])))[1]
        paid.append(float(term(terms, "exploration")) > 0)
    assert paid == ([True, True, True, False] if not columns else [True, False, False, False])
    assert float(rewards.coverage[0]) == 3.0
    terms = rewards.compute(inputs(obs, position=torch.tensor([[1.5, 0.5, 2.5]])))[1]
    assert float(term(terms, "exploration")) > 0  # the next column pays
    assert float(rewards.coverage[0]) == 4.0

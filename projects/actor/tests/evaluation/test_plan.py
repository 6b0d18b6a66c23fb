"""The episode plan is exact and paired: K episodes per scene, each counted once, same starts for all."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from navi_actor.envs.point import PointGoalEnv
from navi_actor.evaluation.baselines import RandomPolicy
from navi_actor.evaluation.command import evaluate_specs
from navi_actor.evaluation.evaluator import compare_reports, evaluate_policy
from navi_actor.evaluation.plan import make_plan


@dataclass
class FakeStep:
    obs: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor
    info: dict[str, torch.Tensor] = field(default_factory=dict)


class FakePlannedEnv:
    """Drones whose episodes last ``lengths[scene]`` steps (scene 0 short, scene 1 long).

    The reward of a step is the scene index + 1, so a finished episode's return identifies the scene
    and its length; ``starts`` records every planned start the evaluator asked for.
    """

    num_scenes = 2
    dt = 0.5
    observation_shape = (3, 4, 2)

    def __init__(self, num_actors: int, lengths: tuple[int, int] = (2, 10)) -> None:
        self.num_actors = num_actors
        self.device = torch.device("cpu")
        self.lengths = torch.tensor(lengths)
        self.scene = torch.zeros(num_actors, dtype=torch.int64)
        self.steps = torch.zeros(num_actors, dtype=torch.int64)
        self.starts: list[tuple[int, tuple[float, ...], float]] = []

    def _obs(self) -> torch.Tensor:
        return torch.zeros(self.num_actors, *self.observation_shape)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        self.steps.zero_()
        return self._obs()

    def poses(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Position (scene, step of the episode, drone): a recorded path says where it came from."""
        rows = torch.arange(self.num_actors)
        return torch.stack([self.scene, self.steps, rows], dim=1).float(), torch.zeros(self.num_actors)

    def sample_starts(self, scene: int, count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        return torch.rand(count, 3, generator=generator), torch.rand(count, generator=generator)

    def start_episodes(
        self, rows: torch.Tensor, scenes: torch.Tensor, positions: torch.Tensor, yaws: torch.Tensor
    ) -> torch.Tensor:
        for row, scene, position, yaw in zip(rows.tolist(), scenes.tolist(), positions, yaws, strict=True):
            self.starts.append((scene, tuple(position.tolist()), float(yaw)))
            self.scene[row] = scene
            self.steps[row] = 0
        return self._obs()

    def reachable_cells(self, scene: int) -> int:
        return 100

    def step(self, actions: torch.Tensor) -> FakeStep:
        self.steps += 1
        reward = (self.scene + 1).float()
        truncated = self.steps >= self.lengths[self.scene]
        info = {
            "coverage": self.steps.float(),
            "speed": torch.full((self.num_actors,), 2.0),
            "collision": torch.zeros(self.num_actors),
        }
        self.steps[truncated] = 0  # auto-reset (the evaluator re-places planned drones)
        obs = self._obs()
        return FakeStep(obs, reward, torch.zeros_like(truncated), truncated, obs, info)


@pytest.mark.parametrize("drones", [1, 3, 8])
def test_every_planned_episode_is_flown_to_its_end_and_counted_once(drones: int) -> None:
    env = FakePlannedEnv(drones)
    report = evaluate_policy(RandomPolicy(), env, 4, seed=3)
    lengths = report.columns["length"]
    scenes = report.plan.scenes.numpy()
    # exactly K = 4 per scene, whatever the batch and however short scene 0's episodes are
    assert np.bincount(scenes).tolist() == [4, 4]
    assert lengths[scenes == 0].tolist() == [2] * 4 and lengths[scenes == 1].tolist() == [10] * 4
    # the return identifies the scene each row was flown in: rows are recorded against their plan entry
    assert report.columns["return"].tolist() == [2.0] * 4 + [20.0] * 4
    assert report.columns["path_m"].tolist() == [2.0] * 4 + [10.0] * 4  # 2 m/s x 0.5 s, every step
    assert report.columns["coverage_share"].tolist() == [0.02] * 4 + [0.10] * 4
    assert report.columns["steps_to_half_coverage"].tolist() == [1.0] * 4 + [5.0] * 4
    assert len(env.starts) == 8  # each planned start placed once


def test_recorded_paths_hold_each_planned_episode_where_it_acted_in_plan_order() -> None:
    """3 drones fly 4 + 4 episodes of 2 and 70 steps (the position buffer grows past 64): every
    planned episode's path is its own steps 0 .. length-1 in its own scene, whichever drone flew it."""
    env = FakePlannedEnv(3, lengths=(2, 70))
    report = evaluate_policy(RandomPolicy(), env, 4, seed=3, record_paths=True)
    assert report.paths is not None and len(report.paths) == report.plan.size == 8
    for scene, length, path in zip(
        report.plan.scenes.tolist(), report.columns["length"], report.paths, strict=True
    ):
        assert path.shape == (int(length), 3)
        assert (path[:, 0] == scene).all() and path[:, 1].tolist() == list(range(int(length)))
    assert len({float(path[0, 2]) for path in report.paths}) > 1  # several drones flew the plan
    assert evaluate_policy(RandomPolicy(), FakePlannedEnv(3), 4, seed=3).paths is None  # only when asked


def test_two_policies_see_identical_start_poses() -> None:
    first_env, second_env = FakePlannedEnv(3), FakePlannedEnv(2)
    plan = make_plan(first_env, 5, seed=11)
    assert plan.same_starts(make_plan(second_env, 5, seed=11))
    assert not plan.same_starts(make_plan(second_env, 5, seed=12))
    evaluate_policy(RandomPolicy(), first_env, plan=plan, seed=1)
    evaluate_policy(RandomPolicy(), second_env, plan=plan, deterministic=True, seed=2)
    assert sorted(first_env.starts) == sorted(second_env.starts)
    assert len(set(first_env.starts)) == 10


class HoldingPlannedEnv(FakePlannedEnv):
    """Records what the evaluation asks it to keep loaded, and when (before or after a start)."""

    def __init__(self, num_actors: int) -> None:
        super().__init__(num_actors)
        self.calls: list[tuple[int, int]] = []  # (scenes held, starts placed so far)

    def hold_scenes(self, count: int) -> None:
        self.calls.append((count, len(self.starts)))


def test_a_plan_asks_the_environment_to_hold_its_scenes_before_flying() -> None:
    env = HoldingPlannedEnv(2)
    plan = make_plan(env, 3, seed=0, scenes=[1])
    evaluate_policy(RandomPolicy(), env, plan=plan, seed=0)
    assert env.calls == [(1, 0), (1, 0)]  # one scene planned, held before its starts are drawn and flown
    evaluate_policy(RandomPolicy(), env, 2, seed=0)  # a plan of both scenes
    assert env.calls[2:] == [(2, 3), (2, 3)]


def test_paired_comparison_of_a_policy_with_itself_is_exactly_zero() -> None:
    env = PointGoalEnv(2, azimuth=16, elevation=8, max_steps=6)
    plan = make_plan(env, 6, seed=0)
    first = evaluate_policy(RandomPolicy(), env, plan=plan, seed=5)
    again = evaluate_policy(RandomPolicy(), env, plan=plan, seed=5)
    paired = compare_reports(first, again)
    assert paired["coverage_cells"]["difference"] == {"value": 0.0, "ci95_low": 0.0, "ci95_high": 0.0}
    assert paired["return"]["ratio"]["value"] == pytest.approx(1.0)
    other = make_plan(env, 6, seed=1)
    with pytest.raises(ValueError, match="same episode plan"):
        compare_reports(first, evaluate_policy(RandomPolicy(), env, plan=other, seed=5))


def test_evaluate_specs_gives_one_block_per_policy_and_mode_and_pairs_them() -> None:
    env = PointGoalEnv(2, azimuth=16, elevation=8, max_steps=6)
    result = evaluate_specs(["random", "random"], env, "cpu", episodes_per_scene=3, mode="both", seed=0)
    assert result["plan"] == {"scenes": 1, "episodes_per_scene": 3, "episodes": 3, "seed": 0, "drones": 2}
    assert [(b["policy"], b["mode"]) for b in result["results"]] == [("random", "own"), ("random", "own")]
    assert list(result["paired"]) == ["own vs own"]
    block = result["results"][0]
    assert block["coverage_cells"]["ci95_low"] <= block["coverage_cells"]["value"]
    assert block["coverage_cells"]["value"] <= block["coverage_cells"]["ci95_high"]


class TurningPolicy:
    """Yaw +0.5 always (circles) or alternating +-0.5 (weaving)."""

    def __init__(self, alternate: bool) -> None:
        self.alternate, self.calls = alternate, 0

    def initial_state(self, batch_size: int, device: object = None) -> torch.Tensor:
        return torch.zeros(batch_size, 0)

    def act(self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor,
            deterministic: bool = False) -> Any:  # fmt: skip
        self.calls += 1
        yaw = -0.5 if self.alternate and self.calls % 2 else 0.5
        action = torch.tensor([[0.0, 0.0, 0.0, yaw]]).expand(obs.shape[0], 4)
        return SimpleNamespace(action=action, state=state)


def test_yaw_diagnostics_tell_circling_from_weaving() -> None:
    env = FakePlannedEnv(1, lengths=(4, 4))
    circling = evaluate_policy(TurningPolicy(alternate=False), env, 2, seed=0)
    weaving = evaluate_policy(TurningPolicy(alternate=True), env, 2, seed=0)
    assert circling.columns["mean_abs_yaw"].tolist() == [0.5] * 4
    assert circling.columns["yaw_bias"].tolist() == [0.5] * 4
    assert weaving.columns["mean_abs_yaw"].tolist() == [0.5] * 4
    assert weaving.columns["yaw_bias"].tolist() == [0.0] * 4

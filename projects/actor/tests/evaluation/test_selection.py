"""Checkpoint selection: the rule, the scenes it may look at, and a real flight that applies it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.envs.point import PointGoalEnv
from navi_actor.evaluation import selection as selection_module
from navi_actor.evaluation.plan import EpisodePlan
from navi_actor.evaluation.selection import (
    Candidate,
    choose,
    near_equals,
    run_checkpoints,
    select_checkpoint,
    trained_scene_indices,
)
from navi_actor.models import NaviPolicy, PolicyConfig

SMALL = PolicyConfig(
    visit_input=False, temporal_core="gru", azimuth=16, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1
)


def candidate(step: int, coverage: float, collisions: float, careful: bool) -> Candidate:
    return Candidate(f"step_{step}.pt", step, coverage, collisions, coverage / 40, collisions / 0.16, careful)


def test_the_most_covering_careful_checkpoint_wins() -> None:
    reckless = candidate(100, 120.0, 0.15, careful=False)  # covers most, but collides like random
    chosen, rule = choose([candidate(50, 90.0, 0.01, True), reckless, candidate(150, 95.0, 0.02, True)])
    assert chosen.step_id == 150 and rule == "most coverage among the careful"
    tie, _ = choose([candidate(50, 90.0, 0.01, True), candidate(150, 90.0, 0.03, True)])
    assert tie.step_id == 150  # equal coverage: the later (longer trained) checkpoint


def test_without_a_careful_checkpoint_the_one_colliding_least_wins() -> None:
    chosen, rule = choose([candidate(50, 90.0, 0.09, False), candidate(100, 60.0, 0.05, False)])
    assert chosen.step_id == 100 and rule == "none careful: fewest collisions"
    with pytest.raises(ValueError, match="no checkpoints"):
        choose([])


def test_only_the_scenes_the_run_trained_on_are_planned() -> None:
    corpus = [Path("c/maze_000.gmdag"), Path("c/maze_003.gmdag"), SimpleNamespace(name="hall_000.gmdag")]
    env = SimpleNamespace(scenes=SimpleNamespace(corpus=corpus), num_scenes=3)
    assert trained_scene_indices(env, ["maze_000.gmdag", "hall_000.gmdag"]) == [0, 2]  # maze_003 held out
    assert trained_scene_indices(env, None) == [0, 1, 2]  # a run that does not list its scenes
    with pytest.raises(ValueError, match="none of the 3 scenes given is one the run trained on"):
        trained_scene_indices(env, ["apartment_000.gmdag"])
    assert trained_scene_indices(SimpleNamespace(num_scenes=2), ["maze_000.gmdag"]) == [0, 1]  # no names


def constant_policy_checkpoint(path: Path, step_id: int, action: list[float]) -> Path:
    """A checkpoint whose mean action is ``action`` whatever it sees (a zeroed mean layer's bias)."""
    torch.manual_seed(0)
    policy = NaviPolicy(SMALL)
    with torch.no_grad():
        policy.actor.mean.weight.zero_()
        policy.actor.mean.bias.copy_(torch.tensor(action))
    return save_checkpoint(Checkpoint(model=policy.state_dict(), policy_config=SMALL, step_id=step_id), path)


def test_a_careful_checkpoint_beats_one_that_covers_more_by_flying_into_walls(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "checkpoints"
    hover = constant_policy_checkpoint(folder / "step_000000000100.pt", 100, [0.0, 0.0, 0.0, 0.0])
    dash = constant_policy_checkpoint(folder / "step_000000000200.pt", 200, [1.0, 0.0, 0.0, 0.0])
    assert run_checkpoints(tmp_path / "run") == [hover, dash]
    env = PointGoalEnv(2, azimuth=16, elevation=8, max_steps=40)
    selection = select_checkpoint([hover, dash], env, episodes_per_scene=4, seed=3)
    still, straight = selection.candidates
    # flying straight at full speed covers more than hovering, and ends every episode against a wall
    assert straight.coverage > still.coverage and straight.collision_rate > selection.random_collision_rate
    assert still.collision_rate == 0.0 and still.careful and not straight.careful
    assert selection.chosen == still and selection.rule == "most coverage among the careful"
    # with no limit on collisions, coverage alone decides
    lenient = select_checkpoint([hover, dash], env, episodes_per_scene=4, seed=3, max_collision_ratio=1e9)
    assert lenient.chosen.path == str(dash)
    # the same plan for both selections: identical figures for the same weights
    assert lenient.candidates[0] == still and lenient.random_coverage == selection.random_coverage
    assert selection.to_json()["chosen"]["step_id"] == 100


def test_a_folder_without_checkpoints_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds no step_"):
        run_checkpoints(tmp_path)


def test_near_equals_are_the_careful_ones_not_clearly_below_the_winner() -> None:
    strata = np.repeat(np.arange(3), 4)  # 3 scenes x 4 episodes
    rng = np.random.default_rng(0)
    best = 40.0 + rng.normal(0.0, 4.0, 12)
    draw = best + rng.normal(0.0, 4.0, 12) - 0.5  # a little below on average, well inside the noise
    worse = best - 10.0  # below on every episode
    reckless = best + 5.0  # covers more, but fails the collision limit
    coverages = [draw, best, worse, reckless]
    assert near_equals(coverages, [True, True, True, False], 1, strata) == [0, 1]
    assert near_equals([best], [False], 0, strata) == [0]  # the winner is one whatever the flags say


def scripted_judge(figures: dict[int, dict[str, float]]) -> Any:
    """A stand-in for ``judge_checkpoint``: checkpoint ``name`` covers ``figures[plan seed][name]`` cells
    on every episode of that plan, never colliding."""

    def judge(path: Path, env: Any, plan: EpisodePlan, random: Any, **_: Any) -> tuple[Candidate, Any]:
        cells = figures[plan.seed][Path(path).name]
        columns = {"coverage_cells": np.full(plan.size, cells)}
        step = int(Path(path).stem.split("_")[-1])
        report = SimpleNamespace(columns=columns)
        return Candidate(str(path), step, cells, 0.0, cells / 10.0, 0.0, True), report

    return judge


def test_a_second_plan_alone_chooses_among_the_near_equals(monkeypatch: pytest.MonkeyPatch) -> None:
    env = PointGoalEnv(2, azimuth=16, elevation=8, max_steps=20)
    paths = [Path("step_100.pt"), Path("step_200.pt"), Path("step_300.pt")]
    figures = {
        3: {"step_100.pt": 30.0, "step_200.pt": 30.0, "step_300.pt": 20.0},  # 100 and 200 tie, 300 behind
        4: {"step_100.pt": 35.0, "step_200.pt": 25.0},  # the second plan (seed + 1) separates them
    }
    monkeypatch.setattr(selection_module, "judge_checkpoint", scripted_judge(figures))
    one_plan = select_checkpoint(paths, env, episodes_per_scene=2, seed=3, confirm_episodes_per_scene=0)
    assert one_plan.chosen.step_id == 200 and one_plan.confirmation is None  # a tie: the later step
    chosen = select_checkpoint(paths, env, episodes_per_scene=2, seed=3, confirm_episodes_per_scene=3)
    confirmation = chosen.confirmation
    assert confirmation is not None and confirmation.seed == 4 and confirmation.episodes_per_scene == 3
    assert [c.step_id for c in confirmation.candidates] == [100, 200]  # 300 is clearly behind: not flown
    assert chosen.chosen == one_plan.candidates[0]  # the first plan's figures, the second plan's choice
    assert chosen.rule == "most coverage among the careful, confirmed on a second plan among 2 near-equals"
    assert chosen.to_json()["confirmation"]["candidates"][0]["coverage"] == 35.0
    # a winner without near-equals is not flown again
    figures[3]["step_100.pt"] = 10.0
    alone = select_checkpoint(paths, env, episodes_per_scene=2, seed=3, confirm_episodes_per_scene=3)
    assert alone.chosen.step_id == 200 and alone.confirmation is None

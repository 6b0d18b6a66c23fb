"""The learning verdict's rule: which paired ratios meet the issue's targets, and coverage per scene."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from navi_actor.evaluation.learning_targets import coverage_by_scene, targets


def paired_ratios(mean: float, collisions: float, sampled: float, vs_frontier: float) -> dict[str, Any]:
    """A paired block as compare_reports writes it, with only the ratios the verdict reads."""

    def entry(coverage: float, collisions_per_step: float = 1.0) -> dict[str, Any]:
        def ratio(value: float) -> dict[str, Any]:
            return {"ratio": {"value": value, "low": value * 0.9, "high": value * 1.1}}

        return {"coverage_cells": ratio(coverage), "collisions_per_step": ratio(collisions_per_step)}

    return {
        "learned_mean_action_vs_random": entry(mean, collisions),
        "learned_sampled_vs_random": entry(sampled),
        "learned_mean_action_vs_frontier": entry(vs_frontier),
        "frontier_vs_random": entry(3.2),
        "heuristic_vs_random": entry(1.1),
    }


def test_targets_are_met_at_their_bounds_and_missed_just_beyond() -> None:
    met = targets(paired_ratios(mean=3.0, collisions=0.3, sampled=3.0, vs_frontier=0.7))["targets_met"]
    assert all(met.values())
    missed = targets(paired_ratios(mean=2.99, collisions=0.31, sampled=2.99, vs_frontier=0.69))["targets_met"]
    assert not any(missed.values())


def test_collisions_when_random_never_collided_do_not_meet_the_target() -> None:
    verdict = targets(paired_ratios(mean=3.5, collisions=math.nan, sampled=3.5, vs_frontier=1.0))
    assert verdict["targets_met"]["mean_action_collisions_0.3x_random"] is False
    assert verdict["targets_met"]["mean_action_coverage_3x_random"] is True


def test_the_ratios_keep_their_intervals_and_a_clone_adds_its_two() -> None:
    paired = paired_ratios(mean=2.5, collisions=0.1, sampled=3.1, vs_frontier=0.8)
    assert "warm_start_mean_action_coverage_vs_random" not in targets(paired)["ratios"]
    paired["warm_start_mean_action_vs_random"] = paired["heuristic_vs_random"]
    paired["learned_mean_action_vs_warm_start_mean_action"] = paired["learned_sampled_vs_random"]
    ratios = targets(paired)["ratios"]
    assert ratios["mean_action_coverage_vs_random"] == {"value": 2.5, "low": 2.25, "high": 2.75}
    assert ratios["warm_start_mean_action_coverage_vs_random"]["value"] == 1.1
    assert ratios["mean_action_coverage_vs_warm_start"]["value"] == 3.1


def test_coverage_by_scene_averages_each_scenes_own_episodes() -> None:
    plan = SimpleNamespace(scenes=torch.tensor([0, 0, 1, 1, 1]))
    cells = {"coverage_cells": np.array([10.0, 20.0, 1.0, 2.0, 6.0])}
    twice = {"coverage_cells": cells["coverage_cells"] * 2}
    reports: Any = {
        "learned": SimpleNamespace(plan=plan, columns=cells),
        "random": SimpleNamespace(plan=plan, columns=twice),
    }
    table = coverage_by_scene(reports, ["maze_003", "hall_003"])
    assert table["maze_003"] == {"learned": 15.0, "random": 30.0}
    assert table["hall_003"] == {"learned": 3.0, "random": 6.0}

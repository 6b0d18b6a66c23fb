"""The learning issue's verdict on held-out scenes: every policy on one plan, paired ratios, targets.

``scripts/bench_learning.py`` trains (or loads) a policy and hands it here: the learned policy with
its Gaussian mean (how it is deployed) and sampled (how it trained), the random policy, the reactive
heuristic and the frontier planner (the reference ceiling) fly the same episode plan, and the
issue's four targets are read off paired ratios. Kept apart from the script so that the rule for
what "met" means is one tested function, not a line in a 500-line script.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from navi_actor.evaluation.baselines import FrontierPolicy, RandomPolicy, ReactiveHeuristic
from navi_actor.evaluation.evaluator import EvaluationReport, compare_reports, evaluate_policy
from navi_actor.evaluation.plan import make_plan

#: (numerator, denominator) of every paired ratio the verdict reports
PAIRS = (
    ("learned_mean_action", "random"), ("learned_sampled", "random"),
    ("learned_mean_action", "frontier"), ("learned_sampled", "learned_mean_action"),
    ("heuristic", "random"), ("frontier", "random"),
)  # fmt: skip

#: with a warm start's clone: the clone against random, and what PPO added to it
CLONE_PAIRS = (("warm_start_mean_action", "random"), ("learned_mean_action", "warm_start_mean_action"))


def evaluate_all(
    policy: Any, env: Any, scene_names: list[str], episodes: int, seed: int, *, clone: Any = None,
    paths: Path | None = None, note: Callable[[str], None] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], dict[str, dict[str, float]]]:  # fmt: skip
    """Every policy flies the same episode plan on ``env``'s scenes; (summaries, paired ratios, mean
    coverage per scene and policy).

    ``clone``, the behaviour-cloned policy of a warm start before PPO, also flies it with its mean
    action (``warm_start_mean_action``). The plan draws ``episodes`` start poses per scene once
    (``seed``); each planned episode runs to its own end and counts once. Ratios are paired: the same
    episodes in numerator and denominator, resampled together for the 95% interval. ``paths``: a
    folder for one top-down picture per scene (``note`` hears each file's name).
    """
    settings = env.settings
    candidates = {
        "learned_mean_action": (policy, True),
        "learned_sampled": (policy, False),
        "random": (RandomPolicy(), True),
        "heuristic": (ReactiveHeuristic(horizon_m=settings.sensor.horizon_m), True),
        "frontier": (FrontierPolicy(settings, env.num_actors), True),
    }
    pairs = list(PAIRS)
    if clone is not None:
        candidates["warm_start_mean_action"] = (clone, True)
        pairs += CLONE_PAIRS
    plan = make_plan(env, episodes, seed)
    reports = {
        name: evaluate_policy(
            candidate, env, plan=plan, deterministic=deterministic, seed=seed, record_paths=paths is not None
        )
        for name, (candidate, deterministic) in candidates.items()
    }
    if paths is not None:
        from navi_actor.evaluation.paths_png import write_path_images

        for file in write_path_images(paths, env, list(reports.values())):
            if note is not None:
                note(f"paths of {', '.join(reports)} (left to right): {file}")
    summaries = {name: report.summary() for name, report in reports.items()}
    paired = {
        f"{name}_vs_{reference}": compare_reports(reports[reference], reports[name])
        for name, reference in pairs
    }
    return summaries, paired, coverage_by_scene(reports, scene_names)


def coverage_by_scene(reports: dict[str, EvaluationReport], names: list[str]) -> dict[str, dict[str, float]]:
    """Mean coverage (visit cells per episode) of every policy on each scene, so a pooled ratio can be
    traced to the scenes (a family, or the mesh scenes) that make it; ``names[i]`` is scene ``i``."""
    table: dict[str, dict[str, float]] = {}
    for index, name in enumerate(names):
        table[name] = {}
        for policy, report in reports.items():
            mine = report.plan.scenes.numpy() == index
            table[name][policy] = round(float(report.columns["coverage_cells"][mine].mean()), 2)
    return table


def targets(paired: dict[str, Any]) -> dict[str, Any]:
    """The learning issue's targets, on paired ratios (point estimates; intervals reported beside)."""

    def ratio(name: str, metric: str) -> dict[str, float]:
        return dict(paired[name][metric]["ratio"])

    ratios = {
        "mean_action_coverage_vs_random": ratio("learned_mean_action_vs_random", "coverage_cells"),
        "mean_action_collisions_vs_random": ratio("learned_mean_action_vs_random", "collisions_per_step"),
        "sampled_coverage_vs_random": ratio("learned_sampled_vs_random", "coverage_cells"),
        "mean_action_coverage_vs_frontier": ratio("learned_mean_action_vs_frontier", "coverage_cells"),
        "frontier_coverage_vs_random": ratio("frontier_vs_random", "coverage_cells"),
        "heuristic_coverage_vs_random": ratio("heuristic_vs_random", "coverage_cells"),
    }
    if "warm_start_mean_action_vs_random" in paired:  # the clone before PPO, and what PPO added
        ratios["warm_start_mean_action_coverage_vs_random"] = ratio(
            "warm_start_mean_action_vs_random", "coverage_cells"
        )
        ratios["mean_action_coverage_vs_warm_start"] = ratio(
            "learned_mean_action_vs_warm_start_mean_action", "coverage_cells"
        )
    value = {name: entry["value"] for name, entry in ratios.items()}
    return {
        "ratios": ratios,
        "targets_met": {
            "mean_action_coverage_3x_random": value["mean_action_coverage_vs_random"] >= 3.0,
            # a collision-free policy meets it; NaN (random never collided) does not
            "mean_action_collisions_0.3x_random": value["mean_action_collisions_vs_random"] <= 0.3,
            "sampled_coverage_3x_random": value["sampled_coverage_vs_random"] >= 3.0,
            "mean_action_coverage_0.7x_frontier": value["mean_action_coverage_vs_frontier"] >= 0.7,
        },
    }

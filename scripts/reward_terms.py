"""Which reward terms does each policy earn on one scene? The environment's return split by term.

Every policy flies the same episode plan as ``navi-actor evaluate`` (``--episodes-per-scene`` starts
drawn with ``--seed``, learned policies with their mean action); the ten terms of
``info["reward/<term>"]`` (weighted, so they add up to the step reward) are summed over the flight
and divided by the planned episodes. Why: when a learned policy explores less than the frontier
planner, this tells whether the reward pays the planner's flight more (a policy that has not found
it) or not (a reward that does not ask for it). The environment settings come from ``NAVI_ENV_*``,
as in training.

One JSON line per policy: coverage (cells), the evaluator's mean return, the terms per episode and
their sum (``terms_total``; it counts every drone-step flown, so it differs from the evaluator's
return when some drones finish their last planned episode before others and fly on unplanned).

    uv run python scripts/reward_terms.py --gmdag-file artifacts/gmdag/corpus/apartment_003.gmdag \
        --policy CHECKPOINT --policy frontier [--episodes-per-scene 8] [--seed 1002]
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import click
import torch


def flown_terms(policy: Any, env: Any, plan: Any, seed: int) -> dict[str, Any]:
    """Fly ``plan`` with ``policy`` (mean action) and sum every reward term over the flight."""
    from navi_actor.evaluation.evaluator import evaluate_policy

    sums: dict[str, float] = defaultdict(float)
    step = env.step

    def counted_step(action: torch.Tensor) -> Any:
        out = step(action)
        for key, value in out.info.items():
            if key.startswith("reward/"):
                sums[key.removeprefix("reward/")] += float(value.float().sum())
        return out

    env.step = counted_step
    try:
        report = evaluate_policy(policy, env, plan=plan, deterministic=True, seed=seed)
    finally:
        env.step = step
    terms = {name: round(total / plan.size, 2) for name, total in sums.items()}
    return {
        "coverage_cells": round(report.coverage, 2),
        "return": round(report.mean_return, 2),
        "terms": terms,
        "terms_total": round(sum(sums.values()) / plan.size, 2),
    }


@click.command()
@click.option("--gmdag-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="The scene (a compiled .gmdag file).")  # fmt: skip
@click.option("--policy", "policies", multiple=True, required=True,
              help="A checkpoint file, random, heuristic or frontier; repeat for several.")  # fmt: skip
@click.option("--episodes-per-scene", type=click.IntRange(min=1), default=8, show_default=True,
              help="Planned starts, drawn once with --seed; every policy flies the same ones.")  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True,
              help="Plan seed (bench_learning.py judges seed S on plan seed 1000 + S).")  # fmt: skip
@click.option("--num-actors", type=click.IntRange(min=1), default=4, show_default=True,
              help="Drones flown together (evaluate's default).")  # fmt: skip
@click.option("--torch-threads", type=click.IntRange(min=1), default=None,
              help="torch intra-op threads (default: torch's choice); 1 on a busy machine.")  # fmt: skip
def main(
    *, gmdag_file: Path, policies: tuple[str, ...], episodes_per_scene: int, seed: int, num_actors: int,
    torch_threads: int | None,
) -> None:  # fmt: skip
    """Print the reward terms each policy earns per planned episode on one scene."""
    from navi_actor.config import EnvironmentChoice
    from navi_actor.evaluation.command import resolve_policy
    from navi_actor.evaluation.plan import make_plan
    from navi_actor.runners.env_factory import build_environment
    from navi_common.cli_options import build_settings
    from navi_environment.config import EnvironmentSettings

    if torch_threads is not None:
        torch.set_num_threads(torch_threads)
    env_settings = build_settings(EnvironmentSettings)  # NAVI_ENV_*, as in training; a bad value is one line
    try:
        env = build_environment(EnvironmentChoice(gmdag_file=gmdag_file), num_actors, "cpu", env_settings).env
    except (ValueError, FileNotFoundError) as error:  # a broken file, a scene with no place to start
        raise click.ClickException(f"unusable scene: {error}") from error
    plan = make_plan(env, episodes_per_scene, seed)
    for spec in policies:
        policy, _ = resolve_policy(spec, env, "cpu")
        row = {"scene": gmdag_file.stem, "policy": spec, "episodes": plan.size, "seed": seed}
        click.echo(json.dumps({**row, **flown_terms(policy, env, plan, seed)}))


if __name__ == "__main__":
    main()

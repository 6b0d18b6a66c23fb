"""How far is a competent explorer from random? Coverage of the frontier planner vs the baselines.

For every scene, ``--drones`` drones fly one episode of ``--steps`` steps with each policy (random,
the reactive heuristic, the frontier planner); every policy starts from the same spawns (same reset
seed). Reported per scene and policy: mean coverage (environment visit cells when the episode ended
or at the last step), collisions per step, and the frontier planner's acting time per drone-step.
Prints one JSON line at the end (and a table on stderr).

    uv run python scripts/bench_frontier.py --corpus artifacts/gmdag/corpus [--per-family 2] [--steps 500]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import click
import torch


def fly(policy: Any, scene: Path, drones: int, steps: int, seed: int) -> dict[str, float]:
    """One episode per drone; (mean coverage, collisions per step, acting ms per drone-step)."""
    from navi_actor.evaluation.evaluator import ActingInputs
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    settings = EnvironmentSettings(episode={"max_steps": steps + 1})
    env = SdfDagBackend(settings, drones, scene_paths=[scene])
    torch.manual_seed(seed)
    obs = env.reset(seed)
    state = policy.initial_state(drones)
    start = torch.ones(drones, dtype=torch.bool)
    coverage = torch.zeros(drones)
    ended = torch.zeros(drones, dtype=torch.bool)
    collisions, acting = 0.0, 0.0
    inputs = ActingInputs(policy, env, env.device)  # the pose and the memories the policy reads
    for _ in range(steps):
        tick = time.perf_counter()
        result = policy.act(obs, state, start, **inputs(start, obs))
        acting += time.perf_counter() - tick
        state = result.state
        out = env.step(result.action)
        live = ~ended
        coverage = torch.where(live, out.info["coverage"], coverage)
        collisions += float(out.info["collision"][live].sum())
        done = out.terminated | out.truncated
        ended |= done
        start = done.clone()
        obs = out.obs
    return {
        "coverage": float(coverage.mean()),
        "collisions_per_step": collisions / (drones * steps),
        "act_ms_per_drone_step": 1000.0 * acting / (drones * steps),
    }


@click.command()
@click.option("--corpus", type=click.Path(path_type=Path, exists=True, file_okay=False), required=True)
@click.option("--per-family", default=2, show_default=True, help="Scenes per family (first in name order).")
@click.option("--drones", default=3, show_default=True, help="Drones (episodes) per scene and policy.")
@click.option("--steps", default=500, show_default=True, help="Steps per episode.")
@click.option("--seed", default=0, show_default=True)
def main(corpus: Path, per_family: int, drones: int, steps: int, seed: int) -> None:
    """Coverage of random, heuristic and frontier policies on a few scenes of each family."""
    from navi_actor.evaluation.baselines import FrontierPolicy, RandomPolicy, ReactiveHeuristic
    from navi_common import configure_logging
    from navi_environment.config import EnvironmentSettings

    configure_logging("warning")  # logs to stderr: stdout carries only the JSON line
    torch.set_num_threads(1)
    settings = EnvironmentSettings()
    families: dict[str, list[Path]] = {}
    for path in sorted(corpus.glob("*.gmdag")):
        families.setdefault(path.stem.rsplit("_", 1)[0], []).append(path)
    scenes = [p for paths in families.values() for p in paths[:per_family]]
    results: dict[str, dict[str, dict[str, float]]] = {}
    for scene in scenes:
        policies = {
            "random": RandomPolicy(),
            "heuristic": ReactiveHeuristic(horizon_m=settings.sensor.horizon_m),
            "frontier": FrontierPolicy(settings, drones),
        }
        results[scene.stem] = {name: fly(p, scene, drones, steps, seed) for name, p in policies.items()}
        row = results[scene.stem]
        print(f"{scene.stem:16s} " + "  ".join(f"{n} {r['coverage']:6.1f}" for n, r in row.items()),
              file=sys.stderr, flush=True)  # fmt: skip

    def mean(policy: str, key: str) -> float:
        return statistics.mean(r[policy][key] for r in results.values())

    summary = {
        name: {"coverage": mean(name, "coverage"), "collisions_per_step": mean(name, "collisions_per_step")}
        for name in ("random", "heuristic", "frontier")
    }
    summary["frontier"]["act_ms_per_drone_step"] = mean("frontier", "act_ms_per_drone_step")
    print(json.dumps({"scenes": results, "summary": summary, "drones": drones, "steps": steps, "seed": seed}))


if __name__ == "__main__":
    main()

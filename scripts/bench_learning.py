"""Does the trainer learn on the real simulator? Fixed budget, then held-out evaluation vs baselines.

Prints ONE JSON line. The default corpus (built first if missing; or ``--corpus``) is split by scene:
``--split stratified`` (default) holds out the last ``--holdout`` share (at least one) of every
family's scenes, so every family is trained on and evaluated; ``--split tail`` holds out the last
``--holdout`` share of the corpus, which for a manifest listed family by family is one whole family
the trainer never sees (navi_actor.evaluation.scene_split). The default trainer trains on the rest
for ``--minutes`` of wall-clock time, then the learned policy (sampling its actions, as it acts in
training and as ``navi-actor evaluate`` runs it by default; the targets are judged on it), the same
policy acting with its Gaussian mean (``learned_mean_action``, as ``evaluate --deterministic``;
reported for information), a uniform random policy and a reactive heuristic (turn towards the most
open azimuth, fly forward when clear) are evaluated on the held-out scenes with the same seed: one
drone per held-out scene, ``--episodes`` episodes each, truncated at ``--episode-steps`` steps.
Reported: mean return, collision rate (per drone-step), coverage.

Targets after 30 minutes on 2 CPU cores: learned >= 2x better than random on coverage and on collision
rate (i.e. at most half of random's), and learned coverage above the heuristic's.

    uv run python scripts/bench_learning.py [--minutes 30] [--corpus DIR] [--split stratified|tail]
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import click
import torch

from navi_actor.config import ActorSettings
from navi_actor.evaluation import evaluate_policy
from navi_actor.evaluation.baselines import RandomPolicy, ReactiveHeuristic
from navi_actor.evaluation.scene_split import SplitMode, scene_families, split_scenes
from navi_actor.runners.env_factory import BuiltEnvironment, corpus_scenes
from navi_actor.runners.on_policy_runner import OnPolicyRunner


def corpus_split(corpus: Path | None, holdout: float, split: SplitMode) -> tuple[list[Path], list[Path]]:
    """(training scenes, held-out scenes) of the corpus (the default one is built if missing)."""
    from navi_environment.corpus.prepare import ensure_default_corpus

    folder = corpus if corpus is not None else ensure_default_corpus(progress=True)
    scenes = corpus_scenes(folder)
    try:
        return split_scenes(scenes, scene_families(folder, scenes), holdout, split)
    except ValueError as error:
        raise click.ClickException(str(error)) from error


def backend(scenes: list[Path], actors: int, episode_steps: int | None) -> Any:
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    overrides: dict[str, Any] = {"episode": {"max_steps": episode_steps}} if episode_steps else {}
    settings = EnvironmentSettings(**overrides)
    return SdfDagBackend(settings, actors, scene_paths=scenes)


@click.command()
@click.option("--minutes", type=float, default=30.0, show_default=True, help="Training wall-clock budget.")
@click.option("--corpus", type=click.Path(path_type=Path, file_okay=False, exists=True), default=None)
@click.option("--holdout", type=float, default=0.2, show_default=True, help="Share of scenes held out.")
@click.option(
    "--split",
    type=click.Choice(["stratified", "tail"]),
    default="stratified",
    show_default=True,
    help="stratified: the last share of every family; tail: the last share of the corpus.",
)
@click.option(
    "--episodes", type=int, default=2, show_default=True, help="Evaluation episodes per held-out scene."
)
@click.option("--episode-steps", type=int, default=500, show_default=True, help="Evaluation truncation.")
@click.option("--threads", type=int, default=None, help="torch threads (default: torch's choice).")
@click.option("--seed", type=int, default=0, show_default=True)
def main(
    *,
    minutes: float,
    corpus: Path | None,
    holdout: float,
    split: SplitMode,
    episodes: int,
    episode_steps: int,
    threads: int | None,
    seed: int,
) -> None:
    """Train for a fixed budget, evaluate on held-out scenes against baselines, print one JSON line."""
    if threads is not None:
        torch.set_num_threads(threads)
    train_scenes, eval_scenes = corpus_split(corpus, holdout, split)
    values: dict[str, Any] = {
        "train": {"max_minutes": minutes, "seed": seed},
        "telemetry": {"enabled": False},
        "checkpoint": {"auto_resume": False, "auto_promote": False},
    }
    settings = ActorSettings(**values)
    train_env = backend(train_scenes, settings.rollout.num_actors, settings.environment.episode_steps)
    built = BuiltEnvironment(train_env, {"scenes": [p.name for p in train_scenes]})
    runner = OnPolicyRunner(
        settings, built, artifacts_dir=Path(tempfile.mkdtemp(prefix="navi-bench-learning-"))
    )
    summary = runner.run_training()
    results = {}
    for name, policy, deterministic in (
        ("learned", runner.policy, False),
        ("learned_mean_action", runner.policy, True),
        ("random", RandomPolicy(), True),
        ("heuristic", ReactiveHeuristic(), True),
    ):
        # one drone per held-out scene (spread_start_scenes; up to scene.max_cached_scenes of them)
        env = backend(eval_scenes, len(eval_scenes), episode_steps)
        report = evaluate_policy(  # type: ignore[arg-type]
            policy, env, episodes * len(eval_scenes), deterministic=deterministic, seed=seed + 1000
        )
        results[name] = {
            "mean_return": round(report.mean_return, 4),
            "collision_rate": round(report.collision_rate, 5),
            "coverage": round(report.coverage, 4),
            "path_length_m": round(report.path_length, 2),
        }
    learned, random, heuristic = results["learned"], results["random"], results["heuristic"]
    mean_action = results["learned_mean_action"]
    print(
        json.dumps(
            {
                "benchmark": "learning",
                "train_minutes": minutes,
                "train_steps": summary.steps_this_run,
                "train_steps_per_second": round(summary.steps_per_second, 2),
                "checkpoint": str(summary.final_checkpoint),
                "train_scenes": len(train_scenes),
                "split": split,
                "heldout_scenes": [p.stem for p in eval_scenes],
                "episodes_per_scene": episodes,
                "episode_steps": episode_steps,
                "results": results,
                "coverage_vs_random": round(learned["coverage"] / max(random["coverage"], 1e-9), 3),
                "mean_action_coverage_vs_random": round(
                    mean_action["coverage"] / max(random["coverage"], 1e-9), 3
                ),
                "targets_met": {
                    "coverage_2x_random": learned["coverage"] >= 2.0 * random["coverage"],
                    # at most half of random's rate (a collision-free policy meets it); says nothing
                    # when random does not collide either
                    "collision_half_of_random": random["collision_rate"] > 0
                    and learned["collision_rate"] <= 0.5 * random["collision_rate"],
                    "coverage_above_heuristic": learned["coverage"] > heuristic["coverage"],
                },
            }
        )
    )


if __name__ == "__main__":
    main()

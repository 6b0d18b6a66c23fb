"""Does the trainer learn on the real simulator? Fixed budget, then held-out evaluation vs baselines.

Prints ONE JSON line. The default corpus (built first if missing; or ``--corpus``) is split by scene:
``--split stratified`` (default) holds out the last ``--holdout`` share (at least one) of every
family's scenes, so every family is trained on and evaluated; ``--split tail`` holds out the last
``--holdout`` share of the corpus, which for a manifest listed family by family is one whole family
the trainer never sees (navi_actor.evaluation.scene_split). The default trainer trains on the rest
for ``--minutes`` of wall-clock time, then the learned policy (sampling its actions, as it acts in
training and as ``navi-actor evaluate`` runs it by default; the targets are judged on it), the same
policy acting with its Gaussian mean (``learned_mean_action``, as ``evaluate --deterministic``;
reported for information), a uniform random policy and a reactive heuristic (a memoryless obstacle
avoider: straight on while clear, steer towards open space, turn on the spot when blocked) are
evaluated on the held-out scenes with the same seed: one drone per held-out scene, ``--episodes``
episodes each, truncated at ``--episode-steps`` steps.
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

    return SdfDagBackend(backend_settings(episode_steps), actors, scene_paths=scenes)


def backend_settings(episode_steps: int | None) -> Any:
    from navi_environment.config import EnvironmentSettings

    overrides: dict[str, Any] = {"episode": {"max_steps": episode_steps}} if episode_steps else {}
    return EnvironmentSettings(**overrides)


def trained_policy(train_scenes: list[Path], minutes: float, seed: int) -> tuple[Any, dict[str, Any]]:
    """Train the default trainer on ``train_scenes`` for ``minutes``; (policy, what the JSON reports)."""
    values: dict[str, Any] = {
        "train": {"max_minutes": minutes, "seed": seed},
        "telemetry": {"enabled": False},
        "checkpoint": {"auto_resume": False, "auto_promote": False},
    }
    settings = ActorSettings(**values)
    train_env = backend(train_scenes, settings.rollout.num_actors, None)  # episode.max_steps
    names = [p.name for p in train_scenes]
    built = BuiltEnvironment(train_env, {"backend": "sdfdag", "scenes": len(names), "names": names})
    runner = OnPolicyRunner(
        settings, built, artifacts_dir=Path(tempfile.mkdtemp(prefix="navi-bench-learning-"))
    )
    summary = runner.run_training()
    return runner.policy, {
        "train_minutes": minutes,
        "train_steps": summary.steps_this_run,
        "train_steps_per_second": round(summary.steps_per_second, 2),
        "checkpoint": str(summary.final_checkpoint),
    }


def checkpoint_policy(path: Path, eval_scenes: list[Path]) -> tuple[Any, dict[str, Any]]:
    """Load a finished run's policy to judge it again (refusing one that trained on a held-out scene)."""
    from navi_actor.checkpoints import CheckpointError, load_checkpoint
    from navi_actor.models import NaviPolicy

    try:
        loaded = load_checkpoint(path)
    except CheckpointError as error:
        raise click.ClickException(str(error)) from error
    # the trainer's summary lists scene names under "names" (older bench runs: under "scenes")
    listed = [loaded.corpus_summary.get(key) for key in ("names", "scenes")]
    trained_on = {name for names in listed if isinstance(names, list) for name in names}
    leaked = sorted(p.name for p in eval_scenes if p.name in trained_on)
    if leaked:
        raise click.ClickException(f"{path} was trained on held-out scenes {leaked}: not a held-out test")
    sensor = backend_settings(None).sensor
    expected = (loaded.policy_config.azimuth, loaded.policy_config.elevation)
    given = (sensor.azimuth_bins, sensor.elevation_bins)
    if expected != given:
        raise click.ClickException(f"{path} expects a {expected} sensor; the environment gives {given}")
    policy = NaviPolicy(loaded.policy_config)
    policy.load_state_dict(loaded.model)
    return policy, {
        "train_minutes": None,
        "train_steps": loaded.step_id,
        "train_steps_per_second": None,
        "checkpoint": str(path),
    }


def evaluate_all(
    policy: Any, eval_scenes: list[Path], episodes: int, episode_steps: int, seed: int
) -> dict[str, dict[str, float]]:
    """The learned policy (sampled and mean action) and both baselines on the same held-out drones."""
    results = {}
    horizon_m = backend_settings(episode_steps).sensor.horizon_m  # the heuristic reads depth in metres
    for name, candidate, deterministic in (
        ("learned", policy, False),
        ("learned_mean_action", policy, True),
        ("random", RandomPolicy(), True),
        ("heuristic", ReactiveHeuristic(horizon_m=horizon_m), True),
    ):
        # one drone per held-out scene (spread_start_scenes; up to scene.max_cached_scenes of them)
        env = backend(eval_scenes, len(eval_scenes), episode_steps)
        report = evaluate_policy(  # type: ignore[arg-type]
            candidate, env, episodes * len(eval_scenes), deterministic=deterministic, seed=seed + 1000
        )
        results[name] = {
            "mean_return": round(report.mean_return, 4),
            "collision_rate": round(report.collision_rate, 5),
            "coverage": round(report.coverage, 4),
            "path_length_m": round(report.path_length, 2),
        }
    return results


def targets(results: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The issue's targets, judged on the sampled learned policy."""
    learned, random, heuristic = results["learned"], results["random"], results["heuristic"]
    mean_action = results["learned_mean_action"]
    return {
        "coverage_vs_random": round(learned["coverage"] / max(random["coverage"], 1e-9), 3),
        "mean_action_coverage_vs_random": round(mean_action["coverage"] / max(random["coverage"], 1e-9), 3),
        "targets_met": {
            "coverage_2x_random": learned["coverage"] >= 2.0 * random["coverage"],
            # at most half of random's rate (a collision-free policy meets it); says nothing when
            # random does not collide either
            "collision_half_of_random": random["collision_rate"] > 0
            and learned["collision_rate"] <= 0.5 * random["collision_rate"],
            "coverage_above_heuristic": learned["coverage"] > heuristic["coverage"],
        },
    }


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
    "--episodes",
    type=int,
    default=8,
    show_default=True,
    help="Evaluation episodes per held-out scene; fewer make the verdict noisy (docs/training.md).",
)
@click.option("--episode-steps", type=int, default=500, show_default=True, help="Evaluation truncation.")
@click.option("--threads", type=int, default=None, help="torch threads (default: torch's choice).")
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Training seed; evaluation uses seed + 1000."
)
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="Skip training: judge this finished run's checkpoint (use the run's --seed, --corpus and --split).",
)
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
    checkpoint: Path | None,
) -> None:
    """Train for a fixed budget, evaluate on held-out scenes against baselines, print one JSON line."""
    if threads is not None:
        torch.set_num_threads(threads)
    train_scenes, eval_scenes = corpus_split(corpus, holdout, split)
    if checkpoint is None:
        policy, run = trained_policy(train_scenes, minutes, seed)
    else:
        policy, run = checkpoint_policy(checkpoint, eval_scenes)
    results = evaluate_all(policy, eval_scenes, episodes, episode_steps, seed)
    line = {
        "benchmark": "learning",
        **run,
        "train_scenes": len(train_scenes),
        "split": split,
        "heldout_scenes": [p.stem for p in eval_scenes],
        "episodes_per_scene": episodes,
        "episode_steps": episode_steps,
        "results": results,
        **targets(results),
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()

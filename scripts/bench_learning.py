"""Does the trainer learn on the real simulator? Fixed budget, then held-out evaluation vs baselines.

Prints ONE JSON line. The default corpus (built first if missing; or ``--corpus``) is split by scene:
``--split stratified`` (default) holds out the last ``--holdout`` share (at least one) of every
family's scenes, so every family is trained on and evaluated; ``--split tail`` holds out the last
``--holdout`` share of the corpus, which for a manifest listed family by family is one whole family
the trainer never sees (navi_actor.evaluation.scene_split). The default trainer trains on the rest
for ``--minutes`` of wall-clock time, or for ``--steps`` environment steps (on a shared machine: the
steps 30 quiet minutes train, so other work slows the run without shortening it). Then five
policies fly the same episode plan on the held-out scenes (``--episodes`` start poses per scene
drawn once with seed + 1000, each episode run to its own end and counted once, truncated at
``--episode-steps``): the learned policy acting with its Gaussian
mean (how it is deployed) and with sampled actions (how it trained), a uniform random policy, a
reactive heuristic (a memoryless obstacle avoider) and the frontier planner (a classical explorer
that maps what it senses; the reference ceiling). Every aggregate comes with a 95% interval and the
ratios between policies are paired (navi_actor.evaluation).

Targets after 30 minutes on 2 CPU cores (the learning issue): mean-action coverage >= 3x random's
and collisions per step <= 0.3x random's; sampled coverage >= 3x random's; mean-action coverage
>= 0.7x the frontier planner's.

As in ``navi-actor train``, the trainer first flies the frontier planner ``--warm-start-steps``
environment steps (16,384 by default; 0 = PPO from a fresh policy) on the training scenes (never a
held-out one; every training scene, in rounds), behaviour-clones it into the policy PPO trains, and
starts PPO from those weights (``warm_start`` in the JSON: its steps, BC epochs and
losses, seconds); --steps counts PPO steps only, --minutes the warm start too (PPO trains for what it
leaves, as in ``navi-actor train --max-minutes``). It is navi_actor.bc.warm_start, the same warm start
as ``navi-actor train --warm-start-steps``. The clone before PPO also flies the plan with its mean
action (``warm_start_mean_action``). ``update_epochs_mean`` (of ``update_epochs_scheduled``) and
``kl_early_stop_share`` say how much of PPO's epoch schedule the updates ran: the KL stop ends an
update early, and a trainer that stops more often runs more steps per second by doing less per step.

Each training run's folder (its checkpoint, and the warm start's flights: about 450 MB for a
16k-step warm start) is kept under the system's temporary folder, so that ``--checkpoint`` can
judge it again; the JSON names it (``run_dir``) and stderr says its size. Delete it when done.
The JSON also names the code that produced the line (``code``: the git revision, ``+dirty`` with
uncommitted changes): learning numbers move with any change to what the policy reads, so a table
of them is only comparable row to row at one revision.

``--heldout-corpus DIR`` holds out every scene of a second corpus folder as well, e.g. scenes
compiled from mesh files (``navi-environment corpus prepare --source DIR --families none``): the
learning issue's targets hold on the held-out scenes of every family plus mesh scenes.

``--paths DIR`` also draws where every policy flew (one top-down PNG per held-out scene, a panel
per policy: navi_actor.evaluation.paths_png).

    uv run python scripts/bench_learning.py [--minutes 30 | --steps N] [--corpus DIR] [--paths DIR]
        [--split stratified|tail | --heldout-scenes A,B] [--heldout-corpus DIR]
        [--warm-start-steps N [--warm-start-epochs E]] [--select-checkpoint]
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import torch

from navi_actor.bc.config import WarmStartConfig
from navi_actor.bc.warm_start import run_warm_start, settings_after_warm_start
from navi_actor.config import ActorSettings
from navi_actor.evaluation.learning_targets import evaluate_all, targets
from navi_actor.evaluation.scene_split import SplitMode, split_named, split_scenes
from navi_actor.evaluation.selection import DEFAULT_CONFIRM_EPISODES_PER_SCENE
from navi_actor.runners.env_factory import BuiltEnvironment, corpus_scenes
from navi_actor.runners.on_policy_runner import OnPolicyRunner
from navi_common.cli_options import build_settings
from navi_common.logging import configure_logging
from navi_common.provenance import git_revision


def corpus_split(
    corpus: Path | None,
    holdout: float,
    split: SplitMode,
    named: list[str] | None = None,
    heldout_corpus: Path | None = None,
) -> tuple[list[Path], list[Path]]:
    """(training scenes, held-out scenes) of the corpus (the default one is built if missing), with
    every scene of ``heldout_corpus`` held out as well (never trained on)."""
    from navi_environment.corpus.manifest import scene_families
    from navi_environment.corpus.prepare import ensure_default_corpus

    folder = corpus if corpus is not None else ensure_default_corpus(progress=True)
    scenes = corpus_scenes(folder)
    try:
        if named:
            train, held = split_named(scenes, named)
        else:
            train, held = split_scenes(scenes, scene_families(scenes, folder), holdout, split)
        if heldout_corpus is not None:
            held = held + corpus_scenes(heldout_corpus)
    except (ValueError, FileNotFoundError) as error:
        raise click.ClickException(str(error)) from error
    stems = [path.stem for path in train + held]
    repeated = sorted({stem for stem in stems if stems.count(stem) > 1})
    if repeated:
        raise click.ClickException(
            f"--heldout-corpus repeats scene names of the corpus ({', '.join(repeated)}): every scene "
            "needs its own name in the results and pictures"
        )
    return train, held


def backend(scenes: list[Path], actors: int, episode_steps: int | None) -> Any:
    from navi_environment.backend import SdfDagBackend

    return SdfDagBackend(backend_settings(episode_steps), actors, scene_paths=scenes)


def backend_settings(episode_steps: int | None) -> Any:
    from navi_environment.config import EnvironmentSettings

    overrides: dict[str, Any] = {"episode": {"max_steps": episode_steps}} if episode_steps else {}
    return build_settings(EnvironmentSettings, **overrides)  # a bad NAVI_ENV_* value: one line


def say(line: str) -> None:
    """Progress words on stderr (stdout holds only the JSON line)."""
    click.echo(line, err=True)


def folder_megabytes(folder: Path) -> float:
    """Size of the files under ``folder`` in MB (the kept run folder, said so that it is noticed)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def trained_policy(
    train_scenes: list[Path],
    minutes: float | None,
    steps: int | None,
    seed: int,
    warm: dict[str, int] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Train the default trainer on ``train_scenes`` for ``minutes`` or ``steps``; (policy, JSON facts).

    ``warm`` holds the ``warm_start`` settings given on the command line; the others come from the
    environment, ``.env`` and the defaults, as in ``navi-actor train``. With a warm start
    (``warm_start.steps`` > 0) PPO starts from the behaviour-cloned checkpoint (weights
    only: a fresh optimiser, counters at 0, so ``steps`` counts PPO steps alone) and its first
    ``warm_start.value_updates`` updates train only the critic (``ppo.value_warmup_updates``). A KL penalty
    asked for without a reference (``NAVI_ACTOR_PPO__REFERENCE_KL_COEF`` > 0) anchors to the clone: its
    path exists only once the warm start has run.
    """
    values: dict[str, Any] = {
        "train": {"max_minutes": minutes, "total_steps": steps, "seed": seed},
        "telemetry": {"enabled": False},
        "checkpoint": {"auto_resume": False, "auto_promote": False},
        **({"warm_start": warm} if warm else {}),
    }
    settings = build_settings(ActorSettings, **values)  # a bad NAVI_ACTOR_* value: one line
    artifacts = Path(tempfile.mkdtemp(prefix="navi-bench-learning-"))
    train_env = backend(train_scenes, settings.rollout.num_actors, None)  # episode.max_steps as trained
    start, facts = None, None
    if settings.warm_start.steps:  # the planner flies the training backend: never a held-out scene
        result = run_warm_start(settings, train_env, artifacts / "warm_start", seed=seed, note=say)
        start, facts = result.checkpoint, result.facts
        settings = settings_after_warm_start(settings, start, facts["seconds"], say)
        reference = settings.ppo.reference_checkpoint
        facts["reference_checkpoint"] = str(reference) if reference is not None else None
        facts["reference_kl_coef"] = settings.ppo.reference_kl_coef
    names = [p.name for p in train_scenes]
    built = BuiltEnvironment(train_env, {"backend": "sdfdag", "scenes": len(names), "names": names})
    runner = OnPolicyRunner(settings, built, artifacts_dir=artifacts, checkpoint=start)
    summary = runner.run_training()
    say(
        f"run kept in {artifacts} ({folder_megabytes(artifacts):.0f} MB: the checkpoint that --checkpoint "
        "re-judges, and the warm start's flights); delete the folder when done"
    )
    return runner.policy, {
        "train_minutes": minutes,  # the whole budget, the warm start's minutes included
        "ppo_minutes": settings.train.max_minutes,
        "train_step_budget": steps,
        "train_steps": summary.steps_this_run,
        "train_steps_per_second": round(summary.steps_per_second, 2),
        **update_schedule(summary.run_dir, settings.ppo.epochs),
        "family_weights": dict(train_env.settings.episode.family_weights),  # the scene rotation
        "checkpoint": str(summary.final_checkpoint),
        "run_dir": str(artifacts),  # kept: a temporary folder the caller deletes
        **({"warm_start": facts} if facts is not None else {}),
    }


def update_schedule(run_dir: Path, epochs: int) -> dict[str, float]:
    """How much of PPO's epoch schedule the run's updates ran: the KL stop (``ppo.target_kl``) ends
    an update early, and a run that stops more often trains faster by doing less work per step."""
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    ran = [record["charts/epochs"] for record in records]
    stopped = [record["charts/kl_early_stop"] for record in records]
    return {
        "update_epochs_mean": round(sum(ran) / max(len(ran), 1), 3),
        "update_epochs_scheduled": epochs,
        "kl_early_stop_share": round(sum(stopped) / max(len(stopped), 1), 3),
    }


def checkpoint_policy(path: Path, eval_scenes: list[Path]) -> tuple[Any, dict[str, Any]]:
    """Load a finished run's policy to judge it again (refusing one that trained on a held-out scene)."""
    from navi_actor.checkpoints import CheckpointError, load_policy

    try:
        policy, loaded = load_policy(path)
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
    return policy, {
        "train_minutes": None,
        "train_steps": loaded.step_id,
        "train_steps_per_second": None,
        "checkpoint": str(path),
    }


def cloned_policy(path: Path) -> Any:
    """The warm start's behaviour-cloned policy, as PPO received it."""
    from navi_actor.checkpoints import load_policy

    return load_policy(path)[0]


#: starts per training scene of the checkpoint selection's first plan
SELECTION_EPISODES_PER_SCENE = 4


def selected_policy(
    folder: Path, train_scenes: list[Path], episode_steps: int, seed: int, confirm_episodes_per_scene: int
) -> tuple[Any, dict[str, Any]]:
    """The policy of the step checkpoint in ``folder`` whose mean action explores best on the training
    scenes (:mod:`navi_actor.evaluation.selection`; its near-equals flown again on a second plan of
    ``confirm_episodes_per_scene`` starts when > 0), and the selection's figures: no held-out scene
    takes part."""
    from navi_actor.checkpoints import CheckpointError, load_policy
    from navi_actor.evaluation.selection import run_checkpoints, select_checkpoint

    started = time.monotonic()
    # one drone per planned episode: the first plan flies in one wave (46 s a checkpoint on the
    # default corpus against 58 s with one drone per scene, four waves one after the other)
    env = backend(train_scenes, SELECTION_EPISODES_PER_SCENE * len(train_scenes), episode_steps)
    try:
        selection = select_checkpoint(
            run_checkpoints(folder),
            env,
            episodes_per_scene=SELECTION_EPISODES_PER_SCENE,
            seed=seed + 2000,
            note=say,
            confirm_episodes_per_scene=confirm_episodes_per_scene,
        )
    except (ValueError, CheckpointError) as error:
        raise click.ClickException(str(error)) from error
    say(f"selected {Path(selection.chosen.path).name} ({selection.rule})")
    facts = {**selection.to_json(), "drones": env.num_actors, "seconds": round(time.monotonic() - started, 1)}
    return load_policy(Path(selection.chosen.path))[0], facts


#: the warm start's defaults, named in --help (the options are passed only when given, as in navi-actor train)
WARM_DEFAULTS = WarmStartConfig()


@click.command()
@click.option("--minutes", type=float, default=30.0, show_default=True, help="Training wall-clock budget.")
@click.option(
    "--steps",
    type=int,
    default=None,
    help="Train for this many environment steps instead of --minutes: on a shared machine, the steps "
    "30 quiet minutes give (scripts/bench_train.py), so other work slows the run but does not shorten it.",
)
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
    "--heldout-scenes",
    default=None,
    help="Comma-separated scene names (file stems) to hold out instead of --split/--holdout, e.g. "
    "apartment_003,maze_003: a corpus grown with more scenes per family keeps its earlier scenes' "
    "names, so a run on it is judged on the same scenes as runs on the smaller corpus.",
)
@click.option(
    "--heldout-corpus",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="A second corpus folder whose every scene is held out too (never trained on), e.g. scenes "
    "compiled from mesh files with `navi-environment corpus prepare --source DIR --families none`.",
)
@click.option(
    "--episodes",
    type=int,
    default=8,
    show_default=True,
    help="Evaluation episodes per held-out scene; fewer make the verdict noisy "
    "(docs/experiments/2026-11-learning-runs-10-17.md).",
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
@click.option(
    "--paths",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Also draw where every policy flew: one top-down PNG per held-out scene in this folder, a panel "
    "per policy (learned mean, learned sampled, random, heuristic, frontier[, clone]) left to right.",
)
@click.option(
    "--warm-start-steps", type=click.IntRange(min=0), default=None,
    help="Before PPO: fly the frontier planner this many environment steps on the training scenes and "
    "behaviour-clone it into the policy PPO then trains (0: a fresh policy). Not counted in --steps. "
    f"Default: warm_start.steps ({WARM_DEFAULTS.steps}), as in navi-actor train.",
)  # fmt: skip
@click.option(
    "--warm-start-epochs", type=click.IntRange(min=1), default=None,
    help="Behaviour-cloning epochs over the warm start's flights. "
    f"Default: warm_start.epochs ({WARM_DEFAULTS.epochs}).",
)  # fmt: skip
@click.option(
    "--warm-start-value-updates", type=click.IntRange(min=0), default=None,
    help="After a warm start, the first PPO updates that train only the critic (ppo.value_warmup_updates). "
    f"Default: warm_start.value_updates ({WARM_DEFAULTS.value_updates}).",
)  # fmt: skip
@click.option(
    "--warm-start-dagger-rounds", type=click.IntRange(min=0), default=None,
    help="After the warm start's clone: DAgger rounds (the clone flies, the planner labels every step, "
    f"cloning continues on all flights). Default: warm_start.dagger_rounds ({WARM_DEFAULTS.dagger_rounds}).",
)  # fmt: skip
@click.option(
    "--warm-start-dagger-steps", type=click.IntRange(min=1), default=None,
    help="Environment steps the clone flies per DAgger round. "
    f"Default: warm_start.dagger_steps ({WARM_DEFAULTS.dagger_steps}).",
)  # fmt: skip
@click.option(
    "--warm-start-dagger-epochs", type=click.IntRange(min=1), default=None,
    help="Behaviour-cloning epochs per DAgger round. "
    f"Default: warm_start.dagger_epochs ({WARM_DEFAULTS.dagger_epochs}).",
)  # fmt: skip
@click.option(
    "--select-checkpoint", is_flag=True,
    help="Judge the run's checkpoint whose mean action explores best on the training scenes "
    "(`navi-actor select-checkpoint`'s rule, 4 starts per training scene, seed + 2000) instead of "
    "its last one; with --checkpoint, choose among the step checkpoints beside it.",
)  # fmt: skip
@click.option(
    "--confirm-episodes-per-scene", type=click.IntRange(min=0), default=None,
    help="With --select-checkpoint: the near-equals fly a second plan of this many starts per training "
    "scene (seed + 2001) that alone decides (`navi-actor select-checkpoint`'s option); 0: one plan. "
    f"Default: {DEFAULT_CONFIRM_EPISODES_PER_SCENE}.",
)  # fmt: skip
def main(
    *,
    minutes: float,
    steps: int | None,
    corpus: Path | None,
    holdout: float,
    split: SplitMode,
    heldout_scenes: str | None,
    heldout_corpus: Path | None,
    episodes: int,
    episode_steps: int,
    threads: int | None,
    seed: int,
    checkpoint: Path | None,
    warm_start_steps: int | None,
    warm_start_epochs: int | None,
    warm_start_value_updates: int | None,
    warm_start_dagger_rounds: int | None,
    warm_start_dagger_steps: int | None,
    warm_start_dagger_epochs: int | None,
    paths: Path | None,
    select_checkpoint: bool,
    confirm_episodes_per_scene: int | None,
) -> None:
    """Train for a fixed budget, evaluate on held-out scenes against baselines, print one JSON line."""
    # structlog unconfigured prints every event, debug included, on stdout: the JSON line would be
    # one line among hundreds. Warnings go to stderr; the run folder's log keeps info and up.
    configure_logging("info", console_level="warning")
    if threads is not None:
        torch.set_num_threads(threads)
    named = [name.strip() for name in heldout_scenes.split(",") if name.strip()] if heldout_scenes else None
    train_scenes, eval_scenes = corpus_split(corpus, holdout, split, named, heldout_corpus)
    given = {
        "steps": warm_start_steps, "epochs": warm_start_epochs, "value_updates": warm_start_value_updates,
        "dagger_rounds": warm_start_dagger_rounds, "dagger_steps": warm_start_dagger_steps,
        "dagger_epochs": warm_start_dagger_epochs,
    }  # fmt: skip
    warm = {key: value for key, value in given.items() if value is not None}  # passed only when given
    if confirm_episodes_per_scene is not None and not select_checkpoint:
        raise click.ClickException("--confirm-episodes-per-scene needs --select-checkpoint")
    if checkpoint is not None and warm.get("steps"):
        raise click.ClickException("--warm-start-steps trains; --checkpoint skips training: pick one")
    if paths is not None:  # before training: a folder that cannot be written fails now, not after it
        from navi_actor.evaluation.paths_png import prepare_folder

        try:
            prepare_folder(paths)
        except ValueError as error:
            raise click.ClickException(str(error)) from error
    if checkpoint is None:
        policy, run = trained_policy(train_scenes, None if steps else minutes, steps, seed, warm)
    else:
        policy, run = checkpoint_policy(checkpoint, eval_scenes)
    if select_checkpoint:
        folder = Path(run["checkpoint"]).parent
        asked = confirm_episodes_per_scene  # None: not given (it needs --select-checkpoint only when given)
        confirm = DEFAULT_CONFIRM_EPISODES_PER_SCENE if asked is None else asked
        policy, run["selection"] = selected_policy(folder, train_scenes, episode_steps, seed, confirm)
    clone = cloned_policy(Path(run["warm_start"]["checkpoint"])) if "warm_start" in run else None
    results, paired, by_scene = evaluate_all(
        policy, backend(eval_scenes, len(eval_scenes), episode_steps), [path.stem for path in eval_scenes],
        episodes, seed + 1000, clone=clone, paths=paths, note=say,
    )  # fmt: skip
    line = {
        "benchmark": "learning",
        "code": git_revision(),
        **run,
        "train_scenes": len(train_scenes),
        "split": "named" if named else split,
        "heldout_scenes": [p.stem for p in eval_scenes],
        "episodes_per_scene": episodes,
        "episode_steps": episode_steps,
        "results": results,
        "coverage_by_scene": by_scene,
        **targets(paired),
        "paired": paired,
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()

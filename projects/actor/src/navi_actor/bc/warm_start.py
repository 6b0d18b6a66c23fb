"""The frontier-planner warm start: record the planner, behaviour-clone it, start PPO from the clone.

One implementation for ``navi-actor train --warm-start-steps N`` and ``scripts/bench_learning.py``.
Why: PPO started from a clone of the planner's flights covered about twice what random covers with
its mean action, where PPO from scratch circled (docs/experiments/2026-11-tanh-squash-and-bc-warm-start.md).

Everything goes under one folder (``<run>/warm_start/`` for ``train``): ``demonstrations/*.npz`` (the
planner's flights, one file per round and drone), ``bc/<bc run>/`` (BC's manifest, metrics, logs),
``clone.pt`` (the behaviour-cloned checkpoint PPO starts from) and, last, ``warm_start.json`` (what
was done, how long it took, how well the clone imitates). Every file is written atomically; nothing
ever reads a warm-start folder back to continue it, so one cut short by Ctrl+C is simply left behind
(a later run records and clones afresh, or resumes from PPO checkpoints, which it only has once PPO
ran).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from navi_actor.checkpoints import Checkpoint
from navi_actor.config import ActorSettings
from navi_actor.runners.console import ProgressSink
from navi_actor.runners.env_factory import BuiltEnvironment
from navi_actor.runners.run_folder import RunFolder, new_run_id
from navi_common.atomic import atomic_write_json

FACTS_FILE = "warm_start.json"
"""Written last: the warm start finished (its checkpoint, losses and timings)."""


@dataclass(frozen=True)
class WarmStartResult:
    """The behaviour-cloned checkpoint PPO starts from, and what the warm start did (JSON-able)."""

    checkpoint: Path
    facts: dict[str, Any]


def settings_for_warm_start(settings: ActorSettings) -> tuple[ActorSettings, str | None]:
    """The settings ``train`` runs with, and a one-line notice when the default warm start cannot run.

    The warm start needs the sdfdag environment (the frontier planner flies the real simulator) and
    the local backend (it records in-process). Why two answers: the default (``warm_start.steps``
    never given) should not stop a point-environment or Ray run, so there it is turned off with a
    notice; steps asked for (``--warm-start-steps``, ``NAVI_ACTOR_WARM_START__STEPS``) are refused.

    Raises:
        ValueError: warm-start steps asked for where they cannot run (one line).
    """
    steps = settings.warm_start.steps
    if not steps:
        return settings, None
    if settings.environment.backend != "sdfdag":
        reason = (
            "the sdfdag environment (the frontier planner flies the real simulator), not "
            f"environment.backend={settings.environment.backend}"
        )
    elif settings.train.backend != "local":
        reason = (
            "train.backend=local; with Ray, clone by hand (explore --autopilot frontier --record, "
            "bc-pretrain) and train --checkpoint"
        )
    else:
        return settings, None
    if "steps" in settings.warm_start.model_fields_set:
        raise ValueError(f"warm_start.steps={steps} needs {reason}")
    off = settings.model_copy(update={"warm_start": settings.warm_start.model_copy(update={"steps": 0})})
    return off, f"warm start: off, it needs {reason}"


def run_warm_start(
    settings: ActorSettings,
    env: Any,
    folder: Path,
    *,
    seed: int,
    note: Callable[[str], None] | None = None,
    status: Callable[[str], None] | None = None,
) -> WarmStartResult:
    """Fly the frontier planner on every scene of ``env``, clone it, write ``folder/clone.pt``.

    Args:
        settings: the trainer's settings: ``warm_start`` (steps, epochs), ``bc`` (learning rate,
            streams, ...), ``policy`` (the architecture PPO trains) and ``train.device``.
        env: the TRAINING simulator (:class:`~navi_environment.backend.SdfDagBackend`), never one
            holding evaluation scenes; it is reset, and PPO's collector resets it again.
        folder: where the warm start's files go (created; must not hold an earlier warm start).
        seed: start poses of the flights, BC's initial weights and shuffles.
        note: progress words for a person (one line per stage).
        status: a passing status (the scenes each round flies).

    Returns:
        The :class:`WarmStartResult`.

    Raises:
        FileExistsError: ``folder`` already holds demonstrations.
        DemonstrationError: the flights are too short to clone (e.g. fewer frames than BC streams).
    """
    from navi_actor.bc.frontier_recording import flight_plan, record_frontier, rotation_of

    warm, say = settings.warm_start, note or (lambda line: None)
    demonstrations = folder / "demonstrations"
    if demonstrations.exists() and any(demonstrations.glob("*.npz")):
        raise FileExistsError(f"{demonstrations} holds demonstrations; a warm start never reuses them")
    drones, scenes, rotation = env.num_actors, env.num_scenes, len(rotation_of(env))
    rounds = len(flight_plan(rotation, drones, env.settings.scene.max_cached_scenes))
    flight = max(1, math.ceil(warm.steps / (rounds * drones)))
    started = time.monotonic()
    weighted = f" ({rotation} in the rotation)" if rotation != scenes else ""
    say(
        f"warm start: recording {flight * drones * rounds:,} steps on {scenes} scene{'s' * (scenes != 1)}"
        f"{weighted} "
        f"with the frontier planner ({rounds} round{'s' * (rounds != 1)} of {flight} steps x {drones} drones)"
    )

    def flying(turn: int, turns: int, labels: list[str]) -> None:
        if status is not None:
            status(f"warm start: round {turn + 1}/{turns}: {', '.join(Path(label).name for label in labels)}")

    recording = record_frontier(env, warm.steps, demonstrations, seed=seed, on_round=flying)
    recorded = time.monotonic()
    say(
        f"warm start: recorded in {recorded - started:.0f} s; cloning "
        f"{_epochs_phrase(settings, warm.epochs)} over {recording.steps:,} frames"
    )
    result = _clone(
        settings, demonstrations, folder, warm.epochs, folder / "clone.pt", seed=seed, status=status
    )
    cloned, history, first = time.monotonic(), result.history, result
    result, corrections = _dagger_rounds(
        settings, env, demonstrations, folder, result, seed=seed, note=say, status=status
    )
    cloned_rounds = time.monotonic() - cloned
    facts: dict[str, Any] = {
        "steps": recording.steps,
        "steps_asked": warm.steps,
        "rounds": recording.rounds,
        "steps_per_flight": recording.steps_per_flight,
        "drones": drones,
        "files": len(recording.files),
        "scenes": sorted(Path(label).name for label in recording.scenes),
        "demonstrations": str(demonstrations),
        "epochs": warm.epochs,
        "bc_frames": first.frames,
        "bc_holdout_frames": first.holdout_frames,
        "bc_optimizer_steps": history.optimizer_steps,
        "bc_train_nll": [_finite(history.train_nll[0]), _finite(history.train_nll[-1])],
        "bc_train_mse": [_finite(history.train_mse[0]), _finite(history.train_mse[-1])],
        "bc_train_visit_bce": (
            [_finite(history.train_visit_bce[0]), _finite(history.train_visit_bce[-1])]
            if history.train_visit_bce
            else None
        ),
        "bc_epochs_run": len(history.train_nll),
        "bc_kept_epoch": history.best_epoch,
        "bc_holdout_mse": _kept_mse(history),
        "bc_baseline_mse": _finite(history.baseline_mse),
        "record_seconds": round(recorded - started, 1),
        "bc_seconds": round(cloned - recorded, 1),
        "dagger": corrections,
        "seconds": round(time.monotonic() - started, 1),
        "value_warmup_updates": warm.value_updates,
        "checkpoint": str(result.checkpoint),
    }
    atomic_write_json(folder / FACTS_FILE, facts)
    imitation = (
        f"held-out action MSE {facts['bc_holdout_mse']:.3f} against {facts['bc_baseline_mse']:.3f} for the "
        f"best constant action; kept epoch {facts['bc_kept_epoch']} of {facts['bc_epochs_run']}"
        if facts["bc_holdout_mse"] is not None and facts["bc_baseline_mse"] is not None
        else f"train action MSE {facts['bc_train_mse'][0]} -> {facts['bc_train_mse'][1]}"
    )
    dagger_line = (
        f" and {len(corrections)} DAgger round{'s' * (len(corrections) != 1)} in {cloned_rounds:.0f} s "
        f"(last held-out action MSE {corrections[-1]['bc_holdout_mse']})"
        if corrections
        else ""
    )
    say(
        f"warm start: cloned in {facts['bc_seconds']:.0f} s ({imitation}){dagger_line}; PPO starts from "
        f"{result.checkpoint}, critic only for its first {warm.value_updates} updates"
    )
    return WarmStartResult(result.checkpoint, facts)


def _dagger_rounds(
    settings: ActorSettings, env: Any, demonstrations: Path, folder: Path, result: Any, *, seed: int,
    note: Callable[[str], None], status: Callable[[str], None] | None = None,
) -> tuple[Any, list[dict[str, Any]]]:  # fmt: skip
    """``warm_start.dagger_rounds`` rounds of DAgger: the newest clone flies ``dagger_steps`` with its
    mean action while the planner labels every step (files ``dagger<k>-*.npz`` beside the planner's
    flights), then cloning continues from it on all flights so far for ``dagger_epochs``.

    Returns the last cloning's result (the first one when there are no rounds) and one dict of facts
    per round.
    """
    from navi_actor.bc.frontier_recording import record_frontier
    from navi_actor.checkpoints import load_policy

    warm, rounds = settings.warm_start, []
    for turn in range(1, warm.dagger_rounds + 1):
        started = time.monotonic()
        pilot, _ = load_policy(result.checkpoint, settings.train.device)
        flown = record_frontier(
            env,
            warm.dagger_steps,
            demonstrations,
            seed=seed + 7919 * turn,
            pilot=pilot,
            prefix=f"dagger{turn}",
        )
        recorded = time.monotonic()
        note(
            f"warm start: DAgger round {turn}/{warm.dagger_rounds}: the clone flew {flown.steps:,} steps "
            f"labelled by the planner in {recorded - started:.0f} s; cloning {warm.dagger_epochs} more epochs"
        )
        out = folder / f"clone-dagger{turn}.pt"
        result = _clone(
            settings,
            demonstrations,
            folder,
            warm.dagger_epochs,
            out,
            seed=seed + turn,
            parent=result.checkpoint,
            status=status,
        )
        rounds.append({
            "steps": flown.steps, "record_seconds": round(recorded - started, 1),
            "bc_seconds": round(time.monotonic() - recorded, 1), "bc_frames": result.frames,
            "bc_epochs_run": len(result.history.train_nll), "bc_kept_epoch": result.history.best_epoch,
            "bc_holdout_mse": _kept_mse(result.history),
            "bc_baseline_mse": _finite(result.history.baseline_mse),
            "checkpoint": str(result.checkpoint),
        })  # fmt: skip
    return result, rounds


def _clone(
    settings: ActorSettings, demonstrations: Path, folder: Path, epochs: int, out: Path, *, seed: int,
    parent: Path | None = None, status: Callable[[str], None] | None = None,
) -> Any:  # fmt: skip
    """Behaviour-clone every flight in ``demonstrations`` for ``epochs`` into ``out`` (BC's run folder
    under ``folder/bc``), from ``parent``'s weights or a fresh policy; :class:`PretrainResult`.

    ``status`` shows each epoch with the minutes left: cloning is most of the warm start's minutes.
    """
    from navi_actor.bc.pretrain import run_pretrain

    def epoch_done(done: int, total: int, seconds: float) -> None:
        if status is not None:
            left = seconds / done * (total - done) / 60
            status(f"warm start: cloning, epoch {done}/{total}, {seconds:.0f} s, about {left:.1f} min left")

    return run_pretrain(
        settings.bc.model_copy(update={"epochs": epochs}), settings.policy_config(),
        demonstrations=demonstrations, runs_root=folder / "bc", parent=parent, out=out,
        device=settings.train.device, seed=seed, settings_json={"actor": settings.model_dump(mode="json")},
        on_epoch=epoch_done,
    )  # fmt: skip


def settings_after_warm_start(
    settings: ActorSettings, clone: Path, seconds: float, note: Callable[[str], None] | None = None
) -> ActorSettings:
    """PPO's settings once it starts from the clone: ``warm_start.value_updates`` critic-only updates
    (the clone's critic never saw a return), a KL penalty asked for without a reference
    (``ppo.reference_kl_coef`` > 0) anchored to the clone, and the warm start's ``seconds`` charged to
    the wall-clock budget (``train.max_minutes``).

    Why charge them: the budget is the whole training's, so a warm-started run and a fresh one get the
    same minutes (the learning targets are "30 minutes of training"); ``train.total_steps`` counts PPO
    steps only. A warm start that used the whole budget leaves PPO one second (``note`` says so).
    """
    update: dict[str, Any] = {"value_warmup_updates": settings.warm_start.value_updates}
    if settings.ppo.reference_kl_coef > 0 and settings.ppo.reference_checkpoint is None:
        update["reference_checkpoint"] = clone
    after = settings.model_copy(update={"ppo": settings.ppo.model_copy(update=update)})
    budget = settings.train.max_minutes
    if budget is None:
        return after
    left = budget - seconds / 60.0
    if note is not None:
        note(
            f"warm start: {seconds / 60:.1f} of the {budget:g}-minute budget; PPO trains for the "
            + (f"remaining {left:.1f} min" if left > 0 else "last second (the warm start used it all)")
        )
    train = settings.train.model_copy(update={"max_minutes": max(left, 1 / 60)})
    return after.model_copy(update={"train": train})


@dataclass(frozen=True)
class TrainingStart:
    """Where ``navi-actor train`` starts PPO: settings, start checkpoint, and a run folder made early.

    ``run`` and ``facts`` are set only when a warm start ran (its files live in ``run``).
    """

    settings: ActorSettings
    checkpoint: Path | None
    run: RunFolder | None = None
    facts: dict[str, Any] | None = None


def warm_started_training(
    settings: ActorSettings,
    built: BuiltEnvironment,
    artifacts_dir: Path,
    checkpoint: Path | None,
    progress: ProgressSink,
) -> TrainingStart:
    """Run the warm start for a fresh ``train`` (``warm_start.steps`` > 0), never for a resumed one.

    A run resumes (and skips the warm start) when ``--checkpoint`` names a start or auto-resume finds
    one (a killed run on this corpus, or a registry model): the same choice the trainer then makes
    (:func:`~navi_actor.runners.resume.choose_start`); critic-only updates the resumed run had not
    finished still run. Otherwise the run folder is created first, the warm start writes into
    ``<run>/warm_start/``, and PPO starts from its clone.
    """
    from navi_actor.registry import ModelRegistry
    from navi_actor.runners.resume import choose_start

    if not settings.warm_start.steps:
        return TrainingStart(settings, checkpoint)
    shape = tuple(built.env.observation_shape)
    registry = ModelRegistry(artifacts_dir / "models")
    start = choose_start(settings, shape, registry, explicit=checkpoint, corpus_summary=built.corpus_summary)
    if start.checkpoint is not None:
        progress.note(f"warm start: skipped, this run continues a trained policy ({start.description})")
        return TrainingStart(_unfinished_warmup(settings, start.checkpoint, progress), checkpoint)
    config = settings.policy_config(shape)
    run = RunFolder(artifacts_dir / "runs", new_run_id(f"{config.encoder_backend}-{config.temporal_core}"))
    result = run_warm_start(
        settings, built.env, run.path / "warm_start", seed=settings.train.seed, note=progress.note,
        status=progress.status,
    )  # fmt: skip
    return TrainingStart(
        settings_after_warm_start(settings, result.checkpoint, result.facts["seconds"], progress.note),
        result.checkpoint,
        run,
        result.facts,
    )


def _unfinished_warmup(settings: ActorSettings, start: Checkpoint, progress: ProgressSink) -> ActorSettings:
    """Settings that finish the critic-only updates the resumed run had not finished.

    Why: a warm-started run cut short (or ended by its budget) inside its first
    ``value_warmup_updates`` updates would otherwise let the policy gradient loose on an untrained
    critic when it resumes; the update counter travels with the checkpoint, the setting with its
    ``settings`` JSON.
    """
    try:
        stored = int(json.loads(start.settings_json)["ppo"]["value_warmup_updates"])
    except (ValueError, KeyError, TypeError):  # a BC checkpoint, or one from another settings layout
        return settings
    if start.update_index >= stored or settings.ppo.value_warmup_updates >= stored:
        return settings
    progress.note(f"critic-only updates continue: {start.update_index} of {stored} done before the resume")
    return settings.model_copy(
        update={"ppo": settings.ppo.model_copy(update={"value_warmup_updates": stored})}
    )


def _epochs_phrase(settings: ActorSettings, epochs: int) -> str:
    """"up to 20 epochs (...)" with early stopping, "20 epochs" without."""
    patience = settings.bc.patience
    if patience == 0:
        return f"{epochs} epochs"
    return f"up to {epochs} epochs (stopping after {patience} without a lower held-out action MSE)"


def _kept_mse(history: Any) -> float | None:
    """The held-out action MSE of the weights a clone keeps, for the facts (None: nothing held out)."""
    kept = history.kept_holdout_mse
    return None if kept is None else _finite(kept)


def _finite(value: float) -> float | None:
    """``value`` rounded, or None for NaN (strict JSON has no NaN)."""
    return None if math.isnan(value) else round(value, 6)

"""Choosing where a run starts from, and capturing/restoring everything a resume needs.

Order: an explicit ``--checkpoint`` wins; otherwise, unless ``--no-auto-resume``, the registry's
``latest.pt``; otherwise a fresh policy. The checkpoint's architecture is used unless the user picked
a different encoder, temporal core or ``policy.action_squash`` explicitly: an explicit checkpoint
then fails with a clear message, while an auto-resume candidate is skipped (the user asked for
another model). A checkpoint's own action squash travels with it when none is asked for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import structlog
import torch

from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.checkpoints import Checkpoint, CheckpointError, load_checkpoint
from navi_actor.config import ActorSettings
from navi_actor.models import PolicyConfig
from navi_actor.registry import ModelRegistry
from navi_actor.registry.model_registry import comparison_key
from navi_actor.runners.progress import TrainingCounters
from navi_actor.runners.run_folder import FINISHED_MARKER, RunFolder

log = structlog.get_logger()


@dataclass(frozen=True)
class StartPoint:
    """Where training starts: the policy architecture and, when resuming, the checkpoint."""

    policy_config: PolicyConfig
    checkpoint: Checkpoint | None
    path: Path | None
    description: str = "a fresh policy"  #: in plain words, for the first lines a user sees


def describe_scenes(corpus_summary: dict[str, Any]) -> str:
    """``3 scenes (apartment.gmdag, maze.gmdag, ...)`` or ``the point environment`` from a summary."""
    if corpus_summary.get("backend") == "point":
        return "the point environment"
    names = list(corpus_summary.get("names", []))
    count = int(corpus_summary.get("scenes", len(names)))
    shown = ", ".join(names[:3]) + (", ..." if count > 3 else "")
    return f"{count} scene{'s' if count != 1 else ''}" + (f" ({shown})" if shown else "")


def _run_of(path: Path | str) -> str:
    """The run folder name of ``artifacts/runs/<run>/checkpoints/step_N.pt``, else the file's name."""
    path = Path(path)
    return path.parents[1].name if path.parent.name == "checkpoints" else path.name


def _conflict(
    settings: ActorSettings, checkpoint: Checkpoint, observation_shape: tuple[int, ...]
) -> str | None:
    """Why ``checkpoint`` cannot continue under ``settings``, or None."""
    chosen = {"encoder_backend": settings.encoder_backend, "temporal_core": settings.temporal_core}
    for name, value in chosen.items():
        stored = getattr(checkpoint.policy_config, name)
        if value is not None and value != stored:
            return f"it was trained with {name}={stored!r} but {value!r} was requested"
    if "action_squash" in settings.policy.model_fields_set:  # set explicitly (option, environment)
        stored, wanted = checkpoint.policy_config.action_squash, settings.policy.action_squash
        if wanted != stored:
            return f"it was trained with policy.action_squash={stored!r} but {wanted!r} was requested"
    stored_shape = (checkpoint.policy_config.azimuth, checkpoint.policy_config.elevation)
    if stored_shape != tuple(observation_shape[1:]):
        return (
            f"its sensor is {stored_shape} (Az, El) but the environment gives {tuple(observation_shape[1:])}"
        )
    return None


def choose_start(
    settings: ActorSettings,
    observation_shape: tuple[int, ...],
    registry: ModelRegistry,
    explicit: Path | None = None,
    corpus_summary: dict[str, Any] | None = None,
) -> StartPoint:
    """Decide the start point of a training run.

    Args:
        settings: resolved settings (``checkpoint.auto_resume`` decides the registry fallback).
        observation_shape: ``(3, Az, El)`` of the environment.
        registry: the model registry.
        explicit: a ``--checkpoint`` path.
        corpus_summary: this run's corpus; a killed run on the same corpus is continued first.

    Returns:
        The :class:`StartPoint`.

    Raises:
        CheckpointError: the explicit checkpoint is unreadable or incompatible.
    """
    config = settings.policy_config(observation_shape)
    fresh = StartPoint(config, None, None, f"a fresh {config.encoder_backend}/{config.temporal_core} policy")
    if explicit is not None:
        checkpoint = load_checkpoint(explicit)
        reason = _conflict(settings, checkpoint, observation_shape)
        if reason is not None:
            raise CheckpointError(f"cannot continue from {explicit}: {reason}")
        words = (
            f"continuing from {explicit} (step {checkpoint.step_id:,}, trained on "
            f"{describe_scenes(checkpoint.corpus_summary)})"
        )
        if checkpoint.training_source == "bc":  # its corpus summary lists demonstrations, not scenes
            frames = checkpoint.corpus_summary.get("frames", "?")
            words = f"the behaviour-cloned policy {explicit} ({frames} demonstration frames)"
        return StartPoint(checkpoint.policy_config, checkpoint, explicit, words)
    if settings.checkpoint.auto_resume and corpus_summary is not None:
        killed = killed_run_start(
            settings, observation_shape, registry.folder.parent / "runs", corpus_summary
        )
        if killed is not None:
            return killed
    latest = _resume_candidate(registry, corpus_summary) if settings.checkpoint.auto_resume else None
    if latest is None:
        return fresh
    try:
        checkpoint = load_checkpoint(registry.path_of(latest))
    except CheckpointError as error:
        log.warning("actor.train.resume_skipped", path=str(registry.path_of(latest)), reason=str(error))
        return replace(fresh, description=f"{fresh.description} (model v{latest.version:03d} unreadable)")
    reason = _conflict(settings, checkpoint, observation_shape)
    if reason is not None:
        log.warning("actor.train.resume_skipped", path=str(registry.path_of(latest)), reason=reason)
        return replace(fresh, description=f"{fresh.description} (not model v{latest.version:03d}: {reason})")
    log.info("actor.train.resuming", path=str(registry.path_of(latest)), step_id=checkpoint.step_id)
    words = (
        f"resuming from model v{latest.version:03d} (run {_run_of(latest.source)}, step "
        f"{checkpoint.step_id:,}, trained on {describe_scenes(checkpoint.corpus_summary)}); "
        "--no-auto-resume starts a fresh policy"
    )
    return StartPoint(checkpoint.policy_config, checkpoint, registry.path_of(latest), words)


def _resume_candidate(registry: ModelRegistry, corpus_summary: dict[str, Any] | None) -> Any:
    """The latest model trained on this corpus summary, else the registry's latest model."""
    if corpus_summary is not None:
        comparable = registry.latest(comparable_to=comparison_key(corpus_summary))
        if comparable is not None:
            return comparable
    return registry.latest()


def _latest_run(runs_root: Path) -> tuple[Path, dict[str, Any]] | None:
    """The most recently created run folder holding checkpoints, with its manifest (by ``created_at``:
    run ids order by the second only, and two runs can start within one)."""
    found: list[tuple[str, Path, dict[str, Any]]] = []
    for run in runs_root.glob("*"):
        if not any(run.glob("checkpoints/step_*.pt")):
            continue
        try:
            manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        found.append((str(manifest.get("created_at", "")), run, manifest))
    if not found:
        return None
    _, run, manifest = max(found, key=lambda item: item[0])
    return run, manifest


def killed_run_start(
    settings: ActorSettings,
    observation_shape: tuple[int, ...],
    runs_root: Path,
    corpus_summary: dict[str, Any],
) -> StartPoint | None:
    """The newest valid checkpoint of the latest run, when that run was cut short on this same corpus.

    Why: after ``kill -9`` (or Ctrl+C) the registry's latest model can be far behind the run's last
    checkpoint. Only the most recent run with checkpoints is considered, only if it was killed (no
    ``finished.json``) or interrupted, and trained on the same corpus summary with a compatible
    architecture; torn or unreadable checkpoint files are skipped, newest first.
    """
    latest = _latest_run(runs_root)
    if latest is None or not RunFolder(runs_root, latest[0].name).unfinished():
        return None
    run, manifest = latest
    if manifest.get("corpus_summary") != corpus_summary:
        return None
    how = "interrupted" if (run / FINISHED_MARKER).exists() else "killed"
    skipped: list[str] = []
    for path in sorted(run.glob("checkpoints/step_*.pt"), reverse=True):
        try:
            checkpoint = load_checkpoint(path)
        except CheckpointError as error:
            log.warning("actor.train.resume_skipped", path=str(path), reason=str(error))
            skipped.append(path.name)
            continue
        if _conflict(settings, checkpoint, observation_shape) is not None:
            return None
        log.info("actor.train.resuming", path=str(path), step_id=checkpoint.step_id, killed_run=run.name)
        words = (
            f"continuing run {run.name}, which was {how}, from its newest valid checkpoint {path.name} "
            f"(step {checkpoint.step_id:,}, trained on {describe_scenes(checkpoint.corpus_summary)})"
            + (f"; skipped unreadable {', '.join(skipped)}" if skipped else "")
        )
        return StartPoint(checkpoint.policy_config, checkpoint, path, words)
    return None


def capture_rng(shuffle: torch.Generator) -> dict[str, Any]:
    """Torch RNG states (CPU, every CUDA device, the minibatch shuffle) as tensors."""
    state: dict[str, Any] = {"torch": torch.get_rng_state(), "shuffle": shuffle.get_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = list(torch.cuda.get_rng_state_all())
    return state


def restore(
    checkpoint: Checkpoint, learner: PPOLearner, shuffle: torch.Generator, auxiliary: dict[str, Any]
) -> TrainingCounters:
    """Load weights, optimiser, RNG and auxiliary learner state; return the counters to continue.

    Args:
        checkpoint: the start checkpoint.
        learner: the learner (its policy receives the weights).
        shuffle: the minibatch shuffle generator.
        auxiliary: objects with ``load_state_dict`` keyed like ``checkpoint.auxiliary`` (e.g. RND).

    Returns:
        :class:`TrainingCounters` positioned where the checkpoint stopped.
    """
    learner.policy.load_state_dict(checkpoint.model)
    if checkpoint.optimizer is not None:
        learner.load_state_dict({"optimizer": checkpoint.optimizer, "update_index": checkpoint.update_index})
    else:  # a BC checkpoint: fresh optimiser, but keep counting updates from its index
        learner.update_index = checkpoint.update_index
    for name, module in auxiliary.items():
        if name in checkpoint.auxiliary:
            module.load_state_dict(checkpoint.auxiliary[name])
    rng = checkpoint.rng
    if "torch" in rng:
        torch.set_rng_state(rng["torch"])
    if "shuffle" in rng and rng["shuffle"].numel() == shuffle.get_state().numel():
        shuffle.set_state(rng["shuffle"])
    if "cuda" in rng and torch.cuda.is_available() and len(rng["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return TrainingCounters(
        step_id=checkpoint.step_id,
        episode_count=checkpoint.episode_count,
        reward_ema=checkpoint.reward_ema,
        wall_time_hours=checkpoint.wall_time_hours,
    )

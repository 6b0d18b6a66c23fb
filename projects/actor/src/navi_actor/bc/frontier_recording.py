"""Fly the frontier planner on EVERY scene of a batched simulator; save the flights as demonstrations.

Why rounds over every scene: a drone of a multi-scene backend stays ``episode.episodes_per_scene``
episodes (16 x 500 steps) in its first scene, so the first 16,384-step warm start flew only 4
training scenes. Here the scenes are flown in rounds (:func:`flight_plan`): in each round every drone
is placed in its own scene (as many distinct scenes as there are drones, at most the scene cache's
size) at a qualified spawn (``sample_starts``, seeded), and all drones fly the same number of steps;
a drone whose episode ends (collision, time limit) starts again in its scene, so every frame of a
scene's flight was flown there. Every scene is flown in one round; the last round wraps around to
the first scenes when the scenes do not fill it.

Why here and not navi_auditor's batch recorder: navi-actor may not import the auditor
(docs/architecture.md), and ``navi-actor train --warm-start-steps`` needs the recording. The files
follow the demonstration schema 1 (docs/demonstrations.md), one file per round and drone, each
written atomically (deflated ``.npz`` through a temporary name), so ``navi-auditor demo-info`` reads
them and ``bc-pretrain`` trains on them. They cannot be re-flown with ``replay`` (their episodes start
at placed poses, not at ``reset(seed)``); the metadata says so (``placed_starts``).
"""

from __future__ import annotations

import json
import math
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import torch

from navi_common.atomic import atomic_write
from navi_common.demonstrations import DEMO_SCHEMA_VERSION, FRAME_FIELDS
from navi_common.provenance import git_revision


@dataclass(frozen=True)
class Recording:
    """What :func:`record_frontier` flew and wrote."""

    files: list[Path]
    steps: int  #: frames written, all files together
    scenes: list[str]  #: every scene flown (file path, or the in-memory scene's name)
    rounds: int  #: flights one after the other, every drone in its own scene of the round
    steps_per_flight: int  #: steps each drone flies in each round


def flight_plan(scenes: int, drones: int, max_cached: int) -> list[list[int]]:
    """``[round][drone]`` -> corpus scene: every scene in exactly one round, one after the other.

    Why rounds of different scenes rather than all drones in one scene: a scene's share is then flown
    by one drone (or ``drones / scenes`` of them) for longer, so the planner's flights go on beyond
    the first metres of an episode. At most ``max_cached`` distinct scenes fly at once (the runtime
    scene cache), as in training; the last round wraps around to the first scenes when the scenes
    do not fill it, so no drone idles.
    """
    slots = max(1, min(drones, scenes, max_cached))
    rounds = math.ceil(scenes / slots)
    return [[(turn * slots + drone % slots) % scenes for drone in range(drones)] for turn in range(rounds)]


def rotation_of(env: Any) -> list[int]:
    """The corpus scenes in the order training flies them (``episode.family_weights`` repeats a
    family's scenes), so the planner's flights give each family the share PPO will give it."""
    rotation = getattr(env, "rotation", None)
    return list(range(env.num_scenes)) if rotation is None else [int(scene) for scene in rotation]


def scene_label(scene: Any) -> str:
    """What a demonstration records as the scene: the file path, or the in-memory scene's name."""
    return str(scene) if isinstance(scene, Path) else str(scene.name)


def record_frontier(
    env: Any,
    steps: int,
    out_dir: Path,
    *,
    seed: int = 0,
    on_round: Callable[[int, int, list[str]], None] | None = None,
    pilot: Any = None,
    prefix: str = "frontier",
    planner_options: dict[str, Any] | None = None,
) -> Recording:
    """Fly the frontier planner with every drone of ``env`` over all of its scenes, round by round
    (over its scene rotation: a family weighted 2 is flown twice).

    With a ``pilot`` (DAgger's correction flights), the pilot flies with its mean action and the
    planner only watches: it maps the same observations from the same poses and its action at every
    step is the frame's label. Why: a clone of the planner's own flights covered 0.46-1.06x random
    before PPO while the planner covers 2.2-2.4x (docs/experiments/2026-11-warm-start-32k.md): once it
    drifts off the planner's states (a wall the planner would have turned from), nothing it learned
    says how to come back. The labels of its own flights do.

    Args:
        env: a :class:`navi_environment.backend.SdfDagBackend` (it is reset; a trainer that steps it
            afterwards resets it again).
        steps: environment steps in all, split evenly over the rounds and drones (rounded up).
        out_dir: folder for ``frontier-r<round>-d<drone>-<scene stem>.npz``.
        seed: seeds the start poses.
        on_round: called with (round index, rounds, the round's scene labels) before each round.
        pilot: a policy in eval mode (:class:`navi_actor.models.NaviPolicy`) that flies while the
            planner labels; None: the planner flies.
        prefix: file names ``<prefix>-r<round>-d<drone>-<scene stem>.npz`` (each DAgger round its
            own, so all rounds can share one folder).
        planner_options: the planner's tunables (``navi_environment.planning.FrontierTunables``),
            e.g. a labeller that follows the pilot's height; default: the planner as it flies.

    Returns:
        The :class:`Recording`.
    """
    from navi_actor.evaluation.baselines import FrontierPolicy

    drones = env.num_actors
    rotation = rotation_of(env)
    plan = [
        [rotation[turn] for turn in turns]
        for turns in flight_plan(len(rotation), drones, env.settings.scene.max_cached_scenes)
    ]
    share = max(1, math.ceil(steps / (len(plan) * drones)))
    labels = [scene_label(scene) for scene in env.scenes.corpus]
    stems = [
        Path(label).stem if isinstance(entry, Path) else label
        for label, entry in zip(labels, env.scenes.corpus, strict=True)
    ]
    sensor = env.settings.sensor
    meta: dict[str, Any] = {
        "schema_version": DEMO_SCHEMA_VERSION, "matrix_shape": [sensor.azimuth_bins, sensor.elevation_bins],
        "pilot": "frontier", "seed": seed, "batch_drones": drones, "placed_starts": True,
        "git_revision": git_revision(), "environment_settings": env.settings.model_dump_json(),
        **({"labels": "frontier_on_pilot_flight"} if pilot is not None else {}),
    }  # fmt: skip
    rng = np.random.default_rng(seed)
    env.reset(seed)
    files: list[Path] = []
    for turn, scenes in enumerate(plan):
        if on_round is not None:
            on_round(turn, len(plan), [labels[scene] for scene in sorted(set(scenes))])
        planner = FrontierPolicy(env.settings, drones, **(planner_options or {}))  # fresh maps
        start_seed = int(rng.integers(2**31))
        frames = _fly_round(env, planner, torch.tensor(scenes), share, start_seed, pilot=pilot)
        for drone, scene in enumerate(scenes):
            path = out_dir / f"{prefix}-r{turn:04d}-d{drone}-{stems[scene]}.npz"
            rows = {name: array[:, drone] for name, array in frames.items()}
            files.append(
                write_demonstration(path, rows, labels[scene], start_seed, {**meta, "drone_index": drone})
            )
    return Recording(files, share * drones * len(plan), labels, len(plan), share)


@torch.no_grad()
def _fly_round(
    env: Any, planner: Any, scenes: torch.Tensor, share: int, seed: int, *, pilot: Any = None
) -> dict[str, np.ndarray]:
    """``share`` steps of every drone in its scene (``scenes`` [B]); arrays ``[share, drones, ...]``.

    The recorded action is always the planner's; the executed one is the ``pilot``'s mean action
    when there is a pilot (its recurrent state carried and reset at every episode start, as in
    evaluation).

    ``no_grad``, not ``inference_mode``: the environment outlives the recording (PPO steps it next),
    and the state tensors its torch step makes (CUDA's path) under inference mode could never be
    updated in place again (found on the first GPU run of the warm start).
    """
    drones = env.num_actors
    generator = np.random.default_rng(seed)
    state = planner.initial_state(drones)

    def place(rows: torch.Tensor) -> torch.Tensor:
        positions = torch.zeros(int(rows.numel()), 3)
        yaws = torch.zeros(int(rows.numel()))
        for scene in scenes[rows].unique().tolist():
            mine = scenes[rows] == scene
            drawn = env.sample_starts(scene, int(mine.sum()), int(generator.integers(2**31)))
            positions[mine], yaws[mine] = drawn
        return env.start_episodes(rows, scenes[rows], positions, yaws)

    observation = place(torch.arange(drones))
    starts = torch.ones(drones, dtype=torch.bool)
    episode = torch.zeros(drones, dtype=torch.int64) - 1
    columns: dict[str, list[np.ndarray]] = {}
    flying = _Pilot(pilot, env) if pilot is not None else None
    for _ in range(share):
        position, yaw = env.poses()
        action = planner.act(observation, state, starts, pose=(position, yaw)).action
        action = torch.nan_to_num(action.float(), nan=0.0).clamp(-1.0, 1.0)  # the label; flown if no pilot
        seen = observation.cpu().numpy().copy()  # now: the step below overwrites the backend's buffer
        out = env.step(action if flying is None else flying.action(observation, starts))
        episode += starts.long()
        frame = frame_row(seen, action, out, starts=starts, episode=episode, pose=(position, yaw))
        for name, value in frame.items():
            columns.setdefault(name, []).append(value)
        starts = (out.terminated | out.truncated).cpu()
        ended = starts.nonzero().squeeze(1)
        observation = place(ended) if ended.numel() else out.obs  # ended drones start again in their scene
    return {name: np.stack(values) for name, values in columns.items()}


class _Pilot:
    """A policy flying a recording with its mean action: its state, and what else it reads."""

    def __init__(self, policy: Any, env: Any) -> None:
        from navi_actor.evaluation.evaluator import ActingInputs

        self.policy, self.device = policy, env.device
        self.inputs = ActingInputs(policy, env, env.device)
        self.state = policy.initial_state(env.num_actors, env.device)

    def action(self, observation: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """This step's physics action in [-1, 1] (``starts``: drones whose episode begins now)."""
        starts, observation = starts.to(self.device), observation.to(self.device)
        extra = self.inputs(starts, observation)
        acted = self.policy.act(observation, self.state, starts, deterministic=True, **extra)
        self.state = acted.state
        return self.policy.physics_action(acted.action)


def frame_row(
    seen: np.ndarray, action: torch.Tensor, out: Any, *, starts: torch.Tensor, episode: torch.Tensor,
    pose: tuple[torch.Tensor, torch.Tensor],
) -> dict[str, np.ndarray]:  # fmt: skip
    """One step of every drone as the demonstration schema's per-frame arrays (copies, ``[B, ...]``).

    ``seen`` is the observation the step answered, ``action`` the recorded action, ``out`` the step's
    result, ``pose`` (position, yaw) the pose before the step.
    """
    drones, (position, yaw) = int(action.shape[0]), pose
    frame = {
        "observations": seen, "actions": action.cpu().numpy(), "episode_starts": starts.cpu().numpy(),
        "episode_ids": episode.cpu().numpy(), "segment_ids": np.zeros(drones, np.int32),
        "rewards": out.reward.cpu().numpy(), "terminated": out.terminated.cpu().numpy(),
        "truncated": out.truncated.cpu().numpy(), "collisions": out.info["collision"].cpu().numpy() > 0,
        "positions": position.cpu().numpy(), "yaw": yaw.cpu().numpy(),
        "timestamps": np.full(drones, time.time()),
    }  # fmt: skip
    return {name: np.array(value, copy=True) for name, value in frame.items()}


def write_demonstration(
    path: Path, frames: dict[str, np.ndarray], scene: str, seed: int, metadata: dict[str, Any]
) -> Path:
    """One drone's frames as a one-segment demonstration file, deflated and written atomically.

    A file that exists after a crash is complete; an interrupted write leaves only a hidden
    temporary file that no reader globs (``*.npz``).
    """
    arrays: dict[str, np.ndarray] = {
        name: np.ascontiguousarray(frames[name], dtype=dtype) for name, (dtype, _) in FRAME_FIELDS.items()
    }
    arrays["segment_scenes"] = np.array([scene], dtype=np.str_)
    arrays["segment_seeds"] = np.array([seed], dtype=np.int64)
    arrays["metadata"] = np.array(json.dumps(metadata, sort_keys=True))

    def write(stream: BinaryIO) -> None:
        with zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for name, array in arrays.items():
                with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)

    return atomic_write(path, write)

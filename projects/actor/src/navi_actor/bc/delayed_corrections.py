"""Delayed flights of a cloned policy, relabelled by the frontier planner (DAgger under delay).

Why: a clone of the planner's flights learns the states the planner visits, closed loop. A real-time
brain flies it 3-4 ticks late (``navi-actor serve --inference realtime`` at 2 control periods of
latency), executing chunk entries planned from an older observation, and so reaches states the
planner never flew, near walls it would have turned from: the chunked clone collided 11-16 times in
19,200 drone-ticks at 2 periods against 0 at zero latency (docs/experiments/2026-11-realtime-
inference.md). DAgger's answer: fly the clone as the delayed brain does (:class:`DelayedBrain`), let the
planner watch the same observations and poses, and record, at every tick, what the planner would have
done there. Behaviour cloning on these frames (``bc-pretrain``, with the original flights) then fits
chunk entry ``k`` of an observation to the planner's action ``k`` ticks later *on the delayed flight*:
the turn away from the wall the stale plan was heading into.

The files follow the demonstration schema (docs/demonstrations.md), one per round and drone, written
atomically by :func:`navi_actor.bc.frontier_recording.write_demonstration`. ``actions`` are the
planner's labels, not the executed actions (metadata ``labels: "frontier_on_delayed_flight"``), and
the starts are placed, so the files cannot be replayed. A drone's frames end with its episode (a
collision or the time limit): what follows would not be one flight.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from navi_actor.bc.frontier_recording import frame_row, scene_label, write_demonstration
from navi_actor.service.delayed_brain import DelayedBrain
from navi_common.demonstrations import DEMO_SCHEMA_VERSION
from navi_common.provenance import git_revision


@dataclass(frozen=True)
class Corrections:
    """What :func:`record_delayed_corrections` flew and wrote."""

    files: list[Path]
    steps: int  #: frames written, all files together
    collisions: int  #: collision ticks of the recorded (delayed) flights
    drone_ticks: int  #: ticks recorded, all drones together


def record_delayed_corrections(
    policy: Any,
    backend: Any,
    out_dir: Path,
    *,
    rounds: int,
    ticks: int,
    delays: tuple[int, ...],
    seed: int,
    scene: int = 0,
) -> Corrections:
    """Fly ``policy`` delayed in a scene of ``backend``, ``rounds`` times; save the planner's labels.

    Args:
        policy: a :class:`navi_actor.models.NaviPolicy` in eval mode (a chunk head makes the chunks
            fly; without one the brain holds its answer).
        backend: a :class:`navi_environment.backend.SdfDagBackend` on the policy's sensor.
        out_dir: folder for ``delayed-r<round>-d<drone>-<scene stem>.npz`` (created; one that
            already holds demonstrations is refused, so no earlier round is overwritten).
        rounds: flights one after the other, every drone from a new start drawn with the seed.
        ticks: ticks per round (a drone's episode may end sooner).
        delays: brain delays in ticks, round ``r`` flying ``delays[r % len(delays)]``.
        seed: seeds the starts; use other seeds than the ones a benchmark judges on.
        scene: the backend's scene index.
    """
    if rounds < 1 or ticks < 1 or not delays:
        raise ValueError("record_delayed_corrections needs rounds >= 1, ticks >= 1 and at least one delay")
    if out_dir.is_dir() and any(out_dir.glob("*.npz")):
        raise FileExistsError(f"{out_dir} already holds demonstrations; record into a new folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    drones = backend.num_actors
    label = scene_label(backend.scenes.corpus[scene])
    meta: dict[str, Any] = {
        "schema_version": DEMO_SCHEMA_VERSION, "pilot": "frontier", "labels": "frontier_on_delayed_flight",
        "seed": seed, "batch_drones": drones, "placed_starts": True, "git_revision": git_revision(),
        "environment_settings": backend.settings.model_dump_json(),
        "matrix_shape": [backend.settings.sensor.azimuth_bins, backend.settings.sensor.elevation_bins],
    }  # fmt: skip
    rng = np.random.default_rng(seed)
    backend.reset(seed)
    files: list[Path] = []
    steps = collisions = drone_ticks = 0
    for turn in range(rounds):
        delay = delays[turn % len(delays)]
        start_seed = int(rng.integers(2**31))
        frames, live = _fly_round(policy, backend, scene, ticks=ticks, delay=delay, seed=start_seed)
        collisions += int(frames["collisions"][live].sum())
        drone_ticks += int(live.sum())
        for drone in range(drones):
            rows = {name: array[live[:, drone], drone] for name, array in frames.items()}
            path = out_dir / f"delayed-r{turn:04d}-d{drone}-{Path(label).stem}.npz"
            meta_round = {**meta, "drone_index": drone, "delay_ticks": delay}
            files.append(write_demonstration(path, rows, label, start_seed, meta_round))
            steps += len(rows["actions"])
    return Corrections(files, steps, collisions, drone_ticks)


@torch.inference_mode()
def _fly_round(
    policy: Any, backend: Any, scene: int, *, ticks: int, delay: int, seed: int
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One delayed flight of every drone: frames ``name -> [T, drones, ...]`` and ``live`` [T, drones],
    true while the drone's episode had not ended before that tick."""
    from navi_actor.evaluation.baselines import FrontierPolicy

    drones = backend.num_actors
    rows = torch.arange(drones)
    positions, yaws = backend.sample_starts(scene, drones, seed)
    obs = backend.start_episodes(rows, torch.full_like(rows, scene), positions, yaws).clone()
    brain = DelayedBrain(policy, drones, delay=delay, variant="chunks_blend")
    planner = FrontierPolicy(backend.settings, drones)
    planner_state = planner.initial_state(drones)
    starts = torch.ones(drones, dtype=torch.bool)
    episode = torch.zeros(drones, dtype=torch.int64)  # one episode per drone and round
    live = np.ones(drones, bool)
    columns: dict[str, list[np.ndarray]] = {}
    lives: list[np.ndarray] = []
    for tick in range(ticks):
        position, yaw = backend.poses()
        label = planner.act(obs, planner_state, starts, pose=(position, yaw)).action
        label = torch.nan_to_num(label.float(), nan=0.0).clamp(-1.0, 1.0)
        action = brain.action(tick, obs, (position, yaw))
        out = backend.step(action)
        frame = frame_row(obs.cpu().numpy(), label, out, starts=starts, episode=episode, pose=(position, yaw))
        for name, value in frame.items():
            columns.setdefault(name, []).append(value)
        lives.append(live.copy())
        live &= ~(out.terminated | out.truncated).cpu().numpy()
        starts = torch.zeros_like(starts)
        obs = out.obs.clone()
        if not live.any():
            break
    return {name: np.stack(values) for name, values in columns.items()}, np.stack(lives)

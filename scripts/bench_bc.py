"""Benchmark: behaviour cloning from autopilot demonstrations. Prints ONE JSON line.

In one run on this machine:
  * records autopilot demonstrations (``--frames`` in total) in training rooms, B drones at once;
  * trains the policy (encoder -> temporal core -> Gaussian head) by behaviour cloning and reports
    the held-out imitation MSE next to the mean-action baseline (chance level);
  * flies three pilots in HELD-OUT rooms (never seen in the demonstrations) from the same spawns:
    the BC policy (deterministic mean, recurrent state carried), a uniform random policy and the
    autopilot teacher. Per pilot: collision rate (collisions per drone step), coverage (distinct
    1 m cells visited per drone, in the floor plan and in 3-D) and, for BC, the on-policy imitation
    error (MSE between the BC action and what the autopilot would do in the states BC visits).

Rooms are exact analytic scenes (seeded sizes, a 0.3 m dividing wall with a door, pillars) so the
comparison measures the pilots, not scene-compilation artefacts. ``--corpus DIR`` uses compiled
``.gmdag`` scenes instead (first files train, the last ``--eval-rooms`` are held out).

Usage: ``uv run python scripts/bench_bc.py [--frames 20000] [--epochs 8] [--drones 16]``
(``--frames 2000 --epochs 3`` for a quick run).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from navi_actor.bc import BCConfig, load_demonstrations, split_episodes, train_bc
from navi_actor.evaluation.evaluator import ActingInputs
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_auditor.demos.batch_recorder import record_autopilot_batch
from navi_auditor.explorer.autopilot import Autopilot
from navi_auditor.settings import AutopilotSettings
from navi_common import configure_logging
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings, SceneSettings, SensorSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.runtime.scene import RuntimeScene

Scene = Path | RuntimeScene


def random_room(seed: int) -> RoomSpec:
    """A seeded room: 9-16 x 7-12 x 3-4 m, a 0.3 m wall with a door, 1-3 pillars."""
    rng = np.random.default_rng(seed)
    lx, ly, lz = rng.uniform(9, 16), rng.uniform(7, 12), rng.uniform(3, 4)
    wall_x = rng.uniform(0.4, 0.6) * lx
    door = rng.uniform(1.0, ly - 3.0)
    pillars = tuple(
        (float(rng.uniform(1.5, lx - 1.5)), float(rng.uniform(1.5, ly - 1.5)), float(rng.uniform(0.3, 0.6)))
        for _ in range(int(rng.integers(1, 4)))
    )
    return RoomSpec(hi=(lx, ly, lz), thin_wall_x=wall_x, thin_wall_thickness=0.3,
                    thin_wall_gap=(door, door + 2.0), pillars=pillars)  # fmt: skip


def scenes(args: argparse.Namespace) -> tuple[list[Scene], list[Scene]]:
    """(training scenes, held-out scenes)."""
    if args.corpus is not None:
        files: list[Scene] = list(sorted(Path(args.corpus).glob("*.gmdag")))
        if len(files) <= args.eval_rooms:
            raise SystemExit(f"--corpus {args.corpus}: need more than {args.eval_rooms} .gmdag files")
        return files[: -args.eval_rooms], files[-args.eval_rooms :]
    train: list[Scene] = [room_scene(random_room(args.seed + i), 64) for i in range(args.train_rooms)]
    held: list[Scene] = [room_scene(random_room(10_000 + args.seed + i), 64) for i in range(args.eval_rooms)]
    return train, held


def backend_for(env: EnvironmentSettings, scene: Scene, drones: int, device: str) -> SdfDagBackend:
    kwargs: dict[str, Any] = {"scene_paths": [scene]} if isinstance(scene, Path) else {"scenes": [scene]}
    return SdfDagBackend(env, drones, device=device, **kwargs)


def fly(
    backend: SdfDagBackend, pilot: str, *, policy: NaviPolicy, teacher: Autopilot, steps: int, seed: int
) -> dict:
    """Fly every drone ``steps`` steps with ``pilot``; collision rate, coverage, on-policy MSE."""
    B, device = backend.num_actors, backend.device
    generator = torch.Generator(device=device).manual_seed(seed)
    obs = backend.reset(seed)
    state = policy.initial_state(B, device)
    starts = torch.ones(B, dtype=torch.bool, device=device)
    positions = torch.empty(steps, B, 3, device=device)
    collisions = torch.zeros(B, device=device)
    imitation = torch.zeros((), device=device)
    inputs = ActingInputs(policy, backend, device)  # the visit memory the default policy reads, and its poses
    for t in range(steps):
        expert = teacher(obs)
        if pilot == "bc":
            out = policy.act(obs, state, starts, deterministic=True, **inputs(starts, obs))
            state, action = out.state, policy.physics_action(out.action)
            imitation += (action - expert).square().mean()
        elif pilot == "random":
            action = torch.rand(B, 4, generator=generator, device=device) * 2 - 1
        else:
            action = expert
        result = backend.step(action)
        obs, starts = result.obs, result.terminated | result.truncated
        collisions += result.info["collision"]
        positions[t] = backend.position
    report = {
        "collision_rate": float(collisions.sum()) / (B * steps),
        "coverage_cells_xy": visited_cells(positions[..., :2]),  # floor-plan exploration
        "coverage_cells_xyz": visited_cells(positions),  # also counts climbing and sinking
    }
    if pilot == "bc":
        report["onpolicy_imitation_mse"] = float(imitation) / steps
    return report


def visited_cells(positions: torch.Tensor, cell_m: float = 1.0) -> float:
    """Mean number of distinct cells per drone: positions [T, B, D] -> unique (drone, cell) pairs / B."""
    steps, drones = positions.shape[:2]
    cells = torch.floor(positions / cell_m).long()  # [T, B, D]
    owner = torch.arange(drones, device=positions.device).expand(steps, drones)[..., None]  # [T, B, 1]
    keys = torch.cat([owner, cells], dim=-1).reshape(steps * drones, -1)
    return torch.unique(keys, dim=0).shape[0] / drones


def record(
    args: argparse.Namespace, env: EnvironmentSettings, train_scenes: list[Scene], folder: Path
) -> float:
    started = time.monotonic()
    steps = max(1, args.frames // (len(train_scenes) * args.drones))
    for index, scene in enumerate(train_scenes):
        record_autopilot_batch(env, scene, drones=args.drones, steps=steps, out_dir=folder,
                               seed=args.seed + index, device=args.device, part_frames=1024)  # fmt: skip
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--frames", type=int, default=20_000, help="Demonstration frames in total.")
    parser.add_argument("--drones", type=int, default=16, help="Drones recorded (and evaluated) at once.")
    parser.add_argument("--train-rooms", type=int, default=4)
    parser.add_argument("--eval-rooms", type=int, default=2)
    parser.add_argument("--eval-steps", type=int, default=300, help="Steps per drone per held-out room.")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=32)
    parser.add_argument("--azimuth", type=int, default=64)
    parser.add_argument("--elevation", type=int, default=16)
    parser.add_argument("--encoder", default="spherical_cnn", choices=["rayvit", "spherical_cnn"])
    parser.add_argument("--core", default="gru", choices=["mamba2", "gru", "mambapy"])
    parser.add_argument("--corpus", type=Path, default=None, help="Use these .gmdag scenes instead of rooms.")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice).")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    configure_logging("warning")  # logs to stderr: stdout carries only the JSON line
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    env = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=args.azimuth, elevation_bins=args.elevation),
                              scene=SceneSettings(spawn_candidates=256))  # fmt: skip
    train_scenes, held_out = scenes(args)
    with tempfile.TemporaryDirectory(prefix="navi-bench-bc-") as tmp:
        record_s = record(args, env, train_scenes, Path(tmp))
        data = load_demonstrations(sorted(Path(tmp).glob("*.npz")))
    generator = torch.Generator().manual_seed(args.seed)
    train, holdout = split_episodes(data, 0.1, generator)
    config = PolicyConfig(azimuth=args.azimuth, elevation=args.elevation, encoder_backend=args.encoder,
                          temporal_core=args.core)  # fmt: skip
    policy = NaviPolicy(config).to(args.device)
    bc = BCConfig(epochs=args.epochs, sequence_length=args.sequence_length, streams=16, learning_rate=3e-3)
    history = train_bc(policy, train, holdout, bc, generator)
    sensor = env.sensor
    teacher = Autopilot(
        AutopilotSettings(), sensor.horizon_m, sensor.azimuth_bins, sensor.elevation_bins, args.device
    )
    evaluation: dict[str, list[dict]] = {"bc": [], "random": [], "autopilot": []}
    for index, scene in enumerate(held_out):
        backend = backend_for(env, scene, args.drones, args.device)
        for pilot, reports in evaluation.items():
            reports.append(
                fly(backend, pilot, policy=policy, teacher=teacher, steps=args.eval_steps, seed=100 + index)
            )
    mean = {pilot: {key: float(np.mean([r[key] for r in reports])) for key in reports[0]}
            for pilot, reports in evaluation.items()}  # fmt: skip
    kept = history.kept_holdout_mse if history.kept_holdout_mse is not None else math.nan
    print(json.dumps({
        "bench": "bc", "device": args.device, "frames": len(data), "train_frames": len(train),
        "holdout_frames": len(holdout), "record_seconds": round(record_s, 2),
        "bc_seconds": round(history.seconds, 2),
        "bc_frames_per_second": round(len(train) * len(history.train_nll) / history.seconds, 1),
        "epochs": args.epochs, "epochs_run": len(history.train_nll), "kept_epoch": history.best_epoch,
        "train_nll_first_last": [history.train_nll[0], history.train_nll[-1]],
        "holdout_mse": kept, "baseline_mse": history.baseline_mse,
        "holdout_over_baseline": kept / history.baseline_mse,
        "eval_rooms": len(held_out), "eval_steps": args.eval_steps, "eval": mean,
        "policy": {"encoder": args.encoder, "core": args.core, "sensor": [args.azimuth, args.elevation]},
    }))  # fmt: skip


if __name__ == "__main__":
    main()

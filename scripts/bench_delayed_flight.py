"""Delayed flight in process: hold the last action or fly the chunk, with the latency of a slow brain.

``scripts/bench_realtime.py`` measures the real processes under wall-clock latency, one run per cell
with 4 drones, where run-to-run timing makes coverage noisy. This replays the same arithmetic in one
process, tick by tick and deterministic (:class:`navi_actor.service.delayed_brain.DelayedBrain`), with
as many planned episodes as wanted, for each variant there: ``hold`` (the mean action held until the
next answer), ``chunks`` (unblended) and ``chunks_blend`` (the real-time brain).

``delay = 0`` is the closed-loop reference (a fresh mean every tick). ``--guard`` caps every executed
action by the collision guard from the tick's observation, as ``navi-environment serve --mode realtime
--guard`` does. Prints ONE JSON line.

    uv run python scripts/bench_delayed_flight.py --checkpoint CKPT [--delays 0,2,3] [--drones 16] [--guard]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import numpy as np
import torch

from navi_actor.service.delayed_brain import VARIANTS, DelayedBrain


def fly(policy: Any, backend: Any, plan: tuple[torch.Tensor, torch.Tensor], *, ticks: int, delay: int,
        variant: str, blend_ticks: int | None = None, guard: Any = None) -> dict[str, float]:  # fmt: skip
    """One delayed flight of every planned episode; coverage, collisions and what was flown."""
    drones = backend.num_actors
    rows = torch.arange(drones)
    obs = backend.start_episodes(rows, torch.zeros_like(rows), plan[0], plan[1]).clone()
    brain = DelayedBrain(policy, drones, delay=delay, variant=variant, blend_ticks=blend_ticks)
    live = np.ones(drones, bool)
    cells, collisions, drone_ticks = np.zeros(drones), 0.0, 0.0
    flown, previous, jerk, guarded = [], None, [], 0.0
    for tick in range(ticks):
        action = brain.action(tick, obs, backend.poses())
        if guard is not None:
            wanted, action = action.clamp(-1.0, 1.0), guard(action, obs)
            guarded += float(((action - wanted).abs().amax(dim=1) > 1e-6).numpy()[live].sum())
        out = backend.step(action)
        executed = action.numpy()
        if previous is not None:
            jerk.append(np.abs(executed - previous).mean(axis=1)[live])
        previous = executed
        flown.append(executed[live])
        collisions += float((out.info["collision"].cpu().numpy() > 0.5)[live].sum())
        drone_ticks += float(live.sum())
        cells = np.where(live, out.info["coverage"].cpu().numpy(), cells)
        live &= ~(out.terminated | out.truncated).cpu().numpy()
        obs = out.obs.clone()
        if not live.any():
            break
    actions = np.concatenate(flown)
    return {
        "coverage": float(cells.mean()) / max(backend.reachable_cells(0), 1),
        "collision_rate": collisions / max(drone_ticks, 1.0),
        "jerk": float(np.concatenate(jerk).mean()) if jerk else 0.0,
        "action_mean": actions.mean(axis=0).tolist(),
        "action_abs_mean": np.abs(actions).mean(axis=0).tolist(),
        "yaw_std": float(actions[:, 3].std()),
        "guarded_fraction": guarded / max(drone_ticks, 1.0),
    }


@click.command()
@click.option("--checkpoint", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A policy with a chunk head (action_chunk >= 2).")  # fmt: skip
@click.option("--gmdag-file", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="The scene.")  # fmt: skip
@click.option("--delays", default="0,2,3", show_default=True, help="Brain delays in ticks (0: closed loop).")
@click.option("--drones", default=16, show_default=True, help="Planned episodes flown at once.")
@click.option("--ticks", default=400, show_default=True, help="Ticks per flight.")
@click.option("--seed", default=0, show_default=True, help="Seed of the planned start poses.")
@click.option(
    "--blend-ticks", type=int, help="Blend over this many ticks (default: the delay, as the brain does)."
)
@click.option("--guard/--no-guard", default=False, show_default=True,
              help="Cap every executed action by the collision guard (serve --mode realtime --guard).")
def main(*, checkpoint: Path, gmdag_file: Path, delays: str, drones: int, ticks: int, seed: int,
         blend_ticks: int | None, guard: bool) -> None:  # fmt: skip
    """Fly every variant at every delay on the same planned episodes and print one JSON line."""
    from bench_chunk_prediction import chunk_policy_and_scene  # scripts/ is on the path of a script

    from navi_common import configure_logging
    from navi_environment.planning.guard import SpeedGuard

    configure_logging("warning", production=False)
    torch.set_num_threads(1)
    policy, backend = chunk_policy_and_scene(checkpoint, gmdag_file, drones)
    backend.reset(seed)
    plan = backend.sample_starts(0, drones, seed)
    speed_guard = SpeedGuard(backend.settings, backend.device) if guard else None
    results: dict[str, dict[str, Any]] = {}
    with torch.inference_mode():
        for delay in (int(value) for value in delays.split(",")):
            for variant in VARIANTS if delay else ("hold",):
                row = fly(policy, backend, plan, ticks=ticks, delay=delay, variant=variant,
                          blend_ticks=blend_ticks, guard=speed_guard)  # fmt: skip
                results.setdefault(str(delay), {})[variant] = row
                click.echo(f"delay {delay} {variant:<13} coverage {row['coverage']:.4f} collide "
                           f"{row['collision_rate']:.4f} jerk {row['jerk']:.4f} yaw_std {row['yaw_std']:.3f} "
                           f"|yaw| {row['action_abs_mean'][3]:.3f} guarded {row['guarded_fraction']:.3f}",
                           err=True)  # fmt: skip
    line = {"bench": "delayed_flight", "checkpoint": str(checkpoint), "drones": drones, "ticks": ticks,
            "seed": seed, "blend_ticks": blend_ticks, "guard": guard, "results": results}  # fmt: skip
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()

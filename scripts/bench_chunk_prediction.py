"""How good is the chunk head open loop? Its entry k against the policy's actual mean k ticks later.

Issue 20's real-time brain executes chunk entries ``k = d-1 .. d+gap`` (the inference delay ``d`` plus
the ticks until the next chunk) instead of the policy's mean at those ticks. This flies the policy
closed loop in-process (every tick a fresh mean, no latency) and, on that rollout, compares each
chunk entry ``k`` predicted at tick ``t`` with the mean the policy actually chose at ``t + k``
(same episode only), per ``k`` and per action component (forward, vertical, lateral, yaw), in
physics units ([-1, 1], after the policy's clip or tanh):

- ``mse_chunk``: squared error of the chunk entry;
- ``mse_hold``: squared error of holding the mean of tick ``t`` (what the hold fallback executes);
- ``mean_pred`` / ``mean_true``: signed averages (does the chunk fly slower, turn one way less?);
- ``abs_ratio``: mean |chunk entry| / mean |actual mean| (below 1: shrunk toward zero);
- ``std_ratio``: std of the chunk entries / std of the actual means (below 1: shrunk toward the
  average, the signature of regressing an uncertain future with a squared error).

Prints ONE JSON line (a readable table goes to stderr).

    uv run python scripts/bench_chunk_prediction.py --checkpoint CKPT [--ticks 400] [--drones 8]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import numpy as np
import torch

COMPONENTS = ("forward", "vertical", "lateral", "yaw")
FIGURES = ("mse_chunk", "mse_hold", "mean_pred", "mean_true", "abs_ratio", "std_ratio")


def chunk_prediction_stats(chunks: np.ndarray, means: np.ndarray, ended: np.ndarray) -> list[dict[str, Any]]:
    """Per look-ahead ``k = 1 .. H-1``: how chunk entry ``k`` compares with the mean ``k`` ticks later.

    Args:
        chunks: ``[T, B, H, A]`` the chunk predicted at every tick (entry 0: that tick's mean).
        means: ``[T, B, A]`` the mean action the policy chose at every tick.
        ended: ``[T, B]`` bool, the episode ended with the step of tick ``t`` (tick ``t + 1`` belongs
            to a new episode).

    Returns:
        One dict per ``k`` with ``k``, ``count`` (valid pairs) and, per component, lists of
        ``mse_chunk``, ``mse_hold``, ``mean_pred``, ``mean_true``, ``abs_ratio``, ``std_ratio``.
    """
    if chunks.ndim != 4 or means.shape != (chunks.shape[0], chunks.shape[1], chunks.shape[3]):
        raise ValueError(f"chunks {chunks.shape} and means {means.shape} do not match as [T,B,H,A] / [T,B,A]")
    if ended.shape != means.shape[:2]:
        raise ValueError(f"ended {ended.shape} does not match means {means.shape[:2]}")
    ticks, horizon = chunks.shape[0], chunks.shape[2]
    rows = []
    for k in range(1, horizon):
        if k >= ticks:
            break
        # (t, t + k) in one episode: no episode ended with the steps of ticks t .. t + k - 1
        crossed = np.stack([ended[j : ticks - k + j] for j in range(k)]).any(axis=0)
        valid = ~crossed  # [T-k, B]
        predicted = chunks[: ticks - k, :, k][valid]  # [N, A]
        actual = means[k:][valid]
        held = means[: ticks - k][valid]
        rows.append(_row(k, predicted, actual, held))
    return rows


def _row(k: int, predicted: np.ndarray, actual: np.ndarray, held: np.ndarray) -> dict[str, Any]:
    count = int(predicted.shape[0])
    if count == 0:
        return {"k": k, "count": 0}

    def ratio(top: np.ndarray, bottom: np.ndarray) -> list[float]:
        return [float(a / b) if b > 0 else float("nan") for a, b in zip(top, bottom, strict=True)]

    return {
        "k": k,
        "count": count,
        "mse_chunk": ((predicted - actual) ** 2).mean(axis=0).tolist(),
        "mse_hold": ((held - actual) ** 2).mean(axis=0).tolist(),
        "mean_pred": predicted.mean(axis=0).tolist(),
        "mean_true": actual.mean(axis=0).tolist(),
        "abs_ratio": ratio(np.abs(predicted).mean(axis=0), np.abs(actual).mean(axis=0)),
        "std_ratio": ratio(predicted.std(axis=0), actual.std(axis=0)),
    }


def chunk_policy_and_scene(checkpoint: Path, scene: Path, drones: int) -> tuple[Any, Any]:
    """The checkpoint's policy (eval mode; it must have a chunk head) and ``scene`` on its sensor.

    Shared with ``bench_delayed_flight.py``.
    """
    from navi_actor.checkpoints import load_checkpoint
    from navi_actor.models import NaviPolicy
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    loaded = load_checkpoint(checkpoint)
    config = loaded.policy_config
    if config.action_chunk < 2:
        raise click.UsageError(f"{checkpoint} has no chunk head (policy.action_chunk = 1)")
    policy = NaviPolicy(config)
    policy.load_state_dict(loaded.model)
    policy.eval()
    sensor = {"azimuth_bins": config.azimuth, "elevation_bins": config.elevation}
    backend = SdfDagBackend(EnvironmentSettings(sensor=sensor), drones, scene_paths=[scene])  # type: ignore[arg-type]
    return policy, backend


def rollout(
    checkpoint: Path, scene: Path, *, drones: int, ticks: int, seed: int, stochastic: bool
) -> dict[str, np.ndarray]:
    """Fly the policy closed loop for ``ticks`` ticks; its chunks, means and episode ends per tick."""
    from navi_actor.evaluation.evaluator import ActingInputs

    policy, backend = chunk_policy_and_scene(checkpoint, scene, drones)
    torch.manual_seed(seed)
    obs = backend.reset(seed)
    state = policy.initial_state(drones)
    start = torch.ones(drones, dtype=torch.bool)
    chunks, means, ended, executed = [], [], [], []
    inputs = ActingInputs(policy, backend, backend.device)  # the visit memory, if the policy reads one
    with torch.inference_mode():
        for _ in range(ticks):
            acted = policy.act(obs, state, start, deterministic=not stochastic, **inputs(start, obs))
            assert acted.action_chunk is not None and acted.action_mean is not None
            action = policy.physics_action(acted.action)
            chunks.append(policy.physics_action(acted.action_chunk).numpy())
            means.append(policy.physics_action(acted.action_mean).numpy())
            executed.append(action.numpy())
            out = backend.step(action)
            done = (out.terminated | out.truncated).cpu()
            ended.append(done.numpy())
            state, start, obs = acted.state, done.clone(), out.obs
    return {"chunks": np.stack(chunks), "means": np.stack(means), "ended": np.stack(ended),
            "executed": np.stack(executed)}  # fmt: skip


def _table(rows: list[dict[str, Any]]) -> None:
    click.echo(f"{'k':>3} {'component':<9}" + "".join(f"{h:>11}" for h in FIGURES), err=True)
    for row in rows:
        if not row["count"]:
            continue
        for index, name in enumerate(COMPONENTS):
            cells = [row[key][index] for key in FIGURES]
            click.echo(f"{row['k']:>3} {name:<9}" + "".join(f"{c:>11.4g}" for c in cells), err=True)


@click.command()
@click.option("--checkpoint", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A policy with a chunk head (action_chunk >= 2).")  # fmt: skip
@click.option("--gmdag-file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="The scene (default: compile --scene at --resolution).")  # fmt: skip
@click.option("--scene", default="procedural:hall:seed=1", show_default=True, help="Procedural source.")
@click.option("--resolution", default=64, show_default=True, help="Scene resolution (voxels per axis).")
@click.option("--drones", default=8, show_default=True, help="Drones flown at once.")
@click.option("--ticks", default=400, show_default=True, help="Ticks flown.")
@click.option("--seed", default=0, show_default=True, help="Seed of the spawns (and the samples).")
@click.option("--stochastic", is_flag=True, help="Sample actions as in training (default: the mean).")
def main(*, checkpoint: Path, gmdag_file: Path | None, scene: str, resolution: int, drones: int, ticks: int,
         seed: int, stochastic: bool) -> None:  # fmt: skip
    """Compare the chunk head's predictions with the policy's later means and print one JSON line."""
    import tempfile

    from navi_common import configure_logging

    configure_logging("warning", production=False)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="bench_chunk_") as temporary:
        if gmdag_file is None:
            from navi_environment.corpus.settings import CompileSettings
            from navi_environment.corpus.sources import compile_source
            from navi_environment.gmdag.writer import write_gmdag

            gmdag_file = Path(temporary) / "scene.gmdag"
            write_gmdag(compile_source(scene, CompileSettings(), resolution=resolution).asset, gmdag_file)
        flown = rollout(checkpoint, gmdag_file, drones=drones, ticks=ticks, seed=seed, stochastic=stochastic)
    rows = chunk_prediction_stats(flown["chunks"], flown["means"], flown["ended"])
    _table(rows)
    executed = flown["executed"]
    line = {
        "bench": "chunk_prediction",
        "checkpoint": str(checkpoint),
        "stochastic": stochastic,
        "drones": drones,
        "ticks": ticks,
        "components": list(COMPONENTS),
        "executed_mean": executed.mean(axis=(0, 1)).tolist(),
        "executed_abs_mean": np.abs(executed).mean(axis=(0, 1)).tolist(),
        "episode_ends": int(flown["ended"].sum()),
        "per_k": rows,
    }
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()

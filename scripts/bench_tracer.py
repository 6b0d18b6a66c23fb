"""Benchmark: Navi's sphere tracer against Embree triangle ray casting, one thread each.

Same procedural scene (the mesh for Embree, the compiled .gmdag -> brick map for us), same rays
(the spherical sensor of 4 drones at qualified spawns). Prints ONE JSON line:

    Mrays/s ours (the SIMD wavefront kernel), Embree and our scalar packet kernel (the previous
    kernel, as an in-run reference), all per thread; ratios; agreement with Embree (median / p95
    distance error in voxels on rays both hit, hit-flag agreement); ms per full step at 4 and 32
    drones and the share of step() time spent tracing at 4 drones (wall and process CPU time).

``--family all`` traces all five families and reports each one's numbers plus the mean ratio
(the step timings are taken on the first family only).

``--device cuda`` also times the torch tracer on the GPU (``device_*`` keys: Mrays/s and ms per
sensor trace of ``--device-drones`` drones, wall time after ``torch.cuda.synchronize()``, and its
agreement with the numba trace on the shared first 4 drones), and runs the step timings on the GPU
(``--step-actors`` sets their batch sizes, e.g. ``4,32,256,1024``); ``--device cpu`` runs the same code on the
CPU (the numba kernel, one thread), to check the script. Embree is optional: without
``embreex`` installed its fields are null.

Timings are the best process CPU time over ``--repeats`` rounds; in each round every contender runs
a burst of 3 back-to-back calls (see :func:`_best_interleaved`). On a shared machine CPU time counts
the work and not the queueing, and rounds spread load changes evenly over the contenders.

Usage: ``uv run python scripts/bench_tracer.py [--family apartment|...|all] [--seed 0] [--resolution 256]
[--device cuda] [--device-drones 256] [--step-actors 4,32]``
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import torch

from navi_common import configure_logging
from navi_environment.config import EnvironmentSettings
from navi_environment.gmdag.writer import compile_sdf_to_gmdag
from navi_environment.runtime.atlas import pack_scenes
from navi_environment.runtime.bench import bench_backend, synchronize
from navi_environment.runtime.loader import scene_from_asset
from navi_environment.runtime.scene import RuntimeScene
from navi_environment.runtime.spawn import qualify_scene
from navi_environment.scenes.export import layout_mesh
from navi_environment.scenes.rasterize import layout_grids
from navi_environment.scenes.registry import FAMILIES, generate
from navi_environment.tracer import Tracer, scalar, sensor_directions

DRONES = 4
_numba_config: Any = numba.config  # attributes set at runtime, unknown to the type stubs


def _best_interleaved(
    contenders: dict[str, Callable[[], object]], repeats: int, burst: int = 3
) -> dict[str, float]:
    """Smallest process CPU time (s) of each contender: ``repeats`` rounds of ``burst`` calls each.

    Why bursts: each contender is timed on back-to-back calls, i.e. with its own data warm in the
    caches (as repeated sensor traces run). Timing one call right after another contender measured
    that contender's cache footprint instead: right after Embree's run (which streams ~2 MB of rays
    and results through L2) our kernel was ~15 % slower, right after the scalar kernel (same bricks
    already in L2/L3) ~15 % faster. Why rounds: load changes on a shared box spread evenly over all.
    """
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(repeats):
        for name, fn in contenders.items():
            for _ in range(burst):
                start = time.process_time()
                fn()
                best[name] = min(best[name], time.process_time() - start)
    return best


def _best_wall(fn: Callable[[], object], repeats: int, device: torch.device, burst: int = 3) -> float:
    """Smallest wall time (s) of one call of ``fn``, the device synchronised before and after each.

    Why wall time: process CPU time counts the host launching GPU work, not the work.
    """
    best = float("inf")
    for _ in range(repeats * burst):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        best = min(best, time.perf_counter() - start)
    return best


def _embree_scene(mesh: Any) -> Any:
    """An Embree scene of ``mesh``, or None where ``embreex`` is not installed (GPU machines)."""
    try:
        from embreex import rtcore_scene
        from embreex.mesh_construction import TriangleMesh
    except ImportError:
        return None
    embree = rtcore_scene.EmbreeScene()
    TriangleMesh(embree, mesh.vertices[mesh.faces].astype(np.float32))
    return embree


def _trace_on_device(
    scene: RuntimeScene, spawns: np.ndarray, yaw: np.ndarray, *, qualified: np.ndarray,
    reference: torch.Tensor, device: torch.device, drones: int, repeats: int,
) -> dict[str, Any]:  # fmt: skip
    """Time the tracer on ``device`` (torch kernel on CUDA) for ``drones`` drones; the first rows
    fly the CPU contenders' poses, and their trace is compared with ``reference`` (numba)."""
    settings = EnvironmentSettings()
    sensor = settings.sensor
    tracer = Tracer(pack_scenes([scene]), sensor, settings.tracer, device)
    rng = np.random.default_rng(0)
    extra = max(drones - len(spawns), 0)
    pos = np.concatenate([spawns, qualified[np.arange(extra) % len(qualified)]])[:drones]
    headings = np.concatenate([yaw, rng.uniform(-np.pi, np.pi, extra)])[:drones]
    pos_t = torch.from_numpy(pos.astype(np.float32)).to(device)
    yaw_t = torch.from_numpy(headings.astype(np.float32)).to(device)
    ids = torch.zeros(len(pos), dtype=torch.int32, device=device)
    out = torch.empty(len(pos), 3, sensor.azimuth_bins, sensor.elevation_bins, device=device)
    tracer.trace_sensor(pos_t, yaw_t, ids, out)  # warm-up (allocator, kernels)
    seconds = _best_wall(lambda: tracer.trace_sensor(pos_t, yaw_t, ids, out), repeats, device)
    shared = min(len(pos), reference.shape[0])
    got, want = out[:shared].cpu(), reference[:shared]
    both = (got[:, 2] > 0) & (want[:, 2] > 0)
    depth_err = (got[:, 0] - want[:, 0]).abs()[both] * sensor.horizon_m / scene.voxel_size
    rays = len(pos) * sensor.azimuth_bins * sensor.elevation_bins
    return {
        "device_kernel": tracer.kernel, "device_drones": len(pos), "device_rays": rays,
        "device_ms_per_trace": seconds * 1e3, "device_mrays_per_s": rays / seconds / 1e6,
        "device_vs_numba_hit_agreement": float((got[:, 2] == want[:, 2]).float().mean()),
        "device_vs_numba_max_error_voxels": float(depth_err.max()) if both.any() else None,
    }  # fmt: skip


def _trace_family(
    family: str, seed: int, *, resolution: int, repeats: int, device: torch.device | None, device_drones: int
) -> tuple[dict, RuntimeScene]:  # type: ignore[type-arg]
    """Trace one family's scene with ours, the scalar kernel, Embree (if installed) and, given a
    ``device``, the tracer on that device; returns the record."""
    settings = EnvironmentSettings()
    layout = generate(family, seed)
    sdf, semantic, bmin, voxel = layout_grids(layout, resolution)
    scene = scene_from_asset(compile_sdf_to_gmdag(sdf, semantic, bmin, voxel), settings)
    mesh = layout_mesh(layout)
    embree = _embree_scene(mesh)

    qualified = qualify_scene(scene, settings, seed=seed).positions
    spawns = qualified[np.arange(DRONES) % len(qualified)].astype(np.float32)  # repeated if fewer
    yaw = np.linspace(-np.pi, np.pi, DRONES, endpoint=False).astype(np.float32)
    sensor = settings.sensor
    local = sensor_directions(sensor.azimuth_bins, sensor.elevation_bins)
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    up = np.broadcast_to(local[:, 2], (DRONES, len(local)))
    # [drones, R, 3] -> [drones*R, 3], drone-major like the sensor's output
    world = np.stack([c * local[:, 0] - s * local[:, 1], s * local[:, 0] + c * local[:, 1], up], axis=-1)
    world = np.ascontiguousarray(world.reshape(-1, 3), dtype=np.float32)
    origins = np.repeat(spawns, len(local), axis=0).astype(np.float32)
    rays = len(origins)

    tracer = Tracer(pack_scenes([scene]), sensor, settings.tracer)
    out = torch.empty(DRONES, 3, sensor.azimuth_bins, sensor.elevation_bins)
    pos_t, yaw_t = torch.from_numpy(spawns), torch.from_numpy(yaw)
    ids = torch.zeros(DRONES, dtype=torch.int32)
    scalar_out = np.empty((DRONES, 3, len(local)), dtype=np.float32)
    scalar_stats = np.empty((DRONES, -(-len(local) // scalar.PACKET), 2), dtype=np.float32)
    scalar_args = (
        spawns, yaw, ids.numpy(), local, tracer.horizon, scalar_out, scalar_out, scalar_stats,
        *tracer.atlas.kernel_args(), *tracer.rules,
    )  # fmt: skip
    contenders: dict[str, Callable[[], object]] = {
        "ours": lambda: tracer.trace_sensor(pos_t, yaw_t, ids, out),
        "scalar": lambda: scalar.trace_sensor(*scalar_args),
    }
    if embree is not None:
        contenders["embree"] = lambda: embree.run(origins, world, output=1)
    for fn in contenders.values():  # compile / load caches
        fn()
    best = _best_interleaved(contenders, repeats)
    record: dict[str, Any] = {
        "scene": f"{family}:{seed}", "voxel_m": scene.voxel_size, "triangles": len(mesh.faces),
        "rays": rays, "scene_bytes": scene.nbytes,
        "ours_mrays_per_s": rays / best["ours"] / 1e6, "scalar_mrays_per_s": rays / best["scalar"] / 1e6,
        "speedup_vs_scalar": best["scalar"] / best["ours"],
        "embree_mrays_per_s": None, "ratio_vs_embree": None,
        "median_error_voxels": None, "p95_error_voxels": None, "hit_agreement": None,
    }  # fmt: skip
    if embree is not None:
        record |= _embree_agreement(embree.run(origins, world, output=1), out, sensor.horizon_m, scene)
        record |= {
            "embree_mrays_per_s": rays / best["embree"] / 1e6,
            "ratio_vs_embree": best["embree"] / best["ours"],
        }
    if device is not None:
        record |= _trace_on_device(
            scene, spawns, yaw, qualified=qualified, reference=out, device=device, drones=device_drones,
            repeats=repeats,
        )  # fmt: skip
    return record, scene


def _embree_agreement(
    result: dict, out: torch.Tensor, horizon: float, scene: RuntimeScene
) -> dict[str, float]:  # type: ignore[type-arg]
    """Distance error (voxels) on rays both hit, and hit-flag agreement, of ``out`` against Embree."""
    ours_t = out[:, 0].reshape(-1).numpy() * horizon
    ours_hit = out[:, 2].reshape(-1).numpy() > 0
    ref_t = np.asarray(result["tfar"], dtype=np.float64)
    ref_hit = (np.asarray(result["geomID"]) >= 0) & (ref_t <= horizon)
    both = ours_hit & ref_hit
    err_vox = np.abs(ours_t[both] - ref_t[both]) / scene.voxel_size
    return {
        "median_error_voxels": float(np.median(err_vox)),
        "p95_error_voxels": float(np.percentile(err_vox, 95)),
        "hit_agreement": float(np.mean(ours_hit == ref_hit)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="apartment", choices=[*FAMILIES, "all"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resolution", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--device", default=None, help="Also time the tracer, and the steps, here (cuda).")
    parser.add_argument("--device-drones", type=int, default=256, help="Drones per trace on --device.")
    parser.add_argument("--step-actors", default="4,32", help="Batch sizes of the step timings.")
    args = parser.parse_args()
    configure_logging("warning")  # logs to stderr: stdout carries only the JSON line
    device = torch.device(args.device) if args.device else None
    if device is not None and device.type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: no CUDA device is available on this machine")
    try:
        step_actors = [int(n) for n in args.step_actors.split(",")]
    except ValueError:
        parser.error(f"--step-actors wants comma-separated drone counts, got {args.step_actors!r}")

    families = list(FAMILIES) if args.family == "all" else [args.family]
    numba.set_num_threads(1)
    records, scenes = [], []
    for family in families:
        record, scene = _trace_family(
            family, args.seed, resolution=args.resolution, repeats=args.repeats, device=device,
            device_drones=args.device_drones,
        )  # fmt: skip
        records.append(record)
        scenes.append(scene)
    numba.set_num_threads(_numba_config.NUMBA_NUM_THREADS)
    settings = EnvironmentSettings()
    runs = {
        n: bench_backend(settings, n, 30 if i == 0 else 10, scenes=scenes[:1], device=args.device or "cpu")
        for i, n in enumerate(step_actors)
    }
    first = runs[step_actors[0]]
    steps: dict[str, Any] = {f"ms_per_step_{n}": r["ms_per_step"] for n, r in runs.items()}
    steps |= {f"cpu_ms_per_step_{n}": r["cpu_ms_per_step"] for n, r in runs.items()}
    steps |= {f"drone_steps_per_s_{n}": r["steps_per_s"] for n, r in runs.items()}
    n0 = step_actors[0]
    steps |= {
        f"trace_share_{n0}": first["trace_share"], f"cpu_trace_share_{n0}": first["cpu_trace_share"],
        f"in_step_trace_share_{n0}": first["in_step_trace_share"],
        "in_step_trace_share_target": 0.75, "meets_step_share": first["in_step_trace_share"] >= 0.75,
        "step_threads": _numba_config.NUMBA_NUM_THREADS, "step_device": args.device or "cpu",
    }  # fmt: skip
    if device is not None and device.type == "cuda":
        steps["gpu"] = torch.cuda.get_device_name(device)
    head = {"bench": "tracer", "resolution": args.resolution, "repeats": args.repeats}
    if len(records) == 1:
        print(json.dumps({**head, **records[0], **steps}))
        return
    ratios = [r["ratio_vs_embree"] for r in records if r["ratio_vs_embree"] is not None]
    errors = [r["median_error_voxels"] for r in records if r["median_error_voxels"] is not None]
    print(
        json.dumps({
            **head, "families": {f: r for f, r in zip(families, records, strict=True)},
            "mean_ratio_vs_embree": float(np.mean(ratios)) if ratios else None,
            "min_ratio_vs_embree": float(np.min(ratios)) if ratios else None,
            "mean_speedup_vs_scalar": float(np.mean([r["speedup_vs_scalar"] for r in records])),
            "max_median_error_voxels": float(max(errors)) if errors else None,
            **steps, "step_scene": records[0]["scene"],
        })
    )  # fmt: skip


if __name__ == "__main__":
    main()

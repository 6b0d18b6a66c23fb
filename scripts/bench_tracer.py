"""Benchmark: Navi's sphere tracer against Embree triangle ray casting, one thread each.

Same procedural scene (the mesh for Embree, the compiled .gmdag -> brick map for us), same rays
(the spherical sensor of drones at qualified spawns). Prints ONE JSON line:

    Mrays/s ours and Embree (per thread), their ratio, ms per full step at 4 and 32 drones,
    agreement (median / p95 distance error in voxels on rays both hit, hit-flag agreement), and the
    share of step() time spent tracing at 4 drones (wall and process CPU time).

Usage: ``uv run python scripts/bench_tracer.py [--family apartment] [--seed 0] [--resolution 256]``
"""

from __future__ import annotations

import argparse
import json
import time

import numba
import numpy as np
import torch

from navi_environment.config import EnvironmentSettings
from navi_environment.gmdag.writer import compile_sdf_to_gmdag
from navi_environment.runtime.atlas import pack_scenes
from navi_environment.runtime.bench import bench_backend
from navi_environment.runtime.loader import scene_from_asset
from navi_environment.runtime.spawn import qualify_scene
from navi_environment.runtime.tracer import Tracer, sensor_directions
from navi_environment.scenes.export import layout_mesh
from navi_environment.scenes.rasterize import layout_grids
from navi_environment.scenes.registry import generate


def _best_of(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    """Smallest process CPU time of ``repeats`` calls.

    Both contenders run on one thread, so CPU time equals their work and, unlike wall time, does
    not count the time other processes hold the core (the dev box is a shared 2-core machine).
    """
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="apartment")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resolution", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()

    from embreex import rtcore_scene
    from embreex.mesh_construction import TriangleMesh

    settings = EnvironmentSettings()
    layout = generate(args.family, args.seed)
    sdf, semantic, bmin, voxel = layout_grids(layout, args.resolution)
    scene = scene_from_asset(compile_sdf_to_gmdag(sdf, semantic, bmin, voxel), settings)
    mesh = layout_mesh(layout)
    embree = rtcore_scene.EmbreeScene()
    TriangleMesh(embree, mesh.vertices[mesh.faces].astype(np.float32))

    qualified = qualify_scene(scene, settings, seed=args.seed).positions
    drones = 4
    spawns = qualified[np.arange(drones) % len(qualified)]  # best spawns (repeated if fewer than 4)
    yaw = np.linspace(-np.pi, np.pi, drones, endpoint=False).astype(np.float32)
    sensor = settings.sensor
    local = sensor_directions(sensor.azimuth_bins, sensor.elevation_bins)
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    up = np.broadcast_to(local[:, 2], (drones, len(local)))
    # [drones, R, 3] -> [drones*R, 3], drone-major like the sensor's output
    world = np.stack([c * local[:, 0] - s * local[:, 1], s * local[:, 0] + c * local[:, 1], up], axis=-1)
    world = world.reshape(-1, 3)
    origins = np.repeat(spawns, len(local), axis=0).astype(np.float32)
    world = np.ascontiguousarray(world, dtype=np.float32)
    rays = len(origins)

    numba.set_num_threads(1)
    tracer = Tracer(pack_scenes([scene]), sensor, settings.tracer)
    out = torch.empty(drones, 3, sensor.azimuth_bins, sensor.elevation_bins)
    pos_t, yaw_t = torch.from_numpy(spawns.astype(np.float32)), torch.from_numpy(yaw)
    ids = torch.zeros(drones, dtype=torch.int32)
    tracer.trace_sensor(pos_t, yaw_t, ids, out)  # compile / load cache
    ours_s = _best_of(lambda: tracer.trace_sensor(pos_t, yaw_t, ids, out), args.repeats)
    result = embree.run(origins, world, output=1)
    embree_s = _best_of(lambda: embree.run(origins, world, output=1), args.repeats)

    horizon = sensor.horizon_m
    ours_t = out[:, 0].reshape(-1).numpy() * horizon
    ours_hit = out[:, 2].reshape(-1).numpy() > 0
    ref_t = np.asarray(result["tfar"], dtype=np.float64)
    ref_hit = (np.asarray(result["geomID"]) >= 0) & (ref_t <= horizon)
    both = ours_hit & ref_hit
    err_vox = np.abs(ours_t[both] - ref_t[both]) / scene.voxel_size

    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    scenes = [scene]
    step4 = bench_backend(settings, 4, 30, scenes=scenes)
    step32 = bench_backend(settings, 32, 10, scenes=scenes)
    record = {
        "bench": "tracer", "scene": f"{args.family}:{args.seed}", "resolution": args.resolution,
        "voxel_m": scene.voxel_size, "triangles": len(mesh.faces), "rays": rays,
        "ours_mrays_per_s": rays / ours_s / 1e6, "embree_mrays_per_s": rays / embree_s / 1e6,
        "ratio_vs_embree": embree_s / ours_s,
        "median_error_voxels": float(np.median(err_vox)),
        "p95_error_voxels": float(np.percentile(err_vox, 95)),
        "hit_agreement": float(np.mean(ours_hit == ref_hit)),
        "ms_per_step_4": step4["ms_per_step"], "ms_per_step_32": step32["ms_per_step"],
        "cpu_ms_per_step_4": step4["cpu_ms_per_step"], "cpu_ms_per_step_32": step32["cpu_ms_per_step"],
        "trace_share_4": step4["trace_share"], "cpu_trace_share_4": step4["cpu_trace_share"],
        "step_threads": numba.config.NUMBA_NUM_THREADS,
        "scene_bytes": scene.nbytes,
    }  # fmt: skip
    print(json.dumps(record))


if __name__ == "__main__":
    main()

"""Benchmark the .gmdag compiler: time and peak memory per resolution, compression at 256.

Each resolution runs in a fresh subprocess so ``ru_maxrss`` is that compile's own peak (numpy and
numba allocations included, which tracemalloc misses). Numba kernels are compiled (or loaded from
cache) by a warm-up compile at 32^3 inside each child before timing. Prints ONE JSON line.

Targets on 2 cores: 256^3 <= 30 s; 512^3 <= 240 s and <= 8 GiB; compression >= 10x at 256.
Large meshes (``--large-mesh``: a generated ~200k-triangle, ~10 MB OBJ of a hilly site with
1,667 buildings): 256^3 <= 30 s, 512^3 <= 180 s within 8 GiB.

Usage: uv run python scripts/bench_compile.py [--source SPEC | --large-mesh] [--resolutions 128,256,512]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

LARGE_MESH_TERRAIN_CELLS = 300
"""The large mesh's terrain is this many cells a side (2 triangles each: 180,000, a scan-like site)."""
LARGE_MESH_BOXES = 1_667
"""Buildings on it, 12 triangles each (20,004 triangles)."""


def write_large_mesh(path: Path, seed: int = 0) -> dict[str, object]:
    """Write a 200,000-triangle OBJ (about 10 MB): a 160 m hilly terrain with 1,667 box buildings.

    Returns:
        What was written: triangles, vertices, bytes.
    """
    rng = np.random.default_rng(seed)
    cells, size = LARGE_MESH_TERRAIN_CELLS, 160.0
    axis = np.linspace(-size / 2, size / 2, cells + 1)
    x, y = np.meshgrid(axis, axis, indexing="ij")
    height = 2.0 * np.sin(x / 17.0) * np.cos(y / 23.0) + 0.02 * rng.standard_normal(x.shape)
    terrain = np.stack([x, y, height], axis=-1).reshape(-1, 3)
    index = np.arange((cells + 1) ** 2).reshape(cells + 1, cells + 1)
    a, b, c, d = index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]
    terrain_faces = np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)]).reshape(-1, 3)
    centre = rng.uniform(-size / 2 + 5, size / 2 - 5, size=(LARGE_MESH_BOXES, 2))
    half = rng.uniform(0.5, 3.0, size=(LARGE_MESH_BOXES, 2))
    base = 2.0 * np.sin(centre[:, 0] / 17.0) * np.cos(centre[:, 1] / 23.0) - 0.5
    top = base + rng.uniform(2.0, 12.0, size=LARGE_MESH_BOXES)
    lo = np.column_stack([centre - half, base])
    hi = np.column_stack([centre + half, top])
    corners = np.array(
        [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]]
    )
    box_vertices = (lo[:, None, :] + corners[None] * (hi - lo)[:, None, :]).reshape(-1, 3)
    box_faces = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
                          [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]])  # fmt: skip
    faces = box_faces[None] + 8 * np.arange(LARGE_MESH_BOXES)[:, None, None] + len(terrain)
    vertices = np.concatenate([terrain, box_vertices])
    all_faces = np.concatenate([terrain_faces, faces.reshape(-1, 3)]) + 1
    with path.open("w") as stream:
        np.savetxt(stream, vertices, fmt="v %.9f %.9f %.9f")
        np.savetxt(stream, all_faces, fmt="f %d %d %d")
    return {"triangles": len(all_faces), "vertices": len(vertices), "bytes": path.stat().st_size}


def child(source: str, resolution: int) -> dict[str, object]:
    """Compile once (after a warm-up) and report time, size and this process's peak RSS."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import encode_gmdag

    settings = CompileSettings()
    compile_source(source, settings, resolution=32)  # JIT / cache load, not timed
    baseline_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    compiled = compile_source(source, settings, resolution=resolution)
    data = encode_gmdag(compiled.asset)
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: KiB
    dense_fp16 = 2 * resolution**3
    return {
        "resolution": resolution,
        "seconds": round(seconds, 2),
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "warmup_rss_mib": round(baseline_rss / 1024, 1),
        "node_count": int(compiled.asset.nodes.shape[0]),
        "bytes": len(data),
        "dense_fp16_bytes": dense_fp16,
        "compression_ratio": round(dense_fp16 / len(data), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", default="procedural:apartment:seed=0")
    parser.add_argument(
        "--large-mesh", action="store_true", help="Compile a generated 200k-triangle OBJ instead of --source."
    )
    parser.add_argument("--resolutions", default="128,256,512")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        from navi_common import configure_logging

        configure_logging("warning")  # logs to stderr: stdout carries only the JSON line
        print(json.dumps(child(args.source, args.child)))
        return
    mesh_info: dict[str, object] | None = None
    scratch = tempfile.TemporaryDirectory(prefix="bench_compile_")
    if args.large_mesh:
        mesh_path = Path(scratch.name) / "large_site.obj"
        mesh_info = write_large_mesh(mesh_path)
        args.source = str(mesh_path)
        print(f"bench_compile: wrote {mesh_info}", file=sys.stderr, flush=True)
    results = []
    for resolution in (int(value) for value in args.resolutions.split(",")):
        print(f"bench_compile: {args.source} at {resolution}^3 ...", file=sys.stderr, flush=True)
        done = subprocess.run(
            [sys.executable, __file__, "--source", args.source, "--child", str(resolution)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "NAVI_LOG_LEVEL": "warning", "NAVI_ENV_LOG_LEVEL": "warning"},
        )
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    by_resolution = {str(r["resolution"]): r for r in results}
    summary = {
        "bench": "compile",
        "source": "generated large mesh" if mesh_info else args.source,
        "mesh": mesh_info,
        "cpu_count": os.cpu_count(),
        "results": by_resolution,
        "compression_ratio_256": by_resolution.get("256", {}).get("compression_ratio"),
        "targets": {"seconds_256": 30, "seconds_512": 180 if mesh_info else 240, "peak_rss_mib_512": 8192}
        | ({} if mesh_info else {"compression_256": 10}),
    }
    scratch.cleanup()
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

"""Benchmark the .gmdag compiler: time and peak memory per resolution, compression at 256.

Each resolution runs in a fresh subprocess so ``ru_maxrss`` is that compile's own peak (numpy and
numba allocations included, which tracemalloc misses). Numba kernels are compiled (or loaded from
cache) by a warm-up compile at 32^3 inside each child before timing. Prints ONE JSON line.

Targets on 2 cores: 256^3 <= 30 s; 512^3 <= 240 s and <= 8 GiB; compression >= 10x at 256.

Usage: uv run python scripts/bench_compile.py [--source SPEC] [--resolutions 128,256,512]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


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
    parser.add_argument("--resolutions", default="128,256,512")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.source, args.child)))
        return
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
        "source": args.source,
        "cpu_count": os.cpu_count(),
        "results": by_resolution,
        "compression_ratio_256": by_resolution.get("256", {}).get("compression_ratio"),
        "targets": {"seconds_256": 30, "seconds_512": 240, "peak_rss_mib_512": 8192, "compression_256": 10},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

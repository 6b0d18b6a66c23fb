"""Codec cost: encode+decode of a 4x256x48 DistanceMatrix, and the size of the codec's source.

Prints ONE JSON line. ``encode_us`` + ``decode_us`` is the wire form (``encode_frames`` /
``decode_frames``: a msgpack header frame plus raw array frames, what the socket helpers send);
``buffer_encode_us`` + ``buffer_decode_us`` is the one-buffer form of ``encode`` / ``decode``
(recordings), which adds one copy. ``copy_us`` (``np.copy`` of the message's eight arrays) is timed in
the same run as a yardstick for how loaded the machine was. Rounds are interleaved and timed in
process CPU time; each variant keeps its best round. ``codec_lines`` counts the lines (``wc -l``) of
the codec modules (``codec*.py``, ``fast_*.py``, ``msgpack_view.py``) of the installed package, and
``contracts_src_lines`` those of every module of ``navi_contracts`` (issue 18: under 1,500).

    uv run python scripts/bench_codec.py [--rounds 15] [--iterations 200]

``--baseline DIR`` runs the script a second time against another ``contracts/src`` (``PYTHONPATH=DIR``),
back to back on the same machine, and adds its numbers and the ratios. The codec before issue 18 kept
``encode_frames`` in ``codec_frames``, compiled a value-check kernel in the background, and its sockets
sent the one-buffer form by default, so ``ratio_to_baseline_buffer`` (today's wire form against that
one) is the issue's "within 1.5x of today's time"::

    git archive 2b900af^ contracts/src | tar -x -C /tmp/pre18
    uv run python scripts/bench_codec.py --baseline /tmp/pre18/contracts/src
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click
import numpy as np

import navi_contracts
from navi_common import configure_logging
from navi_contracts import DistanceMatrix, decode, encode
from navi_contracts.samples import sample_distance_matrix

try:
    from navi_contracts import decode_frames, encode_frames
except ImportError:  # the codec before issue 18
    from navi_contracts.codec_frames import decode_frames, encode_frames  # type: ignore[import-not-found,no-redef]

CODEC_MODULES = ("codec*.py", "fast_*.py", "msgpack_view.py")


def _best_seconds_per_call(
    variants: dict[str, Callable[[], object]], rounds: int, iterations: int
) -> dict[str, float]:
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(rounds):
        for name, call in variants.items():  # interleaved: every variant sees the same disturbances
            started = time.process_time()
            for _ in range(iterations):
                call()
            best[name] = min(best[name], (time.process_time() - started) / iterations)
    return best


def codec_lines(patterns: tuple[str, ...] = CODEC_MODULES) -> dict[str, int]:
    """``wc -l`` of each module of the installed ``navi_contracts`` matching ``patterns``."""
    package = Path(navi_contracts.__file__).parent
    files = sorted({path for pattern in patterns for path in package.rglob(pattern)})
    return {str(path.relative_to(package)): len(path.read_bytes().splitlines()) for path in files}


def _wait_for_old_kernel() -> None:
    """The codec before issue 18 compiled its value checks in the background: time its steady state."""
    try:
        from navi_contracts import fast_checks  # type: ignore[attr-defined]
    except ImportError:
        return
    fast_checks.wait_ready(timeout=120.0)


@click.command()
@click.option("--rounds", default=15, show_default=True, help="Interleaved timing rounds per variant.")
@click.option("--iterations", default=200, show_default=True, help="Calls per round.")
@click.option("--batch", default=4, show_default=True, help="Drones (B).")
@click.option("--azimuth", default=256, show_default=True, help="Azimuth bins (Az).")
@click.option("--elevation", default=48, show_default=True, help="Elevation bins (El).")
@click.option(
    "--baseline",
    type=click.Path(exists=True, file_okay=False),
    help="Another contracts/src to time right after this one (e.g. the codec before issue 18).",
)
def main(
    *, rounds: int, iterations: int, batch: int, azimuth: int, elevation: int, baseline: str | None
) -> None:
    """Time encode and decode of one observation; count the codec's and the package's lines."""
    configure_logging("warning")  # logs to stderr: stdout carries only the JSON line
    message = sample_distance_matrix(batch, azimuth, elevation, seed=1)
    assert message.delta_depth is not None and message.poses is not None
    arrays = [message.depth, message.semantic, message.valid_mask, message.delta_depth, message.env_ids,
              message.episode_ids, message.poses.position, message.poses.yaw]  # fmt: skip
    _wait_for_old_kernel()
    payload = encode(message)
    # As a subscriber receives them: one flat byte buffer per frame (ZeroMQ's Frame.buffer).
    frames = [memoryview(bytes(frame)) for frame in encode_frames(message)]
    if decode(payload, expected=DistanceMatrix) != message or decode_frames(frames) != message:
        raise SystemExit("round trip failed: refusing to time a broken codec")
    variants: dict[str, Callable[[], object]] = {
        "copy": lambda: [np.copy(array) for array in arrays],
        "encode": lambda: encode_frames(message),
        "decode": lambda: decode_frames(frames, expected=DistanceMatrix),
        "buffer_encode": lambda: encode(message),
        "buffer_decode": lambda: decode(payload, expected=DistanceMatrix),
    }
    best = _best_seconds_per_call(variants, rounds, iterations)
    lines = codec_lines()
    result = {
        "benchmark": "codec",
        "message": f"DistanceMatrix B={batch} {azimuth}x{elevation} (+delta_depth, poses)",
        "encode_us": round(best["encode"] * 1e6, 1),
        "decode_us": round(best["decode"] * 1e6, 1),
        "encode_decode_us": round((best["encode"] + best["decode"]) * 1e6, 1),
        "buffer_encode_us": round(best["buffer_encode"] * 1e6, 1),
        "buffer_decode_us": round(best["buffer_decode"] * 1e6, 1),
        "buffer_encode_decode_us": round((best["buffer_encode"] + best["buffer_decode"]) * 1e6, 1),
        "copy_us": round(best["copy"] * 1e6, 1),
        "buffer_bytes": len(payload),
        "codec_lines": sum(lines.values()),
        "codec_files": lines,
        "contracts_src_lines": sum(codec_lines(("*.py",)).values()),
        "rounds": rounds,
        "iterations": iterations,
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    if baseline:
        argv = [f"--rounds={rounds}", f"--iterations={iterations}", f"--batch={batch}"]
        other = _run_baseline(baseline, [*argv, f"--azimuth={azimuth}", f"--elevation={elevation}"])
        result["baseline"] = other
        result["ratio_to_baseline_frames"] = round(result["encode_decode_us"] / other["encode_decode_us"], 2)
        result["ratio_to_baseline_buffer"] = round(
            result["encode_decode_us"] / other["buffer_encode_decode_us"], 2
        )
    print(json.dumps(result))


def _run_baseline(source: str, argv: list[str]) -> dict[str, object]:
    """This script's result against the ``navi_contracts`` under ``source`` (a fresh process)."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(source)}
    done = subprocess.run(
        [sys.executable, __file__, *argv], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise click.ClickException(f"the baseline run failed: {done.stderr.strip().splitlines()[-1:]}")
    result: dict[str, object] = json.loads(done.stdout)
    return result


if __name__ == "__main__":
    main()

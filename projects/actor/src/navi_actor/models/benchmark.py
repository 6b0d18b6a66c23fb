"""Policy speed benchmark: ``uv run python -m navi_actor.models.benchmark`` prints ONE JSON line.

Measures, for each requested encoder x core, the acting step (B drones, no gradients) and the
learning pass (``evaluate_sequences`` over T x B plus backward), next to a dense matmul
reference measured in the same run, so results from a busy machine can still be compared as
ratios. The visit features a policy reads (``visit_input``, on by default) are given, not read from
a memory: the map's cost is the trainer's (``scripts/bench_train.py``), not the network's. The load
average is reported because other processes distort CPU timings; process CPU
time (``*_cpu_ms``) is reported too, since on a contended machine it is closer to the cost than the
wall clock (with one thread it approximates the unloaded wall time).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

import click
import torch

from navi_actor.models.config import ENCODER_BACKENDS, TEMPORAL_CORES, PolicyConfig
from navi_actor.models.policy import NaviPolicy


def _median_ms(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall-clock and process-CPU milliseconds of ``fn`` over ``repeats`` calls."""
    fn()  # warm-up: allocator, kernels, lazy init
    wall, cpu = [], []
    for _ in range(repeats):
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - cpu_start) * 1000.0)
        wall.append((time.perf_counter() - wall_start) * 1000.0)
    return sorted(wall)[len(wall) // 2], sorted(cpu)[len(cpu) // 2]


def matmul_gflops(size: int = 1024, repeats: int = 10) -> float:
    """Dense float32 matmul throughput of this machine (GFLOP/s), the in-run reference."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    return 2 * size**3 / _median_ms(lambda: a @ b, repeats)[0] / 1e6


def measure_policy(cfg: PolicyConfig, batch: int, horizon: int, repeats: int) -> dict[str, float]:
    """Time ``act`` on ``[batch]`` and ``evaluate_sequences`` + backward on ``[horizon, batch]``."""
    torch.manual_seed(0)
    policy = NaviPolicy(cfg)
    obs = torch.rand(batch, cfg.in_channels, cfg.azimuth, cfg.elevation)
    state = policy.initial_state(batch)
    starts = torch.zeros(batch, dtype=torch.bool)
    memory = policy.new_memory(batch)  # None unless memory_input
    features = cfg.visits.features
    visits = torch.rand(batch, features) if cfg.visit_input else None  # the memory's reading: not timed
    act_ms, act_cpu_ms = _median_ms(
        lambda: policy.act(obs, state, starts, memory=memory, visit_features=visits), repeats * 5
    )
    window = torch.rand(horizon, batch, cfg.in_channels, cfg.azimuth, cfg.elevation)
    actions = torch.randn(horizon, batch, cfg.action_dim)
    window_starts = torch.zeros(horizon, batch, dtype=torch.bool)
    window_starts[horizon // 2, 0] = True

    def learn() -> None:
        evaluation = policy.evaluate_sequences(
            window, actions, state, window_starts, loop_scores=torch.rand(horizon, batch),
            visit_features=torch.rand(horizon, batch, features) if cfg.visit_input else None,
        )  # fmt: skip
        (evaluation.log_prob.mean() + evaluation.value.square().mean()).backward()

    learn_ms, learn_cpu_ms = _median_ms(learn, repeats)
    return {
        "params": sum(p.numel() for p in policy.parameters()),
        "act_ms": round(act_ms, 2),
        "act_cpu_ms": round(act_cpu_ms, 2),
        "learn_ms": round(learn_ms, 1),
        "learn_cpu_ms": round(learn_cpu_ms, 1),
    }


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--encoder-backend", "encoders", multiple=True, type=click.Choice(ENCODER_BACKENDS))
@click.option("--temporal-core", "cores", multiple=True, type=click.Choice(TEMPORAL_CORES))
@click.option("--batch", default=4, show_default=True, help="Drones B.")
@click.option("--horizon", default=64, show_default=True, help="Sequence length T of the learning pass.")
@click.option("--repeats", default=3, show_default=True, help="Timed repeats (median is reported).")
@click.option("--threads", default=0, show_default=True, help="torch intra-op threads (0: torch default).")
def main(
    *, encoders: tuple[str, ...], cores: tuple[str, ...], batch: int, horizon: int, repeats: int, threads: int
) -> None:
    """Time the default-size policy (256x48) for acting and learning; print one JSON line."""
    if threads > 0:
        torch.set_num_threads(threads)
    results = {}
    reference = matmul_gflops()
    for encoder in encoders or ("rayvit",):
        for core in cores or TEMPORAL_CORES:
            cfg = PolicyConfig(encoder_backend=encoder, temporal_core=core)  # type: ignore[arg-type]
            results[f"{encoder}+{core}"] = measure_policy(cfg, batch, horizon, repeats)
    report = {
        "benchmark": "policy",
        "batch": batch,
        "horizon": horizon,
        "threads": torch.get_num_threads(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "matmul_gflops": round(reference, 1),
        "results": results,
    }
    click.echo(json.dumps(report))


if __name__ == "__main__":
    main()

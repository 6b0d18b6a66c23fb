"""Throughput of Ray training with 1 and 2 rollout workers against the local trainer, and with 1 and 2
data-parallel learner ranks (``--learners``, issue 22), in one run.

Prints ONE JSON line. The same settings drive all three: each of the local trainer and every Ray
worker steps ``--actors`` drones for ``--rollout-length`` steps per rollout, with the same policy
and PPO update. Measured: learned environment steps (all drones) per wall-clock second over
``--updates`` collect+update iterations, timed from the end of a first (warm-up) update to the end of
the last one, in the same run (numba compilation, first allocations, worker start-up and the first
weight broadcast are excluded). A Ray update learns from one fragment per worker, so 2 workers learn
from twice the local batch per update. Logs go to stderr (warnings only); stdout is the JSON line.

Learner scaling runs ``train_distributed`` with 2 rollout workers and ``learners`` 1 and 2 (2 ranks
under Ray Train, half a CPU reserved per process so both fit a 2-core box) and reads the run's
``metrics.jsonl``: the PPO update's time (the sum of its ``time/update_*`` stages, which include
DDP's gradient all-reduce inside ``backward``) and the end-to-end learned steps/s between the first
and the last update (``charts/sps`` gives each update's elapsed time). On 2 cores two ranks only
add overhead (process group, scatter of the columns, all-reduces); they are for several GPUs/nodes.

Ratios are taken against the local trainer measured in the same process, so a loaded machine moves
all three together. On a 2-core box the learner and two workers share two cores: expect the gain
to come from overlapping collection with the update (``collect_ahead``), not from more cores.

    uv run python scripts/bench_scaling.py [--env point|sdfdag] [--gmdag-file F] [--updates 3]
        [--actors 4] [--rollout-length 32] [--tiny] [--threads 1] [--sync] [--no-learners]
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import torch

from navi_actor.config import ActorSettings
from navi_actor.distributed import DistributedConfig, DistributedTrainer, require_ray, train_distributed
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.on_policy_runner import OnPolicyRunner
from navi_common.logging import configure_logging

TINY_POLICY = {"embed_dim": 32, "vit_dim": 32, "vit_layers": 1, "ssm_head_dim": 16, "ssm_chunk": 8}


def make_settings(options: dict[str, Any], updates: int, artifacts: Path) -> ActorSettings:
    """Settings for ``updates`` local-sized iterations (each Ray worker contributes one rollout)."""
    steps = options["actors"] * options["rollout_length"] * updates
    values: dict[str, Any] = {
        "environment": {"backend": options["env"], "gmdag_file": options["gmdag_file"]},
        "rollout": {
            "num_actors": options["actors"],
            "rollout_length": options["rollout_length"],
            "sequence_length": min(32, options["rollout_length"]),
        },
        "telemetry": {"enabled": False},
        "checkpoint": {"auto_resume": False, "auto_promote": False, "every_steps": 10**12},
        "train": {"total_steps": steps, "artifacts_dir": artifacts, "torch_threads": options["threads"]},
    }
    if options["temporal_core"]:
        values["temporal_core"] = options["temporal_core"]
    if options["tiny"]:
        values["policy"] = TINY_POLICY
    return ActorSettings(**values)


def timed_run(trainer: Any, steps_per_update: int) -> float:
    """Run ``trainer`` to its budget; steps/s between the end of its first and its last update."""
    update, ends = trainer.learner.update, []

    def timed_update(*args: Any, **kwargs: Any) -> Any:
        result = update(*args, **kwargs)
        ends.append(time.perf_counter())
        return result

    trainer.learner.update = timed_update
    trainer.run_training()
    return steps_per_update * (len(ends) - 1) / (ends[-1] - ends[0])


def local_steps_per_second(options: dict[str, Any], artifacts: Path) -> float:
    """The local trainer: one warm-up update, then ``updates`` timed ones."""
    settings = make_settings(options, 1 + options["updates"], artifacts)
    built = build_environment(settings.environment, settings.rollout.num_actors, settings.train.device)
    runner = OnPolicyRunner(settings, built, artifacts_dir=artifacts)
    return timed_run(runner, options["actors"] * options["rollout_length"])


def ray_steps_per_second(options: dict[str, Any], workers: int, artifacts: Path) -> dict[str, float]:
    """``workers`` rollout workers: one warm-up update, then ``updates`` timed ones."""
    config = DistributedConfig(
        num_workers=workers, worker_torch_threads=options["threads"], collect_ahead=options["collect_ahead"]
    )
    settings = make_settings(options, workers * (1 + options["updates"]), artifacts)
    trainer = DistributedTrainer(settings, config, artifacts_dir=artifacts)
    try:
        rate = timed_run(trainer, workers * options["actors"] * options["rollout_length"])
    finally:
        trainer.close()
    counters = trainer.pool.counters
    return {
        "steps_per_second": rate,
        "dropped_fragments": float(counters.dropped_fragments),
        "worker_restarts": float(counters.worker_restarts),
    }


def learner_scaling(options: dict[str, Any], learners: int, artifacts: Path) -> dict[str, float]:
    """2 rollout workers, ``learners`` ranks: mean update seconds and steps/s after the first update."""
    config = DistributedConfig(
        num_workers=2,
        learners=learners,
        worker_cpus=0.5,
        learner_cpus=0.5,
        worker_torch_threads=options["threads"],
        collect_ahead=options["collect_ahead"],
    )
    settings = make_settings(options, 2 * (1 + options["updates"]), artifacts)
    summary = train_distributed(settings, config, artifacts_dir=artifacts)
    records = [json.loads(line) for line in (summary.run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r["charts/step_id"] - records[0]["charts/step_id"] for r in records]
    elapsed = [
        (r["charts/step_id"] - summary.step_id + summary.steps_this_run) / r["charts/sps"] for r in records
    ]
    updates = [sum(v for k, v in r.items() if k.startswith("time/update_")) for r in records[1:]]
    return {
        "update_seconds": sum(updates) / len(updates),
        "steps_per_second": steps[-1] / (elapsed[-1] - elapsed[0]),
    }


@click.command()
@click.option("--env", "env", type=click.Choice(["point", "sdfdag"]), default="point", show_default=True)
@click.option("--gmdag-file", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None)
@click.option("--updates", type=int, default=3, show_default=True, help="Timed updates per configuration.")
@click.option("--actors", type=int, default=4, show_default=True, help="Drones per process (B).")
@click.option("--rollout-length", type=int, default=32, show_default=True, help="Steps per rollout (T).")
@click.option("--tiny", is_flag=True, help="A tiny policy (what the tests use) instead of the default one.")
@click.option("--temporal-core", default=None, help="Override the default core (e.g. gru).")
@click.option("--threads", type=int, default=1, show_default=True, help="torch threads per process.")
@click.option(
    "--collect-ahead/--sync",
    default=True,
    show_default=True,
    help="Overlap collection with the update (the default), or synchronous PPO.",
)
@click.option("--learners/--no-learners", default=True, show_default=True, help="Also 1 vs 2 learner ranks.")
def main(**options: Any) -> None:
    """Measure local vs Ray (1 and 2 workers) training throughput; print one JSON line."""
    configure_logging("warning")  # structlog writes to stderr; stdout carries only the JSON line
    ray = require_ray()
    torch.set_num_threads(options["threads"])
    artifacts = Path(tempfile.mkdtemp(prefix="navi-bench-scaling-"))
    local = local_steps_per_second(options, artifacts)
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        one = ray_steps_per_second(options, 1, artifacts)
        two = ray_steps_per_second(options, 2, artifacts)
        ranks = {n: learner_scaling(options, n, artifacts) for n in (1, 2)} if options["learners"] else {}
    finally:
        ray.shutdown()
    print(
        json.dumps(
            {
                "benchmark": "scaling",
                "local_steps_per_second": round(local, 2),
                "ray_1_worker_steps_per_second": round(one["steps_per_second"], 2),
                "ray_2_workers_steps_per_second": round(two["steps_per_second"], 2),
                "ray_1_vs_local": round(one["steps_per_second"] / local, 3),
                "ray_2_vs_local": round(two["steps_per_second"] / local, 3),
                "ray_2_vs_ray_1": round(two["steps_per_second"] / one["steps_per_second"], 3),
                **{
                    f"learners_{n}_{key}": round(value, 4)
                    for n, values in ranks.items()
                    for key, value in values.items()
                },
                **(
                    {
                        "learners_2_vs_1_update_time": round(
                            ranks[2]["update_seconds"] / ranks[1]["update_seconds"], 3
                        ),
                        "learners_2_vs_1_steps_per_second": round(
                            ranks[2]["steps_per_second"] / ranks[1]["steps_per_second"], 3
                        ),
                    }
                    if ranks
                    else {}
                ),
                "dropped_fragments": {"ray_1": one["dropped_fragments"], "ray_2": two["dropped_fragments"]},
                "worker_restarts": {"ray_1": one["worker_restarts"], "ray_2": two["worker_restarts"]},
                "env": options["env"],
                "actors_per_process": options["actors"],
                "rollout_length": options["rollout_length"],
                "timed_updates": options["updates"],
                "policy": "tiny" if options["tiny"] else "default",
                "torch_threads": options["threads"],
                "collect_ahead": options["collect_ahead"],
                "cpu_count": os.cpu_count(),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "machine": platform.machine(),
            }
        )
    )


if __name__ == "__main__":
    main()

"""End-to-end throughput of the default trainer, and the PPO update's FLOP efficiency.

Prints ONE JSON line. The run is the default trainer (default policy: rayvit + mamba2, 4 drones,
256x48 sensor, default rollout and PPO settings) stepping ``SdfDagBackend`` in-process on one scene
(``--gmdag-file``, else the default corpus, built first if missing). After one warm-up iteration
(numba compilation, allocator warm-up) ``--iterations`` collect+update iterations are timed:

* ``steps_per_second``: environment steps (all drones) per wall-clock second, end to end;
* ``split``: seconds in the environment, the policy forward while acting, the PPO update, other;
* ``update_flops_per_second`` / ``matmul_flops_per_second`` / ``update_efficiency``: FLOPs of the
  update per process-CPU second, against dense float32 matmul FLOPs per process-CPU second measured
  in the same process with the same thread count. CPU time rather than wall time keeps the ratio
  meaningful on a shared machine. The update's FLOPs are counted with
  ``torch.utils.flop_counter.FlopCounterMode``: one minibatch (policy re-evaluation, losses, backward
  and the RND predictor step) scaled by the minibatches run, plus what each update runs once outside
  its minibatches (``update_flops_per_update_outside_minibatches``: the symmetry loss's no-grad
  replay of the mirrored rollout), found as a whole counted update less its minibatches.

* ``steps_per_second_at_matmul_peak``: what the same run would reach if its update ran at the dense
  matmul rate (the update's FLOPs over that rate on the threads used, plus the measured rest): an
  upper bound for any kernel work on this model and PPO schedule.

With ``--collect-ahead`` (``rollout.collect_ahead``) the next rollout is collected on a second thread
while the update runs: ``env`` / ``policy_forward`` / ``shaping`` are then the collector thread's
seconds, overlapping the update, ``collect_wait`` is what the training thread waited for it, and the
bound is the slower of the two threads (the measured collection, or the update at the matmul rate).
The process CPU time of the update then includes the collector thread's, so ``update_efficiency``
reads low: measure the efficiency without collect-ahead. (Decoupled PPO's replay of each rollout
collected ahead runs once per update and is counted with the mirrored replay.)
``minibatches_per_update`` against ``scheduled_minibatches_per_update`` shows whether the KL stop
(``ppo.target_kl``) cut updates short.

``--by-operator`` (CPU, serial) profiles one more update with ``torch.profiler`` and adds
``by_operator``: per operator class (dense products ``mm``/``addmm``/``bmm``, the attention kernels,
the convolutions) its share of the update's FLOPs (``FlopCounterMode`` over a whole update of the
same schedule), its share of the operators' time and its rate against the dense matmul, all in wall
seconds; ``uncounted`` is the time of operators that do no counted arithmetic (copies, norms,
activations, the optimiser). ``efficiency_without_uncounted`` is what the update would reach with
that time gone and every class at its measured rate: a ceiling for cutting overheads alone.

Targets (2 CPU cores, issue 16): >= 300 steps/s end to end; update efficiency >= 0.5.

On CUDA (``--device cuda``) the clocks are wall clocks read after ``torch.cuda.synchronize()`` (work
is queued asynchronously; process CPU time would count the host only), the environment/policy split
comes from CUDA events (the collector's stage timer), and the update's FLOP rate is compared with a
dense float32 matmul on the same GPU, per wall second. ``--num-actors`` sets the batch of drones
(GPUs want hundreds).

    uv run python scripts/bench_train.py [--gmdag-file F] [--iterations 2] [--threads 2] [--device cpu]
        [--num-actors N] [--temporal-core gru] [--collect-ahead] [--by-operator]
"""

from __future__ import annotations

import json
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

from navi_actor.config import ActorSettings
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.on_policy_runner import OnPolicyRunner
from navi_common import configure_logging

TARGET_STEPS_PER_SECOND = 300.0
TARGET_EFFICIENCY = 0.5


def synchronize(device: torch.device) -> None:
    """Wait for queued CUDA work before a clock is read (nothing to wait for on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clock(device: torch.device) -> float:
    """Seconds for timing work on ``device``: process CPU time on the CPU (on a shared machine it
    counts the work, not the queueing), synchronised wall time on CUDA (the host only launches)."""
    if device.type == "cuda":
        synchronize(device)
        return time.perf_counter()
    return time.process_time()


def matmul_flops_per_second(
    device: torch.device, size: int = 512, repeats: int = 20, wall: bool = False
) -> float:
    """Best dense float32 ``size x size`` matmul rate in FLOPs per :func:`clock` second on ``device``
    (per wall second with ``wall``)."""
    if device.type == "cuda":
        size, repeats = 4096, 50  # enough work per launch to fill the GPU
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    torch.mm(a, b)
    best = float("inf")
    seconds = time.perf_counter if wall else (lambda: clock(device))
    for _ in range(5):
        started = seconds()
        for _ in range(repeats):
            torch.mm(a, b)
        best = min(best, (seconds() - started) / repeats)
    return 2 * size**3 / best


def minibatch_flops(runner: OnPolicyRunner) -> int:
    """FLOPs of one minibatch's policy re-evaluation, losses and backward pass, plus the RND
    predictor's training step that the timed update also runs once per minibatch (optimiser
    steps are not counted)."""
    batch = next(runner.storage.sequence_minibatches(runner.settings.ppo.num_minibatches))
    with FlopCounterMode(display=False) as counter:
        evaluation = runner.policy.evaluate_sequences(
            batch.obs, batch.actions, batch.state0, batch.episode_starts, loop_scores=batch.loop_scores,
            visit_features=batch.visit_features,
        )  # fmt: skip
        loss = -(evaluation.log_prob * batch.advantages).mean() + evaluation.value.square().mean()
        loss = loss - evaluation.entropy.mean()
        loss.backward()
        if runner.shaping.auxiliary_step is not None:
            runner.shaping.auxiliary_step(batch)
    runner.policy.zero_grad(set_to_none=True)
    return int(counter.get_total_flops())


def update_flops_outside_minibatches(runner: OnPolicyRunner, per_minibatch: int) -> int:
    """FLOPs an update runs once, outside its minibatches (the symmetry loss's replay of the mirrored
    rollout): one whole update counted on the stored rollout, less its minibatches' FLOPs. FLOPs
    depend on shapes only, so the count holds for every update of this schedule."""
    with FlopCounterMode(display=False) as counter:
        counted = runner.learner.update(runner.storage, runner.shuffle, runner.shaping.auxiliary_step)
    minibatches = counted.epochs_run * runner.settings.ppo.num_minibatches
    return int(counter.get_total_flops()) - minibatches * per_minibatch


def timed_iteration(runner: OnPolicyRunner) -> dict[str, float]:
    """One collect + update, timed in wall and process-CPU seconds (wall after a device sync)."""
    rollout, device = runner.settings.rollout, runner.storage.device
    synchronize(device)
    wall, cpu = time.perf_counter(), time.process_time()
    stats = runner.source.collect(rollout.gamma, rollout.gae_lambda)  # collect-ahead: hand-over + next
    synchronize(device)
    collect_wall = time.perf_counter() - wall
    update_wall, update_cpu = time.perf_counter(), time.process_time()
    update_clock = clock(device)
    result = runner.learner.update(runner.storage, runner.shuffle, runner.shaping.auxiliary_step)
    update_seconds = clock(device) - update_clock  # synchronises on CUDA: the wall times below are whole
    return {
        "steps": stats.env_steps,
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "collect": collect_wall,
        "env": stats.timings.get("env", 0.0),
        "policy": stats.timings.get("policy", 0.0) + stats.timings.get("bootstrap", 0.0),
        "shaping": stats.timings.get("shaping", 0.0),
        "update": time.perf_counter() - update_wall,
        "update_cpu": time.process_time() - update_cpu,
        "update_clock": update_seconds,
        "minibatches": result.epochs_run * runner.settings.ppo.num_minibatches,
    }


#: Operator classes whose FLOPs ``FlopCounterMode`` counts; every other operator is ``uncounted``.
COUNTED_CLASSES = ("matmul", "attention", "convolution")


def operator_class(name: str) -> str:
    """Class of an operator named as the profiler (``aten::mm``) or the FLOP counter (``aten.mm``)
    names it; ``uncounted`` for operators without counted arithmetic."""
    bare = name.rsplit("::", maxsplit=1)[-1].removeprefix("aten.").split(".")[0]
    if bare in {"mm", "addmm", "bmm", "baddbmm"}:
        return "matmul"
    if "scaled_dot_product" in bare:
        return "attention"
    if "convolution" in bare:
        return "convolution"
    return "uncounted"


def update_by_operator(runner: OnPolicyRunner) -> dict[str, Any]:
    """Profile one update by operator class against the FLOPs a counted update of the same schedule
    does (FLOPs depend on shapes only, so a second rollout's update counts the same)."""
    rollout, ppo = runner.settings.rollout, runner.settings.ppo
    update = runner.learner.update
    flops: dict[str, float] = dict.fromkeys([*COUNTED_CLASSES, "uncounted"], 0.0)
    runner.source.collect(rollout.gamma, rollout.gae_lambda)
    with FlopCounterMode(display=False) as counter:
        counted = update(runner.storage, runner.shuffle, runner.shaping.auxiliary_step)
    for op, count in counter.get_flop_counts()["Global"].items():
        flops[operator_class(str(op))] += count
    runner.source.collect(rollout.gamma, rollout.gae_lambda)
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        profiled = update(runner.storage, runner.shuffle, runner.shaping.auxiliary_step)
    seconds = dict.fromkeys(flops, 0.0)
    for event in profiler.key_averages():
        seconds[operator_class(event.key)] += event.self_cpu_time_total / 1e6  # the op's wall, in us
    scale = profiled.epochs_run / counted.epochs_run  # the KL stop may end one of them early
    flops = {key: value * scale for key, value in flops.items()}
    peak = matmul_flops_per_second(torch.device("cpu"), wall=True)
    total_seconds, total_flops = sum(seconds.values()), sum(flops.values())
    report: dict[str, Any] = {
        key: {
            "flop_share": round(flops[key] / total_flops, 4),
            "time_share": round(seconds[key] / total_seconds, 4),
            "efficiency": round(flops[key] / max(seconds[key], 1e-9) / peak, 4),
        }
        for key in COUNTED_CLASSES
    }
    report["uncounted"] = {"time_share": round(seconds["uncounted"] / total_seconds, 4)}
    report["matmul_flops_per_wall_second"] = round(peak)
    report["minibatches"] = profiled.epochs_run * ppo.num_minibatches
    report["efficiency"] = round(total_flops / total_seconds / peak, 4)
    counted_seconds = total_seconds - seconds["uncounted"]
    report["efficiency_without_uncounted"] = round(total_flops / counted_seconds / peak, 4)
    return report


@click.command()
@click.option("--gmdag-file", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None)
@click.option("--iterations", type=int, default=2, show_default=True, help="Timed collect+update rounds.")
@click.option("--threads", type=int, default=None, help="torch threads (default: torch's choice).")
@click.option("--device", default="cpu", show_default=True)
@click.option("--temporal-core", default=None, help="Override the default core (e.g. gru).")
@click.option("--num-actors", type=click.IntRange(min=1), default=None, help="Drones per batch [default].")
@click.option(
    "--collect-ahead/--no-collect-ahead",
    default=None,
    help="Collect the next rollout while the update runs (rollout.collect_ahead) [the default trainer's].",
)
@click.option(
    "--by-operator",
    is_flag=True,
    help="Profile one more update by operator class (CPU, without collect-ahead): FLOP and time shares.",
)
def main(
    *,
    gmdag_file: Path | None,
    iterations: int,
    threads: int | None,
    device: str,
    temporal_core: str | None,
    num_actors: int | None,
    collect_ahead: bool | None,
    by_operator: bool,
) -> None:
    """Measure the default trainer end to end and print one JSON line."""
    configure_logging("warning")  # logs to stderr: stdout carries only the JSON line
    if by_operator and (device != "cpu" or collect_ahead):
        raise click.UsageError("--by-operator profiles the CPU update alone: drop --device, --collect-ahead")
    if threads is not None:
        torch.set_num_threads(threads)
    values: dict[str, Any] = {
        "temporal_core": temporal_core,
        "rollout": {
            **({"num_actors": num_actors} if num_actors is not None else {}),
            **({"collect_ahead": collect_ahead} if collect_ahead is not None else {}),
        },
        "environment": {"gmdag_file": gmdag_file},
        "train": {"device": device},
        "telemetry": {"enabled": False},
        "checkpoint": {"auto_resume": False, "auto_promote": False},
    }
    settings = ActorSettings(**values)
    built = build_environment(settings.environment, settings.rollout.num_actors, device)
    with tempfile.TemporaryDirectory(prefix="navi-bench-") as scratch:  # the run folder is not kept
        runner = OnPolicyRunner(settings, built, artifacts_dir=Path(scratch))
        timed_iteration(runner)  # warm-up: numba compilation, first allocations
        rounds = [timed_iteration(runner) for _ in range(iterations)]
        runner.source.finish()  # collect-ahead: the rollout collected during the last update
        operators = update_by_operator(runner) if by_operator else None
    per_minibatch = minibatch_flops(runner)
    outside_minibatches = update_flops_outside_minibatches(runner, per_minibatch)
    torch_device = runner.storage.device
    matmul_rate = matmul_flops_per_second(torch_device)
    total = {key: sum(r[key] for r in rounds) for key in rounds[0]}
    timed_flops = per_minibatch * total["minibatches"] + outside_minibatches * iterations
    update_rate = timed_flops / max(total["update_clock"], 1e-9)
    steps_per_second = total["steps"] / total["wall"]
    # the update at the matmul rate: a per-CPU-second rate times the threads on the CPU, wall on CUDA
    parallel = torch.get_num_threads() if torch_device.type == "cpu" else 1
    update_at_peak = timed_flops / (matmul_rate * parallel)
    ahead = settings.rollout.collect_ahead
    collecting = total["env"] + total["policy"] + total["shaping"]  # on its own thread when ahead
    # serial: the rest as measured plus the update at the peak; ahead: the slower of the two threads
    rest = max(collecting, update_at_peak) if ahead else total["wall"] - total["update"] + update_at_peak
    bound = total["steps"] / rest
    policy_cfg = runner.policy.cfg
    print(
        json.dumps(
            {
                "benchmark": "train",
                "steps_per_second": round(steps_per_second, 2),
                "steps_per_cpu_second": round(total["steps"] / total["cpu"], 2),
                "target_steps_per_second": TARGET_STEPS_PER_SECOND,
                "steps_per_second_at_matmul_peak": round(bound, 2),
                "split_seconds": {
                    "env": round(total["env"], 3),
                    "policy_forward": round(total["policy"], 3),
                    "shaping": round(total["shaping"], 3),
                    "ppo_update": round(total["update"], 3),
                    # ahead: the collection overlaps the update; what the training thread waited for it
                    "collect_wait": round(total["collect"], 3),
                    "other": round(
                        total["wall"] - total["update"] - (total["collect"] if ahead else collecting), 3
                    ),
                },
                "collect_ahead": ahead,
                # fewer than the schedule's when the KL stop ended an update early (less update work per step)
                "minibatches_per_update": round(total["minibatches"] / iterations, 2),
                "scheduled_minibatches_per_update": settings.ppo.epochs * settings.ppo.num_minibatches,
                "update_flops_per_minibatch": per_minibatch,
                "update_flops_per_update_outside_minibatches": outside_minibatches,
                "update_flops_per_second": round(update_rate),
                "matmul_flops_per_second": round(matmul_rate),
                "update_efficiency": round(update_rate / matmul_rate, 4),
                "target_update_efficiency": TARGET_EFFICIENCY,
                **({"by_operator": operators} if operators is not None else {}),
                "env_steps_timed": int(total["steps"]),
                "actors": built.env.num_actors,
                "observation_shape": list(built.env.observation_shape),
                "encoder_backend": policy_cfg.encoder_backend,
                "temporal_core": policy_cfg.temporal_core,
                "rollout_length": settings.rollout.rollout_length,
                "torch_threads": torch.get_num_threads(),
                "device": device,
                "gpu": torch.cuda.get_device_name(torch_device) if torch_device.type == "cuda" else None,
                "flops_clock": "wall, cuda-synchronised" if torch_device.type == "cuda" else "process cpu",
                "machine": platform.machine(),
                "cpu_count": __import__("os").cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()

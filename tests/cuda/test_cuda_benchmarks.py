"""scripts/bench_train.py and scripts/bench_tracer.py on the accelerator, at toy sizes: they finish
and report the GPU timings (the split of a training iteration, the device trace) in one JSON line."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
TINY = {
    "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
    "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
    "NAVI_ACTOR_ROLLOUT__ROLLOUT_LENGTH": "16",
    "NAVI_ACTOR_ROLLOUT__SEQUENCE_LENGTH": "8",
    "NAVI_ACTOR_PPO__EPOCHS": "1",
    "NAVI_ACTOR_POLICY__EMBED_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_LAYERS": "1",
    "NAVI_ACTOR_POLICY__SSM_HEAD_DIM": "16",
}

pytestmark = pytest.mark.usefixtures("restore_process_state")


def test_bench_train_reports_the_split_on_the_accelerator(tiny_scene: Path, accel_device: str) -> None:
    main = runpy.run_path(str(SCRIPTS / "bench_train.py"))["main"]
    result = CliRunner().invoke(
        main, ["--gmdag-file", str(tiny_scene), "--iterations", "1", "--device", accel_device,
               "--num-actors", "8", "--threads", "2"], env=TINY, catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["device"] == accel_device and report["actors"] == 8
    assert report["env_steps_timed"] == 8 * 16 and report["steps_per_second"] > 0
    split = report["split_seconds"]
    assert split["env"] > 0 and split["policy_forward"] > 0 and split["ppo_update"] > 0
    assert report["update_flops_per_second"] > 0 and report["matmul_flops_per_second"] > 0


def test_bench_tracer_times_the_tracer_on_the_accelerator(accel_device: str) -> None:
    command = [sys.executable, str(SCRIPTS / "bench_tracer.py"), "--resolution", "32", "--repeats", "1",
               "--device", accel_device, "--device-drones", "8", "--step-actors", "2,4"]  # fmt: skip
    env = {**os.environ, **{k: v for k, v in TINY.items() if k.startswith("NAVI_ENV")}}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["device_drones"] == 8 and report["device_mrays_per_s"] > 0
    assert report["device_vs_numba_hit_agreement"] >= 0.99
    assert (
        report["ms_per_step_2"] > 0 and report["ms_per_step_4"] > 0 and report["step_device"] == accel_device
    )


def test_stage_timer_counts_the_queued_work_not_the_launches(accel_device: str) -> None:
    """With CUDA events (on CUDA) a stage's seconds are its GPU work: about the synchronised wall
    time, where a host clock would have seen only the kernel launches."""
    import time

    import torch

    from navi_actor.algorithms.stage_timer import StageTimer

    dev = torch.device(accel_device)
    size = 4096 if dev.type == "cuda" else 256
    x = torch.randn(size, size, device=dev) / size**0.5
    timer = StageTimer(use_cuda_events=dev.type == "cuda")
    assert timer.use_cuda_events == (dev.type == "cuda")
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    start = time.perf_counter()
    with timer.stage("matmul"):
        for _ in range(30):
            x = torch.tanh(x @ x)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    wall = time.perf_counter() - start
    seconds = timer.totals()["matmul"]
    assert 0.5 * wall <= seconds <= 1.1 * wall + 1e-3, (seconds, wall)


def test_bench_inference_times_the_brains_call_on_the_accelerator_beside_the_cpu(accel_device: str) -> None:
    main = runpy.run_path(str(SCRIPTS / "bench_inference.py"))["main"]
    result = CliRunner().invoke(
        main, ["--device", accel_device, "--drones", "1,4", "--calls", "5", "--warmup", "2"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    devices = ["cpu"] if accel_device == "cpu" else ["cpu", accel_device]
    assert sorted(report["results"]) == sorted(devices)
    for device in devices:
        for count in ("1", "4"):
            timing = report["results"][device][count]
            assert 0 < timing["p50_ms"] <= timing["p95_ms"] and timing["periods_p95"] >= 1
    assert ("speedup_p50" in report) == (accel_device != "cpu")

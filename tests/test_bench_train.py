"""scripts/bench_train.py end to end on one small hall: the throughput benchmark of issue 16's
300 steps/s target prints its JSON line alone on stdout and leaves no run folder behind.

Before this test the script never configured structlog, whose default prints every event (debug
included) on stdout, ahead of the JSON line a reader parses; and each run left a ``navi-bench-*``
folder in the temporary directory.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_settings import TINY

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "bench_train.py"


def scene_file(tmp_path: Path) -> Path:
    """A small compiled hall for the benchmark to train on."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    scene = tmp_path / "hall_000.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=0", CompileSettings(), resolution=32).asset, scene)
    return scene


def run_bench(tmp_path: Path, *options: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """The script on a tiny policy, 2 drones, one thread, one timed round; temporary files in tmp;
    ``settings``: more environment variables."""
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--gmdag-file", str(scene_file(tmp_path)), "--iterations", "1",
         "--num-actors", "2", "--threads", "1", *options],
        env={**os.environ, **TINY, **settings, "TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip


@pytest.mark.parametrize("ahead", ["--no-collect-ahead", "--collect-ahead"])
def test_bench_train_prints_its_json_line_alone_and_keeps_no_run_folder(tmp_path: Path, ahead: str) -> None:
    result = run_bench(tmp_path, ahead)
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = result.stdout.splitlines()  # the JSON line alone: logs go to stderr
    report = json.loads(line)
    assert report["benchmark"] == "train"
    assert report["env_steps_timed"] == 16 * 2  # one timed rollout of 16 steps x 2 drones
    assert report["actors"] == 2 and report["observation_shape"] == [3, 32, 8]
    assert report["steps_per_second"] > 0 and report["update_efficiency"] > 0
    split = {"env", "policy_forward", "shaping", "ppo_update", "collect_wait", "other"}
    assert set(report["split_seconds"]) == split and report["collect_ahead"] == (ahead == "--collect-ahead")
    assert 0 < report["minibatches_per_update"] <= report["scheduled_minibatches_per_update"]
    assert report["split_seconds"]["env"] > 0  # the collector's own seconds, on its thread when ahead
    assert list((tmp_path / "tmp").glob("navi-bench-*")) == []  # the run folder went with the run


@pytest.mark.parametrize(("symmetry", "counted"), [("0.5", True), ("0", False)])
def test_the_update_flops_count_the_mirrored_replay_each_update_runs_outside_its_minibatches(
    tmp_path: Path, symmetry: str, counted: bool
) -> None:
    """With the symmetry loss on (the default) every update replays the mirrored rollout once without
    gradients: FLOPs the minibatches' count alone left out of the efficiency (7.5 % of a default
    update), which are counted now; without the loss there is nothing outside the minibatches."""
    result = run_bench(tmp_path, "--no-collect-ahead", NAVI_ACTOR_PPO__SYMMETRY_COEF=symmetry)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    outside = report["update_flops_per_update_outside_minibatches"]
    # the replay evaluates the whole rollout forward: 32 frames against 8 per minibatch, no backward
    assert (outside > report["update_flops_per_minibatch"] / 2) if counted else (outside == 0)


def test_by_operator_splits_the_update_into_operator_classes_that_add_up(tmp_path: Path) -> None:
    """The tiny policy has all three counted classes (a patch convolution, one attention layer, dense
    products); the shares of FLOPs and of time each add up to one, and removing the uncounted time
    can only raise the efficiency."""
    result = run_bench(tmp_path, "--no-collect-ahead", "--by-operator")
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = result.stdout.splitlines()
    split = json.loads(line)["by_operator"]
    classes = ("matmul", "attention", "convolution")
    assert all(split[key]["flop_share"] > 0 and split[key]["efficiency"] > 0 for key in classes)
    assert sum(split[key]["flop_share"] for key in classes) == pytest.approx(1.0, abs=1e-3)
    times = [split[key]["time_share"] for key in (*classes, "uncounted")]
    assert sum(times) == pytest.approx(1.0, abs=1e-3) and split["uncounted"]["time_share"] > 0
    assert split["efficiency_without_uncounted"] > split["efficiency"] > 0
    assert split["minibatches"] > 0 and split["matmul_flops_per_wall_second"] > 0


def test_by_operator_refuses_collect_ahead_in_one_line(tmp_path: Path) -> None:
    """The collector thread's operators would land in the profile of the update."""
    result = run_bench(tmp_path, "--collect-ahead", "--by-operator")
    assert result.returncode == 2 and "--by-operator" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("name", "kind"),
    [("aten::mm", "matmul"), ("aten.addmm", "matmul"), ("aten.bmm.default", "matmul"),
     ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "attention"),
     ("aten::mkldnn_convolution", "convolution"), ("aten.convolution_backward", "convolution"),
     ("aten::copy_", "uncounted"), ("aten::mmap_like", "uncounted"),
     ("Optimizer.step#Adam.step", "uncounted")],
)  # fmt: skip
def test_operator_class_reads_profiler_and_flop_counter_names_alike(name: str, kind: str) -> None:
    operator_class = runpy.run_path(str(SCRIPT))["operator_class"]  # not run as __main__: no benchmark
    assert operator_class(name) == kind

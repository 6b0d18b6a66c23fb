"""``--learners 2``: data-parallel PPO under Ray Train on a local 2-CPU cluster (gloo ranks).

A run trains and checkpoints from rank 0 only and resumes with another learner count; a killed
learner rank fails the run with one clear message and leaves its checkpoints loadable. (That the
ranks' update equals the single learner's is checked without Ray, in test_data_parallel.py.)
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

ray = pytest.importorskip("ray", reason="the 'distributed' extra (ray) is not installed")
pytest.importorskip("ray.train.torch", reason="the 'distributed' extra lacks ray[train]")

from navi_actor.checkpoints import load_checkpoint  # noqa: E402
from navi_actor.config import ActorSettings  # noqa: E402
from navi_actor.distributed import require_ray, train_distributed  # noqa: E402

pytestmark = pytest.mark.slow

TINY_POLICY = {"embed_dim": 32, "vit_dim": 32, "vit_layers": 1, "ssm_head_dim": 16, "ssm_chunk": 8}


def settings(**overrides: Any) -> ActorSettings:
    values: dict[str, Any] = {
        "temporal_core": "gru",
        "policy": TINY_POLICY,
        "environment": {"backend": "point", "point_azimuth": 32, "point_elevation": 8, "point_max_steps": 40},
        "rollout": {"num_actors": 4, "rollout_length": 16, "sequence_length": 8},
        "ppo": {"epochs": 2, "num_minibatches": 2, "target_kl": None},
        "telemetry": {"enabled": False},
        "checkpoint": {"every_steps": 10_000, "auto_resume": False},
        "distributed": {"worker_cpus": 0.5, "learner_cpus": 0.5, "collect_ahead": False},
    }
    return ActorSettings(**(values | overrides))


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    require_ray()  # Ray's environment switches before the first init
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    sigint = signal.getsignal(signal.SIGINT)  # TorchTrainer.fit() in the main thread replaces it
    yield
    signal.signal(signal.SIGINT, sigint)
    ray.shutdown()


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _runs(artifacts: Path) -> list[Path]:
    return sorted(path for path in (artifacts / "runs").iterdir() if path.is_dir())


def test_a_two_learner_run_checkpoints_on_rank_0_stops_on_ctrl_c_and_resumes_with_one(tmp_path: Path) -> None:
    steps = 2 * 16 * 4  # workers x rollout_length x actors per worker: one update
    two = settings(
        train={"total_steps": 1000 * steps}, checkpoint={"every_steps": steps, "auto_resume": False}
    )
    distributed = two.distributed.model_copy(update={"num_workers": 2, "learners": 2})
    _when_a_checkpoint_exists(tmp_path, lambda: os.kill(os.getpid(), signal.SIGINT))  # Ctrl+C
    lines: list[str] = []
    first = train_distributed(two, distributed, artifacts_dir=tmp_path, progress=lines.append)
    assert first.interrupted and 0 < first.steps_this_run < 1000 * steps
    assert any(line.startswith("interrupted at step") for line in lines)  # rank 0's words, forwarded
    (run,) = _runs(tmp_path)  # rank 0 alone made a run folder
    assert run == first.run_dir
    assert json.loads((run / "finished.json").read_text())["interrupted"] is True
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["backend"] == "ray" and manifest["learners"] == 2
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert {r["distributed/learners"] for r in records} == {2.0}
    assert first.final_checkpoint is not None
    saved = load_checkpoint(first.final_checkpoint)  # the final checkpoint: nothing learned is lost
    assert saved.step_id == first.step_id and saved.update_index == len(records)
    assert saved.optimizer is not None and set(saved.auxiliary) == {"rnd", "rnd_optimizer"}

    one = settings(train={"total_steps": steps})
    resumed = train_distributed(
        one,
        one.distributed.model_copy(update={"num_workers": 2, "learners": 1}),
        artifacts_dir=tmp_path,
        checkpoint=first.final_checkpoint,
    )
    assert resumed.step_id == first.step_id + steps and resumed.final_checkpoint is not None
    final = load_checkpoint(resumed.final_checkpoint)
    assert final.update_index == saved.update_index + 1
    assert final.parent_checkpoint == str(first.final_checkpoint)


def _when_a_checkpoint_exists(artifacts: Path, then: Any) -> threading.Thread:
    def wait_then() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not list(artifacts.glob("runs/*/checkpoints/step_*.pt")):
            time.sleep(0.5)
        then()

    thread = threading.Thread(target=wait_then, daemon=True)
    thread.start()
    return thread


def _learner_rank_pids() -> list[int]:
    """Processes of Ray Train's learner ranks (Ray names them ``ray::RayTrainWorker...``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "RayTrainWorker" in title:
            pids.append(int(entry.name))
    return pids


def test_a_killed_learner_rank_fails_the_run_with_one_line_and_valid_checkpoints(tmp_path: Path) -> None:
    """Its subject is the process group, so its policy reads no frontier map (the map's cost is paid
    by the Ctrl+C test above, which trains the default policy's data-parallel step)."""
    steps = 2 * 16 * 4
    config = settings(
        train={"total_steps": 1000 * steps},
        checkpoint={"every_steps": steps, "auto_resume": False},
        policy=TINY_POLICY | {"visit_input": False},
    )
    distributed = config.distributed.model_copy(update={"num_workers": 2, "learners": 2})
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            train_distributed(config, distributed, artifacts_dir=tmp_path)
        except BaseException as error:  # the assertion is in the test thread
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not list(tmp_path.glob("runs/*/checkpoints/step_*.pt")):
        time.sleep(0.5)
    assert list(tmp_path.glob("runs/*/checkpoints/step_*.pt")), "no checkpoint before the kill"
    pids = _learner_rank_pids()
    assert len(pids) >= 2
    os.kill(max(pids), signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive()
    error = outcome.get("error")
    assert isinstance(error, RuntimeError) and "a learner rank failed" in str(error)
    assert "\n" not in str(error)
    for path in tmp_path.glob("runs/*/checkpoints/step_*.pt"):
        assert load_checkpoint(path).step_id > 0

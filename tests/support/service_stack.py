"""The three-process stack's pieces for tests: a scene and checkpoint, the environment server and the
brain as subprocesses on one device, and the actions in-process inference gives on the CPU (shared by
``tests/test_stack_service.py`` and ``tests/cuda/test_cuda_stack.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.inference import ActingTelemetry, PolicyStepper, build_policy, resolve_policy_source
from navi_actor.inference.runner import run_inference
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_common import Subscriber, free_tcp_endpoint
from navi_contracts import Action

REPO = Path(__file__).resolve().parents[2]
SENSOR = {"azimuth_bins": 32, "elevation_bins": 8}
DRONES = 2
ENV_ENTRY = "import sys; from navi_environment.cli import main; sys.exit(main())"


def stack_files(folder: Path) -> dict[str, Path]:
    """A small procedural scene (32^3) and a small deterministic checkpoint in ``folder``."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    scene = folder / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=1", CompileSettings(), resolution=32).asset, scene)
    torch.manual_seed(21)
    config = PolicyConfig(visit_input=False, azimuth=32, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1)
    policy = NaviPolicy(config)
    checkpoint = save_checkpoint(Checkpoint(model=policy.state_dict(), policy_config=config), folder / "p.pt")
    return {"scene": scene, "checkpoint": checkpoint, "artifacts": folder}


def child_env(files: dict[str, Path]) -> dict[str, str]:
    return {
        **os.environ,
        "NAVI_ENV_SENSOR__AZIMUTH_BINS": str(SENSOR["azimuth_bins"]),
        "NAVI_ENV_SENSOR__ELEVATION_BINS": str(SENSOR["elevation_bins"]),
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(files["artifacts"]),
        "OMP_NUM_THREADS": "1",
        "NUMBA_NUM_THREADS": "1",
    }


class Stack:
    """Starts and stops the environment server and the brain as subprocesses, both on ``device``."""

    def __init__(self, files: dict[str, Path], device: str = "cpu") -> None:
        self.files, self.device = files, device
        self.rep, self.env_pub, self.brain_pub = free_tcp_endpoint(), free_tcp_endpoint(), free_tcp_endpoint()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.env: subprocess.Popen[bytes] | None = None

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            argv, env=child_env(self.files), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO
        )
        self.processes.append(process)
        return process

    def start_env(self) -> subprocess.Popen[bytes]:
        """The real ``navi-environment serve`` (REP + PUB) on this stack's ports."""
        argv = [sys.executable, "-c", ENV_ENTRY, "serve"]
        argv += ["--rep-endpoint", self.rep, "--pub-endpoint", self.env_pub]
        argv += ["--gmdag-file", str(self.files["scene"]), "--actors", str(DRONES), "--device", self.device]
        return self._spawn(argv)

    def start_brain(self, *extra: str) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "navi_actor.service", "--step-endpoint", self.rep]
        argv += ["--pub-endpoint", self.brain_pub, "--deterministic"]
        argv += ["--checkpoint", str(self.files["checkpoint"])]
        argv += ["--torch-threads", "1", "--device", self.device, *extra]
        return self._spawn(argv)

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            if process.stderr is not None:
                process.stderr.close()


def actions_from(subscriber: Subscriber, count: int, timeout_s: float = 60.0) -> list[Action]:
    """The next ``count`` actions the brain publishes (fails the test if they stop coming)."""
    received: list[Action] = []
    deadline = time.monotonic() + timeout_s
    while len(received) < count:
        assert time.monotonic() < deadline, f"only {len(received)} of {count} actions arrived"
        message = subscriber.recv(timeout_ms=1000)
        if message is not None and isinstance(message[1], Action):
            received.append(message[1])
    return received


def reference_actions(files: dict[str, Path], steps: int) -> np.ndarray:
    """In-process inference on the same scene, checkpoint and seed.

    With the brain's thread count (1): matmul reductions split over another number of threads
    round differently (~1e-8), and the comparison below is bit for bit.
    """
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _reference_actions(files, steps, SdfDagBackend, EnvironmentSettings)
    finally:
        torch.set_num_threads(threads)


def _reference_actions(
    files: dict[str, Path], steps: int, SdfDagBackend: Any, EnvironmentSettings: Any
) -> np.ndarray:
    backend = SdfDagBackend(EnvironmentSettings(sensor=SENSOR), DRONES, scene_paths=[files["scene"]])  # type: ignore[arg-type]
    source = resolve_policy_source(files["checkpoint"], files["artifacts"])
    policy = build_policy(source, PolicyConfig(), backend.observation_shape)
    recorded: list[np.ndarray] = []
    run_inference(
        backend,  # type: ignore[arg-type]
        PolicyStepper(policy, DRONES, deterministic=True),
        ActingTelemetry(None, "actor.inference"),
        seed=0,
        total_steps=steps,
        on_actions=lambda _, actions: recorded.append(actions.numpy().copy()),
    )
    return np.stack(recorded)

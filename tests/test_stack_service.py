"""The three-process stack over real sockets: environment server, brain, and this test as observer.

Covers the full loop, equivalence with in-process inference (same checkpoint, seed and scene,
deterministic, 200 steps), a brain restarted while the environment keeps serving, garbage on every
socket, and Ctrl+C within 2 s. The environment restart is in ``test_stack_launcher.py``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.inference import ActingTelemetry, PolicyStepper, build_policy, resolve_policy_source
from navi_actor.inference.runner import run_inference
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_common import RemoteError, ReqClient, Subscriber, free_tcp_endpoint
from navi_contracts import Action, topics
from navi_contracts.samples import sample_action

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SENSOR = {"azimuth_bins": 32, "elevation_bins": 8}
DRONES = 2
ENV_ENTRY = "import sys; from navi_environment.cli import main; sys.exit(main())"


@pytest.fixture(scope="module")
def stack_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A small procedural scene (32^3) and a small deterministic checkpoint."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    folder = tmp_path_factory.mktemp("stack")
    scene = folder / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=1", CompileSettings(), resolution=32).asset, scene)
    torch.manual_seed(21)
    config = PolicyConfig(azimuth=32, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1)
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
    """Starts and stops the environment server and the brain as subprocesses."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files
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
        argv += ["--gmdag-file", str(self.files["scene"]), "--actors", str(DRONES)]
        return self._spawn(argv)

    def start_brain(self, *extra: str) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "navi_actor.service", "--step-endpoint", self.rep]
        argv += ["--pub-endpoint", self.brain_pub, "--deterministic"]
        argv += ["--checkpoint", str(self.files["checkpoint"])]
        argv += ["--torch-threads", "1", *extra]
        return self._spawn(argv)

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            if process.stderr is not None:
                process.stderr.close()


@pytest.fixture(scope="module")
def stack(stack_files: dict[str, Path]) -> Iterator[Stack]:
    """One environment server for the module (started once: start-up dominates on 2 cores)."""
    running = Stack(stack_files)
    running.env = running.start_env()
    yield running
    running.close()


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


def test_three_process_stack_acts_exactly_like_in_process_inference(stack: Stack) -> None:
    with Subscriber(stack.brain_pub, [topics.ACTION]) as subscriber:
        brain = stack.start_brain("--total-steps", "200", "--wait-for-subscribers", "1", "--seed", "0")
        expected = reference_actions(stack.files, 200)  # computed while the brain starts
        served = actions_from(subscriber, 200, timeout_s=120)
        assert brain.wait(timeout=30) == 0
    step_ids = [action.step_id for action in served]
    assert step_ids == list(range(step_ids[0], step_ids[0] + 200))  # one action per env step, none lost
    stacked = np.stack([action.actions for action in served])
    assert np.array_equal(stacked, expected)  # bit-identical, every step, both drones


def _garbage(endpoint: str) -> None:
    """Raw bytes at a ZeroMQ port: not even a ZMTP greeting."""
    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2) as raw:
        raw.sendall(b"\x00\xffGET / HTTP/1.0\r\n\r\n" + os.urandom(256))


def test_stack_survives_a_brain_restart_garbage_and_stops_on_ctrl_c(stack: Stack) -> None:
    """Runs after the equivalence test: its brain exited and the environment kept serving, so this
    test's brain is the "brain restarted, environment still serving" case. (An environment killed
    and restarted mid-run is covered by ``test_stack_launcher.py``.)"""
    assert stack.env is not None and stack.env.poll() is None
    env = stack.env
    with Subscriber(stack.brain_pub, [topics.ACTION]) as subscriber:
        brain = stack.start_brain("--request-timeout-ms", "500")
        actions_from(subscriber, 20, timeout_s=120)
        # garbage on every socket: raw bytes at the env REP, the env PUB and the brain PUB; a
        # malformed request gets an error reply, and the loop keeps stepping
        for endpoint in (stack.rep, stack.env_pub, stack.brain_pub):
            _garbage(endpoint)
        client = ReqClient(stack.rep, timeout_ms=10_000, retries=0)
        with client, pytest.raises(RemoteError, match="StepRequest"):  # well-formed, wrong kind
            client.request(sample_action(batch=DRONES))
        actions_from(subscriber, 10)
        assert env.poll() is None and brain.poll() is None  # nobody died of the garbage
        # Ctrl+C: the brain exits within 2 s, cleanly
        brain.send_signal(signal.SIGINT)
        started = time.monotonic()
        code = brain.wait(timeout=10)
        assert time.monotonic() - started < 2.0
        assert code == 0  # SIGINT and SIGTERM end the brain the same way: a clean stop

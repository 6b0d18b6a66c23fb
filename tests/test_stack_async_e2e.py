"""Async mode end to end: ``navi-environment serve --mode async`` and ``navi-actor serve --mode async``
as real processes over real sockets, this test listening to both.

The environment steps only on the brain's published actions, so its ``step_id`` advancing one by
one, with an action for every observation it published, is the proof that the loop closes. Actions
are decoded with the contract's checks (finite, within [-1, 1]); one outside would be dropped and
counted, so ``dropped == 0`` is part of the check.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_common import Subscriber, free_tcp_endpoint
from navi_contracts import Action, DistanceMatrix, topics

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
DRONES = 2
STEPS = 40
# the `navi-environment serve` console command, run with this interpreter
ENV_SERVE = [
    sys.executable,
    "-c",
    "import sys; from navi_environment.cli import main; sys.exit(main())",
    "serve",
]


@pytest.fixture(scope="module")
def async_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 32^3 procedural scene and a small policy checkpoint for a 32 x 8 sensor."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    folder = tmp_path_factory.mktemp("stack_async")
    scene = folder / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=1", CompileSettings(), resolution=32).asset, scene)
    torch.manual_seed(5)
    config = PolicyConfig(visit_input=False, azimuth=32, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1)
    checkpoint = save_checkpoint(
        Checkpoint(model=NaviPolicy(config).state_dict(), policy_config=config), folder / "p.pt"
    )
    return {"scene": scene, "checkpoint": checkpoint, "artifacts": folder}


def spawn(argv: list[str], files: dict[str, Path], log: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its stderr in ``log`` (read back when it does not stop: :func:`exit_status`)."""
    env = {
        **os.environ,
        "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
        "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(files["artifacts"]),
        "OMP_NUM_THREADS": "1",
        "NUMBA_NUM_THREADS": "1",
        "PYTHONFAULTHANDLER": "1",  # SIGABRT prints every thread's stack
    }
    with log.open("wb") as stderr:  # the child keeps its own handle
        return subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr)


def exit_status(process: subprocess.Popen[bytes], log: Path, timeout_s: float) -> int:
    """The exit status of ``process`` within ``timeout_s``; else a failure with its stacks and stderr.

    Why: the brain once failed to exit within 10 s of SIGINT in CI (4 reruns passed) and left no trace.
    """
    try:
        return process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        process.wait(timeout=10)
        pytest.fail(
            f"{log.stem} did not exit within {timeout_s} s of SIGINT; stderr:\n{log.read_text()[-6000:]}"
        )


def collect(
    observations: Subscriber, actions: Subscriber, steps: int, timeout_s: float
) -> tuple[list[int], list[Action]]:
    """Observation step ids and actions until the environment has advanced ``steps`` steps."""
    seen: list[int] = []
    received: list[Action] = []
    deadline = time.monotonic() + timeout_s
    while not seen or seen[-1] - seen[0] < steps:
        assert time.monotonic() < deadline, f"environment advanced {len(set(seen))} steps in {timeout_s} s"
        for subscriber in (observations, actions):
            message = subscriber.recv(timeout_ms=20)
            if message is None:
                continue
            if isinstance(message[1], DistanceMatrix) and message[1].env_ids.shape == (DRONES,):
                seen.append(message[1].step_id)
            elif isinstance(message[1], Action):
                received.append(message[1])
    return seen, received


def actions_up_to(actions: Subscriber, step_id: int, answered: set[int]) -> list[Action]:
    """Actions still in flight up to ``step_id`` (they travel on another connection than observations)."""
    late: list[Action] = []
    deadline = time.monotonic() + 5.0
    while step_id not in answered and time.monotonic() < deadline:
        message = actions.recv(timeout_ms=100)
        if message is not None and isinstance(message[1], Action):
            late.append(message[1])
            answered.add(message[1].step_id)
    return late


def test_async_environment_steps_on_the_brains_published_actions(
    async_files: dict[str, Path], processes: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    env_pub, rep, brain_pub = free_tcp_endpoint(), free_tcp_endpoint(), free_tcp_endpoint()
    brain_log, env_log = tmp_path / "brain.log", tmp_path / "environment.log"
    with (
        Subscriber(env_pub, [topics.DISTANCE_MATRIX]) as observations,
        Subscriber(brain_pub, [topics.ACTION]) as actions,
    ):
        env = spawn(
            [*ENV_SERVE, "--mode", "async", "--pub-endpoint", env_pub, "--rep-endpoint", rep,
             "--action-sub", brain_pub, "--gmdag-file", str(async_files["scene"]), "--actors", str(DRONES),
             "--republish-ms", "100"],
            async_files, env_log,
        )  # fmt: skip
        processes.append(env)
        brain = spawn(
            [sys.executable, "-m", "navi_actor.service", "--mode", "async", "--sub-endpoint", env_pub,
             "--pub-endpoint", brain_pub, "--checkpoint", str(async_files["checkpoint"]), "--stochastic",
             "--torch-threads", "1", "--wait-for-subscribers", "2"],  # the environment and us
            async_files, brain_log,
        )  # fmt: skip
        processes.append(brain)
        seen, received = collect(
            observations, actions, STEPS, timeout_s=60
        )  # start-up: ~8 s idle, more when busy
        received += actions_up_to(actions, max(seen) - 1, {action.step_id for action in received})
        assert env.poll() is None and brain.poll() is None
        assert actions.dropped == 0  # every action decoded: finite and within [-1, 1]
    advancing = sorted(set(seen))
    assert advancing == list(range(advancing[0], advancing[0] + len(advancing)))  # one step per action
    answered = {action.step_id for action in received}
    assert set(advancing[:-1]) <= answered  # each observation that was stepped on had its action
    stacked = np.stack([action.actions for action in received])
    assert stacked.shape[1:] == (DRONES, 4)
    assert np.isfinite(stacked).all() and np.abs(stacked).max() <= 1.0
    assert stacked.std() > 0  # a stochastic policy: not a constant placeholder
    # Ctrl+C: both stop at once and cleanly (status 0)
    for process in (brain, env):
        process.send_signal(signal.SIGINT)
    for process, log, seconds in ((brain, brain_log, 10), (env, env_log, 15)):
        assert exit_status(process, log, seconds) == 0, log.read_text()[-4000:]

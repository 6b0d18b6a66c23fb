"""Realtime mode as a real process: ``navi-environment serve --mode realtime --control-hz 20`` keeps
its rate while a scripted slow brain (this test) answers with action chunks after 120 ms.

The environment is a child process; the fake brain is this test, on real sockets. Rates are checked
with a tolerance that holds on a loaded 2-core machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from navi_common import Publisher, Subscriber, free_tcp_endpoint
from navi_contracts import Action, DistanceMatrix, TelemetryEvent, topics
from navi_contracts import telemetry_names as names

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
DRONES = 2
HZ = 20.0
ENV_SERVE = [
    sys.executable,
    "-c",
    "import sys; from navi_environment.cli import main; sys.exit(main())",
    "serve",
]


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 32^3 procedural scene."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    path = tmp_path_factory.mktemp("realtime") / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=1", CompileSettings(), resolution=32).asset, path)
    return path


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Children started by a test; any still running at the end are killed."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def chunk_for(step_id: int, lead: int, horizon: int) -> Action:
    chunk = np.full((DRONES, horizon, 4), 0.3, np.float32)
    chunk[:, :, 3] = np.linspace(-0.2, 0.2, horizon, dtype=np.float32)
    return Action(
        env_ids=np.arange(DRONES, dtype=np.int32), actions=chunk[:, 0].copy(), policy_id="slow-brain",
        step_id=step_id, timestamp=time.time(), start_tick=step_id + lead, chunk=chunk,
    )  # fmt: skip


def latest_stats(telemetry: Subscriber, min_tick: int, timeout_s: float) -> TelemetryEvent:
    """The first environment.realtime.stats event at or after ``min_tick``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        received = telemetry.recv(timeout_ms=200)
        event = None if received is None else received[1]
        if (
            isinstance(event, TelemetryEvent)
            and event.event_type == names.ENVIRONMENT_REALTIME_STATS
            and event.payload["tick"] >= min_tick
        ):
            return event
    raise AssertionError(f"no realtime stats with tick >= {min_tick} within {timeout_s} s")


def test_realtime_server_keeps_its_rate_while_a_slow_brain_answers(
    scene: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    env_pub, rep, brain_pub = free_tcp_endpoint(), free_tcp_endpoint(), free_tcp_endpoint()
    delay_s, lead, horizon, run_s = 0.12, 3, 5, 2.5
    environment = {
        **os.environ, "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32", "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
        "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
    }  # fmt: skip
    with (
        Publisher(brain_pub) as brain,
        Subscriber(env_pub, [topics.DISTANCE_MATRIX], latest_only=True) as observations,
        Subscriber(env_pub, [topics.TELEMETRY_EVENT]) as telemetry,
    ):
        server = subprocess.Popen(
            [*ENV_SERVE, "--mode", "realtime", "--control-hz", str(HZ), "--fallback", "slow",
             "--pub-endpoint", env_pub, "--rep-endpoint", rep, "--action-sub", brain_pub,
             "--gmdag-file", str(scene), "--actors", str(DRONES)],
            env=environment, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        processes.append(server)
        brain.wait_for_subscribers(topics.ACTION, count=1, timeout_ms=90_000)  # start-up: scene + kernels
        first = latest_stats(telemetry, 1, timeout_s=60)  # ticking: the first stats event is out
        started_tick, started_at = int(first.payload["tick"]), time.monotonic()
        answered = 0
        while time.monotonic() - started_at < run_s:
            received = observations.recv(timeout_ms=200)
            if received is None or not isinstance(received[1], DistanceMatrix):
                continue
            time.sleep(delay_s)  # "inference"
            brain.publish(topics.ACTION, chunk_for(received[1].step_id, lead, horizon))
            answered += 1
        elapsed = time.monotonic() - started_at
        final = latest_stats(telemetry, started_tick + int(0.8 * HZ * elapsed), timeout_s=5)
        assert server.poll() is None
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=15) == 0
    payload = final.payload
    assert answered >= 5 and payload["accepted_actions"] >= 5
    assert payload[names.MISSED_TICKS] <= 3, payload
    assert lead <= payload[names.MEAN_ACTION_AGE_TICKS] <= lead + horizon, payload
    assert payload[names.MAX_ACTION_AGE_TICKS] >= lead
    assert payload["fallback_fraction"] < 0.6, payload  # chunks cover the 2.4-tick inference delay

"""``navi-environment serve --mode realtime`` as a real process against a scripted slow brain (the
caller, on real sockets): shared by the CPU test and the accelerator test so they cannot drift."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from navi_common import Publisher, Subscriber, free_tcp_endpoint
from navi_contracts import Action, DistanceMatrix, TelemetryEvent, topics
from navi_contracts import telemetry_names as names

REPO = Path(__file__).resolve().parents[2]
DRONES = 2
HZ = 20.0
DELAY_S, LEAD, HORIZON = 0.12, 3, 5  # the brain answers 120 ms late with 5-tick chunks starting 3 ahead
ENV_SERVE = [
    sys.executable,
    "-c",
    "import sys; from navi_environment.cli import main; sys.exit(main())",
    "serve",
]


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


def run_realtime_server(
    scene: Path, processes: list[subprocess.Popen[bytes]], *options: str, run_s: float = 2.5
) -> tuple[dict[str, Any], int]:
    """Serve ``scene`` in realtime mode with ``options`` added (e.g. ``--device cuda``) while this
    process answers every observation ``DELAY_S`` late; (the last stats payload, answers sent)."""
    env_pub, rep, brain_pub = free_tcp_endpoint(), free_tcp_endpoint(), free_tcp_endpoint()
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
             "--gmdag-file", str(scene), "--actors", str(DRONES), *options],
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
            time.sleep(DELAY_S)  # "inference"
            brain.publish(topics.ACTION, chunk_for(received[1].step_id, LEAD, HORIZON))
            answered += 1
        elapsed = time.monotonic() - started_at
        final = latest_stats(telemetry, started_tick + int(0.8 * HZ * elapsed), timeout_s=5)
        assert server.poll() is None
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=15) == 0
    return dict(final.payload), answered


def assert_keeps_its_rate_while_the_slow_brain_answers(payload: dict[str, Any], answered: int) -> None:
    assert answered >= 5 and payload["accepted_actions"] >= 5
    assert payload[names.MISSED_TICKS] <= 3, payload
    assert LEAD <= payload[names.MEAN_ACTION_AGE_TICKS] <= LEAD + HORIZON, payload
    assert payload[names.MAX_ACTION_AGE_TICKS] >= LEAD
    assert payload["fallback_fraction"] < 0.6, payload  # chunks cover the 2.4-tick inference delay

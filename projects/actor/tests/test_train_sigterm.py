"""SIGTERM (kill, systemd, Docker, CI) ends ``navi-actor train`` exactly like Ctrl+C: a real process,
a real signal; the final checkpoint is written and loads, metrics and the run log are complete, exit 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from navi_actor.checkpoints import load_checkpoint

TINY_ENV = {
    "NAVI_ACTOR_POLICY__EMBED_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_LAYERS": "1",
    "NAVI_ACTOR_ENVIRONMENT__POINT_AZIMUTH": "16",
    "NAVI_ACTOR_ROLLOUT__SEQUENCE_LENGTH": "8",
    "NAVI_ACTOR_PPO__NUM_MINIBATCHES": "2",
    "NAVI_ACTOR_CHECKPOINT__EVERY_STEPS": "1000000",  # only the final checkpoint
}


def _wait_for(predicate: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_training_with_a_final_checkpoint_and_exit_0(tmp_path: Path, signum: int) -> None:
    env = {**os.environ, **TINY_ENV, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}
    command = [sys.executable, "-c", "from navi_actor.cli import main; main()", "train",
               "--environment-backend", "point", "--num-actors", "2", "--torch-threads", "1",
               "--temporal-core", "gru", "--rollout-length", "16", "--no-telemetry"]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: any(p.stat().st_size > 0 for p in tmp_path.glob("runs/*/metrics.jsonl")), 120)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err[-2000:]
    assert "interrupted:" in out
    (run,) = tmp_path.glob("runs/*")
    last_step = int(json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])["charts/step_id"])
    (final,) = run.glob("checkpoints/step_*.pt")
    assert load_checkpoint(final).step_id == last_step
    assert not list(run.glob("checkpoints/*.tmp*"))
    events = [json.loads(line)["event"] for line in (run / "logs" / "events.jsonl").read_text().splitlines()]
    assert "actor.train.started" in events and events[-1] == "actor.train.finished"
    assert {"actor.train.interrupted", "actor.checkpoint.saved"} <= set(events)

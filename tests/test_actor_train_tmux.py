"""``navi-actor train --max-minutes 1`` in a real terminal (tmux): the first lines say what is
happening, and a readable progress line (elapsed, ETA, steps/s, reward, checkpoint) appears within
20 s of the simulator's kernels being ready; Ctrl+C then ends the run with its final checkpoint.

Every wait polls the pane for an expected condition with a deadline (no fixed sleeps).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
needs_tmux = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (see .ci/apt-packages)"
)

REPO = Path(__file__).resolve().parents[1]
TINY = {
    "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
    "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
    "NAVI_ACTOR_POLICY__EMBED_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_LAYERS": "1",
    "NAVI_ACTOR_POLICY__SSM_HEAD_DIM": "16",
    "NAVI_ACTOR_PPO__NUM_MINIBATCHES": "2",
    "NAVI_ACTOR_TRAIN__PROGRESS_SECONDS": "1",
}


def compile_scene(path: Path) -> Path:
    """A small procedural apartment, compiled at 32^3 (seconds)."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    compiled = compile_source("procedural:apartment:seed=3", CompileSettings(), resolution=32)
    write_gmdag(compiled.asset, path)
    return path


class Pane:
    """One private tmux server (own socket) running the trainer in one pane."""

    def __init__(self, stderr_log: Path) -> None:
        self.socket = f"navi-train-test-{os.getpid()}"
        self.stderr_log = stderr_log
        self._tick = threading.Event()  # never set

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], check=False, capture_output=True, text=True, timeout=20
        )
        return done.stdout

    def capture(self) -> str:
        return self.run("capture-pane", "-p", "-t", "train")

    def wait_for(self, predicate: Callable[[str], bool], timeout_s: float, what: str) -> str:
        deadline = time.monotonic() + timeout_s
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture()
            if predicate(screen):
                return screen
            self._tick.wait(0.05)  # poll interval of a deadline-bounded condition check
        log = self.stderr_log.read_text()[-3000:] if self.stderr_log.exists() else ""
        raise AssertionError(f"timed out waiting for {what}; screen:\n{screen}\nlog:\n{log}")

    def kill(self) -> None:
        self.run("kill-server")


def progress_lines(screen: str) -> list[str]:
    return [line for line in screen.splitlines() if " | ETA " in line and "/s" in line]


@needs_tmux
def test_train_in_a_terminal_shows_a_progress_line_within_20_s_of_the_kernels(tmp_path: Path) -> None:
    scene = compile_scene(tmp_path / "apartment.gmdag")
    variables = " ".join(
        f"{key}={value}" for key, value in {**TINY, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}.items()
    )
    command = (
        f"env {variables} {Path(sys.executable).parent / 'navi-actor'} train --max-minutes 1 "
        f"--gmdag-file {scene} --num-actors 2 --rollout-length 32 --torch-threads 1 --temporal-core gru "
        "--no-telemetry --warm-start-steps 0; echo EXIT=$?; sleep 600"  # PPO's progress line: no warm start
    )
    pane = Pane(tmp_path / "no-log")
    try:
        pane.run("new-session", "-d", "-s", "train", "-x", "200", "-y", "30", "-c", str(REPO), command)
        first = pane.wait_for(lambda s: "building the sdfdag environment" in s, 60, "the first line")
        assert "{" not in first  # no JSON log lines on a terminal
        pane.wait_for(lambda s: "collecting the first rollout" in s or progress_lines(s), 180, "collection")
        kernels_ready = None
        deadline = time.monotonic() + 240
        while not progress_lines(screen := pane.capture()):
            if kernels_ready is None and "first PPO update" in screen:
                kernels_ready = time.monotonic()  # the first rollout, hence every kernel, has run
            assert time.monotonic() < deadline, screen
            threading.Event().wait(0.05)
        seen = time.monotonic()
        assert kernels_ready is None or seen - kernels_ready < 20.0
        screen = pane.wait_for(lambda s: "ckpt" in s and "reward" in s, 30, "the whole progress status")
        assert "nan" not in screen.lower()
        assert "a fresh rayvit/gru policy" in screen and "logs/events.jsonl" in screen
        assert len([line for line in screen.splitlines() if " | ETA " in line]) == 1  # one live line
        pane.run("send-keys", "-t", "train", "C-c")
        done = pane.wait_for(lambda s: "EXIT=" in s, 60, "the final summary and the exit status")
        assert "interrupted:" in done and "final checkpoint:" in done and "EXIT=0" in done
        Path(os.environ.get("NAVI_TRAIN_CAPTURE", os.devnull)).write_text(done)
    finally:
        pane.kill()
    assert list(tmp_path.glob("runs/*/checkpoints/step_*.pt"))

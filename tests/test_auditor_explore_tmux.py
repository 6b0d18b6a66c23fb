"""The explorer driven through a real terminal (tmux): keys fly the drone, the view is drawn,
Ctrl+C quits cleanly and the recorded demonstration holds the flown, executed actions.

Every wait polls the pane for an expected condition with a deadline (no fixed sleeps).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from navi_auditor.cli import main
from navi_auditor.demos import load_demonstration
from navi_environment.gmdag.writer import compile_sdf_to_gmdag, write_gmdag
from navi_environment.runtime.analytic import RoomSpec, room_query

pytestmark = pytest.mark.slow
needs_tmux = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (see .ci/apt-packages)"
)

REPO = Path(__file__).resolve().parents[1]
# 6 m tall: the compiled field is a lower bound in pruned void blocks, and spawns need 0.8 m of it.
ROOM = RoomSpec(hi=(10.0, 10.0, 6.0), pillars=((3.0, 4.0, 0.4),))


def compile_room(path: Path, resolution: int = 64) -> Path:
    """Write the analytic room as a .gmdag file (exact SDF sampled at voxel centres)."""
    bmin, voxel = ROOM.cube(resolution)
    axis = (np.arange(resolution) + 0.5) * voxel
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3) + bmin
    sdf, semantic = room_query(ROOM, voxel)(grid.astype(np.float32))
    shape = (resolution,) * 3
    asset = compile_sdf_to_gmdag(
        sdf.reshape(shape), semantic.reshape(shape), bmin, voxel, far_tolerance_voxels=0.0, source=str(path)
    )
    write_gmdag(asset, path)
    return path


class Tmux:
    """One private tmux server (own socket) running one pane."""

    def __init__(self, name: str, stderr_log: Path) -> None:
        self.socket = f"navi-auditor-test-{os.getpid()}-{name}"
        self.stderr_log = stderr_log
        self._tick = threading.Event()  # never set

    def run(self, *args: str) -> str:
        command = ["tmux", "-L", self.socket, *args]
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=20)
        return done.stdout

    def capture(self) -> str:
        return self.run("capture-pane", "-p", "-t", "flight")

    def wait_for(self, predicate: Callable[[str], bool], timeout_s: float, what: str) -> str:
        deadline = time.monotonic() + timeout_s
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture()
            if predicate(screen):
                return screen
            if self.run("display-message", "-p", "-t", "flight", "#{pane_dead}").strip() == "1":
                log = self.stderr_log.read_text()[-3000:] if self.stderr_log.exists() else ""
                raise AssertionError(f"the explorer exited while waiting for {what}:\n{screen}\n{log}")
            self._tick.wait(0.05)  # poll interval of a deadline-bounded condition check, not a sync sleep
        log = self.stderr_log.read_text()[-3000:] if self.stderr_log.exists() else ""
        raise AssertionError(f"timed out waiting for {what}; screen:\n{screen}\nstderr:\n{log}")

    def kill(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], check=False, capture_output=True, timeout=20
        )


def step_of(screen: str) -> int:
    for line in screen.splitlines():
        if "| step " in line:
            return int(line.split("| step ")[1].split("/")[0])
    return -1


@needs_tmux
def test_keyboard_flight_in_tmux_records_a_demonstration(tmp_path: Path) -> None:
    scene = compile_room(tmp_path / "room.gmdag")
    out = tmp_path / "flight.npz"
    command = " ".join([
        "env", "NAVI_ENV_SENSOR__AZIMUTH_BINS=32", "NAVI_ENV_SENSOR__ELEVATION_BINS=8",
        f"{Path(sys.executable).parent / 'explore'}", "--record", f"--out {out}", f"--gmdag-file {scene}",
        "--max-steps 5000", "--publish none", "--step-hz 20", "--no-color",
        f"2> {tmp_path / 'stderr.log'}",
    ])  # fmt: skip
    tmux = Tmux("flight", tmp_path / "stderr.log")
    try:
        tmux.run("new-session", "-d", "-s", "flight", "-x", "140", "-y", "40", "-c", str(REPO), command)
        tmux.run("set-option", "-t", "flight", "remain-on-exit", "on")
        screen = tmux.wait_for(lambda s: step_of(s) >= 1, 120, "the first flight step")
        assert "Esc next scene" in screen and "keyboard" in screen
        start = step_of(screen)
        for key in ("w", "w", "w", "q", "q", "Space", "a", "Up"):
            before = step_of(tmux.capture())
            tmux.run("send-keys", "-t", "flight", key)
            tmux.wait_for(lambda s, n=before: step_of(s) > n, 30, f"a step after {key}")
        tmux.wait_for(lambda s: step_of(s) >= start + 20, 60, "20 more steps")
        tmux.run("send-keys", "-t", "flight", "C-c")
        tmux.wait_for(lambda s: "demonstration:" in s, 60, "the exit summary")
    finally:
        tmux.kill()
    demo = load_demonstration(out)
    assert len(demo) >= 20
    actions = demo.actions
    assert (actions[:, 0] == 1.0).any(), "W never reached the executed actions"
    assert (actions[:, 3] == 1.0).any(), "Q never reached the executed actions"
    assert (actions[:, 1] == 1.0).any(), "Space never reached the executed actions"
    assert (actions[:, 2] == 1.0).any(), "A never reached the executed actions"
    assert (np.abs(actions).sum(axis=1) == 0).any()  # released keys drop to zero
    assert demo.metadata["pilot"] == "keyboard"
    assert demo.segment_scenes.tolist() == [str(scene)]
    verify = CliRunner().invoke(main, ["demo-verify", str(out)])  # the keyboard flight re-flies exactly
    assert verify.exit_code == 0, verify.output
    assert json.loads(verify.output.strip().splitlines()[-1])["max_observation_error"] == 0.0


def test_sigterm_finishes_the_demonstration(tmp_path: Path) -> None:
    """A terminated explorer (kill, closed SSH session) still merges what it recorded."""
    scene = compile_room(tmp_path / "room.gmdag")
    out = tmp_path / "killed.npz"
    env = {**os.environ, "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32", "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
           "NAVI_AUDITOR_DEMOS__PART_FRAMES": "8"}  # fmt: skip
    command = [str(Path(sys.executable).parent / "explore"), "--autopilot", "--record", "--out", str(out),
               "--gmdag-file", str(scene), "--max-steps", "100000", "--publish", "none",
               "--autopilot-hz", "50"]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, cwd=REPO)  # fmt: skip
    try:
        parts = out.with_suffix(".parts")
        deadline, tick = time.monotonic() + 120, threading.Event()
        while not list(parts.glob("part_000001.npz")):  # two parts flushed: at least 16 frames
            assert process.poll() is None and time.monotonic() < deadline, "explorer exited or stalled"
            tick.wait(0.05)
        process.send_signal(signal.SIGTERM)
        stdout, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0 and b"demonstration:" in stdout
    assert not parts.exists() and len(load_demonstration(out)) >= 16


def test_repeated_sigterm_while_finishing_loses_nothing(tmp_path: Path) -> None:
    """A supervisor that sends SIGTERM again (or an impatient user) must not tear the finish: every
    recorded frame ends up in the merged file and the explorer exits 0."""
    scene = compile_room(tmp_path / "room.gmdag")
    out = tmp_path / "killed.npz"
    env = {**os.environ, "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32", "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
           "NAVI_AUDITOR_DEMOS__PART_FRAMES": "8"}  # fmt: skip
    command = [str(Path(sys.executable).parent / "explore"), "--autopilot", "--record", "--out", str(out),
               "--gmdag-file", str(scene), "--max-steps", "100000", "--publish", "none"]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=REPO)  # fmt: skip
    try:
        parts = out.with_suffix(".parts")
        deadline, tick = time.monotonic() + 120, threading.Event()
        while not list(parts.glob("part_000003.npz")):
            assert process.poll() is None and time.monotonic() < deadline, "explorer exited or stalled"
            tick.wait(0.05)
        for _ in range(20):  # a burst: the later ones land while the demonstration is being finished
            process.send_signal(signal.SIGTERM)
            tick.wait(0.01)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert b"demonstration:" in stdout and b"Traceback" not in stderr
    flew = int(stdout.split(b"flew ")[1].split(b" steps")[0])
    assert not parts.exists() and len(load_demonstration(out)) == flew >= 32

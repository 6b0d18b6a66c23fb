"""SIGTERM (kill, systemd, Docker, CI) ends the services exactly like Ctrl+C: a clean stop, status 0.

Real processes, real signals. The environment server is caught while loading a scene through a
named pipe (it blocks reading it for as long as the test keeps the pipe open), so the signal lands
during start-up deterministically, where it used to kill the server with status -15.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from navi_common import free_tcp_endpoint

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and named pipes")

ENV_SERVE = [sys.executable, "-c", "import sys; from navi_environment.cli import main; sys.exit(main())"]
BRAIN = [sys.executable, "-m", "navi_actor.service"]


def _environ(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
        "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path),
        "NAVI_ACTOR_TEMPORAL_CORE": "gru",
        "NAVI_ACTOR_LOG_JSON": "true",
        "OMP_NUM_THREADS": "1",
    }


def _first_line_with(process: subprocess.Popen[str], text: str, timeout_s: float = 120.0) -> list[str]:
    """Lines read until one contains ``text`` (the process is killed if it never comes)."""
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if text in line:
                found.set()
                return

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(timeout_s):
        process.kill()
        pytest.fail(f"never printed {text!r}; got {lines[-5:]}")
    return lines


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_environment_server_stopped_while_loading_exits_cleanly(tmp_path: Path, signum: int) -> None:
    scene = tmp_path / "scene.gmdag"
    os.mkfifo(scene)
    endpoints = ["--pub-endpoint", free_tcp_endpoint(), "--rep-endpoint", free_tcp_endpoint()]
    process = subprocess.Popen(
        [*ENV_SERVE, "serve", "--gmdag-file", str(scene), "--actors", "1", *endpoints],
        env=_environ(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        with open(scene, "wb"):  # returns once the server opened the scene: it is loading now
            process.send_signal(signum)
            output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    assert "interrupted while loading" in output and "Traceback" not in output and "Aborted" not in output


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_brain_stops_on_sigterm_like_on_ctrl_c(tmp_path: Path, signum: int) -> None:
    """No environment is running: the brain is waiting for it when it is told to stop."""
    endpoints = ["--sub-endpoint", free_tcp_endpoint(), "--step-endpoint", free_tcp_endpoint()]
    process = subprocess.Popen(
        [*BRAIN, *endpoints, "--pub-endpoint", free_tcp_endpoint(), "--torch-threads", "1"],
        env=_environ(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        _first_line_with(process, "actor.service.stepping")
        process.send_signal(signum)
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    assert "brain: interrupted, sockets closed" in output and "Traceback" not in output

"""``navi-stack`` end to end: starts the real environment server and brain, restarts a killed
environment, and stops everything together on Ctrl+C."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from navi_common import Subscriber, free_tcp_endpoint
from navi_contracts import Action, topics

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]


class OutputWatcher:
    """Reads the launcher's output on a thread; ``wait_for`` blocks until a line matches."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, pattern: str, timeout_s: float = 120.0) -> re.Match[str]:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                for line in self.lines:
                    if match := regex.search(line):
                        return match
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"no line matching {pattern!r}; last lines: {self.lines[-5:]}"
                self._changed.wait(remaining)


def test_navi_stack_runs_restarts_and_stops_together(tmp_path: Path) -> None:
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    scene = tmp_path / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=1", CompileSettings(), resolution=32).asset, scene)
    ports = [free_tcp_endpoint().rsplit(":", 1)[1] for _ in range(3)]
    env = {
        **os.environ,
        "NAVI_ACTOR_SERVICE__SUB_ENDPOINT": f"tcp://127.0.0.1:{ports[0]}",
        "NAVI_ACTOR_SERVICE__STEP_ENDPOINT": f"tcp://127.0.0.1:{ports[1]}",
        "NAVI_ACTOR_SERVICE__PUB_ENDPOINT": f"tcp://127.0.0.1:{ports[2]}",
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path),
        "NAVI_ACTOR_TEMPORAL_CORE": "gru",
        "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
        "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
        "NAVI_ACTOR_LOG_JSON": "true",
        "NAVI_ENV_LOG_JSON": "true",
    }
    argv = [sys.executable, "-c", "from navi_actor.launcher import main; main()"]
    launcher = subprocess.Popen(
        [*argv, "--gmdag-file", str(scene), "--actors", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output = OutputWatcher(launcher)
    try:
        with Subscriber(f"tcp://127.0.0.1:{ports[2]}", [topics.ACTION]) as actions:
            env_pid = int(output.wait_for(r'"child": "env", "pid": (\d+)').group(1))
            received = 0
            while received < 5:
                message = actions.recv(timeout_ms=120_000)
                assert message is not None, "the stack never acted"
                received += isinstance(message[1], Action)
            output.wait_for(r"\[brain\] .*actor\.service\.synced")
            os.kill(env_pid, signal.SIGKILL)  # the environment dies: the launcher restarts it
            output.wait_for(r'"child": "env".*"event": "stack\.child\.restarting"|stack\.child\.restarting')
            output.wait_for(r"\[brain\] .*\"resyncs\": 1", timeout_s=180)  # brain re-synced with it
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=15) == 0
        output.wait_for(r"navi-stack: stopped")
        stopped = [line for line in output.lines if "stack.child.stopped" in line]
        assert len(stopped) == 2  # brain and env, both stopped by the launcher
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


def test_navi_stack_secure_acts_for_keyed_subscribers_only(tmp_path: Path) -> None:
    """``navi-stack --keys DIR`` (what ``--secure`` does with artifacts/keys) end to end: every child
    runs CURVE; a subscriber with the client key sees the brain's actions, one without sees nothing."""
    from navi_common.transport.curve import CurveKeys, generate_keys
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    scene = tmp_path / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=1", CompileSettings(), resolution=32).asset, scene)
    generate_keys(tmp_path / "keys")
    keys = CurveKeys.load(tmp_path / "keys")
    ports = [free_tcp_endpoint().rsplit(":", 1)[1] for _ in range(3)]
    env = {
        **os.environ,
        "NAVI_ACTOR_SERVICE__SUB_ENDPOINT": f"tcp://localhost:{ports[0]}",
        "NAVI_ACTOR_SERVICE__STEP_ENDPOINT": f"tcp://localhost:{ports[1]}",
        "NAVI_ACTOR_SERVICE__PUB_ENDPOINT": f"tcp://127.0.0.1:{ports[2]}",
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path),
        "NAVI_ACTOR_TEMPORAL_CORE": "gru",
        "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
        "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
        "NAVI_ACTOR_LOG_JSON": "true",
        "NAVI_ENV_LOG_JSON": "true",
    }
    argv = [sys.executable, "-c", "from navi_actor.launcher import main; main()"]
    launcher = subprocess.Popen(
        [*argv, "--gmdag-file", str(scene), "--actors", "1", "--keys", str(tmp_path / "keys")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output = OutputWatcher(launcher)
    pub = f"tcp://127.0.0.1:{ports[2]}"
    try:
        with Subscriber(pub, [topics.ACTION], curve=keys) as keyed, Subscriber(pub, [topics.ACTION]) as plain:
            received = 0
            while received < 3:
                message = keyed.recv(timeout_ms=120_000)
                assert message is not None, "the secure stack never acted"
                received += isinstance(message[1], Action)
            output.wait_for(r"\[brain\] .*actor\.service\.synced")
            assert plain.recv(timeout_ms=1000) is None  # no key: nothing, while the keyed one kept receiving
            assert keyed.recv(timeout_ms=30_000) is not None
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=15) == 0
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


@pytest.mark.parametrize("how", ["sigterm", "ctrl_c_to_the_terminal_group"])
def test_navi_stack_stops_its_children_cleanly_and_exits_0(tmp_path: Path, how: str) -> None:
    """SIGTERM used to kill the launcher alone and leave the environment and the brain running; a
    terminal's Ctrl+C (SIGINT to the whole foreground process group) reached every child directly,
    and the launcher's own SIGINT then caught the environment in its shutdown (status -2)."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    scene = tmp_path / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=1", CompileSettings(), resolution=32).asset, scene)
    ports = [free_tcp_endpoint().rsplit(":", 1)[1] for _ in range(3)]
    env = {
        **os.environ,
        "NAVI_ACTOR_SERVICE__SUB_ENDPOINT": f"tcp://127.0.0.1:{ports[0]}",
        "NAVI_ACTOR_SERVICE__STEP_ENDPOINT": f"tcp://127.0.0.1:{ports[1]}",
        "NAVI_ACTOR_SERVICE__PUB_ENDPOINT": f"tcp://127.0.0.1:{ports[2]}",
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path),
        "NAVI_ACTOR_TEMPORAL_CORE": "gru",
        "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
        "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
        "NAVI_ACTOR_LOG_JSON": "true",
        "NAVI_ENV_LOG_JSON": "true",
    }
    argv = [sys.executable, "-c", "from navi_actor.launcher import main; main()"]
    launcher = subprocess.Popen(
        [*argv, "--gmdag-file", str(scene), "--actors", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )  # fmt: skip  (its own process group, like a job in a terminal)
    output = OutputWatcher(launcher)
    pids: list[int] = []
    try:
        started = [output.wait_for(rf"\"child\": \"{name}\", \"pid\": (\d+)") for name in ("env", "brain")]
        pids = [int(match.group(1)) for match in started]
        output.wait_for(r"\[brain\] .*actor\.service\.synced")
        if how == "sigterm":
            launcher.send_signal(signal.SIGTERM)
        else:
            os.killpg(launcher.pid, signal.SIGINT)  # what the terminal does on Ctrl+C
        assert launcher.wait(timeout=20) == 0
        output.wait_for(r"navi-stack: stopped \(status 0\)")
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        for pid in pids:  # never leave a child behind, whatever happened
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    stopped = [line for line in output.lines if "stack.child.stopped" in line]
    assert len(stopped) == 2 and all('"code": 0' in line for line in stopped)  # each stopped cleanly
    assert not any("Aborted" in line or "Traceback" in line for line in output.lines)

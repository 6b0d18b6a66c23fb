"""navi-stack's supervisor: prefixed output, restart with a budget, stop-all, stubborn children killed."""

from __future__ import annotations

import importlib.util
import io
import sys
import threading
import time
from pathlib import Path

import pytest

from navi_actor.launcher import ChildSpec, Supervisor
from navi_actor.launcher.command import stack_specs
from navi_actor.service import BrainSettings

PY = sys.executable
# Long-running stand-in for a server: prints readiness, then blocks until interrupted.
SERVER = "import sys, threading; print('ready', flush=True); threading.Event().wait()"
STUBBORN = (
    "import signal, threading; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "print('ready', flush=True); threading.Event().wait()"
)


class ReadySink(io.StringIO):
    """Collects the prefixed output and sets ``all_ready`` once ``expected`` children said 'ready'."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.expected, self.all_ready = expected, threading.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.getvalue().count("ready") >= self.expected:
            self.all_ready.set()
        return written


def test_a_failing_child_is_restarted_until_its_budget_is_spent() -> None:
    out = io.StringIO()
    specs = [
        ChildSpec("server", [PY, "-c", SERVER]),
        ChildSpec("flaky", [PY, "-c", "print('hello'); exit(3)"]),
    ]
    supervisor = Supervisor(specs, on_exit="restart", max_restarts=2, grace_s=2.0, out=out)
    started = time.monotonic()
    code = supervisor.run()
    assert code == 3
    assert out.getvalue().count("[flaky] hello") == 3  # first run + 2 restarts
    assert "[server] ready" in out.getvalue()
    assert supervisor.children["server"].returncode() is not None  # stopped with the stack
    assert time.monotonic() - started < 15


def test_stop_policy_stops_everything_when_one_child_exits() -> None:
    out = io.StringIO()
    specs = [ChildSpec("server", [PY, "-c", SERVER]), ChildSpec("short", [PY, "-c", "exit(4)"])]
    supervisor = Supervisor(specs, on_exit="stop", grace_s=2.0, out=out)
    assert supervisor.run() == 4
    assert supervisor.children["server"].returncode() is not None


def test_stop_request_interrupts_children_and_kills_stubborn_ones() -> None:
    out = ReadySink(expected=2)
    specs = [ChildSpec("polite", [PY, "-c", SERVER]), ChildSpec("stubborn", [PY, "-c", STUBBORN])]
    supervisor = Supervisor(specs, grace_s=0.5, out=out)
    stop = threading.Event()
    runner = threading.Thread(target=lambda: supervisor.run(stop))
    runner.start()
    assert out.all_ready.wait(20)  # a stubborn child must be ignoring SIGINT before we stop
    stop.set()
    runner.join(timeout=10)
    assert not runner.is_alive()
    assert supervisor.children["polite"].returncode() is not None
    assert supervisor.children["stubborn"].returncode() is not None  # killed after the grace period


def test_stack_command_lines(tmp_path: Path) -> None:
    scene = tmp_path / "s.gmdag"
    settings = BrainSettings(
        service={"deterministic": True, "step_endpoint": "tcp://localhost:7000"},
        launcher={"with_dashboard": True},
    )
    specs = stack_specs(settings, gmdag_file=scene, corpus=None, actors=3)
    names = [spec.name for spec in specs]
    assert names[:2] == ["env", "brain"]
    env, brain = specs[0].argv, specs[1].argv
    expected_env = [
        "serve",
        "--pub-endpoint",
        "tcp://127.0.0.1:5559",
        "--rep-endpoint",
        "tcp://127.0.0.1:7000",
        "--actors",
        "3",
    ]
    assert env[3:] == [*expected_env, "--gmdag-file", str(scene)]
    assert brain[1:3] == ["-m", "navi_actor.service"] and "--deterministic" in brain
    assert brain[brain.index("--step-endpoint") + 1] == "tcp://localhost:7000"
    assert ("dashboard" in names) == (importlib.util.find_spec("navi_dashboard") is not None)


def test_async_stack_drives_the_environment_from_the_brains_actions() -> None:
    settings = BrainSettings(service={"mode": "async", "pub_endpoint": "tcp://*:7001"})
    env, brain = (spec.argv for spec in stack_specs(settings, gmdag_file=None, corpus=None, actors=2)[:2])
    assert env[env.index("--mode") + 1] == "async"
    assert env[env.index("--action-sub") + 1] == "tcp://localhost:7001"
    assert brain[brain.index("--mode") + 1] == "async"
    assert brain[brain.index("--pub-endpoint") + 1] == "tcp://*:7001"


def test_every_option_the_stack_passes_is_an_option_of_the_child_command(tmp_path: Path) -> None:
    """The launcher spells its children's options by hand; a renamed option would fail at start-up."""
    from navi_actor.service.command import serve as brain_serve
    from navi_common.transport.curve import generate_keys
    from navi_environment.server.command import serve_command as env_serve

    generate_keys(tmp_path / "keys")
    service = {"mode": "async", "checkpoint": tmp_path / "c.pt", "keys": tmp_path / "keys"}
    settings = BrainSettings(service=service, launcher={"listen": "0.0.0.0"})
    env, brain = (spec.argv for spec in stack_specs(settings, gmdag_file=tmp_path, corpus=None, actors=2)[:2])
    for argv, command in ((env, env_serve), (brain, brain_serve)):
        known = {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
        given = {arg for arg in argv if arg.startswith("--")}
        assert given and given <= known, given - known


def test_supervisor_needs_children() -> None:
    with pytest.raises(ValueError, match="nothing"):
        Supervisor([])


def test_secure_stack_passes_the_keys_to_every_process_and_listen_widens_only_when_asked(
    tmp_path: Path,
) -> None:
    from navi_common.transport.curve import generate_keys

    generate_keys(tmp_path / "keys")
    plain = BrainSettings(launcher={"with_dashboard": True})
    for spec in stack_specs(plain, gmdag_file=None, corpus=None, actors=1):
        assert "--keys" not in spec.argv and "--host" not in spec.argv
        bind_options = {"--pub-endpoint", "--rep-endpoint"}
        binds = [spec.argv[i + 1] for i, arg in enumerate(spec.argv) if arg in bind_options]
        assert all(endpoint.startswith("tcp://127.0.0.1:") for endpoint in binds), binds
    secure = BrainSettings(
        service={"keys": tmp_path / "keys", "mode": "async"},
        launcher={"with_dashboard": True, "secure": True, "listen": "0.0.0.0"},
    )
    specs = stack_specs(secure, gmdag_file=None, corpus=None, actors=1)
    for spec in specs:
        assert spec.argv[spec.argv.index("--keys") + 1] == str(tmp_path / "keys")
    env, brain = specs[0].argv, specs[1].argv
    assert (
        env[env.index("--pub-endpoint") + 1] == "tcp://0.0.0.0:5559"
        and env[env.index("--rep-endpoint") + 1] == "tcp://0.0.0.0:5560"
    )
    assert brain[brain.index("--pub-endpoint") + 1] == "tcp://0.0.0.0:5557"
    assert env[env.index("--action-sub") + 1] == "tcp://localhost:5557"
    if len(specs) == 3:
        assert specs[2].argv[specs[2].argv.index("--host") + 1] == "0.0.0.0"


def test_navi_stack_secure_without_keys_is_one_clear_error(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from navi_actor.launcher.command import main

    result = CliRunner().invoke(main, ["--keys", str(tmp_path / "none")])
    assert result.exit_code != 0 and "navi-keys generate" in result.output
    assert "Traceback" not in result.output

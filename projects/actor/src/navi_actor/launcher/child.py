"""One supervised child process: started with ``subprocess``, its output prefixed, stopped politely.

Cross-platform: on POSIX a child is stopped with SIGINT (its Ctrl+C path closes sockets), on Windows
it runs in its own process group and gets CTRL_BREAK_EVENT. A child that ignores the request for
``grace_s`` is killed. A pump thread copies the child's output line by line with a ``[name]`` prefix
and signals ``changed`` when the output closes, which is how the supervisor learns a child exited
without polling it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO

import structlog

log = structlog.get_logger()


@dataclass(frozen=True)
class ChildSpec:
    """What to run.

    Attributes:
        name: short label (``env``, ``brain``, ``dashboard``) used as the output prefix.
        argv: the command line (``sys.executable`` first for Python children).
        env: extra environment variables for the child.
    """

    name: str
    argv: Sequence[str]
    env: dict[str, str] = field(default_factory=dict)


class Child:
    """A running (or exited) child process.

    Args:
        spec: what to run.
        changed: set when the child's output closes (it exited).
        out: where prefixed output lines go (default: stdout).
    """

    def __init__(self, spec: ChildSpec, changed: threading.Event, out: IO[str] | None = None) -> None:
        self.spec, self._changed = spec, changed
        self._out = out or sys.stdout
        self._lock = threading.Lock()
        flags = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if sys.platform == "win32" else 0
        self.process = subprocess.Popen(
            list(spec.argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **spec.env},
            text=True,
            errors="replace",
            creationflags=flags,
            start_new_session=sys.platform != "win32",  # the terminal's Ctrl+C is the launcher's to relay
        )
        self._pump = threading.Thread(target=self._copy_output, name=f"pump-{spec.name}", daemon=True)
        self._pump.start()
        log.info("stack.child.started", child=spec.name, pid=self.process.pid)

    @property
    def name(self) -> str:
        """The child's label."""
        return self.spec.name

    def returncode(self) -> int | None:
        """Exit status, or None while running."""
        return self.process.poll()

    def _copy_output(self) -> None:
        assert self.process.stdout is not None
        prefix = f"[{self.spec.name}] "
        for line in self.process.stdout:
            with self._lock:
                self._out.write(prefix + line if line.endswith("\n") else prefix + line + "\n")
                self._out.flush()
        self._changed.set()

    def interrupt(self) -> None:
        """Ask the child to stop (SIGINT / CTRL_BREAK_EVENT); no-op if it already exited."""
        if self.process.poll() is not None:
            return
        try:
            if sys.platform == "win32":
                self.process.send_signal(getattr(signal, "CTRL_BREAK_EVENT", signal.SIGINT))
            else:
                self.process.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass

    def stop(self, grace_s: float) -> int:
        """Interrupt, wait up to ``grace_s``, then kill.

        Returns:
            The exit status.
        """
        self.interrupt()
        try:
            code = self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log.warning("stack.child.killed", child=self.name, pid=self.process.pid, grace_s=grace_s)
            self.process.kill()
            code = self.process.wait()
        self._pump.join(timeout=1.0)
        log.info("stack.child.stopped", child=self.name, code=code)
        return code

"""Start children together, watch them, restart or stop them, and stop them together.

Policy when a child exits by itself (documented in ``docs/service.md``):

- ``restart`` (default): start it again after a back-off (0.5 s doubling to 8 s); the others keep
  running, which the service is built for (the brain re-synchronises with a restarted environment,
  the environment keeps serving a restarted brain). More than ``max_restarts`` exits of one child
  within ``restart_window_s`` means it is broken: everything is stopped and the launcher fails.
- ``stop``: stop every other child and exit with that child's status.

Ctrl+C (or ``stop`` being set: ``navi-stack`` sets it on SIGINT, SIGTERM and SIGHUP) stops all
children, the brain before the environment, and returns 0. On POSIX the children run in their own
session, so a Ctrl+C in the terminal reaches only the launcher, which stops each child once, in
order (a second, direct SIGINT used to catch a child in its own shutdown and kill it).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import IO, Literal

import structlog

from navi_actor.launcher.child import Child, ChildSpec

log = structlog.get_logger()

ExitPolicy = Literal["restart", "stop"]
_FIRST_BACKOFF_S, _MAX_BACKOFF_S = 0.5, 8.0
_WATCH_TIMEOUT_S = 1.0  # upper bound between checks if an exit notification were ever missed


class Supervisor:
    """Runs ``specs`` as one stack.

    Args:
        specs: children in start order (they are stopped in reverse order).
        on_exit: what to do when a child exits by itself.
        max_restarts: restarts of one child allowed within ``restart_window_s``.
        restart_window_s: the window for ``max_restarts``.
        grace_s: how long a child may take to stop before it is killed.
        out: where the children's prefixed output goes (default: stdout).
    """

    def __init__(
        self,
        specs: Sequence[ChildSpec],
        *,
        on_exit: ExitPolicy = "restart",
        max_restarts: int = 5,
        restart_window_s: float = 60.0,
        grace_s: float = 3.0,
        out: IO[str] | None = None,
    ) -> None:
        if not specs:
            raise ValueError("nothing to supervise")
        self.specs, self.on_exit = list(specs), on_exit
        self.max_restarts, self.restart_window_s, self.grace_s = max_restarts, restart_window_s, grace_s
        self.out = out
        self.children: dict[str, Child] = {}
        self.restarts: dict[str, deque[float]] = {spec.name: deque() for spec in specs}
        self._changed = threading.Event()

    def run(self, stop: threading.Event | None = None) -> int:
        """Start everything and supervise until ``stop``, Ctrl+C, or a fatal child exit.

        Returns:
            0 when stopped on request, else the failing child's exit status (or 1).
        """
        stop = stop or threading.Event()
        try:
            for spec in self.specs:
                self.children[spec.name] = Child(spec, self._changed, self.out)
            return self._watch(stop)
        except KeyboardInterrupt:
            log.info("stack.interrupted")
            return 0
        finally:
            self.stop_all()

    def _watch(self, stop: threading.Event) -> int:
        while not stop.is_set():
            self._changed.wait(_WATCH_TIMEOUT_S)
            self._changed.clear()
            for spec in self.specs:
                code = self.children[spec.name].returncode()
                if code is None or stop.is_set():
                    continue
                log.warning("stack.child.exited", child=spec.name, code=code, policy=self.on_exit)
                if self.on_exit == "stop":
                    return code or 1
                if not self._restart(spec, stop):
                    return code or 1
        return 0

    def _restart(self, spec: ChildSpec, stop: threading.Event) -> bool:
        """Restart ``spec`` after a back-off; False when it exceeded its restart budget."""
        now = time.monotonic()
        history = self.restarts[spec.name]
        while history and now - history[0] > self.restart_window_s:
            history.popleft()
        if len(history) >= self.max_restarts:
            log.error(
                "stack.child.failing",
                child=spec.name,
                restarts=len(history),
                window_s=self.restart_window_s,
            )
            return False
        backoff = min(_FIRST_BACKOFF_S * 2 ** len(history), _MAX_BACKOFF_S)
        history.append(now)
        log.info("stack.child.restarting", child=spec.name, backoff_s=backoff, attempt=len(history))
        if stop.wait(backoff):  # back-off pacing that still reacts to stop at once
            return True
        self.children[spec.name] = Child(spec, self._changed, self.out)
        return True

    def wake(self) -> None:
        """Make the watch loop look at ``stop`` and the children now (safe from a signal handler)."""
        self._changed.set()

    def stop_all(self) -> None:
        """Stop every running child, the last started first (brain before environment)."""
        for child in reversed(list(self.children.values())):
            if child.returncode() is None:
                child.stop(self.grace_s)

"""Small ZeroMQ plumbing shared by the publisher, subscriber, REQ client and REP server.

All sockets come from the process-wide ``zmq.Context.instance()`` (thread-safe, one I/O thread) so
that services and tests never juggle contexts; each helper closes its own sockets with ``linger=0``
so a dead peer can never block shutdown. The context itself is left to ``atexit``.
"""

from __future__ import annotations

import socket
import time
from types import TracebackType
from typing import Any, Self

import zmq

RECONNECT_IVL_MS = 100
"""First reconnect delay after a peer vanished (ZeroMQ reconnects by itself)."""
RECONNECT_IVL_MAX_MS = 2000
"""Cap of the exponential reconnect back-off."""


def shared_context() -> zmq.Context[Any]:
    """The process-wide ZeroMQ context."""
    return zmq.Context.instance()


def new_socket(kind: int) -> zmq.Socket[Any]:
    """A socket with the options every Navi socket uses.

    Args:
        kind: ``zmq.PUB``, ``zmq.SUB``, ``zmq.REQ``...

    Returns:
        The socket, with linger 0 and a bounded reconnect back-off.
    """
    sock = shared_context().socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RECONNECT_IVL, RECONNECT_IVL_MS)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, RECONNECT_IVL_MAX_MS)
    return sock


def bind_with_retry(sock: zmq.Socket[Any], endpoint: str, timeout_ms: int = 2000) -> None:
    """Bind ``endpoint``, retrying briefly while a just-closed socket still holds the port.

    ZeroMQ closes sockets asynchronously in its I/O thread, so a server restarted on the same port
    can see ``EADDRINUSE`` for a few milliseconds. This is a bounded retry of a resource, not a
    synchronisation sleep: it gives up with the original error after ``timeout_ms``.

    Args:
        sock: the socket to bind.
        endpoint: e.g. ``tcp://127.0.0.1:5560``.
        timeout_ms: how long to keep retrying.

    Raises:
        zmq.ZMQError: the port is still taken after ``timeout_ms``, or another bind error.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    delay = 0.005
    while True:
        try:
            sock.bind(endpoint)
            return
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EADDRINUSE or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def free_tcp_endpoint(host: str = "127.0.0.1") -> str:
    """A TCP endpoint on a port that was free a moment ago (for tests and benchmarks).

    Args:
        host: the interface address to probe and to put in the endpoint.

    Returns:
        ``tcp://<host>:<port>``.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    return f"tcp://{host}:{port}"


def remaining_ms(deadline: float) -> int:
    """Milliseconds left until ``deadline`` (a ``time.monotonic()`` value), never negative."""
    return max(0, int((deadline - time.monotonic()) * 1000))


class ClosableSocket:
    """Owns one socket: ``close()`` (linger 0, idempotent) and use as a context manager."""

    _socket: zmq.Socket[Any]

    def close(self) -> None:
        """Close the socket at once (linger 0); idempotent."""
        if not self._socket.closed:
            self._socket.close(linger=0)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

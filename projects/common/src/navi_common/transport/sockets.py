"""Small ZeroMQ plumbing shared by the publisher, subscriber, REQ client and REP server.

All sockets come from the process-wide ``zmq.Context.instance()`` (thread-safe, one I/O thread) so
that services and tests never juggle contexts; each helper closes its own sockets with ``linger=0``
so a dead peer can never block shutdown. The context itself is left to ``atexit``.

Limits on what a peer can make us hold (``docs/security.md``): every socket refuses inbound
messages (frames) larger than ``ContractLimits.max_message_bytes`` (``zmq.MAXMSGSIZE``: ZeroMQ drops
the offending connection, the socket serves everyone else), and every queue is bounded by a
high-water mark. A socket that binds anything but loopback logs ``contracts.socket.exposed``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import structlog
import zmq

from navi_common.transport.endpoints import is_local_endpoint

if TYPE_CHECKING:
    from navi_common.transport.curve import CurveKeys

log = structlog.get_logger()

RECONNECT_IVL_MS = 100
"""First reconnect delay after a peer vanished (ZeroMQ reconnects by itself)."""
RECONNECT_IVL_MAX_MS = 2000
"""Cap of the exponential reconnect back-off."""
DEFAULT_HWM = 1000
"""Messages queued per peer and direction unless a socket says otherwise (ZeroMQ's own default)."""

_EXPOSURE: dict[int, str] = {
    zmq.PUB: "anyone who can reach it receives what it publishes",
    zmq.XPUB: "anyone who can reach it receives what it publishes",
    zmq.REP: "anyone who can reach it can send requests (step or reset the simulator)",
    zmq.SUB: "anyone who can reach it can publish into it",
}


def shared_context() -> zmq.Context[Any]:
    """The process-wide ZeroMQ context."""
    return zmq.Context.instance()


def new_socket(
    kind: int,
    *,
    max_message_bytes: int | None = None,
    send_hwm: int = DEFAULT_HWM,
    recv_hwm: int = DEFAULT_HWM,
) -> zmq.Socket[Any]:
    """A socket with the options and limits every Navi socket uses.

    Args:
        kind: ``zmq.PUB``, ``zmq.SUB``, ``zmq.REQ``...
        max_message_bytes: largest inbound frame (``zmq.MAXMSGSIZE``); default
            ``ContractLimits.max_message_bytes``. A peer sending more is disconnected.
        send_hwm: outbound messages queued per peer.
        recv_hwm: inbound messages queued per peer.

    Returns:
        The socket, with linger 0, a bounded reconnect back-off, a size limit and high-water marks.
    """
    if max_message_bytes is None:
        from navi_contracts.codec import default_limits

        max_message_bytes = default_limits().max_message_bytes
    sock = shared_context().socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RECONNECT_IVL, RECONNECT_IVL_MS)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, RECONNECT_IVL_MAX_MS)
    sock.setsockopt(zmq.MAXMSGSIZE, max_message_bytes)
    sock.setsockopt(zmq.SNDHWM, send_hwm)
    sock.setsockopt(zmq.RCVHWM, recv_hwm)
    return sock


def attach(
    sock: zmq.Socket[Any], endpoints: str | Sequence[str], *, bind: bool, curve: CurveKeys | None
) -> None:
    """Secure ``sock`` for its role (CURVE server to bind, client to connect), then bind or connect.

    Args:
        sock: a fresh socket from :func:`new_socket`.
        endpoints: one endpoint or several.
        bind: bind (server role) or connect (client role).
        curve: keys for secure mode; None leaves the connection unauthenticated and unencrypted.

    Raises:
        navi_common.transport.curve.KeysError: the keys lack the half this role needs.
        zmq.ZMQError: a bind or connect failed.
    """
    if curve is not None:
        curve.secure(sock, server=bind)
    listed = [endpoints] if isinstance(endpoints, str) else list(endpoints)
    if curve is not None and bind:
        from navi_common.transport.curve import watch_handshakes

        watch_handshakes(sock, ",".join(listed))
    for endpoint in listed:
        if bind:
            bind_with_retry(sock, endpoint)
            warn_if_exposed(sock, endpoint, secure=curve is not None)
        else:
            sock.connect(endpoint)


def warn_if_exposed(sock: zmq.Socket[Any], endpoint: str, *, secure: bool) -> bool:
    """Log ``contracts.socket.exposed`` when ``sock`` listens beyond this machine.

    Args:
        sock: a bound socket.
        endpoint: the endpoint it was bound to.
        secure: whether CURVE guards it.

    Returns:
        True when the socket is reachable from other machines.
    """
    if is_local_endpoint(endpoint):
        return False
    kind = int(sock.getsockopt(zmq.TYPE))
    log.warning(
        "contracts.socket.exposed",
        endpoint=endpoint,
        socket=zmq.SocketType(kind).name,
        exposure=_EXPOSURE.get(kind, "other machines can connect"),
        guard="CURVE: only allowlisted client keys" if secure else "none: pass --keys for CURVE",
    )
    return True


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

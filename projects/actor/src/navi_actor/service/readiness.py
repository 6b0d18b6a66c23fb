"""Is anything listening at a ZeroMQ endpoint yet? Asked without sending a message.

The environment server binds its sockets only once its scenes are loaded, so "a connection was
accepted" means "ready". A ZeroMQ connect never fails (it retries in the background); the socket
monitor reports the moment the TCP connection is made. The probe never sends anything and is
closed at once, and it works whatever security the handshake then uses.
"""

from __future__ import annotations

import threading
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

_POLL_MS = 100  # bounds the reaction to ``stop``


def wait_until_reachable(endpoint: str, stop: threading.Event, timeout_s: float) -> bool:
    """Wait until something accepts a connection at ``endpoint``.

    Args:
        endpoint: a ZeroMQ connect endpoint (``tcp://host:port``, ``ipc://...``).
        stop: returns False as soon as it is set.
        timeout_s: give up after this long.

    Returns:
        True once connected; False on timeout or stop.
    """
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    probe = context.socket(zmq.DEALER)
    probe.setsockopt(zmq.LINGER, 0)
    monitor = probe.get_monitor_socket(zmq.EVENT_CONNECTED)
    try:
        probe.connect(endpoint)
        deadline = time.monotonic() + timeout_s
        while not stop.is_set() and time.monotonic() < deadline:
            if monitor.poll(_POLL_MS) and recv_monitor_message(monitor)["event"] == zmq.EVENT_CONNECTED:
                return True
        return False
    finally:
        probe.disable_monitor()
        monitor.close(linger=0)
        probe.close(linger=0)

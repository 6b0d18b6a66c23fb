"""Shared fixtures for navi-common tests: free endpoints and a REP server running in a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from navi_common import RepServer, free_tcp_endpoint
from navi_common.transport.reqrep import Handler


@pytest.fixture
def endpoint() -> str:
    """A TCP endpoint on a free 127.0.0.1 port."""
    return free_tcp_endpoint()


@contextmanager
def running_server(endpoint: str, handler: Handler, **kwargs: object) -> Iterator[RepServer]:
    """A RepServer serving in a background thread; stopped, joined and closed on exit."""
    server = RepServer(endpoint, handler, **kwargs)  # type: ignore[arg-type]
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), kwargs={"poll_ms": 20}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
        assert not thread.is_alive(), "RepServer.serve did not notice its stop event"


@pytest.fixture
def serve() -> Callable[..., object]:
    """``with serve(endpoint, handler) as server:`` runs a RepServer in a thread."""
    return running_server

"""Who can reach a socket: loopback tests on hosts and ZeroMQ endpoint strings.

The transport refuses to serve plaintext beyond this machine (:mod:`navi_common.transport.sockets`),
and ``--listen`` rewrites a default endpoint's host; both read endpoints through these helpers. The
endpoint constants themselves are part of the wire layer (:mod:`navi_contracts.topics`).
"""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, ``127.x.x.x``, ``::1`` (bracketed or not) and the ``lo`` interface."""
    host = host.strip("[]").lower()
    if host in {"localhost", "lo"}:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_host(endpoint: str) -> str | None:
    """The host part of a ``tcp://host:port`` endpoint; None for ``ipc://``/``inproc://`` (never remote)."""
    scheme, sep, address = endpoint.partition("://")
    if not sep or scheme != "tcp":
        return None
    host = address.rsplit(":", 1)[0]
    return host.split(";")[-1]  # "tcp://src;dst:port" connects from src to dst


def is_local_endpoint(endpoint: str) -> bool:
    """True when a socket bound to ``endpoint`` cannot be reached from another machine."""
    host = endpoint_host(endpoint)
    return host is None or is_loopback_host(host)


def with_host(endpoint: str, host: str) -> str:
    """``endpoint`` with its TCP host replaced, e.g. to listen on ``0.0.0.0`` (``--listen``).

    Non-TCP endpoints are returned unchanged.
    """
    scheme, sep, address = endpoint.partition("://")
    if not sep or scheme != "tcp" or ":" not in address:
        return endpoint
    return f"tcp://{host}:{address.rsplit(':', 1)[1]}"

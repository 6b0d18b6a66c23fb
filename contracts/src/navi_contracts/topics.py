"""Topic names, default ports and endpoint strings shared by every service.

Topics carry a ``_v2`` suffix that matches the models' ``schema_version``: a peer speaking another
version never even receives our messages on a subscription, which is safer than a decode failure.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from navi_contracts.model_base import WireModel

DISTANCE_MATRIX = "distance_matrix_v2"
ACTION = "action_v2"
STEP_REQUEST = "step_request_v2"
STEP_RESULT = "step_result_v2"
TELEMETRY_EVENT = "telemetry_event_v2"

ALL_TOPICS: tuple[str, ...] = (DISTANCE_MATRIX, ACTION, STEP_REQUEST, STEP_RESULT, TELEMETRY_EVENT)

LOOPBACK = "127.0.0.1"
"""Where every server binds by default: nothing listens beyond this machine unless asked."""
LOCALHOST = "localhost"
"""Where every client connects by default."""

ENV_PUB_PORT = 5559
"""Environment server PUB: DistanceMatrix observations."""
ENV_REP_PORT = 5560
"""Environment server REP: StepRequest -> StepResult."""
ACTOR_PUB_PORT = 5557
"""Actor PUB: Action, TelemetryEvent, and actor-0's DistanceMatrix (B=1) for the dashboard."""
DASHBOARD_PORT = 8050
"""Dashboard web server (HTTP + websocket)."""


def bind_endpoint(port: int, host: str = LOOPBACK) -> str:
    """The TCP endpoint a server binds, e.g. ``tcp://127.0.0.1:5559``.

    Args:
        port: TCP port, 1..65535.
        host: interface to bind (default loopback; ``0.0.0.0`` or ``*`` = every interface).

    Returns:
        The ZeroMQ endpoint string.
    """
    if not 0 < port < 65536:
        raise ValueError(f"port must be in 1..65535, got {port}")
    return f"tcp://{host}:{port}"


def connect_endpoint(port: int, host: str = LOCALHOST) -> str:
    """The TCP endpoint a client connects to, e.g. ``tcp://localhost:5559``.

    Args:
        port: TCP port, 1..65535.
        host: host name or address of the server.

    Returns:
        The ZeroMQ endpoint string.
    """
    if not 0 < port < 65536:
        raise ValueError(f"port must be in 1..65535, got {port}")
    return f"tcp://{host}:{port}"


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


ENV_PUB_BIND = bind_endpoint(ENV_PUB_PORT)
ENV_PUB_CONNECT = connect_endpoint(ENV_PUB_PORT)
ENV_REP_BIND = bind_endpoint(ENV_REP_PORT)
ENV_REP_CONNECT = connect_endpoint(ENV_REP_PORT)
ACTOR_PUB_BIND = bind_endpoint(ACTOR_PUB_PORT)
ACTOR_PUB_CONNECT = connect_endpoint(ACTOR_PUB_PORT)


def _topic_models() -> dict[str, type[WireModel]]:
    from navi_contracts.models import Action, DistanceMatrix, StepRequest, StepResult, TelemetryEvent

    return {
        DISTANCE_MATRIX: DistanceMatrix,
        ACTION: Action,
        STEP_REQUEST: StepRequest,
        STEP_RESULT: StepResult,
        TELEMETRY_EVENT: TelemetryEvent,
    }


TOPIC_MODELS: dict[str, type[WireModel]] = _topic_models()
"""Topic -> the one model published on it; publishers and subscribers enforce it."""

"""Topic names, default ports and endpoint strings shared by every service.

Topics carry a ``_v2`` suffix that matches the models' ``schema_version``: a peer speaking another
version never even receives our messages on a subscription, which is safer than a decode failure.
"""

from __future__ import annotations

from navi_contracts.model_base import WireModel
from navi_contracts.models import Action, DistanceMatrix, StepRequest, StepResult, TelemetryEvent

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
    """The TCP endpoint a server binds, e.g. ``tcp://127.0.0.1:5559`` (``0.0.0.0``: every interface)."""
    return f"tcp://{host}:{_checked_port(port)}"


def connect_endpoint(port: int, host: str = LOCALHOST) -> str:
    """The TCP endpoint a client connects to, e.g. ``tcp://localhost:5559``."""
    return f"tcp://{host}:{_checked_port(port)}"


def _checked_port(port: int) -> int:
    if not 0 < port < 65536:
        raise ValueError(f"port must be in 1..65535, got {port}")
    return port


ENV_PUB_BIND = bind_endpoint(ENV_PUB_PORT)
ENV_PUB_CONNECT = connect_endpoint(ENV_PUB_PORT)
ENV_REP_BIND = bind_endpoint(ENV_REP_PORT)
ENV_REP_CONNECT = connect_endpoint(ENV_REP_PORT)
ACTOR_PUB_BIND = bind_endpoint(ACTOR_PUB_PORT)
ACTOR_PUB_CONNECT = connect_endpoint(ACTOR_PUB_PORT)


TOPIC_MODELS: dict[str, type[WireModel]] = {
    DISTANCE_MATRIX: DistanceMatrix,
    ACTION: Action,
    STEP_REQUEST: StepRequest,
    STEP_RESULT: StepResult,
    TELEMETRY_EVENT: TelemetryEvent,
}
"""Topic -> the one model published on it; publishers and subscribers enforce it."""

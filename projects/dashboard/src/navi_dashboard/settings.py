"""Dashboard configuration: one settings class, ``NAVI_DASHBOARD_`` prefix, nested groups.

Click options in :mod:`navi_dashboard.cli` carry the same names and are passed as init kwargs, so a
command-line value outranks the environment and the repository ``.env``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import SettingsConfigDict

from navi_common.settings import NaviSettings
from navi_contracts import topics


class StreamSettings(BaseModel):
    """How often the dashboard pushes to browsers and how it judges liveness."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_frame_hz: float = Field(
        default=20.0, gt=0, le=120, description="Most observation images pushed to a browser per second."
    )
    status_hz: float = Field(default=5.0, gt=0, le=60, description="Status and chart updates per second.")
    poll_timeout_ms: int = Field(
        default=100, gt=0, le=5000, description="Socket poll timeout; bounds shutdown latency."
    )
    mode_timeout_s: float = Field(
        default=5.0, gt=0, description="Seconds without a message before a source counts as silent."
    )
    prefer_actor_within_s: float = Field(
        default=2.0,
        gt=0,
        description="Show the actor's observation over the environment's while it is this fresh.",
    )
    max_clients: int = Field(
        default=16, ge=1, le=1024, description="Open websockets (tabs) at once; more are refused (503)."
    )


class HistorySettings(BaseModel):
    """Bounded chart history kept in server memory (shared by every browser tab)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_points: int = Field(default=2000, ge=10, le=100_000, description="Points kept per chart series.")
    max_series: int = Field(
        default=256, ge=1, le=4096, description="Distinct metric names tracked; extra names are ignored."
    )


class ControlSettings(BaseModel):
    """Keyboard flight through the environment's step endpoint."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rate_hz: float = Field(default=10.0, gt=0, le=100, description="Step requests per second while flying.")
    timeout_ms: int = Field(default=1000, gt=0, description="Reply timeout of one step request.")
    retries: int = Field(default=1, ge=0, le=10, description="Resends after a timeout before giving up.")
    throttle: float = Field(
        default=1.0, gt=0, le=1.0, description="Scale of a held key's command, in (0, 1] of full range."
    )
    max_messages_hz: float = Field(
        default=20.0, gt=0, le=1000, description="Page messages taken per tab per second; more are dropped."
    )


class DashboardSettings(NaviSettings):
    """Everything ``navi-dashboard`` reads (``NAVI_DASHBOARD_*``, nested with ``__``)."""

    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(env_prefix="NAVI_DASHBOARD_")

    matrix_sub: str = Field(
        default=topics.ENV_PUB_CONNECT, description="Environment PUB endpoint (DistanceMatrix batches)."
    )
    actor_sub: str = Field(
        default=topics.ACTOR_PUB_CONNECT,
        description="Actor PUB endpoint (telemetry and actor 0's observation).",
    )
    step_endpoint: str | None = Field(
        default=None, description="Environment REP endpoint; when set the page can fly the drone."
    )
    host: str = Field(default=topics.LOOPBACK, description="Interface the web server listens on.")
    port: int = Field(
        default=topics.DASHBOARD_PORT, ge=0, le=65535, description="Web server port (0 picks a free one)."
    )
    allowed_hosts: tuple[str, ...] = Field(
        default=(),
        description="Host names accepted besides localhost, 127.0.0.1, ::1 and the bound address (repeat the "
        "option for several).",
    )
    keys: Path | None = Field(
        default=None, description="CURVE keys folder: secure ZeroMQ (docs/security.md); null: plain sockets."
    )
    stream: StreamSettings = Field(default_factory=StreamSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    control: ControlSettings = Field(default_factory=ControlSettings)

    @model_validator(mode="after")
    def _check_endpoints(self) -> DashboardSettings:
        """Reject endpoints ZeroMQ would only refuse later, deep inside a background thread."""
        named = {"matrix_sub": self.matrix_sub, "actor_sub": self.actor_sub}
        if self.step_endpoint is not None:
            named["step_endpoint"] = self.step_endpoint
        for name, endpoint in named.items():
            scheme, sep, rest = endpoint.partition("://")
            if not sep or scheme not in {"tcp", "ipc", "inproc"} or not rest:
                raise ValueError(
                    f"{name}={endpoint!r} is not a ZeroMQ endpoint; expected e.g. tcp://localhost:5559"
                )
        if self.keys is not None:  # the dashboard only connects: it needs the client half
            from navi_common.transport.curve import load_keys

            load_keys(self.keys, client=True)
        return self

"""ZeroMQ environment service: REP steps/resets, PUB observations and telemetry, async and realtime modes.

Exports resolve lazily: :mod:`navi_environment.config` embeds :class:`ServerConfig`, and an eager
import of the service here would import the backend (and so the config) back in a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_environment.server.async_loop import AsyncActionLoop, AsyncCounters
    from navi_environment.server.config import ServerConfig
    from navi_environment.server.realtime_loop import RealtimeLoop
    from navi_environment.server.realtime_schedule import ActionScheduler, RealtimeStats
    from navi_environment.server.service import EnvironmentService, serve

_EXPORTS = {
    "AsyncActionLoop": "navi_environment.server.async_loop",
    "AsyncCounters": "navi_environment.server.async_loop",
    "ServerConfig": "navi_environment.server.config",
    "RealtimeLoop": "navi_environment.server.realtime_loop",
    "ActionScheduler": "navi_environment.server.realtime_schedule",
    "RealtimeStats": "navi_environment.server.realtime_schedule",
    "EnvironmentService": "navi_environment.server.service",
    "serve": "navi_environment.server.service",
}

__all__ = [
    "ActionScheduler",
    "AsyncActionLoop",
    "AsyncCounters",
    "EnvironmentService",
    "RealtimeLoop",
    "RealtimeStats",
    "ServerConfig",
    "serve",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)

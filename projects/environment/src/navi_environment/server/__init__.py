"""ZeroMQ environment service: REP steps/resets, PUB observations and telemetry, async action mode."""

from navi_environment.server.async_loop import AsyncActionLoop, AsyncCounters
from navi_environment.server.config import ServerConfig
from navi_environment.server.service import EnvironmentService, serve

__all__ = ["AsyncActionLoop", "AsyncCounters", "EnvironmentService", "ServerConfig", "serve"]

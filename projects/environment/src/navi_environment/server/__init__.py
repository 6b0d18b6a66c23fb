"""ZeroMQ environment service: REP steps/resets, PUB observations and telemetry."""

from navi_environment.server.service import EnvironmentService, serve

__all__ = ["EnvironmentService", "serve"]

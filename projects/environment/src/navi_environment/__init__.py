"""navi-environment: .gmdag scenes, batched sphere tracing, drone physics, rewards, server."""

__version__ = "0.1.0"

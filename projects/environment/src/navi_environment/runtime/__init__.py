"""Environment runtime: brick-map scenes from .gmdag assets, the spherical sensor, spawn
qualification, the scene cache/atlas and the runtime CLI commands (the sphere tracers that read the
atlas are in :mod:`navi_environment.tracer`)."""

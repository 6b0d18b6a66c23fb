"""Environment runtime: brick-map scenes from .gmdag assets, numba/torch sphere tracers, the
spherical sensor, spawn qualification, the scene cache/atlas and the runtime CLI commands."""

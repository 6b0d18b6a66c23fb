"""Importing and connecting to Ray lazily, so navi-actor works without the ``distributed`` extra."""

from __future__ import annotations

import math
import os
from types import ModuleType
from typing import Any

import structlog

from navi_actor.distributed.config import DistributedConfig

log = structlog.get_logger()


class RayUnavailableError(RuntimeError):
    """``--backend ray`` was requested but Ray is not installed."""


def require_ray() -> ModuleType:
    """Import Ray, or fail with the command that installs it.

    Ray's ``uv run`` integration would ship the working directory to every worker and start them
    through ``uv``; the workers of a local cluster already share this interpreter, so it is switched
    off unless the user set ``RAY_ENABLE_UV_RUN_RUNTIME_ENV`` explicitly. (It is read when Ray is
    first imported, hence before the import.)

    Returns:
        The ``ray`` module.

    Raises:
        RayUnavailableError: Ray is not importable.
    """
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as error:
        raise RayUnavailableError(
            "--backend ray needs Ray: install the extra with `uv sync --extra distributed` "
            "(or `pip install 'navi-actor[distributed]'`)"
        ) from error
    return ray


def reserved_cpus(config: DistributedConfig) -> float:
    """CPUs Ray reserves for the run: every worker, and every learner rank when there are several."""
    learners = config.learners * config.learner_cpus if config.learners > 1 else 0.0
    return config.num_workers * config.worker_cpus + learners


def check_resources(ray: ModuleType, config: DistributedConfig) -> None:
    """Refuse a placement the cluster cannot hold (Ray would wait for it forever)."""
    cpus, gpus = ray.cluster_resources().get("CPU", 0.0), ray.cluster_resources().get("GPU", 0.0)
    need_gpus = config.num_workers * config.worker_gpus + (
        config.learners * config.learner_gpus if config.learners > 1 else 0.0
    )
    if cpus + 1e-9 < reserved_cpus(config) or gpus + 1e-9 < need_gpus:
        raise ValueError(
            f"the Ray cluster has {cpus:g} CPUs and {gpus:g} GPUs; this run reserves "
            f"{reserved_cpus(config):g} CPUs and {need_gpus:g} GPUs ({config.num_workers} workers x "
            f"{config.worker_cpus:g} CPU, {config.learners} learners x {config.learner_cpus:g} CPU): lower "
            "distributed.worker_cpus / learner_cpus or add nodes"
        )


def connect(config: DistributedConfig, **init_kwargs: Any) -> bool:
    """Join or start the Ray cluster named by ``config.address``.

    Args:
        config: distributed settings (``address`` None starts a local cluster).
        **init_kwargs: extra ``ray.init`` arguments (tests pass ``num_cpus``).

    Returns:
        True when this call started (and so must shut down) the connection; False when Ray was
        already initialised by the caller.

    Raises:
        RuntimeError: the cluster named by ``address`` cannot be reached (the message says how to
            start one).
    """
    ray = require_ray()
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, **init_kwargs}
    # A local cluster gets the logical CPUs the run reserves even on a smaller machine (the
    # processes then share the cores), so a fixed placement never waits forever for resources.
    options.setdefault("num_cpus", max(os.cpu_count() or 1, math.ceil(reserved_cpus(config))))
    if config.address is not None:
        options.pop("num_cpus", None)  # a running cluster's resources are its own
        options.pop("include_dashboard", None)
    log.info("actor.distributed.ray_connecting", address=config.address or "local")
    try:
        ray.init(address=config.address, **options)
    except (ConnectionError, TimeoutError) as error:
        raise RuntimeError(
            f"cannot reach the Ray cluster at {config.address!r}: {error} (start one with "
            "`ray start --head`, or leave --address out to start a local cluster)"
        ) from error
    log.info("actor.distributed.ray_connected", resources=ray.cluster_resources())
    return True

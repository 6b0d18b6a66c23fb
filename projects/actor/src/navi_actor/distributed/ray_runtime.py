"""Importing and connecting to Ray lazily, so navi-actor works without the ``distributed`` extra."""

from __future__ import annotations

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

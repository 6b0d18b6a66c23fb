"""Settings for ``navi-environment`` commands: CLI values as init kwargs, problems as usage errors."""

from __future__ import annotations

from typing import Any


def environment_settings(horizon: float | None) -> Any:
    """``EnvironmentSettings`` with CLI overrides; also configures logging from them.

    Args:
        horizon: ``--horizon`` (sensor.horizon_m) or None to keep the configured value.

    Returns:
        The resolved :class:`~navi_environment.config.EnvironmentSettings`.
    """
    from navi_common.cli_options import build_settings
    from navi_common.logging import configure_logging
    from navi_environment.config import EnvironmentSettings

    # a dict for a nested group is deep-merged with env/.env values by pydantic-settings
    overrides: dict[str, Any] = {"sensor": {"horizon_m": horizon}} if horizon else {}
    settings = build_settings(EnvironmentSettings, **overrides)
    configure_logging(settings.log_level, settings.log_json, production=False)
    return settings

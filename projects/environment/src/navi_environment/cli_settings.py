"""Settings for ``navi-environment`` commands: CLI values as init kwargs, problems as usage errors."""

from __future__ import annotations

from typing import Any


def environment_settings(**overrides: Any) -> Any:
    """``EnvironmentSettings`` with CLI overrides; also configures logging from them.

    Args:
        overrides: init kwargs, nested per group (``server={"mode": "async"}``), as
            :func:`navi_common.cli_options.settings_kwargs` makes them from a command's options;
            a group given here is deep-merged with the environment and ``.env`` by pydantic-settings.

    Returns:
        The resolved :class:`~navi_environment.config.EnvironmentSettings`.
    """
    from navi_common.cli_options import build_settings
    from navi_common.logging import configure_logging
    from navi_environment.config import EnvironmentSettings

    settings = build_settings(EnvironmentSettings, **overrides)
    configure_logging(settings.log_level, settings.log_json, production=False)
    return settings

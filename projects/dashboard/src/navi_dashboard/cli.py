"""``navi-dashboard``: serve the live dashboard page against running Navi sockets.

Every option is made from a :class:`~navi_dashboard.settings.DashboardSettings` field
(:mod:`navi_common.cli_options`: nested groups joined with ``-``, e.g. ``--stream-max-frame-hz``
is ``stream.max_frame_hz``) and may also be set as ``NAVI_DASHBOARD_<NAME>`` (nested:
``NAVI_DASHBOARD_STREAM__MAX_FRAME_HZ``) or in ``.env``. A command-line value wins.
"""

from __future__ import annotations

import asyncio
from typing import Any

import click

from navi_common.cli_options import build_settings, settings_kwargs, settings_options
from navi_common.logging import configure_logging
from navi_dashboard.settings import DashboardSettings

OPTIONS = ("matrix_sub", "actor_sub", "step_endpoint", "host", "port", "allowed_hosts", "keys", "log_level")
"""Top-level settings the command exposes, each as ``--<field>``."""
GROUPED_OPTIONS = (
    "stream.max_frame_hz",
    "stream.status_hz",
    "stream.poll_timeout_ms",
    "stream.mode_timeout_s",
    "stream.max_clients",
    "history.max_points",
    "control.rate_hz",
    "control.timeout_ms",
    "control.max_messages_hz",
)
"""Settings of nested groups, each as ``--<group>-<field>``."""


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@settings_options(DashboardSettings, OPTIONS, grouped=GROUPED_OPTIONS)
def main(**options: Any) -> None:
    """Start the live dashboard and print its URL.

    The page shows actor 0's observation (forward hemisphere and 360° panorama), the mode
    (TRAINING / INFERENCE / OBSERVER / WAITING), observation freshness, steps/s, active actors,
    scene, training charts and the reward-term breakdown. It works offline. Start it before or
    after the producers; it reconnects by itself. Stop with Ctrl-C.

    With --step-endpoint the printed URL carries a per-run token: only a tab opened from it can fly.
    """
    from navi_dashboard.runner import DashboardStartError, run_dashboard

    settings = build_settings(DashboardSettings, **settings_kwargs(options))
    configure_logging(settings.log_level, settings.log_json)

    def announce(url: str) -> None:
        click.echo(f"Navi dashboard: {url}", err=False)

    try:
        asyncio.run(run_dashboard(settings, announce))
    except DashboardStartError as exc:
        raise click.ClickException(str(exc)) from exc

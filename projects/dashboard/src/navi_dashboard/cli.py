"""``navi-dashboard``: serve the live dashboard page against running Navi sockets.

Every option has the name of a :class:`~navi_dashboard.settings.DashboardSettings` field (nested
groups joined with ``-``, e.g. ``--stream-max-frame-hz`` is ``stream.max_frame_hz``) and may also be
set as ``NAVI_DASHBOARD_<NAME>`` (nested: ``NAVI_DASHBOARD_STREAM__MAX_FRAME_HZ``) or in ``.env``.
A command-line value wins.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from navi_contracts.logging import configure_logging

# option name -> (settings group or None, field name, type, help)
_OPTIONS: tuple[tuple[str | None, str, Any, str], ...] = (
    (
        None,
        "matrix_sub",
        str,
        "Environment PUB to watch (DistanceMatrix batches). [default: tcp://localhost:5559]",
    ),
    (
        None,
        "actor_sub",
        str,
        "Actor PUB to watch (telemetry + actor 0's view). [default: tcp://localhost:5557]",
    ),
    (
        None,
        "step_endpoint",
        str,
        "Environment REP; enables keyboard flight in the page (WASD/QE/Space/Shift).",
    ),
    (None, "host", str, "Interface the web server listens on. [default: 127.0.0.1]"),
    (None, "port", int, "Web server port; 0 picks a free one. [default: 8050]"),
    (None, "keys", click.Path(path_type=Path, file_okay=False), "CURVE keys folder (docs/security.md)."),
    ("stream", "max_frame_hz", float, "Most observation images pushed per second. [default: 20]"),
    ("stream", "status_hz", float, "Status and chart updates per second. [default: 5]"),
    ("stream", "poll_timeout_ms", int, "Socket poll timeout in ms. [default: 100]"),
    ("stream", "mode_timeout_s", float, "Silence (s) before a source counts as gone. [default: 5]"),
    ("stream", "max_clients", int, "Open tabs (websockets) at once. [default: 16]"),
    ("history", "max_points", int, "Chart points kept per series. [default: 2000]"),
    ("control", "rate_hz", float, "Keyboard flight steps per second. [default: 10]"),
    ("control", "timeout_ms", int, "Reply timeout of one step request in ms. [default: 1000]"),
    ("control", "max_messages_hz", float, "Page messages taken per tab per second. [default: 20]"),
    (None, "log_level", str, "debug, info, warning or error. [default: info]"),
)


def _option_name(group: str | None, field: str) -> str:
    return "--" + "-".join(part for part in (group, field) if part).replace("_", "-")


def _with_options(command: Any) -> Any:
    for group, field, kind, help_text in reversed(_OPTIONS):
        param = f"{group}__{field}" if group else field
        command = click.option(_option_name(group, field), param, type=kind, default=None, help=help_text)(
            command
        )
    return command


def settings_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """Turn click's flat option values into nested settings init kwargs (unset options are left out).

    Args:
        options: ``param -> value`` with nested params spelled ``group__field``.

    Returns:
        kwargs for :class:`DashboardSettings`, e.g. ``{"port": 0, "stream": {"status_hz": 2.0}}``.
    """
    kwargs: dict[str, Any] = {}
    for param, value in options.items():
        if value is None:
            continue
        group, _, field = param.rpartition("__")
        target = kwargs.setdefault(group, {}) if group else kwargs
        target[field] = value
    return kwargs


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@_with_options
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="Also accept this name in Host (repeatable); localhost, 127.0.0.1 and --host always are.",
)
def main(**options: Any) -> None:
    """Start the live dashboard and print its URL.

    The page shows actor 0's observation (forward hemisphere and 360° panorama), the mode
    (TRAINING / INFERENCE / OBSERVER / WAITING), observation freshness, steps/s, active actors,
    scene, training charts and the reward-term breakdown. It works offline. Start it before or
    after the producers; it reconnects by itself. Stop with Ctrl-C.

    With --step-endpoint the printed URL carries a per-run token: only a tab opened from it can fly.
    """
    from navi_dashboard.runner import DashboardStartError, run_dashboard
    from navi_dashboard.settings import DashboardSettings

    options["allowed_hosts"] = options["allowed_hosts"] or None  # unset: leave it to the environment
    try:
        settings = DashboardSettings(**settings_kwargs(options))
    except ValidationError as exc:
        raise click.BadParameter(str(exc)) from exc
    configure_logging(settings.log_level, settings.log_json)

    def announce(url: str) -> None:
        click.echo(f"Navi dashboard: {url}", err=False)

    try:
        asyncio.run(run_dashboard(settings, announce))
    except DashboardStartError as exc:
        raise click.ClickException(str(exc)) from exc

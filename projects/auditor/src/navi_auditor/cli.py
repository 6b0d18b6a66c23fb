"""``navi-auditor`` and ``explore``: record and replay sessions, fly a drone, manage demonstrations."""

from __future__ import annotations

from typing import Any

import click

from navi_auditor.demos.commands import demo_info, demo_merge, demo_verify
from navi_auditor.explorer.command import explore_main
from navi_auditor.settings import AuditorSettings
from navi_auditor.streams.commands import inspect, record, replay
from navi_contracts import configure_logging
from navi_contracts.cli_options import build_settings

__all__ = ["explore_main", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--log-level", default=None, help="debug, info, warning, error [info].")
@click.pass_context
def main(ctx: click.Context, log_level: str | None) -> None:
    """Navi auditor: record and replay ZeroMQ sessions, fly the explorer, check demonstrations."""
    values: dict[str, Any] = {"log_level": log_level} if log_level else {}
    settings = build_settings(AuditorSettings, **values)
    if ctx.invoked_subcommand != "explore":  # the explorer configures logging for its terminal itself
        configure_logging(settings.log_level, settings.log_json)
    ctx.obj = settings


for _command in (record, replay, inspect, demo_info, demo_merge, demo_verify):
    main.add_command(_command)
main.add_command(explore_main, "explore")

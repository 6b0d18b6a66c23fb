"""``navi-auditor`` and ``explore``: record and replay sessions, fly a drone, manage demonstrations."""

from __future__ import annotations

from typing import Any

import click

from navi_auditor.demos.commands import demo_info, demo_merge, demo_verify
from navi_auditor.explorer.command import explore_main
from navi_auditor.settings import AuditorSettings
from navi_auditor.streams.commands import inspect, record, replay
from navi_common import configure_logging
from navi_common.cli_options import build_settings, settings_kwargs, settings_options

__all__ = ["explore_main", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@settings_options(AuditorSettings, ["log_level"])
@click.pass_context
def main(ctx: click.Context, **options: Any) -> None:
    """Navi auditor: record and replay ZeroMQ sessions, fly the explorer, check demonstrations."""
    settings = build_settings(AuditorSettings, **settings_kwargs(options))
    if ctx.invoked_subcommand != "explore":  # the explorer configures logging for its terminal itself
        configure_logging(settings.log_level, settings.log_json)
    ctx.obj = settings


for _command in (record, replay, inspect, demo_info, demo_merge, demo_verify):
    main.add_command(_command)
main.add_command(explore_main, "explore")

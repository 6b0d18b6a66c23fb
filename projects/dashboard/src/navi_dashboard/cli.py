"""``navi-dashboard``: serve the live dashboard page."""

from __future__ import annotations

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Start the live dashboard against running Navi sockets."""
    raise click.ClickException("the dashboard is not built yet (issue 8)")

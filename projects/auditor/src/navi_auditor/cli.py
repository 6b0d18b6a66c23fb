"""``navi-auditor`` and ``explore``: record and replay sessions, fly a drone by hand."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Navi auditor: record and replay ZeroMQ sessions."""


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--record", is_flag=True, help="Save the flight as a demonstration .npz.")
def explore_main(record: bool) -> None:
    """Fly one drone through compiled scenes from the terminal."""
    raise click.ClickException("the explorer is not built yet (issue 7)")

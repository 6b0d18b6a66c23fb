"""Runtime commands of ``navi-environment`` (serve, bench-sdfdag)."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    """Attach this module's commands to the ``navi-environment`` group."""

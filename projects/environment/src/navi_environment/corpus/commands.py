"""Compiler and corpus commands of ``navi-environment`` (compile-gmdag, check-sdfdag, qualify-gmdag, corpus)."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    """Attach this module's commands to the ``navi-environment`` group."""

"""``navi-environment``: compile scenes, check and qualify assets, serve and benchmark."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Navi environment: build .gmdag scenes and run the batched drone simulator."""

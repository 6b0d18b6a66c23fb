"""``navi-environment``: compile scenes, check and qualify assets, serve and benchmark."""

from __future__ import annotations

import click

from navi_environment.corpus import commands as corpus_commands
from navi_environment.preview import command as preview_commands
from navi_environment.runtime import commands as runtime_commands
from navi_environment.server import command as server_commands


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Navi environment: build .gmdag scenes and run the batched drone simulator."""


corpus_commands.register(main)
preview_commands.register(main)
runtime_commands.register(main)
server_commands.register(main)

"""``navi-actor`` and ``brain``: train, evaluate, manage models and serve the policy."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Navi actor: train the drone policy with PPO and manage checkpoints."""


@main.command()
def train() -> None:
    """Train the policy in-process on the default corpus (canonical fast path)."""
    raise click.ClickException("the PPO trainer is not built yet (issue 5); nothing to run")


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.pass_context
def brain_main(ctx: click.Context) -> None:
    """Navi brain: bare ``brain`` serves the policy; subcommands reach the navi-actor commands."""
    if ctx.invoked_subcommand is None:
        raise click.ClickException("the brain service is not built yet (issue 6)")


for _name, _command in main.commands.items():
    brain_main.add_command(_command, _name)

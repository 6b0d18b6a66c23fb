"""``navi-keys``: CURVE keys for the secure mode (``navi-keys generate``)."""

from __future__ import annotations

from pathlib import Path

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """CURVE keys for the secure mode (--keys DIR on every service and client).

    See docs/security.md for which files each machine needs.
    """


@main.command("generate")
@click.option(
    "--dir",
    "folder",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to write the keys. [default: artifacts/keys]",
)
@click.option(
    "--overwrite", is_flag=True, help="Replace existing keys (every peer then needs the new files)."
)
def generate(folder: Path | None, overwrite: bool) -> None:
    """Write a server and a client key pair and allowlist the client.

    Secret keys are written with 0600 permissions. Pass the folder to every service and client with
    --keys DIR (or run `navi-stack --secure`); docs/security.md says which files each machine needs.
    """
    from navi_common.transport.curve import KeysError, default_keys_dir, generate_keys

    target = folder if folder is not None else default_keys_dir()
    try:
        written = generate_keys(target, overwrite=overwrite)
    except (KeysError, OSError) as error:
        raise click.ClickException(str(error)) from error
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(f"secure mode: pass --keys {target} to every service and client (or: navi-stack --secure)")

"""``navi-environment preview``: one PNG that shows whether a compiled scene is the right way up."""

from __future__ import annotations

from pathlib import Path

import click

from navi_environment.cli_settings import environment_settings


@click.command("preview")
@click.option(
    "--gmdag-file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The scene.",
)
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The .png to write."
)
@click.option(
    "--level", type=int, default=128, show_default=True, help="Cells per axis of the views (power of two)."
)
def preview_command(gmdag_file: Path, out: Path, level: int) -> None:
    """Write a picture of a compiled scene: top view (height of the highest surface), a vertical
    section and a plan through a spawn (spawns as red dots), and a spherical panorama from the
    best spawn (zenith at the top; sky blue where nothing is within the horizon)."""
    from navi_environment.gmdag.format import GmdagFormatError
    from navi_environment.gmdag.reader import load_gmdag
    from navi_environment.preview.png import write_png
    from navi_environment.preview.render import render_preview

    if level < 8 or level & (level - 1):
        raise click.UsageError(f"--level must be a power of two >= 8, got {level}")
    settings = environment_settings()
    try:
        asset = load_gmdag(gmdag_file)
    except GmdagFormatError as error:
        raise click.ClickException(str(error)) from error
    preview = render_preview(asset, settings, level)
    write_png(out, preview.image)
    x, y, z = (float(v) for v in preview.spawn)
    where = "best spawn" if preview.spawns else "cube centre (no spawn)"
    click.echo(f"{out}: panorama from the {where} ({x:.2f}, {y:.2f}, {z:.2f}) m; {preview.reason}")


def register(group: click.Group) -> None:
    """Attach ``preview`` to the ``navi-environment`` group."""
    group.add_command(preview_command)

"""``navi-actor export-metrics RUN --format tensorboard``: a finished run's curves for TensorBoard."""

from __future__ import annotations

from pathlib import Path

import click


def run_folder(run: str) -> Path:
    """RUN as given: a run folder path, or a run id under ``<artifacts>/runs``."""
    given = Path(run).expanduser()
    if given.is_dir():
        return given
    from navi_actor.cli import build_settings
    from navi_contracts.paths import artifacts_root

    runs = (build_settings().train.artifacts_dir or artifacts_root()) / "runs"
    if (runs / run).is_dir():
        return runs / run
    raise click.BadParameter(f"{run!r} is neither a folder nor a run id in {runs}", param_hint="RUN")


@click.command("export-metrics")
@click.argument("run")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["tensorboard"]),
    default="tensorboard",
    show_default=True,
    help="What to write.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Event folder (default: <run>/tensorboard-export).",
)
def export_metrics(run: str, output_format: str, out: Path | None) -> None:
    """Convert RUN's metrics.jsonl (a run folder or run id) into TensorBoard scalars, same tag names."""
    from navi_actor.metrics_loggers import MetricsLoggerUnavailableError, export_tensorboard

    folder = run_folder(run)
    try:
        target, lines = export_tensorboard(folder, out)
    except (FileNotFoundError, FileExistsError, ValueError, MetricsLoggerUnavailableError) as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"wrote {lines} metrics lines as {output_format} scalars to {target}")
    click.echo(f"view: tensorboard --logdir {target}")

"""Runtime commands of ``navi-environment``: ``bench-sdfdag`` (``serve`` is in ``server.command``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from navi_environment.cli_settings import environment_settings

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("bench-sdfdag")
@click.option("--gmdag-file", type=_FILE, required=True, help="Scene to benchmark.")
@click.option("--actors", type=click.IntRange(min=1), default=4, show_default=True, help="Drones (batch B).")
@click.option("--steps", type=click.IntRange(min=1), default=100, show_default=True, help="Timed steps.")
@click.option("--device", default="cpu", show_default=True, help="Torch device of the backend.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON line.")
def bench_command(gmdag_file: Path, actors: int, steps: int, device: str, as_json: bool) -> None:
    """Time full backend steps (random actions) and the sensor trace on one scene."""
    from navi_environment.runtime.bench import bench_backend

    settings = environment_settings()
    result: dict[str, Any] = {"scene": str(gmdag_file), "device": device}
    result.update(bench_backend(settings, actors, steps, scene_paths=[gmdag_file], device=device))
    if as_json:
        click.echo(json.dumps(result, sort_keys=True))
        return
    click.echo(
        f"{gmdag_file.name}: {actors} drones, {result['ms_per_step']:.2f} ms/step, "
        f"{result['steps_per_s']:.0f} drone-steps/s, trace {result['trace_ms']:.2f} ms "
        f"(bare: {100 * result['trace_share']:.0f}% of a step; inside the steps: "
        f"{100 * result['in_step_trace_share']:.0f}%)"
    )


def register(group: click.Group) -> None:
    """Attach this module's commands to the ``navi-environment`` group."""
    group.add_command(bench_command)

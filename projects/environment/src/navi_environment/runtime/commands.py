"""Runtime commands of ``navi-environment``: ``serve`` and ``bench-sdfdag``."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any

import click


def _settings(horizon: float | None) -> Any:
    """EnvironmentSettings with CLI values as init kwargs; invalid values are usage errors."""
    from pydantic import ValidationError

    from navi_contracts.logging import configure_logging
    from navi_environment.config import EnvironmentSettings

    try:
        # a dict for a nested group is deep-merged with env/.env values by pydantic-settings
        overrides: dict[str, Any] = {"sensor": {"horizon_m": horizon}} if horizon else {}
        settings = EnvironmentSettings(**overrides)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise click.UsageError(f"invalid settings: {problems}") from error
    configure_logging(settings.log_level, settings.log_json, production=False)
    return settings


_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command("serve")
@click.option(
    "--pub", "pub", default="tcp://*:5559", show_default=True, help="PUB bind endpoint ('' = none)."
)
@click.option("--rep", "rep", default="tcp://*:5560", show_default=True, help="REP bind endpoint.")
@click.option("--actors", type=click.IntRange(min=1), default=4, show_default=True, help="Drones (batch B).")
@click.option("--gmdag-file", type=_FILE, default=None, help="Serve this one scene.")
@click.option("--corpus", type=_DIR, default=None, help="Serve every .gmdag in this folder.")
@click.option("--horizon", type=float, default=None, help="Sensor horizon in metres (sensor.horizon_m).")
@click.option("--device", default="cpu", show_default=True, help="Torch device of the backend.")
def serve_command(  # noqa: PLR0917 - click passes every option positionally by name
    pub: str, rep: str, actors: int, gmdag_file: Path | None, corpus: Path | None, horizon: float | None,
    device: str,
) -> None:  # fmt: skip
    """Serve the batched environment over ZeroMQ until Ctrl+C.

    REP answers StepRequest (actions or reset) with StepResult; PUB publishes every DistanceMatrix
    and an environment.step telemetry event. Without --gmdag-file/--corpus the configured corpus
    folder (compile.corpus_dir under artifacts/) is used.
    """
    from navi_environment.backend import SdfDagBackend
    from navi_environment.server.service import scene_sources, serve

    settings = _settings(horizon)
    try:
        paths = scene_sources(gmdag_file, corpus)
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    backend = SdfDagBackend(settings, actors, device=device, scene_paths=paths)
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        served = serve(backend, pub or None, rep, stop)
    finally:
        signal.signal(signal.SIGINT, previous)
    click.echo(f"served {served} requests")


@click.command("bench-sdfdag")
@click.option("--gmdag-file", type=_FILE, required=True, help="Scene to benchmark.")
@click.option("--actors", type=click.IntRange(min=1), default=4, show_default=True, help="Drones (batch B).")
@click.option("--steps", type=click.IntRange(min=1), default=100, show_default=True, help="Timed steps.")
@click.option("--device", default="cpu", show_default=True, help="Torch device of the backend.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON line.")
def bench_command(gmdag_file: Path, actors: int, steps: int, device: str, as_json: bool) -> None:
    """Time full backend steps (random actions) and the sensor trace on one scene."""
    from navi_environment.runtime.bench import bench_backend

    settings = _settings(None)
    result: dict[str, Any] = {"scene": str(gmdag_file), "device": device}
    result.update(bench_backend(settings, actors, steps, scene_paths=[gmdag_file], device=device))
    if as_json:
        click.echo(json.dumps(result, sort_keys=True))
        return
    click.echo(
        f"{gmdag_file.name}: {actors} drones, {result['ms_per_step']:.2f} ms/step, "
        f"{result['steps_per_s']:.0f} drone-steps/s, trace {result['trace_ms']:.2f} ms "
        f"({100 * result['trace_share']:.0f}% of a step)"
    )


def register(group: click.Group) -> None:
    """Attach this module's commands to the ``navi-environment`` group."""
    group.add_command(serve_command)
    group.add_command(bench_command)

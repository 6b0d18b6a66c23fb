"""``navi-environment serve``: the environment over ZeroMQ (step, async or realtime mode) until Ctrl+C."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import click

from navi_environment.cli_settings import environment_settings

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
_MODES = click.Choice(["step", "async", "realtime"])


def build_server_config(base: Any = None, **options: Any) -> Any:
    """``ServerConfig``: CLI values (None = unset) over ``base`` (the ``server`` settings group).

    Invalid values are usage errors.
    """
    from navi_common.cli_options import build_settings
    from navi_environment.server.config import ServerConfig

    values = base.model_dump() if base is not None else {}
    values.update({name: value for name, value in options.items() if value is not None})
    return build_settings(ServerConfig, **values)


@click.command("serve")
@click.option("--mode", type=_MODES, default=None, help="[default: step]")
@click.option(
    "--pub", "pub_endpoint", default=None, help="PUB bind endpoint ('' = none). [default: tcp://127.0.0.1:5559]"
)
@click.option("--rep", "rep_endpoint", default=None, help="REP bind endpoint. [default: tcp://127.0.0.1:5560]")
@click.option(
    "--action-sub",
    default=None,
    help="Async/realtime mode: the brain PUB to take actions from. [default: tcp://localhost:5557]",
)
@click.option("--keys", type=_DIR, default=None, help="CURVE keys folder: secure mode (docs/security.md).")
@click.option(
    "--seed", type=click.IntRange(0), default=None, help="Async/realtime: start-up reset seed. [default: 0]"
)
@click.option(
    "--republish-ms",
    type=int,
    default=None,
    help="Async mode: re-publish the waiting observation this often. [default: 250]",
)
@click.option(
    "--control-hz",
    type=float,
    default=None,
    help="Realtime mode: control ticks per second. [default: 20]",
)
@click.option(
    "--fallback",
    type=click.Choice(["hold", "slow"]),
    default=None,
    help="Realtime mode, a tick without a scheduled action: repeat the last action, or halve it each "
    "tick. [default: hold]",
)
@click.option("--actors", type=click.IntRange(min=1), default=4, show_default=True, help="Drones (batch B).")
@click.option("--gmdag-file", type=_FILE, default=None, help="Serve this one scene.")
@click.option("--corpus", type=_DIR, default=None, help="Serve every .gmdag in this folder.")
@click.option("--horizon", type=float, default=None, help="Sensor horizon in metres (sensor.horizon_m).")
@click.option("--device", default="cpu", show_default=True, help="Torch device of the backend.")
def serve_command(
    *,
    mode: str | None,
    pub_endpoint: str | None,
    rep_endpoint: str | None,
    action_sub: str | None,
    seed: int | None,
    republish_ms: int | None,
    control_hz: float | None,
    fallback: str | None,
    keys: Path | None,
    actors: int,
    gmdag_file: Path | None,
    corpus: Path | None,
    horizon: float | None,
    device: str,
) -> None:
    """Serve the batched environment over ZeroMQ until Ctrl+C (or SIGTERM).

    Every mode: REP answers StepRequest (actions or reset; realtime mode: resets only) with
    StepResult, and PUB publishes every DistanceMatrix and an environment.step telemetry event.

    --mode async also subscribes to the brain's actions (action_v2 on --action-sub, as published by
    `navi-actor serve --mode async`): the server resets at start-up (--seed), steps on each action
    whose step_id is the current observation's (older re-sends and foreign batches are skipped), and
    re-publishes the current observation every --republish-ms while no action comes.

    --mode realtime steps every drone --control-hz times a second whether or not the brain has
    answered: each tick executes the action the brain scheduled for it (Action.start_tick/chunk), or
    the --fallback; REQ answers resets only. Observations carry the tick as step_id, and an
    environment.realtime.stats telemetry event (missed ticks, fallback ticks, action age) goes out
    every second.

    Without --gmdag-file/--corpus the configured corpus folder (compile.corpus_dir under artifacts/)
    is used.
    """
    from navi_common.signals import on_termination, raise_interrupt, set_event

    # Ctrl+C, SIGTERM and SIGHUP alike: while loading they interrupt at once; once serving they set
    # ``stop``, and the loop closes its sockets at the next poll. Either way the exit status is 0.
    try:
        with on_termination(raise_interrupt):
            from navi_environment.backend import SdfDagBackend
            from navi_environment.server.service import scene_sources

            settings = environment_settings(horizon)
            config = build_server_config(
                settings.server, mode=mode, pub_endpoint=pub_endpoint, rep_endpoint=rep_endpoint,
                action_sub=action_sub, seed=seed, republish_ms=republish_ms, control_hz=control_hz,
                fallback=fallback, keys=keys,
            )  # fmt: skip
            try:
                paths = scene_sources(gmdag_file, corpus)
            except ValueError as error:
                raise click.UsageError(str(error)) from error
            try:
                backend = SdfDagBackend(settings, actors, device=device, scene_paths=paths)
            except ValueError as error:  # a broken file, or a scene that cannot host drones
                raise click.ClickException(f"unusable scene: {error}") from error
    except KeyboardInterrupt:
        click.echo("interrupted while loading; nothing served")
        return
    from navi_environment.server.service import serve

    stop = threading.Event()
    with on_termination(set_event(stop)):
        served = serve(backend, config.pub_endpoint or None, config.rep_endpoint, stop, config)
    click.echo(f"served {served} requests")


def register(group: click.Group) -> None:
    """Attach ``serve`` (step, async and realtime mode) to the ``navi-environment`` group."""
    group.add_command(serve_command)

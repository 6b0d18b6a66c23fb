"""``navi-environment serve``: the environment over ZeroMQ (step, async or realtime mode) until Ctrl+C."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import click

from navi_common.cli_options import settings_kwargs, settings_options
from navi_environment.cli_settings import environment_settings
from navi_environment.config import EnvironmentSettings

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


SERVE_FIELDS = ("server.mode", "server.pub_endpoint", "server.rep_endpoint", "server.action_sub",
                "server.keys", "server.seed", "server.republish_ms", "server.control_hz",
                "server.fallback", "server.guard", "sensor.horizon_m")  # fmt: skip
"""Settings ``serve`` exposes as ``--<field>`` (:mod:`navi_common.cli_options`): each is passed only
when given, so ``NAVI_ENV_SERVER__*`` and ``.env`` still apply, and its default is the field's."""


@click.command("serve")
@settings_options(EnvironmentSettings, SERVE_FIELDS)
@click.option("--actors", type=click.IntRange(min=1), default=4, show_default=True, help="Drones (batch B).")
@click.option("--gmdag-file", type=_FILE, default=None, help="Serve this one scene.")
@click.option("--corpus", type=_DIR, default=None, help="Serve every .gmdag in this folder.")
@click.option("--device", default="cpu", show_default=True, help="Torch device of the backend.")
def serve_command(
    *, actors: int, gmdag_file: Path | None, corpus: Path | None, device: str, **options: Any
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
    the --fallback; with --guard each executed action is capped by the collision guard (from the
    newest observation, so the drone can stop before every near surface); REQ answers resets only.
    Observations carry the tick as step_id, and an environment.realtime.stats telemetry event (missed
    ticks, fallback ticks, guarded ticks, action age) goes out every second.

    Without --gmdag-file/--corpus the configured corpus folder (compile.corpus_dir under artifacts/)
    is used.
    """
    from navi_common.signals import on_termination, raise_interrupt, set_event

    # Ctrl+C, SIGTERM and SIGHUP alike: while loading they interrupt at once; once serving they set
    # ``stop``, and the loop closes its sockets at the next poll. Either way the exit status is 0.
    try:
        with on_termination(raise_interrupt):
            from navi_environment.backend import SdfDagBackend
            from navi_environment.server.service import scene_sources, warm_up

            settings = environment_settings(**settings_kwargs(options))
            config = settings.server
            try:
                paths = scene_sources(gmdag_file, corpus)
            except ValueError as error:
                raise click.UsageError(str(error)) from error
            try:
                backend = SdfDagBackend(settings, actors, device=device, scene_paths=paths)
            except ValueError as error:  # a broken file, or a scene that cannot host drones
                raise click.ClickException(f"unusable scene: {error}") from error
            warm_up(backend)  # compile the kernels now, not inside the first client's timeout
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

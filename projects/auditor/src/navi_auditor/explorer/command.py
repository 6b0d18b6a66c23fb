"""``explore``: fly one drone through compiled scenes from the terminal (or on autopilot), recording."""

from __future__ import annotations

import os
import secrets
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import structlog
import zmq

from navi_auditor.demos import DemoWriter
from navi_auditor.explorer.terminal import Terminal
from navi_auditor.provenance import provenance
from navi_auditor.settings import AuditorSettings
from navi_common import Publisher, configure_logging
from navi_common.cli_options import build_settings, settings_kwargs, settings_options
from navi_common.signals import on_termination, set_event
from navi_common.transport.curve import KeysError, load_keys
from navi_contracts import artifacts_root

if TYPE_CHECKING:
    import torch

    from navi_auditor.explorer.session import ExplorerSession
    from navi_environment.config import EnvironmentSettings

log = structlog.get_logger()


def default_demo_path(settings: AuditorSettings, pilot: str) -> Path:
    """``<demos.out_dir or artifacts/demonstrations>/<UTC time>-<pilot>-<4 hex>.npz``."""
    folder = settings.demos.out_dir or artifacts_root() / "demonstrations"
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return folder / f"{stamp}-{pilot}-{secrets.token_hex(2)}.npz"


def demo_metadata(settings: AuditorSettings, env_settings: EnvironmentSettings, pilot: str) -> dict[str, Any]:
    """Provenance stored in a demonstration: settings, pilot, versions, git revision."""
    return {
        **provenance(),
        "pilot": pilot,
        "seed": settings.explore.seed,
        "environment_settings": env_settings.model_dump_json(),
        "auditor_settings": settings.model_dump_json(),
        "horizon_m": env_settings.sensor.horizon_m,
    }


def _open_writer(
    settings: AuditorSettings, env_settings: EnvironmentSettings, pilot: str, out: Path | None
) -> DemoWriter:
    path = out or default_demo_path(settings, pilot)
    if path.exists():
        raise click.ClickException(f"{path} exists; demonstrations are never overwritten")
    shape = (env_settings.sensor.azimuth_bins, env_settings.sensor.elevation_bins)
    return DemoWriter(path, shape, demo_metadata(settings, env_settings, pilot), settings.demos.part_frames)


def open_publisher(endpoint: str | None, keys: Path | None = None) -> Publisher | None:
    """Bind the observation PUB socket (CURVE with ``keys``), or explain why it cannot be bound."""
    if not endpoint:
        return None
    try:
        return Publisher(endpoint, curve=load_keys(keys, server=True))
    except KeysError as error:
        raise click.ClickException(str(error)) from error
    except zmq.ZMQError as error:
        raise click.ClickException(
            f"cannot bind {endpoint}: {error}. Another publisher (navi-environment serve?) may hold it; "
            "pass --publish with another endpoint, or --publish none"
        ) from error


def make_autopilot(
    kind: str, session: ExplorerSession, settings: AuditorSettings, env_settings: EnvironmentSettings
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The pilot used while autopilot is on: the scripted steering or the frontier planner."""
    from navi_auditor.explorer.autopilot import Autopilot
    from navi_auditor.explorer.frontier_pilot import FrontierPilot

    device = settings.explore.device
    if kind == "frontier":
        return FrontierPilot(session, env_settings, device)
    sensor = env_settings.sensor
    return Autopilot(settings.autopilot, sensor.horizon_m, sensor.azimuth_bins, sensor.elevation_bins, device)


EXPLORE_FIELDS = ("explore.gmdag_file", "explore.corpus", "explore.max_steps", "explore.max_scenes",
                  "explore.seed", "explore.step_hz", "explore.autopilot_hz", "explore.color",
                  "explore.device", "explore.publish", "keys", "log_level")  # fmt: skip
"""Settings ``explore`` exposes as ``--<field>`` (:mod:`navi_common.cli_options`)."""


def _open_session(env_settings: Any, scene_files: Any, explore: Any, writer: Any, publisher: Any) -> Any:
    """The explorer session on the first scene; a broken scene file, or one that cannot host
    drones, is refused with one line (the publisher is closed first)."""
    from navi_auditor.explorer.session import ExplorerSession

    try:
        return ExplorerSession(
            env_settings,
            scene_files,
            base_seed=explore.seed,
            device=explore.device,
            writer=writer,
            publisher=publisher,
        )
    except ValueError as error:
        if publisher is not None:
            publisher.close()
        raise click.ClickException(f"unusable scene: {error}") from error


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--record", is_flag=True, help="Save the flight as a demonstration .npz (artifacts/demonstrations/)."
)
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="Demonstration file (with --record)."
)
@settings_options(AuditorSettings, EXPLORE_FIELDS)
@click.option(
    "--autopilot",
    type=click.Choice(["scripted", "frontier"]),
    is_flag=False,
    flag_value="scripted",
    default=None,
    help="Start on autopilot (T toggles it): 'scripted' (plain --autopilot) steers from the depth view; "
    "'frontier' maps the scene from depth and pose and plans paths to unexplored space.",
)
def explore_main(*, record: bool, out: Path | None, autopilot: str | None, **options: Any) -> None:
    """Fly one drone through compiled scenes from the terminal (works over SSH).

    \b
    Keys: W/S or Up/Down forward/back   A/D strafe left/right   Q/E or Left/Right yaw
          Space or R up   C, Z or F down (a terminal cannot see Shift alone)
          X stop   T toggle autopilot   Esc next scene   Ctrl+C quit
    A key keeps its axis engaged for a few steps (terminals send no key-up); hold it to keep going.
    The view shows the forward half of the distance matrix (near = bright, misses = dark blue);
    the same observations are published as DistanceMatrix on --publish for the dashboard.
    Without --log-level the log level is warning on a terminal (the view fills it), else log_level.
    """
    # Heavy imports (torch, numba kernels) only when flying, so `navi-auditor --help` starts fast.
    from navi_auditor.explorer.runner import ExplorerLoop
    from navi_auditor.explorer.scenes import SceneSourceError, resolve_scene_files
    from navi_environment.config import EnvironmentSettings

    settings = build_settings(AuditorSettings, **settings_kwargs(options))
    terminal = Terminal()
    level = options["log_level"] or ("warning" if terminal.interactive else settings.log_level)
    configure_logging(level, settings.log_json)
    env_settings = build_settings(EnvironmentSettings)  # a bad NAVI_ENV_* value: one line
    explore = settings.explore
    try:
        scene_files = resolve_scene_files(explore.gmdag_file, explore.corpus, env_settings)
    except SceneSourceError as error:
        raise click.ClickException(str(error)) from error
    pilot = {None: "keyboard", "scripted": "autopilot", "frontier": "frontier"}[autopilot]
    stop = threading.Event()
    # Ctrl+C, SIGTERM and SIGHUP (a closed SSH session) alike end the flight after the current step
    # and finish the demonstration; a repeated signal while it is being finished changes nothing.
    with on_termination(set_event(stop)):
        publisher = open_publisher(explore.publish, settings.keys)
        writer = _open_writer(settings, env_settings, pilot, out) if record else None
        session = _open_session(env_settings, scene_files, explore, writer, publisher)
        pilot_fn = make_autopilot(autopilot or "scripted", session, settings, env_settings)
        summary = None
        try:
            with terminal:
                loop = ExplorerLoop(session, terminal, explore, pilot_fn, autopilot is not None, stop=stop)
                summary = loop.run()
        except ValueError as error:  # a later scene of a corpus is broken or cannot host drones
            raise click.ClickException(f"unusable scene: {error}") from error
        finally:
            written = session.close()
            if publisher is not None:
                publisher.close()
        steps = session.total_steps if summary is None else summary.steps
        report_flight(steps, session.scene_number + 1, session.collisions, written, writer)
        if stop.is_set():
            log.info("auditor.explore.interrupted", steps=session.total_steps)
            exit_stopped()


def exit_stopped() -> None:
    """Exit 0 at once once a stop request has been honoured (file written, terminal restored).

    Interpreter shutdown with torch and numba loaded takes seconds; a repeated SIGTERM landing in it,
    after the handlers are gone, would kill a process that already finished its work with -15.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def report_flight(
    steps: int, scenes: int, collisions: int, written: Path | None, writer: DemoWriter | None
) -> None:
    """The closing lines: what was flown, where the demonstration went, and a hovering warning."""
    click.echo(f"flew {steps} steps in {scenes} scene(s), {collisions} collisions")
    if written is not None:
        click.echo(f"demonstration: {written}")
    warning = writer.stationary_warning() if writer is not None else None
    if warning is not None:
        click.echo(warning, err=True)

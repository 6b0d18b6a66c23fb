"""``navi-stack``: the environment server, the brain (and the dashboard) as one supervised stack."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import click

from navi_actor.launcher.child import ChildSpec
from navi_actor.service.brain_settings import BrainSettings
from navi_common.cli_options import build_settings, settings_kwargs, settings_options
from navi_common.signals import on_termination, raise_interrupt
from navi_common.transport.endpoints import with_host
from navi_contracts.topics import LOCALHOST, LOOPBACK

_ENV_ENTRY = "import sys; from navi_environment.cli import main; sys.exit(main())"


def stack_specs(
    settings: Any, *, gmdag_file: Path | None, corpus: Path | None, actors: int
) -> list[ChildSpec]:
    """The command lines of the stack's children, in start order.

    Args:
        settings: resolved ``BrainSettings`` (``service`` and ``launcher`` groups).
        gmdag_file: one scene for the environment server.
        corpus: a corpus folder for the environment server.
        actors: drones the environment simulates.

    Returns:
        ``env``, ``brain`` and, when asked and installed, ``dashboard``.
    """
    service, listen = settings.service, settings.launcher.listen
    keys = stack_keys(settings)
    secure = ["--keys", str(keys)] if keys is not None else []
    brain_pub = with_host(service.pub_endpoint, listen) if listen else service.pub_endpoint
    env_argv = [sys.executable, "-c", _ENV_ENTRY, "serve"]
    env_argv += ["--pub-endpoint", _bind_of(service.sub_endpoint, listen)]
    env_argv += ["--rep-endpoint", _bind_of(service.step_endpoint, listen), "--actors", str(actors), *secure]
    if gmdag_file is not None:
        env_argv += ["--gmdag-file", str(gmdag_file)]
    if corpus is not None:
        env_argv += ["--corpus", str(corpus)]
    if service.mode == "async":  # the environment steps on the actions the brain publishes
        env_argv += ["--mode", "async", "--action-sub", with_host(brain_pub, LOCALHOST)]
    brain_argv = [
        sys.executable,
        "-m",
        "navi_actor.service",
        "--mode",
        service.mode,
        "--sub-endpoint",
        service.sub_endpoint,
        "--pub-endpoint",
        brain_pub,
        "--step-endpoint",
        service.step_endpoint,
        "--deterministic" if service.deterministic else "--stochastic",
        *secure,
    ]
    if service.checkpoint is not None:
        brain_argv += ["--checkpoint", str(service.checkpoint)]
    specs = [ChildSpec("env", env_argv), ChildSpec("brain", brain_argv)]
    if settings.launcher.with_dashboard:
        if importlib.util.find_spec("navi_dashboard") is None:
            click.echo("navi-stack: navi-dashboard is not installed; running without it", err=True)
        else:
            web = ["--host", listen] if listen else []
            specs.append(ChildSpec("dashboard", [sys.executable, "-m", "navi_dashboard", *web, *secure]))
    return specs


def stack_keys(settings: Any) -> Path | None:
    """The CURVE keys folder of the stack: ``service.keys``, else ``artifacts/keys`` with ``--secure``."""
    if settings.service.keys is not None:
        return Path(settings.service.keys)
    if settings.launcher.secure:
        from navi_common.transport.curve import default_keys_dir

        return default_keys_dir()
    return None


def _bind_of(connect_endpoint: str, listen: str | None) -> str:
    """The bind endpoint matching the brain's connect endpoint: ``tcp://localhost:5559`` ->
    ``tcp://127.0.0.1:5559`` (or ``tcp://<listen>:5559`` when the stack listens wider)."""
    return with_host(connect_endpoint, listen or LOOPBACK)


STACK_FIELDS = ("service.mode", "service.keys", "launcher.on_exit", "launcher.secure", "launcher.listen")
"""Settings ``navi-stack`` exposes as ``--<field>`` (:mod:`navi_common.cli_options`)."""


@click.command("navi-stack", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--with-dashboard/--no-dashboard", default=None, help="Also run navi-dashboard (launcher.with_dashboard)."
)
@click.option("--gmdag-file", type=click.Path(path_type=Path, dir_okay=False, exists=True), help="One scene.")
@click.option(
    "--corpus", type=click.Path(path_type=Path, file_okay=False, exists=True), help="Corpus folder."
)
@click.option("--actors", type=int, default=4, show_default=True, help="Drones the environment simulates.")
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Policy checkpoint (default: the registry's latest model).",
)
@click.option(
    "--deterministic/--stochastic",
    default=None,
    help="Brain acts with the mean, or samples (service.deterministic).",
)
@settings_options(BrainSettings, STACK_FIELDS)
def main(**options: Any) -> None:
    """Run navi-environment serve + the brain (+ navi-dashboard) together; Ctrl+C stops them all.

    Output of every process is shown with an [env] / [brain] / [dashboard] prefix. A process that
    exits by itself is restarted with a back-off (the brain re-synchronises with a restarted
    environment); one that keeps failing stops the stack. --on-exit stop stops everything instead.

    Everything listens on 127.0.0.1 unless --listen says otherwise; --secure adds CURVE
    authentication and encryption to every ZeroMQ socket (docs/security.md).
    """
    try:
        with on_termination(raise_interrupt):  # start-up: nothing is running yet, just leave
            supervisor = _build_supervisor(**options)
    except KeyboardInterrupt:
        click.echo("navi-stack: interrupted before anything started", err=True)
        return
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()
        supervisor.wake()

    with on_termination(request_stop):  # Ctrl+C, SIGTERM, SIGHUP: stop the children in order, exit 0
        code = supervisor.run(stop)
    click.echo(f"navi-stack: stopped (status {code})", err=True)
    sys.exit(code)


def _build_supervisor(
    *,
    with_dashboard: bool | None,
    gmdag_file: Path | None,
    corpus: Path | None,
    actors: int,
    checkpoint: Path | None,
    deterministic: bool | None,
    **options: Any,
) -> Any:
    from navi_actor.launcher.supervisor import Supervisor
    from navi_common.logging import configure_logging
    from navi_common.transport.endpoints import is_loopback_host

    if gmdag_file is not None and corpus is not None:
        raise click.UsageError("give at most one of --gmdag-file and --corpus")
    if actors < 1:
        raise click.UsageError("--actors must be >= 1")
    options.update(service__checkpoint=checkpoint, service__deterministic=deterministic)
    options["launcher__with_dashboard"] = with_dashboard
    settings = build_settings(BrainSettings, **settings_kwargs(options))
    configure_logging(settings.log_level, settings.log_json)
    _check_stack_keys(stack_keys(settings))
    if settings.launcher.listen and not is_loopback_host(settings.launcher.listen):
        click.echo(
            f"navi-stack: servers listen on {settings.launcher.listen}: reachable from other machines",
            err=True,
        )
    specs = stack_specs(settings, gmdag_file=gmdag_file, corpus=corpus, actors=actors)
    click.echo(f"navi-stack: starting {', '.join(spec.name for spec in specs)} (Ctrl+C stops all)", err=True)
    launcher = settings.launcher
    return Supervisor(
        specs,
        on_exit=launcher.on_exit,
        max_restarts=launcher.max_restarts,
        restart_window_s=launcher.restart_window_s,
        grace_s=launcher.grace_s,
    )


def _check_stack_keys(keys: Path | None) -> None:
    """Secure mode needs both key halves on this machine (every process of the stack runs here)."""
    if keys is None:
        return
    from navi_common.transport.curve import KeysError, load_keys

    try:
        load_keys(keys, server=True, client=True)
    except KeysError as error:
        hint = "generate keys with: uv run navi-keys generate"
        raise click.ClickException(f"{error} ({hint})") from error

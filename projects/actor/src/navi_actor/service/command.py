"""``navi-actor serve`` (and bare ``brain``): the policy as a ZeroMQ service.

Flags map onto :class:`~navi_actor.service.config.ServiceConfig` fields (``NAVI_ACTOR_SERVICE__*``)
and are passed as init kwargs, so a flag beats the environment, which beats the root ``.env``.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import click

from navi_common.cli_options import build_settings, settings_kwargs


def build_brain_settings(**groups: dict[str, Any]) -> Any:
    """``BrainSettings`` from CLI values per group (None values dropped); bad values: one usage error."""
    from navi_actor.service.brain_settings import BrainSettings

    flat = {f"{group}__{name}": value for group, values in groups.items() for name, value in values.items()}
    return build_settings(BrainSettings, **settings_kwargs(flat))


SERVICE_TORCH_THREADS = 1
"""torch threads of ``serve`` unless ``--torch-threads`` / ``train.torch_threads`` says otherwise: the
brain shares the CPU with the environment server, and on the 2-core box a 2-thread brain made the
stack 7x slower than a 1-thread one (``scripts/bench_stack.py``, docs/service.md)."""


def start_process(settings: Any, default_torch_threads: int | None = None) -> None:
    """Entry-point setup: logging, torch threads, and SIGTERM behaving like Ctrl+C.

    Args:
        settings: resolved ``BrainSettings``.
        default_torch_threads: threads when ``train.torch_threads`` is unset (None: torch's choice).
    """
    interrupt_on_termination()
    import torch

    from navi_actor.devices import DeviceUnavailableError, check_device
    from navi_common.logging import configure_logging

    try:
        check_device(settings.train.device)
    except DeviceUnavailableError as error:
        raise click.ClickException(str(error)) from error
    configure_logging(settings.log_level, settings.log_json)
    threads = settings.train.torch_threads or default_torch_threads
    if threads is not None:
        torch.set_num_threads(threads)


def interrupt_on_termination() -> None:
    """SIGTERM, SIGHUP (and CTRL_BREAK_EVENT, how the launcher stops a Windows child) raise
    ``KeyboardInterrupt`` like Ctrl+C, from here on: one shutdown path for every way to stop."""
    from navi_common.signals import raise_interrupt, termination_signals

    for signum in termination_signals():
        signal.signal(signum, raise_interrupt)


def exit_now(code: int) -> None:
    """Exit at once after Ctrl+C, once sockets are closed and output is flushed.

    Interpreter shutdown with torch and numba loaded takes ~2 s on a busy 2-core machine (measured),
    which alone would break the "Ctrl+C stops within 2 s" promise; nothing is left to clean up.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def artifacts_dir(settings: Any) -> Path:
    """``train.artifacts_dir`` or the repository's ``artifacts/``."""
    from navi_contracts.paths import artifacts_root

    return settings.train.artifacts_dir or artifacts_root()


@click.command("serve", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--mode", type=click.Choice(["step", "async"]), help="step (default): drive the env over REQ.")
@click.option("--sub", "sub_endpoint", help="Environment PUB to subscribe to (default tcp://localhost:5559).")
@click.option("--pub", "pub_endpoint", help="Actor PUB to bind (default tcp://127.0.0.1:5557).")
@click.option("--step-endpoint", help="Environment REP for step mode (default tcp://localhost:5560).")
@click.option(
    "--keys",
    type=click.Path(path_type=Path, file_okay=False),
    help="CURVE keys folder: secure mode (docs/security.md).",
)
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Policy checkpoint (default: the registry's latest model, else a fresh policy with a warning).",
)
@click.option(
    "--deterministic/--stochastic", default=None, help="Act with the mean, or sample (default: sample)."
)
@click.option("--seed", type=int, help="Seed of the first environment reset (default 0).")
@click.option("--total-steps", type=int, help="Stop after this many acting steps (default: until Ctrl+C).")
@click.option("--request-timeout-ms", type=int, help="Step mode: wait per environment reply (default 2000).")
@click.option(
    "--wait-for-subscribers", type=int, help="Wait for this many subscribers on the actor PUB first."
)
@click.option(
    "--inference",
    type=click.Choice(["sequential", "realtime"]),
    help="sequential (default): act on each observation; realtime: control + inference processes "
    "publishing action schedules (for navi-environment serve --mode realtime; docs/service.md).",
)
@click.option("--control-hz", type=float, help="Realtime: control rate, the env's tick rate (default 20).")
@click.option("--latency-ms", type=float, help="Realtime/async: extra inference delay (default 0).")
@click.option("--jitter-ms", type=float, help="Realtime/async: uniform +- jitter on that delay (default 0).")
@click.option("--blend/--no-blend", default=None, help="Realtime: blend new chunks in (default) or switch.")
@click.option("--device", help="torch device: cpu (default), cuda, cuda:1, ...")
@click.option("--torch-threads", type=int, help="torch intra-op threads (default 1: the env shares the CPU).")
def serve(**options: Any) -> None:
    """Serve the policy beside `navi-environment serve` (Ctrl+C to stop).

    Step mode resets the environment, then for every observation batch acts with the drones'
    recurrent memory (reset per drone at episode end), publishes the Action on the actor PUB and
    sends it as a StepRequest; if the environment goes away it re-synchronises with a reset once it
    is back. Async mode acts on the latest published observation and publishes actions for an
    environment that steps on them. Telemetry: actor.service.* events and actor 0's observation.
    """
    interrupt_on_termination()  # before the slow imports: a stop during start-up is a stop too
    try:
        _serve_until_stopped(**options)
    except KeyboardInterrupt:  # Ctrl+C, SIGTERM or SIGHUP: sockets are closed by now; a clean stop
        click.echo("brain: interrupted, sockets closed", err=True)
        exit_now(0)


def _serve_until_stopped(
    *,
    mode: str | None,
    sub_endpoint: str | None,
    pub_endpoint: str | None,
    step_endpoint: str | None,
    keys: Path | None,
    checkpoint: Path | None,
    deterministic: bool | None,
    seed: int | None,
    total_steps: int | None,
    request_timeout_ms: int | None,
    wait_for_subscribers: int | None,
    inference: str | None,
    control_hz: float | None,
    latency_ms: float | None,
    jitter_ms: float | None,
    blend: bool | None,
    device: str | None,
    torch_threads: int | None,
) -> None:
    from navi_actor.checkpoints import CheckpointError
    from navi_actor.service.brain import run_brain
    from navi_common import PeerTimeoutError

    settings = build_brain_settings(
        service={
            "mode": mode,
            "sub_endpoint": sub_endpoint,
            "pub_endpoint": pub_endpoint,
            "step_endpoint": step_endpoint,
            "keys": keys,
            "checkpoint": checkpoint,
            "deterministic": deterministic,
            "seed": seed,
            "total_steps": total_steps,
            "request_timeout_ms": request_timeout_ms,
            "wait_for_subscribers": wait_for_subscribers,
            "inference": inference,
            "control_hz": control_hz,
            "latency_ms": latency_ms,
            "jitter_ms": jitter_ms,
            "blend": blend,
        },
        train={"device": device, "torch_threads": torch_threads},
    )
    start_process(settings, default_torch_threads=SERVICE_TORCH_THREADS)
    try:
        steps = run_brain(settings, artifacts_dir(settings))
    except (CheckpointError, PeerTimeoutError, ValueError) as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"brain: stopped after {steps} steps", err=True)

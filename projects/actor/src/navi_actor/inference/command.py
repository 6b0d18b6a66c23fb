"""``navi-actor infer``: fly the policy in-process (no learning) and publish ``actor.inference.*``."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import click

from navi_actor.service.brain_settings import BrainSettings
from navi_common.cli_options import settings_kwargs, settings_options

INFER_FIELDS = ("inference.total_steps", "inference.episodes", "inference.seed", "telemetry.keys",
                "environment.gmdag_file", "environment.corpus", "rollout.num_actors", "train.device",
                "train.torch_threads")  # fmt: skip
"""Settings ``infer`` exposes as ``--<field>`` (:mod:`navi_common.cli_options`)."""
INFER_GROUPED = ("telemetry.endpoint", "environment.backend")
"""Settings ``infer`` exposes as ``--<group>-<field>``."""


@click.command("infer", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Policy checkpoint (default: the registry's latest model, else a fresh policy with a warning).",
)
@click.option("--deterministic/--stochastic", default=None, help="Act with the mean (default) or sample.")
@click.option("--no-telemetry", is_flag=True, help="Do not open the telemetry socket.")
@settings_options(BrainSettings, INFER_FIELDS, grouped=INFER_GROUPED)
def infer(*, checkpoint: Path | None, deterministic: bool | None, no_telemetry: bool, **options: Any) -> None:
    """Fly the policy in the simulator in-process: pure inference, never a gradient step.

    Publishes actor.inference.stats events (steps/s, latency p50/p99, episodes, mean return) and
    actor 0's observation (~10 Hz) on the telemetry PUB for the dashboard. Runs until --total-steps,
    --episodes or Ctrl+C.
    """
    from navi_actor.inference.policy_source import build_policy, resolve_policy_source
    from navi_actor.inference.runner import run_inference
    from navi_actor.inference.stepper import PolicyStepper
    from navi_actor.inference.telemetry import ActingTelemetry
    from navi_actor.runners.env_factory import build_environment
    from navi_actor.service.command import artifacts_dir, build_brain_settings, exit_now, start_process
    from navi_common import Publisher
    from navi_common.transport.curve import load_keys
    from navi_contracts.telemetry_names import INFERENCE_SOURCE

    options["inference__deterministic"] = deterministic
    options["telemetry__enabled"] = False if no_telemetry else None
    settings = build_brain_settings(**settings_kwargs(options))
    start_process(settings)
    config = settings.inference
    try:
        source = resolve_policy_source(checkpoint, artifacts_dir(settings) / "models")
        built = build_environment(settings.environment, settings.rollout.num_actors, settings.train.device)
        policy = build_policy(
            source,
            settings.policy_config(),
            tuple(built.env.observation_shape),  # type: ignore[arg-type]
            device=settings.train.device,
            seed=config.seed,
        )
        stepper = PolicyStepper(policy, built.env.num_actors, deterministic=config.deterministic)
    except (ValueError, FileNotFoundError) as error:  # CheckpointError is a ValueError
        raise click.ClickException(str(error)) from error
    publisher = (
        Publisher(settings.telemetry.endpoint, curve=load_keys(settings.telemetry.keys))
        if settings.telemetry.enabled
        else None
    )
    telemetry = ActingTelemetry(
        publisher,
        INFERENCE_SOURCE,
        observation_hz=settings.telemetry.observation_hz,
        stats_seconds=config.stats_seconds,
        device=settings.train.device,
    )
    stop = threading.Event()
    try:
        summary = run_inference(
            built.env,
            stepper,
            telemetry,
            seed=config.seed,
            total_steps=config.total_steps,
            episodes=config.episodes,
            stop=stop,
        )
    except KeyboardInterrupt:
        if publisher is not None:
            publisher.close()
        click.echo("infer: interrupted", err=True)
        exit_now(130)
    if publisher is not None:
        publisher.close()
    click.echo(
        f"infer: {summary.steps} steps x {built.env.num_actors} drones "
        f"({summary.steps_per_second:.1f} steps/s), {summary.episodes} episodes finished, policy "
        f"{source.policy_id}"
    )

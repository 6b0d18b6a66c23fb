"""``navi-actor infer``: fly the policy in-process (no learning) and publish ``actor.inference.*``."""

from __future__ import annotations

import threading
from pathlib import Path

import click


@click.command("infer", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Policy checkpoint (default: the registry's latest model, else a fresh policy with a warning).",
)
@click.option("--deterministic/--stochastic", default=None, help="Act with the mean (default) or sample.")
@click.option("--total-steps", type=int, help="Stop after this many batched steps.")
@click.option("--episodes", type=int, help="Stop once this many episodes have finished.")
@click.option("--seed", type=int, help="Environment reset seed (default 0).")
@click.option("--telemetry-pub", help="Telemetry PUB bind endpoint (default tcp://127.0.0.1:5557).")
@click.option(
    "--keys", type=click.Path(path_type=Path, file_okay=False), help="CURVE keys folder: secure telemetry."
)
@click.option("--no-telemetry", is_flag=True, help="Do not open the telemetry socket.")
@click.option("--gmdag-file", type=click.Path(path_type=Path, dir_okay=False), help="Fly in this scene.")
@click.option("--corpus", type=click.Path(path_type=Path, file_okay=False), help="Corpus folder of scenes.")
@click.option("--env", "env_backend", type=click.Choice(["sdfdag", "point"]), help="Environment backend.")
@click.option("--actors", type=int, help="Drones flown together (default 4).")
@click.option("--device", help="torch device: cpu (default), cuda, ...")
@click.option("--torch-threads", type=int, help="torch intra-op threads.")
def infer(
    *,
    checkpoint: Path | None,
    deterministic: bool | None,
    total_steps: int | None,
    episodes: int | None,
    seed: int | None,
    telemetry_pub: str | None,
    keys: Path | None,
    no_telemetry: bool,
    gmdag_file: Path | None,
    corpus: Path | None,
    env_backend: str | None,
    actors: int | None,
    device: str | None,
    torch_threads: int | None,
) -> None:
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
    from navi_contracts import Publisher
    from navi_contracts.curve import load_keys
    from navi_contracts.telemetry_names import INFERENCE_SOURCE

    settings = build_brain_settings(
        inference={
            "deterministic": deterministic,
            "total_steps": total_steps,
            "episodes": episodes,
            "seed": seed,
        },
        telemetry={"endpoint": telemetry_pub, "enabled": False if no_telemetry else None, "keys": keys},
        environment={"gmdag_file": gmdag_file, "corpus": corpus, "backend": env_backend},
        rollout={"num_actors": actors},
        train={"device": device, "torch_threads": torch_threads},
    )
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
    except (ValueError, FileNotFoundError) as error:  # CheckpointError is a ValueError
        raise click.ClickException(str(error)) from error
    stepper = PolicyStepper(policy, built.env.num_actors, deterministic=config.deterministic)
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

"""``navi-actor`` and ``brain``: train, evaluate, manage models and serve the policy.

Options map one to one onto :class:`~navi_actor.config.ActorSettings` fields and are passed as init
kwargs, so a flag beats ``NAVI_ACTOR_*`` environment variables, which beat the root ``.env``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from navi_actor.config import ActorSettings
from navi_common import cli_options
from navi_common.cli_options import field_option, settings_kwargs, settings_options

ENV_FIELDS = ("environment.gmdag_file", "environment.corpus", "rollout.num_actors", "train.device",
              "train.torch_threads")  # fmt: skip
"""Settings every command that builds an environment exposes, each as ``--<field>``
(:mod:`navi_common.cli_options`); ``environment.backend`` is ``--environment-backend``
(``--backend`` is ``train.backend``)."""
_ENV_OPTIONS = [
    *(field_option(ActorSettings, path) for path in ENV_FIELDS),
    field_option(ActorSettings, "environment.backend", grouped=True),
]


def _with_options(options: list[Any]) -> Any:
    def decorate(function: Any) -> Any:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def build_settings(**kwargs: Any) -> Any:
    """``ActorSettings(**kwargs)``; invalid values are one usage-error line."""
    return cli_options.build_settings(ActorSettings, **kwargs)


def _start(settings: Any, console_level: str | None = None) -> None:
    """Process-level setup owned by the entry point: device check, logging and torch threads."""
    import torch

    from navi_actor.devices import DeviceUnavailableError, check_device
    from navi_common.logging import configure_logging

    try:
        check_device(settings.train.device)
    except DeviceUnavailableError as error:
        raise click.ClickException(str(error)) from error
    configure_logging(settings.log_level, settings.log_json, console_level=console_level)
    if settings.train.torch_threads is not None:
        torch.set_num_threads(settings.train.torch_threads)


def _stop_on_sigterm() -> None:
    """SIGTERM (kill, systemd, Docker, CI) ends training exactly like Ctrl+C: final checkpoint, exit 0."""
    import signal

    def _interrupt(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a repeated SIGTERM must not break the final save
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)


def _training_console(settings: Any) -> tuple[Any, str | None]:
    """A live status line on a terminal (structured logs then only in the run folder, warnings
    aside, unless ``--log-json``/``NAVI_ACTOR_LOG_JSON`` asks for them); plain lines elsewhere."""
    import sys

    from navi_actor.runners.console import LineSink, TerminalSink

    if sys.stderr.isatty() and not settings.log_json:
        return TerminalSink(sys.stderr), "warning"
    return LineSink(lambda line: click.echo(line, err=True)), None


def _artifacts(settings: Any) -> Path:
    from navi_contracts.paths import artifacts_root

    return settings.train.artifacts_dir or artifacts_root()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Navi actor: train the drone policy with PPO and manage checkpoints."""


TRAIN_FIELDS = ("train.total_steps", "train.max_minutes", "rollout.rollout_length", "encoder_backend",
                "temporal_core", "train.seed", "telemetry.keys", "train.backend", "distributed.address",
                "distributed.num_workers", "distributed.learners", "train.logger",
                "policy.action_squash", "rollout.collect_ahead")  # fmt: skip
"""Settings ``train`` exposes as ``--<field>``; a new one needs only its path here."""
TRAIN_GROUPED = ("checkpoint.every_steps", "checkpoint.keep", "telemetry.endpoint", "warm_start.steps",
                 "warm_start.epochs", "warm_start.value_updates", "warm_start.dagger_rounds",
                 "warm_start.dagger_steps", "warm_start.dagger_epochs")  # fmt: skip
"""Settings ``train`` exposes as ``--<group>-<field>`` (the field's name alone says too little)."""


@main.command()
@settings_options(ActorSettings, TRAIN_FIELDS, grouped=TRAIN_GROUPED)
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Continue from this checkpoint instead of the registry's latest.",
)
@click.option("--no-auto-resume", is_flag=True, help="Start a fresh policy even if the registry has one.")
@click.option("--no-telemetry", is_flag=True, help="Do not open the telemetry socket.")
@_with_options(_ENV_OPTIONS)
def train(*, checkpoint: Path | None, no_auto_resume: bool, no_telemetry: bool, **options: Any) -> None:
    """Train the policy in-process with PPO (runs until Ctrl+C or --total-steps).

    Continues from the registry's latest model unless --checkpoint or --no-auto-resume is given;
    writes artifacts/runs/<run_id>/ (manifest.json, metrics.jsonl, checkpoints/) and promotes a
    checkpoint to the registry when its reward EMA beats the best one. Ctrl+C saves a final checkpoint.
    A fresh run first behaviour-clones the frontier planner (--warm-start-steps, 16384 by default,
    over every training scene; 0 = off) and starts PPO from the clone (--warm-start-dagger-rounds R
    then lets the clone fly while the planner labels its steps, and clones on, R times); a resumed
    run skips it, the point environment and Ray go without it (given there, it is refused). Its
    minutes count in --max-minutes, its steps not in --total-steps.
    """
    from navi_actor.bc.dataset import DemonstrationError
    from navi_actor.bc.warm_start import warm_started_training
    from navi_actor.runners.env_factory import build_environment
    from navi_actor.runners.on_policy_runner import OnPolicyRunner
    from navi_actor.runners.resume import describe_scenes
    from navi_actor.telemetry import TrainingTelemetry
    from navi_common.logging import remembering_events

    options["checkpoint__auto_resume"] = False if no_auto_resume else None
    options["telemetry__enabled"] = False if no_telemetry else None
    settings = build_settings(**settings_kwargs(options))
    console, console_level = _training_console(settings)
    _start(settings, console_level)
    _stop_on_sigterm()
    settings, warm_notice = _warm_start_or_refusal(settings)
    if settings.train.backend == "ray":
        if warm_notice is not None:
            console.note(warm_notice)
        _train_on_ray(settings, checkpoint)
        return
    telemetry = None
    try:
        console.note(
            f"navi-actor train: building the {settings.environment.backend} environment (scenes, "
            "simulator kernels; the first run builds the default corpus: minutes)"
        )
        with remembering_events() as early:  # the run folder exists only once the runner is built
            started = time.monotonic()
            built = _environment_or_refusal(build_environment, settings)  # one line for a bad scene
            scenes, seconds = describe_scenes(built.corpus_summary), time.monotonic() - started
            console.note(
                f"environment ready in {seconds:.0f} s: {scenes}, {built.env.num_actors} drones, "
                f"sensor {tuple(built.env.observation_shape)}"
            )
            if warm_notice is not None:
                console.note(warm_notice)
            start = warm_started_training(settings, built, _artifacts(settings), checkpoint, console)
            telemetry = TrainingTelemetry(settings.telemetry) if settings.telemetry.enabled else None
            runner = OnPolicyRunner(
                start.settings,
                built,
                artifacts_dir=_artifacts(settings),
                checkpoint=start.checkpoint,
                telemetry=telemetry,
                progress=console,
                run_folder=start.run,
                manifest_extra={"warm_start": start.facts} if start.facts is not None else None,
            )
        with (runner.run.logs / "events.jsonl").open("a", encoding="utf-8") as stream:
            stream.writelines(early)
        summary = runner.run_training()
    except KeyboardInterrupt:  # before the first update: no run folder holds a checkpoint yet
        console.close()
        click.echo("train: stopped before training started; nothing to save", err=True)
        return
    except (DemonstrationError, FileExistsError) as error:  # a warm start's flights too short to clone
        raise click.ClickException(f"warm start: {error}") from error
    except (ValueError, FloatingPointError) as error:  # bad checkpoint or settings; a diverged update
        raise click.ClickException(str(error)) from error
    finally:
        if telemetry is not None:
            telemetry.close()
    _report_training(summary)


def _warm_start_or_refusal(settings: Any) -> tuple[Any, str | None]:
    """``train``'s settings with the warm start that can run, and the notice when the default could
    not; warm-start steps asked for where they cannot run are refused in one line."""
    from navi_actor.bc.warm_start import settings_for_warm_start

    try:
        return settings_for_warm_start(settings)
    except ValueError as error:
        raise click.ClickException(str(error)) from error


def _environment_or_refusal(build_environment: Any, settings: Any, **drones: Any) -> Any:
    """The training/evaluation environment; a scene that cannot be used (no file, a broken file, no
    place a drone can start) is refused with one line instead of a traceback. ``drones`` are
    ``build_environment``'s drone keywords (an evaluation's ``drones_per_scene``)."""
    from navi_environment.config import EnvironmentSettings

    # a bad NAVI_ENV_* value is one usage line, as explore and serve say it, not an "unusable scene"
    env_settings = cli_options.build_settings(EnvironmentSettings)
    try:
        return build_environment(
            settings.environment, settings.rollout.num_actors, settings.train.device, env_settings, **drones
        )
    except (ValueError, FileNotFoundError) as error:  # SceneRejectedError, GmdagFormatError, ManifestError
        raise click.ClickException(f"unusable scene: {error}") from error


def _train_on_ray(settings: Any, checkpoint: Path | None) -> None:
    """``train --backend ray``: the same run folder, checkpoints and telemetry, Ray rollout workers."""
    from navi_actor.distributed import RayUnavailableError, train_distributed
    from navi_actor.telemetry import TrainingTelemetry

    one_learner = settings.distributed.learners == 1  # else learner rank 0 opens the socket
    telemetry = TrainingTelemetry(settings.telemetry) if settings.telemetry.enabled and one_learner else None
    try:
        summary = train_distributed(
            settings,
            artifacts_dir=_artifacts(settings),
            checkpoint=checkpoint,
            telemetry=telemetry,
            progress=lambda line: click.echo(line, err=True),
        )
    except (RayUnavailableError, ValueError, FloatingPointError, RuntimeError, TimeoutError) as error:
        raise click.ClickException(str(error)) from error
    finally:
        if telemetry is not None:
            telemetry.close()
    _report_training(summary)
    click.echo(f"dropped fragments: {summary.dropped_fragments}, worker restarts: {summary.worker_restarts}")


def _report_training(summary: Any) -> None:
    state = "interrupted" if summary.interrupted else "finished"
    click.echo(
        f"{state}: {summary.steps_this_run} steps ({summary.steps_per_second:.1f} steps/s), "
        f"run {summary.run_dir}"
    )
    click.echo(f"final checkpoint: {summary.final_checkpoint}")
    for entry in summary.promoted:
        click.echo(f"promoted v{entry.version:03d} (reward EMA {entry.reward_ema:.3f})")


@main.command()
@click.argument("checkpoint", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--notes", default="", help="Free text stored with the entry.")
@click.option("--tags", default="", help="Comma-separated labels, e.g. 'baseline,gru'.")
def promote(checkpoint: Path, notes: str, tags: str) -> None:
    """Copy CHECKPOINT into the model registry as the next version and make it latest."""
    tag_list = [t.strip() for t in tags.split(",") if t.strip()]
    click.echo(promote_into_registry(build_settings(), checkpoint, notes, tag_list))


def promote_into_registry(settings: ActorSettings, checkpoint: Path, notes: str, tags: list[str]) -> str:
    """Promote ``checkpoint`` into ``artifacts/models`` as the next version (the brain's latest); the
    line to print. One-line refusal of an unreadable checkpoint or registry."""
    from navi_actor.checkpoints import CheckpointError
    from navi_actor.registry import ModelRegistry, RegistryError

    registry = ModelRegistry(_artifacts(settings) / "models")
    try:
        entry = registry.promote(checkpoint, notes=notes, tags=tags)
    except (CheckpointError, RegistryError) as error:
        raise click.ClickException(str(error)) from error
    return f"promoted {checkpoint} as v{entry.version:03d} -> {registry.path_of(entry)}"


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the registry as JSON.")
def models(as_json: bool) -> None:
    """List the models in the registry (latest and best marked)."""
    from navi_actor.registry import ModelRegistry, RegistryError

    registry = ModelRegistry(_artifacts(build_settings()) / "models")
    try:
        entries = registry.entries()
    except RegistryError as error:
        raise click.ClickException(str(error)) from error
    if as_json:
        click.echo(json.dumps([entry.model_dump(mode="json") for entry in entries], indent=2))
        return
    if not entries:
        click.echo(f"no models in {registry.folder} yet (train, or navi-actor promote <checkpoint>)")
        return
    latest, best = registry.latest(), registry.best()
    for entry in entries:
        marks = ("latest " if entry == latest else "") + ("best" if entry == best else "")
        ema = "n/a" if entry.reward_ema is None else f"{entry.reward_ema:.3f}"
        click.echo(
            f"v{entry.version:03d}  step {entry.step_id:>10,}  reward_ema {ema:>8}  "
            f"{entry.encoder_backend}/{entry.temporal_core}  {entry.training_source}  {marks.strip()}"
            + (f"  tags={','.join(entry.tags)}" if entry.tags else "")
            + (f"  {entry.notes}" if entry.notes else "")
        )


def _evaluation_environment(env_options: dict[str, Any], episodes_per_scene: int) -> tuple[Any, Any]:
    """(settings, environment) for evaluate/compare/select-checkpoint, built from the same settings as
    training. Each of the plan's ``episodes_per_scene`` starts per scene gets its own drone (at most
    ``MAX_EVALUATION_DRONES``; the plan flies in one wave) unless ``rollout.num_actors`` is set by
    --num-actors, ``NAVI_ACTOR_ROLLOUT__NUM_ACTORS`` or ``.env``. The drone count sets the time; a
    learned policy's figures also move a little (within their intervals), since a batch of another
    size rounds its sums differently (1e-7) and 500 steps grow that into other flights."""
    from navi_actor.runners.env_factory import build_environment

    settings = build_settings(**settings_kwargs(env_options))
    _start(settings)
    chosen = "num_actors" in settings.rollout.model_fields_set
    drones = {} if chosen else {"drones_per_scene": episodes_per_scene}
    return settings, _environment_or_refusal(build_environment, settings, **drones).env


_EVAL_OPTIONS = [
    click.option(
        "--policy",
        "policies",
        multiple=True,
        help="A checkpoint file, random, heuristic or frontier; repeat to fly several on one plan.",
    ),
    click.option(
        "--episodes-per-scene",
        type=click.IntRange(min=1),
        default=8,
        show_default=True,
        help="Planned episodes (start poses drawn once) per scene; every policy flies the same ones.",
    ),
    click.option(
        "--mode",
        type=click.Choice(["mean", "sample", "both"]),
        default="both",
        show_default=True,
        help="Acting mode of learned policies: the Gaussian mean (deployment), sampled actions, or both.",
    ),
    click.option("--seed", type=int, default=0, show_default=True, help="Plan and sampling seed."),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
    click.option(
        "--paths",
        "paths",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Also draw where every planned episode flew: one top-down PNG per scene in this folder, "
        "a panel per policy and mode, left to right in the order flown.",
    ),
    *_ENV_OPTIONS,
]


def _run_evaluation(
    specs: list[str], *, episodes_per_scene: int, mode: Any, seed: int, as_json: bool, paths: Path | None,
    env: dict[str, Any],
) -> None:  # fmt: skip
    from navi_actor.evaluation.command import evaluate_specs, format_text

    if not specs:
        raise click.UsageError("name a policy: a CHECKPOINT argument or --policy random|heuristic|frontier")
    settings, environment = _evaluation_environment(env, episodes_per_scene)
    result = evaluate_specs(
        specs, environment, settings.train.device, episodes_per_scene=episodes_per_scene, mode=mode,
        seed=seed, paths=paths,
    )  # fmt: skip
    click.echo(json.dumps(result) if as_json else format_text(result))


@main.command()
@click.argument("checkpoint", required=False, type=click.Path(path_type=Path, dir_okay=False, exists=True))
@_with_options(_EVAL_OPTIONS)
def evaluate(
    checkpoint: Path | None, *, policies: tuple[str, ...], episodes_per_scene: int, mode: Any, seed: int,
    as_json: bool, paths: Path | None, **env: Any,
) -> None:  # fmt: skip
    """Evaluate policies on a fixed episode plan (pure inference, no learning), with 95% intervals.

    Every policy (CHECKPOINT and each --policy) flies the same planned episodes: per scene,
    --episodes-per-scene start poses drawn once with --seed, each run to its own end. Each planned
    episode has its own drone (at most 128 fly at once; --num-actors sets another number: another
    time, and for a learned policy slightly other flights, as floats round differently per batch).
    The JSON's plan says how many drones flew.
    """
    specs = ([str(checkpoint)] if checkpoint is not None else []) + list(policies)
    _run_evaluation(
        specs, episodes_per_scene=episodes_per_scene, mode=mode, seed=seed, as_json=as_json, paths=paths,
        env=env,
    )  # fmt: skip


@main.command()
@click.argument("first")
@click.argument("second")
@_with_options([option for option in _EVAL_OPTIONS if option is not _EVAL_OPTIONS[0]])
def compare(
    *, first: str, second: str, episodes_per_scene: int, mode: Any, seed: int, as_json: bool,
    paths: Path | None, **env: Any,
) -> None:  # fmt: skip
    """Fly FIRST and SECOND (checkpoints, random, heuristic or frontier) on the same episode plan and
    print both with paired differences and ratios (SECOND vs FIRST) and their 95% intervals. Drones
    as in evaluate: one per planned episode unless --num-actors is given."""
    _run_evaluation(
        [first, second], episodes_per_scene=episodes_per_scene, mode=mode, seed=seed, as_json=as_json,
        paths=paths, env=env,
    )  # fmt: skip


@main.command("select-checkpoint")
@click.argument("run", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--episodes-per-scene", type=click.IntRange(min=1), default=4, show_default=True,
    help="Planned episodes (start poses drawn once) per training scene.",
)  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True, help="Plan seed.")
@click.option(
    "--max-collision-ratio", type=click.FloatRange(min=0.0), default=0.3, show_default=True,
    help="Only checkpoints colliding at most this many times as often as random compete on coverage.",
)  # fmt: skip
@click.option(
    "--confirm-episodes-per-scene", type=click.IntRange(min=0), default=8, show_default=True,
    help="Fly the near-equals (careful checkpoints whose coverage is not clearly below the winner's: the "
    "paired 95% interval of the gap reaches 0) again on a second plan of this many starts per scene "
    "(seed + 1) and choose on its figures alone; 0: one plan decides.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--promote", is_flag=True,
    help="Also promote the chosen checkpoint into the model registry (the brain serves the latest).",
)  # fmt: skip
@_with_options(_ENV_OPTIONS)
def select_checkpoint(
    run: Path, *, episodes_per_scene: int, seed: int, max_collision_ratio: float,
    confirm_episodes_per_scene: int, as_json: bool, promote: bool, **env: Any,
) -> None:  # fmt: skip
    """Choose the checkpoint of RUN (a folder of artifacts/runs) whose mean action explores best.

    Every step checkpoint of RUN and the random policy fly the same planned episodes over the scenes
    the run trained on (give the run's --corpus; other scenes are left out, so no held-out scene
    decides); among the checkpoints that collide at most --max-collision-ratio times as often as
    random, the one with the most coverage wins. It is copied to RUN/best.pt, with the figures in
    RUN/selection.json; --promote also makes it the registry's latest model. Each of the first
    plan's episodes has its own drone (at most 128 at once) unless --num-actors is given.
    """
    from navi_actor.evaluation.command import format_selection, select_run

    settings, environment = _evaluation_environment(env, episodes_per_scene)
    result = select_run(
        run, environment, settings.train.device, episodes_per_scene=episodes_per_scene, seed=seed,
        max_collision_ratio=max_collision_ratio, confirm_episodes_per_scene=confirm_episodes_per_scene,
    )  # fmt: skip
    if promote:
        notes = f"select-checkpoint: step {result['chosen']['step_id']} of {run.name} ({result['rule']})"
        result["promoted"] = promote_into_registry(settings, Path(result["best"]), notes, ["selected"])
    click.echo(json.dumps(result) if as_json else format_selection(result))


def _register_service_commands() -> None:
    """Commands owned by other modules: behaviour cloning (bc), the brain service, inference and
    metrics export."""
    from navi_actor.bc.command import bc_pretrain
    from navi_actor.inference.command import infer
    from navi_actor.metrics_command import export_metrics
    from navi_actor.service.command import serve

    for command in (bc_pretrain, serve, infer, export_metrics):
        main.add_command(command)


_register_service_commands()


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.pass_context
def brain_main(ctx: click.Context) -> None:
    """Navi brain: bare ``brain`` serves the policy (``navi-actor serve`` with its defaults);
    subcommands reach the navi-actor commands."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(main.commands["serve"])


for _name, _command in main.commands.items():
    brain_main.add_command(_command, _name)

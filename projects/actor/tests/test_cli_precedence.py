"""Every option of every navi-actor command: CLI beats NAVI_ACTOR_* beats the root .env beats the default.

Each command's settings are captured where the command resolves them (``build_settings`` /
``build_brain_settings``) and the command is stopped there, so no environment or policy is built.
An option missing from the tables below fails ``test_every_option_is_covered``: a new option must
say which setting it sets (or why it sets none).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from navi_actor import cli
from navi_actor.service import command as service_command
from navi_common.transport.curve import generate_keys
from navi_contracts import limits as contract_limits


@dataclass(frozen=True)
class Case:
    """One option: the setting it maps onto and a value per layer (each differs from the next)."""

    flag: str
    field: str  # dotted path in ActorSettings, e.g. "train.device"
    cli: str | None  # the option's argument; None for a bare flag
    env: str
    dotenv: str
    expected_cli: str | None = None  # str() of the resulting value when it is not ``cli`` itself

    @property
    def variable(self) -> str:
        return "NAVI_ACTOR_" + self.field.upper().replace(".", "__")


def _int(flag: str, field: str, cli_value: int = 7, env: int = 5, dotenv: int = 3) -> Case:
    return Case(flag, field, str(cli_value), str(env), str(dotenv))


ENV_CASES = [
    Case("--gmdag-file", "environment.gmdag_file", "cli.gmdag", "env.gmdag", "dotenv.gmdag"),
    Case("--corpus", "environment.corpus", "cli_corpus", "env_corpus", "dotenv_corpus"),
    Case("--environment-backend", "environment.backend", "point", "sdfdag", "point"),
    _int("--num-actors", "rollout.num_actors"),
    Case("--device", "train.device", "cuda:3", "cuda:2", "cuda:1"),
    _int("--torch-threads", "train.torch_threads"),
]

CASES: dict[str, list[Case]] = {
    "train": [
        *ENV_CASES,
        _int("--total-steps", "train.total_steps"),
        Case("--max-minutes", "train.max_minutes", "2.5", "1.5", "0.5"),
        _int("--rollout-length", "rollout.rollout_length", 64, 96, 160),
        Case("--encoder-backend", "encoder_backend", "spherical_cnn", "rayvit", "spherical_cnn"),
        Case("--temporal-core", "temporal_core", "mamba2", "mambapy", "gru"),
        Case("--no-auto-resume", "checkpoint.auto_resume", None, "true", "false", "False"),
        _int("--checkpoint-every-steps", "checkpoint.every_steps"),
        _int("--checkpoint-keep", "checkpoint.keep"),
        _int("--seed", "train.seed"),
        Case("--telemetry-endpoint", "telemetry.endpoint", "tcp://*:7003", "tcp://*:7002", "tcp://*:7001"),
        Case("--no-telemetry", "telemetry.enabled", None, "true", "false", "False"),
        Case("--backend", "train.backend", "ray", "local", "ray"),
        Case("--address", "distributed.address", "ray://c:3", "ray://b:2", "ray://a:1"),
        _int("--num-workers", "distributed.num_workers"),
        _int("--learners", "distributed.learners", 4, 2, 3),
        Case("--logger", "train.logger", "wandb", "tensorboard", "wandb"),
        Case("--keys", "telemetry.keys", "{tmp}/keys_cli", "{tmp}/keys_env", "{tmp}/keys_dotenv"),
        Case("--action-squash", "policy.action_squash", "tanh", "clip", "tanh"),
        Case("--collect-ahead", "rollout.collect_ahead", None, "false", "true", "True"),
        _int("--warm-start-steps", "warm_start.steps"),
        _int("--warm-start-epochs", "warm_start.epochs"),
        _int("--warm-start-value-updates", "warm_start.value_updates"),
        _int("--warm-start-dagger-rounds", "warm_start.dagger_rounds"),
        _int("--warm-start-dagger-steps", "warm_start.dagger_steps"),
        _int("--warm-start-dagger-epochs", "warm_start.dagger_epochs"),
    ],
    "evaluate": ENV_CASES,
    "compare": ENV_CASES,
    "bc-pretrain": [
        Case("--demonstrations", "bc.demonstrations", "cli_demos", "env_demos", "dotenv_demos"),
        _int("--epochs", "bc.epochs"),
        _int("--sequence-length", "bc.sequence_length"),
        _int("--streams", "bc.streams"),
        Case("--learning-rate", "bc.learning_rate", "0.003", "0.002", "0.001"),
        Case("--holdout-fraction", "bc.holdout_fraction", "0.3", "0.2", "0.25"),
        Case("--no-keep-best", "bc.keep_best", None, "true", "false", "False"),
        _int("--patience", "bc.patience"),
        Case("--log-std", "bc.log_std", "-1.5", "-1.0", "-0.5"),
        Case("--encoder-backend", "encoder_backend", "spherical_cnn", "rayvit", "spherical_cnn"),
        Case("--temporal-core", "temporal_core", "mamba2", "mambapy", "gru"),
        Case("--device", "train.device", "cuda:3", "cuda:2", "cuda:1"),
        _int("--seed", "train.seed"),
        _int("--torch-threads", "train.torch_threads"),
        Case("--artifacts-dir", "train.artifacts_dir", "cli_art", "env_art", "dotenv_art"),
        Case("--action-squash", "policy.action_squash", "tanh", "clip", "tanh"),
    ],
    "serve": [
        Case("--mode", "service.mode", "async", "step", "async"),
        Case("--sub-endpoint", "service.sub_endpoint", "tcp://c:3", "tcp://b:2", "tcp://a:1"),
        Case("--pub-endpoint", "service.pub_endpoint", "tcp://*:7003", "tcp://*:7002", "tcp://*:7001"),
        Case("--step-endpoint", "service.step_endpoint", "tcp://c:3", "tcp://b:2", "tcp://a:1"),
        Case("--checkpoint", "service.checkpoint", "{tmp}/cli.pt", "env.pt", "dotenv.pt"),
        Case("--stochastic", "service.deterministic", None, "true", "false", "False"),
        _int("--seed", "service.seed"),
        _int("--total-steps", "service.total_steps"),
        _int("--request-timeout-ms", "service.request_timeout_ms", 700, 500, 300),
        Case("--keys", "service.keys", "{tmp}/keys_cli", "{tmp}/keys_env", "{tmp}/keys_dotenv"),
        _int("--wait-for-subscribers", "service.wait_for_subscribers"),
        Case("--inference", "service.inference", "realtime", "sequential", "realtime"),
        Case("--control-hz", "service.control_hz", "30.0", "25.0", "15.0"),
        Case("--latency-ms", "service.latency_ms", "30.0", "20.0", "10.0"),
        Case("--jitter-ms", "service.jitter_ms", "3.0", "2.0", "1.0"),
        Case("--no-blend", "service.blend", None, "true", "false", "False"),
        Case("--device", "train.device", "cuda:3", "cuda:2", "cuda:1"),
        _int("--torch-threads", "train.torch_threads"),
    ],
    "infer": [
        *ENV_CASES,
        Case("--stochastic", "inference.deterministic", None, "true", "false", "False"),
        _int("--total-steps", "inference.total_steps"),
        _int("--episodes", "inference.episodes"),
        _int("--seed", "inference.seed"),
        Case("--telemetry-endpoint", "telemetry.endpoint", "tcp://*:7003", "tcp://*:7002", "tcp://*:7001"),
        Case("--no-telemetry", "telemetry.enabled", None, "true", "false", "False"),
        Case("--keys", "telemetry.keys", "{tmp}/keys_cli", "{tmp}/keys_env", "{tmp}/keys_dotenv"),
    ],
}

# Options that are not settings: the command's own inputs and outputs, with the reason.
NOT_SETTINGS: dict[str, set[str]] = {
    "train": {"--checkpoint"},  # a start point for this run, not a configuration
    # the evaluation protocol: which policies fly which planned episodes, how they act, the output
    "evaluate": {"--policy", "--episodes-per-scene", "--mode", "--seed", "--json", "--paths"},
    "compare": {"--episodes-per-scene", "--mode", "--seed", "--json", "--paths"},
    "bc-pretrain": {"--checkpoint", "--out", "--promote"},
    "serve": {"--deterministic"},  # the other half of --deterministic/--stochastic
    "infer": {"--checkpoint", "--deterministic"},
}

# A second spelling of a flag pair is tested through the case of its first spelling.
PAIRS = {"--stochastic": "--deterministic", "--no-blend": "--blend", "--no-keep-best": "--keep-best",
         "--collect-ahead": "--no-collect-ahead"}  # fmt: skip


class _Captured(Exception):  # noqa: N818 - a control-flow signal, not an error
    def __init__(self, settings: Any) -> None:
        super().__init__("settings captured")
        self.settings = settings


@pytest.fixture
def capture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean environment, a temporary .env, and commands stopped once their settings exist."""
    for name in list(os.environ):
        if name.startswith("NAVI_ACTOR_"):
            monkeypatch.delenv(name)
    dotenv = tmp_path / ".env"
    dotenv.write_text("")
    monkeypatch.setattr(contract_limits, "dotenv_path", lambda: dotenv)
    real_build, real_brain = cli.build_settings, service_command.build_brain_settings

    def stop_with(builder: Any) -> Any:
        def capturing(*args: Any, **kwargs: Any) -> Any:
            raise _Captured(builder(*args, **kwargs))

        return capturing

    monkeypatch.setattr(cli, "build_settings", stop_with(real_build))
    monkeypatch.setattr(service_command, "build_brain_settings", stop_with(real_brain))
    (tmp_path / "cli.pt").write_bytes(b"")
    for layer in ("cli", "env", "dotenv"):  # CURVE key folders are checked when settings are built
        generate_keys(tmp_path / f"keys_{layer}")
    return dotenv


def _settings_of(command: str, args: list[str], tmp_path: Path, env: dict[str, str]) -> Any:
    checkpoint = str(tmp_path / "cli.pt")
    positional = {"evaluate": [checkpoint], "compare": [checkpoint, checkpoint]}.get(command, [])
    result = CliRunner().invoke(cli.main, [command, *positional, *args], env=env)
    assert isinstance(result.exception, _Captured), result.output or repr(result.exception)
    return result.exception.settings


def _value(settings: Any, field: str) -> str:
    value = settings
    for part in field.split("."):
        value = getattr(value, part)
    return str(value)


def _shown(raw: str) -> str:
    """``str()`` of the value an environment string parses to (booleans are spelled True/False)."""
    return {"true": "True", "false": "False"}.get(raw, raw)


PARAMS = [
    pytest.param(command, case, id=f"{command}{case.flag}")
    for command, cases in CASES.items()
    for case in cases
]


@pytest.mark.parametrize(("command", "case"), PARAMS)
def test_cli_beats_environment_beats_dotenv(command: str, case: Case, capture: Path, tmp_path: Path) -> None:
    dotenv, env = case.dotenv.format(tmp=tmp_path), case.env.format(tmp=tmp_path)
    capture.write_text(f"{case.variable}={dotenv}\n")
    from_dotenv = _settings_of(command, [], tmp_path, {})
    assert _value(from_dotenv, case.field) == _shown(dotenv)
    from_env = _settings_of(command, [], tmp_path, {case.variable: env})
    assert _value(from_env, case.field) == _shown(env)
    cli_args = [case.flag] if case.cli is None else [case.flag, case.cli.format(tmp=tmp_path)]
    from_cli = _settings_of(command, cli_args, tmp_path, {case.variable: env})
    expected = case.expected_cli if case.expected_cli is not None else case.cli.format(tmp=tmp_path)  # type: ignore[union-attr]
    assert _value(from_cli, case.field) == expected


@pytest.mark.parametrize("command", sorted(CASES))
def test_no_option_given_means_no_override(command: str, capture: Path, tmp_path: Path) -> None:
    """Without options a command resolves exactly what ``ActorSettings()`` reads from env and .env."""
    capture.write_text("NAVI_ACTOR_TEMPORAL_CORE=gru\nNAVI_ACTOR_ROLLOUT__NUM_ACTORS=3\n")
    env = {"NAVI_ACTOR_ENCODER_BACKEND": "spherical_cnn"}
    settings = _settings_of(command, [], tmp_path, env)
    assert (settings.temporal_core, settings.encoder_backend, settings.rollout.num_actors) == (
        "gru",
        "spherical_cnn",
        3,
    )


def _option_flags(command: click.Command) -> set[str]:
    flags: set[str] = set()
    for param in command.params:
        if isinstance(param, click.Option) and param.name != "help":
            flags.update(param.opts)
            flags.update(param.secondary_opts)
    return flags


@pytest.mark.parametrize("command", sorted(CASES))
def test_every_option_is_covered(command: str) -> None:
    covered = {case.flag for case in CASES[command]} | NOT_SETTINGS[command]
    covered |= {PAIRS[flag] for flag in covered if flag in PAIRS}
    assert _option_flags(cli.main.commands[command]) - {"-h", "--help"} == covered


def test_commands_without_settings_options() -> None:
    """promote and models take no settings options (only their own inputs)."""
    assert _option_flags(cli.main.commands["promote"]) - {"-h", "--help"} == {"--notes", "--tags"}
    assert _option_flags(cli.main.commands["models"]) - {"-h", "--help"} == {"--json"}

"""Options made from settings fields: names, help, shown defaults, types, precedence, one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

import click
import pytest
from click.testing import CliRunner
from pydantic import Field
from pydantic_settings import SettingsConfigDict

from navi_common.cli_options import (
    build_settings,
    click_type,
    field_info,
    option_name,
    settings_kwargs,
    settings_options,
)
from navi_common.settings import NaviSettings, SettingsGroup
from navi_contracts import limits as contract_limits


class _Rollout(SettingsGroup):
    num_actors: int = Field(default=4, gt=0, description="Drones stepped together.")
    mode: Literal["fast", "exact"] = Field(default="exact", description="How to step.")


class _Telemetry(SettingsGroup):
    endpoint: str = Field(default="tcp://127.0.0.1:5557", description="PUB bind endpoint.")
    enabled: bool = Field(default=True, description="Publish telemetry.")
    keys: Path | None = Field(default=None, description="CURVE keys folder.")


class _Settings(NaviSettings):
    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(env_prefix="NAVI_TESTCLI_")

    seed: int = Field(default=0, description="Seed.")
    rollout: _Rollout = Field(default_factory=_Rollout)
    telemetry: _Telemetry = Field(default_factory=_Telemetry)


@pytest.fixture(autouse=True)
def _no_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contract_limits, "dotenv_path", lambda: tmp_path / "absent.env")


@click.command()
@settings_options(
    _Settings,
    ["seed", "rollout.num_actors", "rollout.mode", "telemetry.keys"],
    grouped=["telemetry.endpoint", "telemetry.enabled"],
)
def _command(**options: Any) -> None:
    settings = build_settings(_Settings, **settings_kwargs(options))
    click.echo(settings.model_dump_json())


def _run(*args: str, env: dict[str, str] | None = None) -> _Settings:
    result = CliRunner().invoke(_command, list(args), env=env)
    assert result.exit_code == 0, result.output
    return _Settings.model_validate_json(result.output)


def test_option_names_are_the_field_names() -> None:
    assert option_name("seed") == "--seed"
    assert option_name("rollout.num_actors") == "--num-actors"
    assert option_name("telemetry.endpoint", grouped=True) == "--telemetry-endpoint"
    names = {param.opts[0] for param in _command.params}
    assert names == {
        "--seed",
        "--num-actors",
        "--mode",
        "--keys",
        "--telemetry-endpoint",
        "--telemetry-enabled",
    }


def test_help_is_the_description_with_the_default_shown_once() -> None:
    text = CliRunner().invoke(_command, ["--help"], terminal_width=200).output
    assert "Drones stepped together.  [default: 4]" in text
    assert "PUB bind endpoint.  [default: tcp://127.0.0.1:5557]" in text
    assert "CURVE keys folder." in text and "[default: None]" not in text
    assert "--telemetry-enabled / --no-telemetry-enabled" in text


def test_types_come_from_the_annotation() -> None:
    assert click_type(int) is int and click_type(float) is float and click_type(bool) is bool
    assert isinstance(click_type(Path | None), click.Path)
    choice = click_type(Literal["fast", "exact"])
    assert isinstance(choice, click.Choice) and list(choice.choices) == ["fast", "exact"]
    result = CliRunner().invoke(_command, ["--mode", "slow"])
    assert result.exit_code == 2 and "'slow' is not one of 'fast', 'exact'" in result.output


def test_given_options_win_and_unset_ones_leave_the_environment_in_charge() -> None:
    env = {"NAVI_TESTCLI_ROLLOUT__NUM_ACTORS": "7", "NAVI_TESTCLI_TELEMETRY__ENABLED": "false"}
    from_env = _run(env=env)
    assert (from_env.rollout.num_actors, from_env.telemetry.enabled, from_env.seed) == (7, False, 0)
    given = _run("--num-actors", "2", "--telemetry-enabled", "--telemetry-endpoint", "tcp://*:9", env=env)
    assert (given.rollout.num_actors, given.telemetry.enabled) == (2, True)
    assert given.telemetry.endpoint == "tcp://*:9" and given.rollout.mode == "exact"


def test_settings_kwargs_nests_and_drops_unset_values() -> None:
    options = {"seed": 3, "rollout__num_actors": None, "telemetry__endpoint": "tcp://*:1", "a__b__c": 1}
    assert settings_kwargs(options) == {
        "seed": 3,
        "telemetry": {"endpoint": "tcp://*:1"},
        "a": {"b": {"c": 1}},
    }


def test_invalid_settings_are_one_usage_error_line_naming_the_field() -> None:
    result = CliRunner().invoke(_command, ["--num-actors", "0"])
    assert result.exit_code == 2
    assert "invalid settings: rollout.num_actors: Input should be greater than 0" in result.output
    assert "Traceback" not in result.output


def test_an_unknown_field_path_is_refused_when_the_command_is_built() -> None:
    with pytest.raises(KeyError, match=r"_Settings has no field 'rollout\.actors'"):
        field_info(_Settings, "rollout.actors")


class _Hosts(NaviSettings):
    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(env_prefix="NAVI_TESTHOSTS_")

    hosts: tuple[str, ...] = Field(default=(), description="Extra names.")
    peers: list[str] = Field(default_factory=lambda: ["tcp://a:1", "tcp://b:2"], description="Peers.")


@click.command()
@settings_options(_Hosts, ["hosts", "peers"])
def _hosts_command(**options: Any) -> None:
    click.echo(build_settings(_Hosts, **settings_kwargs(options)).model_dump_json())


def test_a_list_field_is_a_repeatable_option_and_unset_leaves_the_environment_in_charge() -> None:
    runner = CliRunner()
    given = runner.invoke(_hosts_command, ["--hosts", "x", "--hosts", "y", "--peers", "tcp://c:3"])
    assert given.exit_code == 0, given.output
    settings = _Hosts.model_validate_json(given.output)
    assert settings.hosts == ("x", "y") and settings.peers == ["tcp://c:3"]
    from_env = runner.invoke(_hosts_command, [], env={"NAVI_TESTHOSTS_HOSTS": '["z"]'})
    assert _Hosts.model_validate_json(from_env.output).hosts == ("z",)
    assert _Hosts.model_validate_json(from_env.output).peers == ["tcp://a:1", "tcp://b:2"]
    text = runner.invoke(_hosts_command, ["--help"], terminal_width=200).output
    assert "Peers.  [default: tcp://a:1, tcp://b:2]" in text
    assert "Extra names." in text and "[default: ()]" not in text

"""Every console script: its module imports no torch (``--help`` stays fast), and every option made
from a settings field (:class:`navi_common.cli_options.SettingsOption`) is named after that field."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import entry_points

import click
import pytest
from pydantic_core import PydanticUndefined

from navi_common.cli_options import SettingsOption, field_info, option_name

SCRIPTS = sorted(
    (ep for ep in entry_points(group="console_scripts") if ep.module.split(".")[0].startswith("navi_")),
    key=lambda ep: ep.name,
)
HEAVY = ("torch", "numba", "ray")


def test_every_navi_console_script_is_checked() -> None:
    names = {ep.name for ep in SCRIPTS}
    assert {"navi-actor", "brain", "navi-stack", "navi-environment", "navi-dashboard", "explore"} <= names


def test_importing_the_console_scripts_imports_no_torch() -> None:
    """Timing ``--help`` is flaky on a loaded CI box; what made it slow (torch, 6 s) is checked instead."""
    modules = sorted({ep.module for ep in SCRIPTS})
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"importing {modules} loaded {done.stdout.strip()}"


def _commands(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        context = click.Context(command)
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is not None:
                yield from _commands(sub, f"{path} {name}")


def _generated_options() -> list[tuple[str, SettingsOption]]:
    found = []
    for ep in SCRIPTS:
        for path, command in _commands(ep.load(), ep.name):
            found += [(path, p) for p in command.params if isinstance(p, SettingsOption)]
    return found


def test_every_generated_option_is_named_after_its_field() -> None:
    generated = _generated_options()
    for where, option in generated:
        field_info(option.settings, option.field_path)  # the field exists (KeyError otherwise)
        names = {option_name(option.field_path), option_name(option.field_path, grouped=True)}
        assert option.opts[0] in names, f"{where} {option.opts[0]} is not named after {option.field_path}"
        assert option.name == option.field_path.replace(".", "__")
    train = {option.opts[0]: option.field_path for where, option in generated if where == "navi-actor train"}
    # the names that once differed from their fields (issue 18)
    assert train["--num-actors"] == "rollout.num_actors"
    assert train["--checkpoint-every-steps"] == "checkpoint.every_steps"
    assert train["--telemetry-endpoint"] == "telemetry.endpoint"
    assert train["--environment-backend"] == "environment.backend"


SOCKETS = {
    "navi-environment serve": {"--pub-endpoint": "server.pub_endpoint",
                               "--rep-endpoint": "server.rep_endpoint",
                               "--action-sub": "server.action_sub", "--keys": "server.keys"},
    "navi-actor serve": {"--sub-endpoint": "service.sub_endpoint", "--pub-endpoint": "service.pub_endpoint",
                         "--step-endpoint": "service.step_endpoint", "--keys": "service.keys"},
    "navi-stack": {"--keys": "service.keys", "--listen": "launcher.listen"},
    "explore": {"--publish": "explore.publish", "--keys": "keys"},
    "navi-auditor record": {"--sub-endpoints": "recording.sub_endpoints", "--keys": "keys"},
    "navi-auditor replay": {"--pub-endpoint": "recording.pub_endpoint", "--keys": "keys",
                            "--subscriber-wait-ms": "recording.subscriber_wait_ms"},
    "navi-dashboard": {"--matrix-sub": "matrix_sub", "--actor-sub": "actor_sub",
                       "--step-endpoint": "step_endpoint", "--keys": "keys",
                       "--allowed-hosts": "allowed_hosts"},
}  # fmt: skip
"""The socket options of every service: each made from the settings field it sets (issue 18 renamed
``--pub``, ``--rep``, ``--sub``, ``--wait-subscribers-ms`` and ``--allowed-host`` to these)."""


@pytest.mark.parametrize("command", sorted(SOCKETS))
def test_service_socket_options_are_made_from_their_settings_fields(command: str) -> None:
    options = _generated_options()
    generated = {option.opts[0]: option.field_path for where, option in options if where == command}
    assert {name: generated.get(name) for name in SOCKETS[command]} == SOCKETS[command]
    by_hand = [
        param
        for where, command_object in _all_commands()
        if where == command
        for param in command_object.params
        if isinstance(param, click.Option) and not isinstance(param, SettingsOption)
    ]
    for param in by_hand:  # an endpoint default is stated once, in the field (navi_contracts.topics)
        assert "tcp://" not in (param.help or "") and "tcp://" not in str(param.default), param.opts


def _all_commands() -> list[tuple[str, click.Command]]:
    return [found for ep in SCRIPTS for found in _commands(ep.load(), ep.name)]


@pytest.mark.parametrize("command", sorted({"navi-actor train", "navi-actor infer", *SOCKETS}))
def test_generated_options_take_help_and_default_from_the_field(command: str) -> None:
    options = [option for where, option in _generated_options() if where == command]
    assert options
    for option in options:
        info = field_info(option.settings, option.field_path)
        assert option.help is not None and option.help.startswith(info.description or "")
        assert option.default is None  # unset options leave env and .env in charge
        default = info.get_default(call_default_factory=True)
        if isinstance(default, list | tuple):
            default = ", ".join(default)
        if default not in (None, PydanticUndefined, ""):
            assert f"[default: {default}]" in option.help

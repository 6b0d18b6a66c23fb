"""The server's settings group: NAVI_ENV_SERVER__* from the root .env, CLI options on top."""

from __future__ import annotations

from pathlib import Path

import pytest

from navi_common.cli_options import settings_kwargs
from navi_contracts import limits as contract_limits
from navi_environment.cli_settings import environment_settings
from navi_environment.config import EnvironmentSettings


def test_dotenv_server_group_is_read_and_cli_values_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("NAVI_ENV_SERVER__MODE=async\nNAVI_ENV_SERVER__REPUBLISH_MS=40\n")
    monkeypatch.setattr(contract_limits, "dotenv_path", lambda: env_file)
    settings = EnvironmentSettings()
    assert settings.server.mode == "async" and settings.server.republish_ms == 40
    unset = {"server__mode": None, "server__republish_ms": None}  # options not given on the command line
    from_settings = environment_settings(**settings_kwargs(unset)).server
    assert from_settings.mode == "async" and from_settings.republish_ms == 40
    given = {"server__mode": "step", "server__republish_ms": None}
    overridden = environment_settings(**settings_kwargs(given)).server
    assert overridden.mode == "step" and overridden.republish_ms == 40

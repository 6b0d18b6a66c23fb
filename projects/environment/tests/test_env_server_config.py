"""The server's settings group: NAVI_ENV_SERVER__* from the root .env, CLI options on top."""

from __future__ import annotations

from pathlib import Path

import pytest

from navi_contracts import limits as contract_limits
from navi_environment.config import EnvironmentSettings
from navi_environment.server.command import build_server_config


def test_dotenv_server_group_is_read_and_cli_values_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("NAVI_ENV_SERVER__MODE=async\nNAVI_ENV_SERVER__REPUBLISH_MS=40\n")
    monkeypatch.setattr(contract_limits, "dotenv_path", lambda: env_file)
    settings = EnvironmentSettings()
    assert settings.server.mode == "async" and settings.server.republish_ms == 40
    from_settings = build_server_config(settings.server, mode=None, republish_ms=None)
    assert from_settings.mode == "async" and from_settings.republish_ms == 40
    overridden = build_server_config(settings.server, mode="step", republish_ms=None)
    assert overridden.mode == "step" and overridden.republish_ms == 40

"""The services' settings base: nested groups from the shared root .env, typos inside groups refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from pydantic_settings import SettingsConfigDict

from navi_common.settings import NaviSettings, SettingsGroup
from navi_contracts import ContractLimits, limits


class _Compile(SettingsGroup):
    resolution: int = 64


class _DemoSettings(NaviSettings):
    """A package-style settings class with a nested group."""

    model_config = SettingsConfigDict(env_prefix="NAVI_DEMO_")

    compile: _Compile = _Compile()


@pytest.fixture
def dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary repository-root .env used by every settings class in this test."""
    env_file = tmp_path / ".env"
    monkeypatch.setattr(limits, "dotenv_path", lambda: env_file)
    monkeypatch.delenv("NAVI_CONTRACTS_MAX_BATCH", raising=False)
    monkeypatch.delenv("NAVI_DEMO_LOG_LEVEL", raising=False)
    return env_file


def test_nested_groups_from_dotenv_and_typos_inside_groups(dotenv: Path) -> None:
    dotenv.write_text("NAVI_DEMO_COMPILE__RESOLUTION=128\nNAVI_CONTRACTS_MAX_BATCH=2\n")
    assert _DemoSettings().compile.resolution == 128
    assert _DemoSettings(compile={"resolution": 32}).compile.resolution == 32
    dotenv.write_text("NAVI_DEMO_COMPILE__RESOLUTON=128\n")
    with pytest.raises(ValidationError, match="resoluton"):
        _DemoSettings()


def test_log_options_come_from_the_package_prefix(dotenv: Path) -> None:
    dotenv.write_text("NAVI_DEMO_LOG_LEVEL=debug\nNAVI_CONTRACTS_MAX_BATCH=2\n")
    assert _DemoSettings().log_level == "debug"
    assert ContractLimits().max_batch == 2
    with pytest.raises(ValidationError, match="log_level"):
        ContractLimits(log_level="debug")  # the wire limits have no log options

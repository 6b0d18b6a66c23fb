"""The wire limits' settings: root .env discovery, forbidden unknown keys, init kwargs beat env."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from navi_contracts import ContractLimits, limits, paths


@pytest.fixture
def dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary repository-root .env used by every settings class in this test."""
    env_file = tmp_path / ".env"
    monkeypatch.setattr(limits, "dotenv_path", lambda: env_file)
    for name in ("MAX_BATCH", "MAX_MESSAGE_BYTES"):
        monkeypatch.delenv(f"NAVI_CONTRACTS_{name}", raising=False)
    return env_file


def test_defaults_without_dotenv(dotenv: Path) -> None:
    limits = ContractLimits()
    assert limits.max_batch == 4096
    assert limits.max_message_bytes == 64 * 1024 * 1024


def test_dotenv_values_are_read_and_other_packages_keys_ignored(dotenv: Path) -> None:
    dotenv.write_text("NAVI_CONTRACTS_MAX_BATCH=7\nNAVI_ACTOR_LEARNING_RATE=0.1\nOTHER=1\n")
    assert ContractLimits().max_batch == 7


def test_unknown_key_under_the_prefix_is_forbidden(dotenv: Path) -> None:
    dotenv.write_text("NAVI_CONTRACTS_MAX_BACH=7\n")
    with pytest.raises(ValidationError, match="max_bach"):
        ContractLimits()


def test_priority_init_over_env_over_dotenv(dotenv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dotenv.write_text("NAVI_CONTRACTS_MAX_BATCH=7\n")
    monkeypatch.setenv("NAVI_CONTRACTS_MAX_BATCH", "9")
    assert ContractLimits().max_batch == 9
    assert ContractLimits(max_batch=3).max_batch == 3


def test_invalid_values_fail_loudly(dotenv: Path) -> None:
    with pytest.raises(ValidationError, match="greater than 0"):
        ContractLimits(max_batch=0)


def test_settings_are_frozen(dotenv: Path) -> None:
    loaded = ContractLimits()
    with pytest.raises(ValidationError, match="frozen"):
        loaded.max_batch = 5  # type: ignore[misc]


def test_repo_root_override_and_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths.repo_root.cache_clear()
    try:
        discovered = paths.repo_root()
        assert (discovered / "uv.lock").is_file() and (discovered / "contracts").is_dir()
        paths.repo_root.cache_clear()
        monkeypatch.setenv("NAVI_REPO_ROOT", str(tmp_path))
        assert paths.repo_root() == tmp_path.resolve()
        assert paths.artifacts_root() == tmp_path.resolve() / "artifacts"
        assert paths.dotenv_path() == tmp_path.resolve() / ".env"
    finally:
        paths.repo_root.cache_clear()

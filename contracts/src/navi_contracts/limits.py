"""The wire layer's one setting: size limits for decoding untrusted bytes (``NAVI_CONTRACTS_*``).

:class:`RootEnvSettings` is how every Navi settings class is read: environment variables and the
repository-root ``.env`` (:func:`~navi_contracts.paths.dotenv_path`), init kwargs first, unknown keys
under the class's prefix refused, frozen after validation. It lives here, not with the services'
settings base (``navi_common.settings.NaviSettings``, which extends it), because these limits are read
that way and navi-contracts imports nothing from navi-common.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from navi_contracts.paths import dotenv_path


class RootEnvSettings(BaseSettings):
    """Base class: shared root ``.env``, nested groups with ``__``, frozen after validation."""

    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(
        env_prefix="NAVI_",
        env_file=None,  # set per instance in __init__ so the root is resolved lazily
        env_file_encoding="utf-8",
        env_nested_delimiter="__",
        env_parse_none_str="null",  # NAVI_ACTOR_PPO__FINAL_LOG_STD_MAX=null sets None
        extra="forbid",
        # One .env serves every package: read only the keys under this class's prefix, so another
        # package's keys are not "extra" here, while a typo under our own prefix still fails.
        dotenv_filtering="match_prefix",
        frozen=True,
        validate_default=True,
    )

    def __init__(self, **values: Any) -> None:
        env_file = dotenv_path()
        values.setdefault("_env_file", env_file if env_file.is_file() else None)
        super().__init__(**values)


class ContractLimits(RootEnvSettings):
    """Size limits applied when decoding untrusted wire bytes (``NAVI_CONTRACTS_``)."""

    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(env_prefix="NAVI_CONTRACTS_")

    max_message_bytes: int = Field(
        default=64 * 1024 * 1024, gt=0, description="Largest payload any decoder accepts, in bytes."
    )
    max_array_elements: int = Field(
        default=16 * 1024 * 1024, gt=0, description="Largest element count of one decoded array."
    )
    max_batch: int = Field(default=4096, gt=0, description="Largest batch (drones) in one message.")
    max_payload_entries: int = Field(
        default=1024, gt=0, description="Largest number of entries in a telemetry payload map."
    )
    max_string_bytes: int = Field(
        default=65536, gt=0, description="Longest string (UTF-8 bytes) any decoder accepts."
    )

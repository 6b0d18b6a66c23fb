"""Shared settings base for every Navi package.

Each package declares exactly one subclass with its own ``NAVI_<PACKAGE>_`` prefix. All of them read
the same repository-root ``.env`` (found by walking up from the source tree, see
:mod:`navi_contracts.paths`). CLI options are passed as init kwargs, which outrank environment
variables and ``.env``. Unknown keys under the package's prefix fail loudly (``extra="forbid"``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from navi_contracts.paths import dotenv_path


class SettingsGroup(BaseModel):
    """Base for nested settings groups (``NAVI_<PKG>_<GROUP>__<FIELD>``).

    Forbids unknown keys so a typo inside a group fails as loudly as one at the top level, and is
    frozen like the settings object that holds it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class NaviSettings(BaseSettings):
    """Base class: shared ``.env``, nested groups with ``__``, frozen after validation."""

    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(
        env_prefix="NAVI_",
        env_file=None,  # set per instance in __init__ so the root is resolved lazily
        env_file_encoding="utf-8",
        env_nested_delimiter="__",
        extra="forbid",
        # One .env serves five packages: read only the keys under this class's prefix, so another
        # package's keys are not "extra" here, while a typo under our own prefix still fails.
        dotenv_filtering="match_prefix",
        frozen=True,
        validate_default=True,
    )

    log_level: str = Field(default="info", description="structlog level: debug, info, warning, error.")
    log_json: bool | None = Field(
        default=None, description="Force JSON (true) or console (false) logs; default: JSON unless a TTY."
    )

    def __init__(self, **values: Any) -> None:
        env_file = dotenv_path()
        values.setdefault("_env_file", env_file if env_file.is_file() else None)
        super().__init__(**values)


class ContractLimits(NaviSettings):
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

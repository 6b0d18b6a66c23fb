"""Settings base of every Navi package's command-line settings.

Each package declares exactly one subclass with its own ``NAVI_<PACKAGE>_`` prefix. All of them read
the same repository-root ``.env`` the way :class:`navi_contracts.limits.RootEnvSettings` defines
(found from the source tree, see :mod:`navi_contracts.paths`); this base adds the logging fields every
command has and the nested-group base. CLI options are passed as init kwargs, which outrank
environment variables and ``.env``. Unknown keys under the package's prefix fail loudly.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from navi_contracts.limits import RootEnvSettings


class SettingsGroup(BaseModel):
    """Base for nested settings groups (``NAVI_<PKG>_<GROUP>__<FIELD>``).

    Forbids unknown keys so a typo inside a group fails as loudly as one at the top level, and is
    frozen like the settings object that holds it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class NaviSettings(RootEnvSettings):
    """Base class of each package's settings: the shared ``.env`` reading plus the log options."""

    log_level: str = Field(default="info", description="structlog level: debug, info, warning, error.")
    log_json: bool | None = Field(
        default=None, description="Force JSON (true) or console (false) logs; default: JSON unless a TTY."
    )

"""Settings group of ``navi-stack`` (``NAVI_ACTOR_LAUNCHER__*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from navi_common.settings import SettingsGroup


class LauncherConfig(SettingsGroup):
    """Which processes the stack runs and what happens when one of them exits."""

    with_dashboard: bool = Field(default=False, description="Also run navi-dashboard (when installed).")
    on_exit: Literal["restart", "stop"] = Field(
        default="restart",
        description="A child that exits by itself is restarted (restart) or stops the whole stack (stop).",
    )
    max_restarts: int = Field(default=5, ge=0, description="Restarts of one child allowed per window.")
    restart_window_s: float = Field(default=60.0, gt=0.0, description="Window of max_restarts, seconds.")
    grace_s: float = Field(
        default=3.0, gt=0.0, description="Time a child gets to stop after Ctrl+C before it is killed."
    )
    secure: bool = Field(
        default=False,
        description="CURVE on every socket with the keys of service.keys (default artifacts/keys).",
    )
    listen: str | None = Field(
        default=None,
        description="Interface the servers bind (e.g. 0.0.0.0); null: loopback only (docs/security.md).",
    )

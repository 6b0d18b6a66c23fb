"""``navi-stack``: a cross-platform launcher for the environment server, the brain and the dashboard.

Exports load lazily so that the settings groups (``navi_actor.launcher.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from navi_actor.launcher.child import Child, ChildSpec
    from navi_actor.launcher.command import main
    from navi_actor.launcher.supervisor import Supervisor

_EXPORTS = {
    "Child": "navi_actor.launcher.child",
    "ChildSpec": "navi_actor.launcher.child",
    "Supervisor": "navi_actor.launcher.supervisor",
    "main": "navi_actor.launcher.command",
}
__all__ = [
    "Child",
    "ChildSpec",
    "Supervisor",
    "main",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'navi_actor.launcher' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)

"""``navi-stack``: a cross-platform launcher for the environment server, the brain and the dashboard.

Exports load lazily so that the settings groups (``navi_actor.launcher.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

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

__getattr__ = lazy_getattr(__name__, _EXPORTS)

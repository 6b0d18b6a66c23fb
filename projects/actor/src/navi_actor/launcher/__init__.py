"""``navi-stack``: a cross-platform launcher for the environment server, the brain and the dashboard."""

from navi_actor.launcher.child import Child, ChildSpec
from navi_actor.launcher.command import main
from navi_actor.launcher.supervisor import Supervisor

__all__ = ["Child", "ChildSpec", "Supervisor", "main"]

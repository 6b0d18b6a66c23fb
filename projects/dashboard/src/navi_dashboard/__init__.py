"""navi-dashboard: live web dashboard that sees Navi through its sockets only."""

__version__ = "0.1.0"

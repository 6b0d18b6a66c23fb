"""Classical planning on what a drone senses: occupancy maps from depth rays and a frontier explorer.

The evaluation's classical reference and a demonstration source (``explore --autopilot frontier``).
"""

from navi_environment.planning.frontier import FrontierPlanner
from navi_environment.planning.tunables import FrontierTunables

__all__ = ["FrontierPlanner", "FrontierTunables"]

"""Drone kinematics and collision response."""

from navi_environment.step.physics.collision import CollisionResult, move_with_collisions
from navi_environment.step.physics.kinematics import Kinematics, wrap_angle

__all__ = ["CollisionResult", "Kinematics", "move_with_collisions", "wrap_angle"]

"""navi-environment: .gmdag scenes, batched sphere tracing, drone physics, rewards, server.

Importing the package registers the Gymnasium id ``Navi/Explore-v0`` (when gymnasium is imported, so
this import stays light): see :mod:`navi_environment.gym_registration`. Keep this module light: the
package's ``navi_environment_gym.pth`` imports it in every interpreter of the environment (a test
checks that it loads no numpy, torch, numba, gymnasium or pydantic).
"""

from navi_environment.gym_registration import register_when_gymnasium_loads

__version__ = "0.1.0"

register_when_gymnasium_loads()

"""The brain service: the policy behind ZeroMQ sockets (``navi-actor serve``, bare ``brain``).

See ``docs/service.md`` for the protocol, the two modes and the failure behaviour.
"""

from navi_actor.service.brain import run_brain
from navi_actor.service.brain_core import BrainCore
from navi_actor.service.config import BrainSettings, ServiceConfig

__all__ = ["BrainCore", "BrainSettings", "ServiceConfig", "run_brain"]

"""In-process inference (``navi-actor infer``) and the acting path shared with the brain service.

Exports load lazily so that ``navi_actor.inference.config`` (a plain settings group) can be imported
by ``navi_actor.config`` without an import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_actor.inference.policy_source import PolicySource, build_policy, resolve_policy_source
    from navi_actor.inference.runner import InferenceSummary, run_inference
    from navi_actor.inference.stepper import PolicyStepper
    from navi_actor.inference.telemetry import ActingTelemetry

_EXPORTS = {
    "ActingTelemetry": "navi_actor.inference.telemetry",
    "InferenceSummary": "navi_actor.inference.runner",
    "PolicySource": "navi_actor.inference.policy_source",
    "PolicyStepper": "navi_actor.inference.stepper",
    "build_policy": "navi_actor.inference.policy_source",
    "resolve_policy_source": "navi_actor.inference.policy_source",
    "run_inference": "navi_actor.inference.runner",
}
__all__ = [
    "ActingTelemetry",
    "InferenceSummary",
    "PolicySource",
    "PolicyStepper",
    "build_policy",
    "resolve_policy_source",
    "run_inference",
]

__getattr__ = lazy_getattr(__name__, _EXPORTS)

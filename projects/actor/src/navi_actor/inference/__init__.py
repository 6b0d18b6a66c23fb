"""In-process inference (``navi-actor infer``) and the acting path shared with the brain service."""

from navi_actor.inference.policy_source import PolicySource, build_policy, resolve_policy_source
from navi_actor.inference.runner import InferenceSummary, run_inference
from navi_actor.inference.stepper import PolicyStepper
from navi_actor.inference.telemetry import ActingTelemetry

__all__ = [
    "ActingTelemetry",
    "InferenceSummary",
    "PolicySource",
    "PolicyStepper",
    "build_policy",
    "resolve_policy_source",
    "run_inference",
]

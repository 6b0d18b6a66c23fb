"""Settings group of the brain service (``NAVI_ACTOR_SERVICE__*``).

A plain group without imports from the rest of navi-actor, so ``navi_actor.config`` can embed it in
``ActorSettings`` without an import cycle (see :mod:`navi_actor.service.brain_settings`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from navi_common.settings import SettingsGroup
from navi_contracts import topics


class ServiceConfig(SettingsGroup):
    """The brain service: sockets, mode, policy and failure handling."""

    mode: Literal["step", "async"] = Field(
        default="step",
        description="step: drive the environment over REQ/REP; async: act on published observations.",
    )
    inference: Literal["sequential", "realtime"] = Field(
        default="sequential",
        description="sequential: act on each observation in turn (step or async mode); realtime: a "
        "control process publishes action schedules at control_hz while a spawned inference process "
        "thinks (subscribes like async mode; for navi-environment serve --mode realtime).",
    )
    control_hz: float = Field(
        default=20.0, gt=0.0, le=1000.0, description="Realtime: control rate, the environment's tick rate."
    )
    latency_ms: float = Field(
        default=0.0, ge=0.0, description="Realtime/async mode: extra delay after each forward pass, ms."
    )
    jitter_ms: float = Field(
        default=0.0, ge=0.0, description="Realtime and async mode: uniform +- jitter on that delay, ms."
    )
    blend: bool = Field(
        default=True,
        description="Realtime: blend a new chunk into the schedule in force (false: switch abruptly).",
    )
    delay_window: int = Field(
        default=10, gt=0, description="Realtime: inferences over which the delay estimate is the maximum."
    )
    sub_endpoint: str = Field(
        default=topics.ENV_PUB_CONNECT, description="Environment PUB to subscribe to (observations)."
    )
    pub_endpoint: str = Field(
        default=topics.ACTOR_PUB_BIND, description="Actor PUB bind: actions + telemetry (loopback)."
    )
    step_endpoint: str = Field(default=topics.ENV_REP_CONNECT, description="Environment REP (step mode).")
    keys: Path | None = Field(
        default=None, description="CURVE keys folder: secure mode (docs/security.md); null: plain sockets."
    )
    checkpoint: Path | None = Field(
        default=None, description="Policy checkpoint (default: the registry's latest, else a fresh policy)."
    )
    deterministic: bool = Field(default=False, description="Act with the Gaussian mean instead of sampling.")
    seed: int = Field(default=0, description="Seed of the first environment reset (+1 per re-sync).")
    request_timeout_ms: int = Field(
        default=2000, gt=0, description="Step mode: wait for each environment reply, ms."
    )
    request_retries: int = Field(default=1, ge=0, description="Step mode: re-sends before a re-sync.")
    resend_ms: int = Field(
        default=500,
        gt=0,
        description="Async mode: re-publish the last action when no newer observation came in this long.",
    )
    env_ready_timeout_ms: int = Field(
        default=120_000,
        gt=0,
        description="Wait this long, quietly, for the environment to come up (it may be loading a corpus) "
        "before warning that it is unreachable.",
    )
    silence_warning_ms: int = Field(
        default=3000, gt=0, description="Async mode: warn when no observation arrived for this long."
    )
    stats_seconds: float = Field(default=1.0, gt=0.0, description="Period of the actor.service.stats event.")
    wait_for_subscribers: int = Field(
        default=0, ge=0, description="Wait for this many subscribers on the actor PUB before acting."
    )
    subscriber_wait_ms: int = Field(
        default=10_000, gt=0, description="How long to wait for them before failing, ms."
    )
    total_steps: int | None = Field(
        default=None, gt=0, description="Stop after this many acting steps (null: serve until Ctrl+C)."
    )

    @model_validator(mode="after")
    def _check_keys(self) -> ServiceConfig:
        """The brain binds its PUB and connects to the environment: it needs both key halves."""
        if self.keys is not None:
            from navi_common.transport.curve import load_keys

            load_keys(self.keys, server=True, client=True)
        return self

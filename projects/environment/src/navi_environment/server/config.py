"""Settings group of the environment server (``serve``): sockets, mode, async and real-time pacing.

A plain group so ``EnvironmentSettings`` can embed it as ``server`` (``NAVI_ENV_SERVER__MODE=async``);
``navi-environment serve`` builds it from its options (CLI values as init kwargs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, model_validator

from navi_common.settings import SettingsGroup
from navi_contracts import topics


class ServerConfig(SettingsGroup):
    """How ``navi-environment serve`` is driven and where it listens."""

    mode: Literal["step", "async", "realtime"] = Field(
        default="step",
        description="step: step only on REQ StepRequests; async: also step on actions published by a brain; "
        "realtime: step every drone at control_hz on the actions the brain scheduled (or the fallback).",
    )
    pub_endpoint: str = Field(
        default=topics.ENV_PUB_BIND,
        description="PUB bind: observations + telemetry ('' = publish nothing); loopback unless widened.",
    )
    rep_endpoint: str = Field(
        default=topics.ENV_REP_BIND,
        description="REP bind: StepRequest -> StepResult; loopback unless widened.",
    )
    action_sub: str = Field(
        default=topics.ACTOR_PUB_CONNECT,
        description="Async mode: the brain's PUB whose action_v2 drives steps.",
    )
    keys: Path | None = Field(
        default=None, description="CURVE keys folder (secure mode, docs/security.md); null: plain sockets."
    )
    seed: int = Field(default=0, ge=0, description="Async mode: seed of the reset made at start-up.")
    republish_ms: int = Field(
        default=250,
        gt=0,
        description="Async mode: re-publish the current observation this often while no action comes.",
    )
    poll_ms: int = Field(
        default=10,
        gt=0,
        le=1000,
        description="Async/realtime mode: longest wait on the action socket before the REP socket is served.",
    )
    control_hz: float = Field(
        default=20.0,
        gt=0,
        le=1000,
        description="Realtime mode: control ticks per second (every drone steps once per tick).",
    )
    fallback: Literal["hold", "slow"] = Field(
        default="hold",
        description="Realtime mode, a tick without a scheduled action: hold repeats the last action, "
        "slow executes it times 0.5 each tick (a safe slow-down).",
    )
    guard: bool = Field(
        default=False,
        description="Realtime mode: the vehicle's collision guard. Every executed action (scheduled or "
        "fallback) is capped, from the tick's newest observation, so the drone can still stop before "
        "every near surface (the frontier planner's speed guard; docs/environment_server.md).",
    )
    stats_interval_s: float = Field(
        default=1.0,
        gt=0,
        description="Realtime mode: publish the environment.realtime.stats telemetry event this often.",
    )

    @model_validator(mode="after")
    def _check_async_has_endpoints(self) -> Self:
        """Async mode is useless without a PUB (the brain never sees an observation) or an action source.

        Secure mode: the keys folder must hold the server half (and, in async mode, the client half).
        """
        brain_driven = self.mode in ("async", "realtime")
        if brain_driven and not self.pub_endpoint:
            raise ValueError(
                f"{self.mode} mode needs a PUB endpoint: the brain acts on published observations"
            )
        if brain_driven and not self.action_sub:
            raise ValueError(
                f"{self.mode} mode needs action_sub: the brain PUB whose actions drive the steps"
            )
        if self.keys is not None:  # an unusable keys folder fails at start-up, before scenes load
            from navi_common.transport.curve import load_keys

            load_keys(self.keys, server=True, client=brain_driven)
        return self

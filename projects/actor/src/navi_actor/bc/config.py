"""Behaviour-cloning settings: the ``bc`` group of ``ActorSettings`` (``NAVI_ACTOR_BC__EPOCHS=...``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class BCConfig(BaseModel):
    """How ``bc-pretrain`` trains the policy on demonstrations."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    demonstrations: Path | None = Field(
        default=None, description="Folder of .npz demonstrations (default: <artifacts>/demonstrations)."
    )
    epochs: int = Field(default=10, gt=0, description="Passes over the training episodes.")
    sequence_length: int = Field(default=32, gt=0, description="BPTT window length L (state carried across).")
    streams: int = Field(default=16, gt=0, description="Parallel BPTT rows B per optimiser step.")
    learning_rate: float = Field(default=1e-3, gt=0.0, description="Adam learning rate.")
    weight_decay: float = Field(default=0.0, ge=0.0, description="AdamW weight decay.")
    max_grad_norm: float = Field(default=1.0, gt=0.0, description="Global gradient-norm clip.")
    holdout_fraction: float = Field(
        default=0.1, ge=0.0, lt=1.0, description="Share of episodes held out to measure imitation."
    )
    keep_best: bool = Field(
        default=True,
        description="End with the weights of the epoch whose held-out action MSE was lowest, not the "
        "last epoch's (needs held-out episodes).",
    )
    patience: int = Field(
        default=0,
        ge=0,
        description="Stop once the held-out action MSE has not improved for this many epochs (epochs "
        "is then the ceiling); 0 = run every epoch. Needs held-out episodes.",
    )
    chunk_coef: float = Field(
        default=1.0,
        ge=0.0,
        description="Weight of the chunk head's loss (policy.action_chunk > 1): predict the demonstrated "
        "actions of the next H-1 ticks (masked at episode ends).",
    )
    visit_prediction_coef: float = Field(
        default=0.5,
        ge=0.0,
        description="Weight of the visit head's loss (policy.visit_prediction): predict where around it "
        "the demonstrating drone had been in its episode, from the recorded poses.",
    )
    log_std: float | None = Field(
        default=None,
        description="Frozen action log-std during BC (and after it, for RL). Default: keep the policy's.",
    )


class WarmStartConfig(BaseModel):
    """``navi-actor train``'s warm start: behaviour-clone the frontier planner before PPO.

    Why a trainer option: PPO from a clone of the planner's flights doubled the mean action's
    coverage (docs/experiments/2026-11-tanh-squash-and-bc-warm-start.md), and a user should not
    need three commands for it. On by default (16,384 steps) since 2026-12-04: every row of the
    learning target table trains from it (3.09-3.17x random with the mean action on seeds 0-2, 2.87x on
    seed 3), where PPO from a fresh policy covered 1.67x on seed 0 (earlier defaults; docs/training.md,
    docs/experiments/2026-11-checkpoint-selection.md). Twelve clone epochs since 2026-12-06: all-in
    (``bench_learning.py --minutes 30``) seeds 0 / 1 / 2 read 3.33x / 3.11x / 2.92x (2.67x again)
    random against 3.23x / 2.97x / 2.93x with 20 (docs/experiments/2026-12-thirty-minutes-all-in.md),
    no worse on average and 2 minutes cheaper. Where it cannot run (the point environment, Ray) and
    nobody asked for it, ``train`` goes without it and says so.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    steps: int = Field(
        default=16384, ge=0,
        description="Environment steps (all drones) the frontier planner flies over every training scene "
        "before PPO; 0 = no warm start. Never runs when the run resumes; the default is skipped, with a "
        "notice, where it cannot run (environment.backend=point, train.backend=ray).",
    )  # fmt: skip
    epochs: int = Field(
        default=12, gt=0,
        description="Behaviour-cloning epochs over the planner's flights (12: the clone's held-out action "
        "MSE stops falling after about 11, and the 2 minutes saved go to PPO).",
    )  # fmt: skip
    value_updates: int = Field(
        default=10, ge=0,
        description="First PPO updates after the warm start that train only the critic "
        "(sets ppo.value_warmup_updates).",
    )  # fmt: skip
    dagger_rounds: int = Field(
        default=0, ge=0,
        description="DAgger rounds after the first clone: the clone flies dagger_steps with its mean "
        "action while the planner labels every step, then trains on all flights so far for "
        "dagger_epochs; 0 = off.",
    )  # fmt: skip
    dagger_steps: int = Field(
        default=8192, gt=0, description="Environment steps the clone flies per DAgger round."
    )
    dagger_epochs: int = Field(
        default=5,
        gt=0,
        description="Behaviour-cloning epochs per DAgger round, continuing from the last clone.",
    )

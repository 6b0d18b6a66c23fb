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
    learning_rate: float = Field(default=3e-4, gt=0.0, description="Adam learning rate.")
    weight_decay: float = Field(default=0.0, ge=0.0, description="AdamW weight decay.")
    max_grad_norm: float = Field(default=1.0, gt=0.0, description="Global gradient-norm clip.")
    holdout_fraction: float = Field(
        default=0.1, ge=0.0, lt=1.0, description="Share of episodes held out to measure imitation."
    )
    chunk_coef: float = Field(
        default=1.0,
        ge=0.0,
        description="Weight of the chunk head's loss (policy.action_chunk > 1): predict the demonstrated "
        "actions of the next H-1 ticks (masked at episode ends).",
    )
    log_std: float | None = Field(
        default=None,
        description="Frozen action log-std during BC (and after it, for RL). Default: keep the policy's.",
    )

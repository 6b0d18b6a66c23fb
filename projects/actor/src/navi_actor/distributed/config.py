"""``DistributedConfig``: how ``navi-actor train --backend ray`` spreads collection over Ray workers.

This group is meant to live in :class:`~navi_actor.config.ActorSettings` as ``distributed``
(``NAVI_ACTOR_DISTRIBUTED__NUM_WORKERS=4``); until it does, :func:`train_distributed` takes it as an
argument. The PPO, rollout and checkpoint settings are the local trainer's, unchanged: each worker
runs ``rollout.num_actors`` drones for ``rollout.rollout_length`` steps per fragment, and one update
learns from ``num_workers`` fragments (a batch ``num_workers`` times the local one).
"""

from __future__ import annotations

from pydantic import Field, field_validator

from navi_common.settings import SettingsGroup


class DistributedConfig(SettingsGroup):
    """Ray rollout workers, weight broadcast, staleness and fault tolerance."""

    address: str | None = Field(
        default=None,
        description="Ray cluster: null starts a local one; 'auto' joins the local running cluster; "
        "'ray://HOST:PORT' connects through Ray Client.",
    )
    num_workers: int = Field(default=2, gt=0, description="Rollout worker actors (fragments per update).")
    worker_cpus: float = Field(default=1.0, gt=0.0, description="CPUs Ray reserves for each worker.")
    worker_gpus: float = Field(default=0.0, ge=0.0, description="GPUs (fractions allowed) per worker.")
    worker_device: str = Field(default="cpu", description="torch device the workers step and act on.")
    worker_torch_threads: int = Field(default=1, gt=0, description="torch intra-op threads per worker.")
    max_staleness: int = Field(
        default=1,
        ge=0,
        description="Fragments collected with weights more than this many updates old are dropped.",
    )
    collect_ahead: bool = Field(
        default=True,
        description="Workers start their next fragment at once, overlapping collection with the update "
        "(fragments are then up to one version old); false = synchronous PPO, the local algorithm.",
    )
    learners: int = Field(
        default=1,
        gt=0,
        description="Data-parallel learner ranks (Ray Train, DistributedDataParallel); 1 = one learner "
        "in the driver process. num_workers x rollout.num_actors must be a multiple of it.",
    )
    learner_cpus: float = Field(default=1.0, gt=0.0, description="CPUs Ray reserves for each learner rank.")
    learner_gpus: float = Field(
        default=0.0, ge=0.0, description="GPUs per learner rank (> 0: the ranks train on CUDA with NCCL)."
    )
    max_restarts: int = Field(
        default=3, ge=0, description="Times Ray restarts a crashed worker before it is given up."
    )
    fragment_timeout_s: float = Field(
        default=600.0,
        gt=0.0,
        description="A worker that returns no fragment for this long is killed and restarted.",
    )
    startup_timeout_s: float = Field(
        default=600.0, gt=0.0, description="Wait at most this long for the first worker to build its env."
    )

    @field_validator("address")
    @classmethod
    def _known_address_form(cls, value: str | None) -> str | None:
        if value is None or value == "auto" or value.startswith("ray://") or ":" in value:
            return value
        raise ValueError(f"address {value!r}: use 'auto', 'ray://HOST:PORT' or 'HOST:PORT'")

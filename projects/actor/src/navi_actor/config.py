"""``ActorSettings``: the one settings class of navi-actor (prefix ``NAVI_ACTOR_``).

Groups are nested pydantic models (``NAVI_ACTOR_PPO__CLIP_RANGE=0.1`` sets ``ppo.clip_range``). CLI
options pass their values as init kwargs, which outrank environment variables and the root ``.env``.
Every cross-field rule is checked once, here, at startup (not in the training loop).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from navi_actor.bc.config import BCConfig, WarmStartConfig
from navi_actor.distributed.config import DistributedConfig
from navi_actor.inference.config import InferenceConfig
from navi_actor.launcher.config import LauncherConfig
from navi_actor.models.config import PolicyConfig
from navi_actor.service.config import ServiceConfig
from navi_actor.shaping.config import ShapingConfig
from navi_common.settings import NaviSettings, SettingsGroup
from navi_contracts import topics


class RolloutConfig(SettingsGroup):
    """How experience is collected between updates."""

    num_actors: int = Field(default=4, gt=0, description="Drones stepped together (batch B).")
    rollout_length: int = Field(default=128, gt=0, description="Steps per drone per rollout (T).")
    sequence_length: int = Field(
        default=32, gt=0, description="BPTT chunk length L; must divide rollout_length."
    )
    noise_correlation: float = Field(
        default=0.0, ge=0.0, lt=1.0,
        description="AR(1) coefficient of each drone's action noise during PPO rollouts: a deviation "
        "from the mean lasts 1 / (1 - rho) ticks, each tick still a sample of the policy's Gaussian "
        "(navi_actor.models.correlated_noise); 0: white noise.",
    )  # fmt: skip
    quiet_drones: int = Field(
        default=0, ge=0,
        description="How many of the rollout's drones (the last ones) act with quiet_noise_scale x the "
        "policy's std, so PPO also learns from flights close to the mean action's own "
        "(navi_actor.models.quiet_drones); fewer than num_actors; 0: none. Needs train.backend=local.",
    )  # fmt: skip
    quiet_noise_scale: float = Field(
        default=0.5, gt=0.0, le=1.0, description="Share of the policy's std the quiet drones keep."
    )
    collect_ahead: bool = Field(
        default=False,
        description="Collect the next rollout on a second thread while the PPO update runs "
        "(train.backend=local): each rollout is then acted with the weights of one update earlier, as "
        "Ray's collect-ahead workers do (navi_actor.runners.collect_ahead); false: collect, then update.",
    )
    gamma: float = Field(default=0.99, ge=0.0, le=1.0, description="Discount factor.")
    gae_lambda: float = Field(default=0.95, ge=0.0, le=1.0, description="GAE lambda.")
    gamma_final: float | None = Field(
        default=None, ge=0.0, le=1.0,
        description="Discount reached at the end of the budget, linearly (the LR schedule's share); "
        "null keeps gamma constant.",
    )  # fmt: skip
    gae_lambda_final: float | None = Field(
        default=None, ge=0.0, le=1.0,
        description="GAE lambda reached at the end of the budget, linearly; null keeps it constant.",
    )  # fmt: skip


class PPOConfig(SettingsGroup):
    """The PPO update: losses, optimiser and its schedule."""

    learning_rate: float = Field(default=3e-4, gt=0.0, description="Adam learning rate at the start.")
    lr_schedule: Literal["constant", "linear"] = Field(
        default="linear",
        description="linear anneals to 0 at --total-steps or at the end of --max-minutes, whichever "
        "comes first (constant when unbounded).",
    )
    adam_eps: float = Field(default=1e-5, gt=0.0, description="Adam epsilon.")
    epochs: int = Field(default=4, gt=0, description="Passes over each rollout.")
    num_minibatches: int = Field(default=4, gt=0, description="Minibatches per epoch (of whole sequences).")
    gradient_accumulation: int = Field(
        default=1, gt=0, description="Minibatches whose gradients are summed before one optimiser step."
    )
    clip_range: float = Field(default=0.2, gt=0.0, description="PPO ratio clip epsilon.")
    value_clip_range: float | None = Field(
        default=0.2, gt=0.0, description="Clip of the value change per update; null disables."
    )
    value_coef: float = Field(default=0.5, ge=0.0, description="Weight of the value loss.")
    entropy_coef: float = Field(default=0.005, ge=0.0, description="Weight of the entropy bonus.")
    max_grad_norm: float = Field(default=0.5, gt=0.0, description="Global gradient-norm clip.")
    target_kl: float | None = Field(
        default=0.03, gt=0.0, description="Stop the update's epochs once mean approx KL exceeds this."
    )
    value_warmup_updates: int = Field(
        default=0, ge=0, description="First N updates train only the critic (e.g. after BC pretraining)."
    )
    reference_checkpoint: Path | None = Field(
        default=None, description="Frozen reference policy (e.g. the BC checkpoint) for a KL penalty."
    )
    reference_kl_coef: float = Field(default=0.0, ge=0.0, description="Initial KL-to-reference weight.")
    reference_kl_decay: float = Field(
        default=0.995, gt=0.0, le=1.0, description="Per-update multiplicative decay of that weight."
    )
    reference_refresh_updates: int | None = Field(
        default=None, gt=0,
        description="Copy the current policy into the KL reference every N updates (a trust region "
        "around the recent policy); without a reference checkpoint the reference starts as the "
        "initial policy. Needs reference_kl_coef > 0.",
    )  # fmt: skip
    final_log_std_max: float | None = Field(
        default=-1.0,
        description="Upper bound of the global action log-std at the end of the budget, lowered "
        "linearly from policy.log_std_max (the LR schedule's share): late training then acts closer "
        "to the mean action that is deployed (-1.0: std 0.37 at the end; measured against -1.6 and "
        "-2.3 in docs/experiments/2026-11-std-ceiling-end.md); with policy.log_std_mode=state it bounds "
        "every state (the state gate only lowers the global std). null: no schedule.",
    )
    chunk_coef: float = Field(
        default=0.5,
        ge=0.0,
        description="Weight of the chunk head's auxiliary loss (policy.action_chunk > 1): predict the "
        "policy's own later mean actions along the rollout.",
    )
    symmetry_coef: float = Field(
        default=0.5,
        ge=0.0,
        description="Weight of the mirror-symmetry loss: the mean action on the left-right mirrored "
        "rollout, mirrored back, is a target for the mean action, so turning one way whatever the "
        "drone sees is no longer free (navi_actor.models.mirror); 0: off.",
    )
    self_imitation_coef: float = Field(
        default=0.0,
        ge=0.0,
        description="Weight of self-imitation: the mean action is pulled toward the executed actions "
        "with positive advantage, weighted by it (navi_actor.algorithms.losses.self_imitation_loss), "
        "so the deployed mean learns what the sampling noise found; 0: off.",
    )
    dagger_every_steps: int = Field(
        default=0, ge=0,
        description="Every N environment steps of PPO the policy flies dagger_steps over the training "
        "scenes with its MEAN action while the frontier planner labels every step; each minibatch then "
        "adds dagger_coef x the squared error between the mean action and the planner's label on "
        "windows of all such flights so far (navi_actor.bc.own_flights); 0: off. Needs the sdfdag "
        "environment and train.backend=local.",
    )  # fmt: skip
    dagger_steps: int = Field(
        default=8192, gt=0, description="Environment steps (all drones) of each mean-action flight."
    )
    dagger_coef: float = Field(
        default=1.0, ge=0.0, description="Weight of the planner-label loss on the mean-action flights."
    )
    dagger_streams: int = Field(
        default=1, gt=0,
        description="Windows of the labelled flights per minibatch, each rollout.sequence_length "
        "frames scored after half as many frames of burn-in.",
    )  # fmt: skip
    visit_prediction_coef: float = Field(
        default=0.5,
        ge=0.0,
        description="Weight of the visit head's auxiliary loss (policy.visit_prediction): predict from "
        "the core's output where around it the drone has been this episode (its visit memory).",
    )
    open_loop_fraction: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Policies with a chunk head (policy.action_chunk > 1): the share of closed-loop "
        "rollout ticks that start executing the chunk's later entries open loop for 1 .. H-1 ticks, "
        "as a real-time brain does, with PPO ratios of the entry each action was drawn from "
        "(navi_actor.models.open_loop); 0: always a fresh action.",
    )
    cuda_timing: bool = Field(default=False, description="Time update stages with CUDA events.")


class CheckpointConfig(SettingsGroup):
    """Checkpoint cadence, retention and registry behaviour."""

    # 12,800 (a 30-minute run's 206k steps give 17 checkpoints): select-checkpoint chose better among
    # them than among the five of a 50,000 cadence (docs/experiments/2026-11-checkpoint-selection.md).
    every_steps: int = Field(default=12_800, gt=0, description="Environment steps between checkpoints.")
    keep: int = Field(default=20, gt=0, description="Checkpoints kept per run (older ones deleted).")
    auto_resume: bool = Field(default=True, description="Continue from the registry's latest model.")
    auto_promote: bool = Field(
        default=True, description="Promote a checkpoint whose reward EMA beats the registry's best."
    )


class TelemetryConfig(SettingsGroup):
    """Live telemetry on the actor PUB socket."""

    enabled: bool = Field(default=True, description="Publish telemetry while training.")
    endpoint: str = Field(default=topics.ACTOR_PUB_BIND, description="Actor PUB bind endpoint (loopback).")
    keys: Path | None = Field(default=None, description="CURVE keys folder: secure mode (docs/security.md).")
    observation_hz: float = Field(default=10.0, gt=0.0, description="Actor-0 observation publish rate.")
    heartbeat_seconds: float = Field(default=1.0, gt=0.0, description="Heartbeat period during updates.")

    @model_validator(mode="after")
    def _check_keys(self) -> TelemetryConfig:
        """An unusable keys folder is a settings error at start-up, not a silent plain socket."""
        if self.enabled and self.keys is not None:
            from navi_common.transport.curve import load_keys

            load_keys(self.keys, server=True)
        return self


class EnvironmentChoice(SettingsGroup):
    """Which environment the trainer steps in-process."""

    backend: Literal["sdfdag", "point"] = Field(
        default="sdfdag",
        description="sdfdag: the real simulator; point: a tiny goal-seeking toy for smoke tests.",
    )
    gmdag_file: Path | None = Field(default=None, description="Fly in this one .gmdag scene, not a corpus.")
    corpus: Path | None = Field(default=None, description="Corpus folder (default: the built-in one).")
    point_azimuth: int = Field(default=32, gt=0, description="Azimuth bins of the point environment.")
    point_elevation: int = Field(default=8, gt=0, description="Elevation bins of the point environment.")
    point_max_steps: int = Field(default=60, gt=0, description="Episode truncation of the point environment.")


class TrainConfig(SettingsGroup):
    """Run-level knobs."""

    total_steps: int | None = Field(
        default=None,
        gt=0,
        description="Environment steps (all drones) to train for, rounded up to whole rollouts "
        "(rollout.rollout_length x drones); null = until Ctrl+C.",
    )
    max_minutes: float | None = Field(
        default=None, gt=0.0, description="Stop after this much wall-clock training time; null = no limit."
    )
    device: str = Field(default="cpu", description="torch device: cpu, cuda, cuda:1, ...")
    backend: Literal["local", "ray"] = Field(
        default="local",
        description="local: step in-process; ray: Ray rollout workers (the 'distributed' extra, "
        "docs/distributed.md).",
    )
    seed: int = Field(default=0, description="Seed for torch, the environment and minibatch shuffles.")
    reward_ema_alpha: float = Field(
        default=0.05, gt=0.0, le=1.0, description="Weight of each finished episode in the reward EMA."
    )
    progress_seconds: float = Field(default=2.0, gt=0.0, description="Progress line period.")
    torch_threads: int | None = Field(
        default=None,
        gt=0,
        description="torch intra-op threads (default: torch's choice). 1 is fastest on a busy shared CPU.",
    )
    artifacts_dir: Path | None = Field(
        default=None, description="Where runs and the model registry live (default: <repo>/artifacts)."
    )
    keep_freed_memory: bool = Field(
        default=True,
        description="Keep freed buffers mapped for reuse (glibc's malloc thresholds at 32 MiB / 1 GiB): "
        "the update stops paying page faults on fresh memory (8 % faster on 2 cores), at the cost of "
        "resident memory; no effect off glibc (navi_actor.runners.allocator).",
    )
    logger: Literal["none", "tensorboard", "wandb"] = Field(
        default="none",
        description="Also write metrics.jsonl's scalars to TensorBoard (<run>/tensorboard/) or W&B (offline "
        "unless logged in); extras navi-actor[tensorboard] / navi-actor[wandb].",
    )


class ActorSettings(NaviSettings):
    """Every navi-actor setting (``NAVI_ACTOR_*``)."""

    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(env_prefix="NAVI_ACTOR_")

    encoder_backend: str | None = Field(
        default=None, description="Encoder selector; overrides policy.encoder_backend when set."
    )
    temporal_core: str | None = Field(
        default=None, description="Temporal core selector; overrides policy.temporal_core when set."
    )
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    shaping: ShapingConfig = Field(default_factory=ShapingConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    ppo: PPOConfig = Field(default_factory=PPOConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    environment: EnvironmentChoice = Field(default_factory=EnvironmentChoice)
    train: TrainConfig = Field(default_factory=TrainConfig)
    bc: BCConfig = Field(default_factory=BCConfig)
    warm_start: WarmStartConfig = Field(default_factory=WarmStartConfig)
    distributed: DistributedConfig = Field(default_factory=DistributedConfig)
    # Read by serve / infer / navi-stack; declared here so one .env serves every actor command.
    service: ServiceConfig = Field(default_factory=ServiceConfig)
    inference: InferenceConfig = Field(default_factory=InferenceConfig)
    launcher: LauncherConfig = Field(default_factory=LauncherConfig)

    @model_validator(mode="after")
    def _check_cross_field_rules(self) -> ActorSettings:
        rollout, ppo = self.rollout, self.ppo
        if rollout.rollout_length % rollout.sequence_length != 0:
            raise ValueError(
                f"rollout.rollout_length ({rollout.rollout_length}) must be a multiple of "
                f"rollout.sequence_length ({rollout.sequence_length})"
            )
        sequences = rollout.rollout_length // rollout.sequence_length * rollout.num_actors
        if sequences % ppo.num_minibatches != 0:
            raise ValueError(
                f"{sequences} training sequences per rollout (rollout_length / sequence_length x "
                f"num_actors) cannot be split into ppo.num_minibatches={ppo.num_minibatches}"
            )
        policy = self.policy_config()  # validates the selector overrides with the policy's own rules
        if policy.memory_input and self.train.backend == "ray":
            raise ValueError(
                "policy.memory_input is not supported with train.backend=ray yet (rollout fragments do "
                "not carry the loop scores); train with the local backend"
            )
        if rollout.quiet_drones and rollout.quiet_drones >= rollout.num_actors:
            raise ValueError(
                f"rollout.quiet_drones ({rollout.quiet_drones}) must be fewer than rollout.num_actors "
                f"({rollout.num_actors}): at least one drone keeps the policy's full noise"
            )
        open_loop = policy.action_chunk > 1 and ppo.open_loop_fraction > 0.0
        if rollout.quiet_drones and (self.train.backend != "local" or open_loop):
            raise ValueError(
                "rollout.quiet_drones needs train.backend=local and no open-loop chunks "
                "(ppo.open_loop_fraction=0): rollout fragments and chunk entries do not carry the noise scale"
            )
        if ppo.dagger_every_steps and (self.environment.backend != "sdfdag" or self.train.backend != "local"):
            raise ValueError(
                "ppo.dagger_every_steps needs the sdfdag environment and train.backend=local (the "
                "frontier planner labels in-process flights of the real simulator)"
            )
        if rollout.collect_ahead and self.train.backend != "local":
            raise ValueError(
                "rollout.collect_ahead needs train.backend=local (Ray workers have distributed.collect_ahead)"
            )
        if ppo.reference_refresh_updates is not None and ppo.reference_kl_coef == 0.0:
            raise ValueError("ppo.reference_refresh_updates needs ppo.reference_kl_coef > 0")
        if ppo.final_log_std_max is not None and not policy.log_std_min <= ppo.final_log_std_max:
            raise ValueError(
                "ppo.final_log_std_max must be >= policy.log_std_min (or null: no schedule), got "
                f"{ppo.final_log_std_max} < {policy.log_std_min}"
            )
        return self

    def policy_config(self, observation_shape: tuple[int, ...] | None = None) -> PolicyConfig:
        """The policy group with the top-level selectors (and the sensor shape) applied.

        Args:
            observation_shape: ``(C, Az, El)`` of the environment; sets the policy's sensor size.

        Returns:
            A validated :class:`PolicyConfig`.
        """
        update: dict[str, object] = {}
        if self.encoder_backend is not None:
            update["encoder_backend"] = self.encoder_backend
        if self.temporal_core is not None:
            update["temporal_core"] = self.temporal_core
        if observation_shape is not None:
            update["azimuth"], update["elevation"] = int(observation_shape[1]), int(observation_shape[2])
        if self.policy.memory_input:  # one memory setting: the shaper's loop penalty reads the same memory
            update["memory"] = self.shaping.memory.model_dump()
        if self.policy.visits.source == "frontiers":  # the frontier map reads depth in the sensor's metres
            from navi_environment.config import EnvironmentSettings

            horizon = EnvironmentSettings().sensor.horizon_m
            update["visits"] = self.policy.visits.model_dump() | {"horizon_m": horizon}
        merged = self.policy.model_dump() | update
        return PolicyConfig.model_validate(merged)

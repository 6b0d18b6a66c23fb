"""Policy architecture settings: one frozen model embedded by the trainer as a settings group.

The selector names (``encoder_backend``, ``temporal_core``) are the values accepted by
``--encoder-backend`` / ``NAVI_ACTOR_ENCODER_BACKEND`` and ``--temporal-core`` /
``NAVI_ACTOR_TEMPORAL_CORE``; they are validated here, once, with an error that lists the choices.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from navi_actor.memory.config import EpisodicMemoryConfig, VisitMemoryConfig

EncoderBackend = Literal["rayvit", "spherical_cnn"]
TemporalCoreName = Literal["mamba2", "gru", "mambapy"]
InputTransform = Literal["none", "sqrt_depth", "log_depth"]
ActionSquash = Literal["clip", "tanh"]
VitReadout = Literal["cls", "sectors"]
ENCODER_BACKENDS: tuple[str, ...] = ("rayvit", "spherical_cnn")
TEMPORAL_CORES: tuple[str, ...] = ("mamba2", "gru", "mambapy")
INPUT_TRANSFORMS: tuple[str, ...] = ("none", "sqrt_depth", "log_depth")


def _check_choice(kind: str, value: Any, choices: tuple[str, ...]) -> Any:
    if isinstance(value, str) and value not in choices:
        raise ValueError(f"unknown {kind} {value!r}; valid choices: {', '.join(choices)}")
    return value


class PolicyConfig(BaseModel):
    """Architecture of :class:`navi_actor.models.NaviPolicy` (one topology, selectable parts)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    encoder_backend: EncoderBackend = Field(
        default="rayvit", description="Observation encoder: rayvit (default) or spherical_cnn."
    )
    temporal_core: TemporalCoreName = Field(
        default="mamba2", description="Recurrent core: mamba2 (default), gru or mambapy."
    )
    embed_dim: int = Field(default=128, gt=0, description="Width of the encoder embedding and core.")
    action_dim: int = Field(default=4, gt=0, description="Action size: forward, vertical, lateral, yaw.")
    in_channels: int = Field(default=3, gt=0, description="Observation channels: depth, semantic, valid.")
    input_transform: InputTransform = Field(
        default="sqrt_depth",
        description="Fixed input scaling: sqrt_depth or log_depth (with semantic/8), or none (raw).",
    )
    azimuth: int = Field(default=256, gt=0, description="Azimuth bins of the observation.")
    elevation: int = Field(default=48, gt=0, description="Elevation bins of the observation.")
    init_log_std: float = Field(default=-0.5, description="Initial log standard deviation of actions.")
    init_forward_mean: float = Field(
        default=0.5,
        ge=-1.0,
        le=1.0,
        description="Initial mean of the forward action: an untrained drone cruises instead of hovering "
        "(the executed action; with action_squash=tanh the raw mean starts at its atanh).",
    )
    log_std_min: float = Field(default=-5.0, description="Lower clamp of the action log-std.")
    log_std_max: float = Field(default=-0.5, description="Upper clamp of the action log-std.")
    log_std_mode: Literal["global", "state"] = Field(
        default="global",
        description="Action log-std: one learned vector for every state (global), or that vector "
        "lowered per state by a learned gate on the core features, std = global std x sigmoid(linear) "
        "(state; starts at 0.95 of the global std).",
    )
    action_chunk: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Actions per prediction H: besides the current mean action the actor head predicts "
        "the mean actions of the next H-1 ticks (real-time chunked inference); 1: today's policy.",
    )
    action_chunk_mode: Literal["absolute", "relative", "smooth"] = Field(
        default="relative",
        description="What the chunk head outputs (action_chunk > 1): the later mean actions themselves "
        "(absolute), or their change from the current mean (relative: entry k = mean + delta_k, so a "
        "chunk starts at holding the current action and only learns how it will change; smooth: the "
        "same with delta_k = s v + s^2 c, s = k / (H-1), two learned coefficients per component shared "
        "by every entry).",
    )
    action_squash: ActionSquash = Field(
        default="clip",
        description="How a raw Gaussian action becomes the physics action in [-1, 1]: clip (clamp; a "
        "mean beyond the range costs nothing) or tanh (squash, with the change-of-variables "
        "log-probability; the deployed action is tanh(mean)).",
    )
    memory_input: bool = Field(
        default=False,
        description="Feed the episodic memory's loop score of each observation (how much it looks like "
        "a place seen earlier this episode) into the temporal core, so the policy can tell a new place "
        "from a revisit; off: the memory only feeds the shaper's loop penalty.",
    )
    previous_action_input: bool = Field(
        default=False,
        description="Feed the executed action of the previous step (0 at an episode start) into the "
        "temporal core, so the recurrent state can integrate the drone's own motion; the action is "
        "carried in the recurrent state, so every acting path and PPO's replay see it unchanged.",
    )
    visit_input: bool = Field(
        default=True,
        description="Feed the visit memory's features (visits.source; by default how near the "
        "frontiers of the drone's own map of its depth rays lie in each direction sector around its "
        "pose) into the temporal core, so the policy can head for unexplored space; acting needs the "
        "drones' poses.",
    )
    visit_prediction: bool = Field(
        default=False,
        description="Train an auxiliary head to predict the visit memory's features (where around it "
        "the drone has been this episode) from the temporal core's output (ppo.visit_prediction_coef, "
        "bc.visit_prediction_coef), so the recurrent state must carry a map of the episode; acting "
        "does not read the memory and needs no poses.",
    )
    visits: VisitMemoryConfig = Field(
        default_factory=VisitMemoryConfig,
        description="The visit memory the policy reads (visit_input) or predicts (visit_prediction).",
    )
    memory: EpisodicMemoryConfig = Field(
        default_factory=EpisodicMemoryConfig,
        description="The episodic memory the policy reads when memory_input is on (the trainer copies "
        "shaping.memory here, so the checkpoint carries the memory it was trained with).",
    )
    value_head_init: Literal["orthogonal", "zero"] = Field(
        default="orthogonal", description="Critic output layer initialisation (zero: V = 0 everywhere)."
    )

    patch_size: int = Field(default=8, gt=0, description="rayvit: square patch size in bins.")
    vit_dim: int = Field(default=64, gt=0, description="rayvit: transformer token width (multiple of 4).")
    vit_layers: int = Field(default=1, gt=0, description="rayvit: transformer layers.")
    vit_heads: int = Field(default=4, gt=0, description="rayvit: attention heads.")
    vit_mlp_ratio: int = Field(default=2, gt=0, description="rayvit: MLP hidden width / token width.")
    vit_readout: VitReadout = Field(
        default="sectors",
        description="rayvit: what the embedding is read from: cls (a learned [CLS] token) or sectors (the "
        "patch tokens averaged over 8 azimuth sectors x 2 elevation bands, as the spherical CNN pools).",
    )
    cnn_width: int = Field(default=32, gt=0, description="spherical_cnn: stem channels (doubles twice).")

    ssm_state: int = Field(default=16, gt=0, description="mamba cores: SSM state size N.")
    ssm_expand: int = Field(default=2, gt=0, description="mamba cores: inner width / embed_dim.")
    ssm_head_dim: int = Field(default=32, gt=0, description="mamba2: channels per SSD head.")
    ssm_conv_kernel: int = Field(default=4, ge=2, description="mamba cores: causal conv kernel length.")
    ssm_chunk: int = Field(default=16, gt=0, description="mamba2: chunk length of the SSD scan.")

    @field_validator("encoder_backend", mode="before")
    @classmethod
    def _known_encoder(cls, value: Any) -> Any:
        return _check_choice("encoder_backend", value, ENCODER_BACKENDS)

    @field_validator("temporal_core", mode="before")
    @classmethod
    def _known_core(cls, value: Any) -> Any:
        return _check_choice("temporal_core", value, TEMPORAL_CORES)

    @model_validator(mode="after")
    def _check_shapes(self) -> PolicyConfig:
        if self.log_std_min >= self.log_std_max:
            raise ValueError("log_std_min must be below log_std_max")
        if not self.log_std_min <= self.init_log_std <= self.log_std_max:
            raise ValueError("init_log_std must lie within [log_std_min, log_std_max]")
        if self.encoder_backend == "rayvit":
            if self.azimuth % self.patch_size or self.elevation % self.patch_size:
                raise ValueError(
                    f"rayvit needs azimuth ({self.azimuth}) and elevation ({self.elevation}) "
                    f"divisible by patch_size ({self.patch_size})"
                )
            if self.vit_dim % 4 or self.vit_dim % self.vit_heads:
                raise ValueError("vit_dim must be a multiple of 4 and of vit_heads")
        if self.encoder_backend == "spherical_cnn" and (self.azimuth % 16 or self.elevation % 4):
            raise ValueError(
                f"spherical_cnn needs azimuth ({self.azimuth}) divisible by 16 (its total stride, so "
                f"the azimuth wrap stays exact) and elevation ({self.elevation}) divisible by 4"
            )
        inner = self.ssm_expand * self.embed_dim
        if self.temporal_core == "mamba2" and inner % self.ssm_head_dim:
            raise ValueError(f"mamba2 needs ssm_expand*embed_dim ({inner}) divisible by ssm_head_dim")
        return self

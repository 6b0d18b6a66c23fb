"""NaviPolicy: encoder -> temporal core -> Gaussian actor and value heads.

Acting (:meth:`NaviPolicy.act`, one step, O(1) state) and learning
(:meth:`NaviPolicy.evaluate_sequences`, a window from its stored start state) run the same
function: stepping ``act`` T times gives the log-probabilities that ``evaluate_sequences`` returns,
so PPO ratios are exactly 1 before the first gradient step.

With ``memory_input`` the episodic memory's loop score of each observation (how much it resembles a
place seen earlier in the episode, :mod:`navi_actor.memory.episodic`) is added to the embedding
through a zero-initialised projection (of the score times :data:`MEMORY_INPUT_GAIN`) before the
temporal core: acting passes the drones' memory to :meth:`NaviPolicy.act`, which scores and
remembers each observation once; learning replays the scores stored at acting time
(``loop_scores``), as it replays the recurrent state.

With ``previous_action_input`` the executed action of the previous step (0 at an episode start)
enters the core the same way, so the recurrent state can integrate the drone's own motion. That
action is carried as the last ``action_dim`` entries of the recurrent state: every acting path
already carries the state and zeroes it at episode starts, and learning rebuilds the window's
previous actions from its stored start state and its own actions.

With ``visit_input`` the visit memory's features (where around it the drone has already been this
episode, :mod:`navi_actor.memory.visits`) enter the core the same way: the caller keeps the
drones' :class:`VisitMemory` (:meth:`NaviPolicy.new_visit_memory`), reads it with their poses and
passes ``visit_features`` to acting; learning replays the stored features, as for loop scores.

With ``visit_prediction`` the same features are targets instead of inputs: a linear head on the
core's output predicts them (``SequenceEval.visit_logits``), and PPO and cloning add that loss, so
the recurrent state must carry where the drone has been this episode. Acting never reads them: the
trainer keeps the memory only to record the rollout's targets.

Actions are raw Gaussian samples; :meth:`NaviPolicy.physics_action` turns them into what physics
executes for the configured ``action_squash`` (clip or tanh, :mod:`navi_actor.models.heads`), and the
log-probabilities are those of that executed action.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from navi_actor.memory.episodic import EpisodicMemory
from navi_actor.memory.frontiers import FrontierMemory, new_visit_reader
from navi_actor.memory.visits import VisitMemory
from navi_actor.models.config import PolicyConfig
from navi_actor.models.cores import build_core
from navi_actor.models.encoders import build_encoder
from navi_actor.models.heads import (
    GaussianActorHead,
    ValueHead,
    action_entropy,
    action_log_prob,
    physics_action,
    raw_action,
)
from navi_actor.models.mirror import mirror_action
from navi_actor.models.observation_scaling import scale_observation
from navi_actor.models.open_loop import lagged_distribution

#: The loop score enters the projection times this gain. Why: the projection starts at zero and Adam
#: moves each weight by about the learning rate per step whatever the gradient's size, so with the
#: raw score in [0, 1] two recipe runs of 206k steps (~1,600 optimiser steps) ended with weights of
#: at most 0.04 against embedding elements of unit scale (LayerNorm): the policy barely read its
#: memory. Times 8, the same steps can carry a revisit to the embedding's scale.
MEMORY_INPUT_GAIN = 8.0
#: The visit features enter their zero-initialised projection times this gain, for the same reason
#: (features in [0, 1), several per step).
VISIT_INPUT_GAIN = 4.0


@dataclass(frozen=True)
class ActOutput:
    """Result of one acting step (B drones)."""

    action: torch.Tensor  #: [B, A] raw sample (or mean if deterministic); physics_action before physics
    log_prob: torch.Tensor  #: [B] log-probability of the executed action (Jacobian included for tanh)
    value: torch.Tensor  #: [B] state value
    state: torch.Tensor  #: [B, S] recurrent state after this step
    embedding: torch.Tensor  #: [B, embed_dim] encoder output (for RND / episodic memory)
    action_mean: torch.Tensor  #: [B, A] Gaussian mean (raw)
    #: [B, H, A] raw mean actions for this tick and the next H-1 (``[:, 0]`` is ``action_mean``);
    #: None if H = 1
    action_chunk: torch.Tensor | None = None
    action_log_std: torch.Tensor | None = None  #: [B, A] the Gaussian's log-std (open-loop rollouts)
    loop_score: torch.Tensor | None = None  #: [B] episodic loop score fed to the core (memory_input)
    #: [B, F] visit features fed to the core (visit_input) or kept as targets (visit_prediction)
    visit_features: torch.Tensor | None = None


@dataclass(frozen=True)
class SequenceEval:
    """Re-evaluation of a rollout window ([T, B])."""

    log_prob: torch.Tensor  #: [T, B] log-probabilities of the given (raw) actions' executed actions
    entropy: torch.Tensor  #: [T, B] policy entropy (heads.action_entropy)
    value: torch.Tensor  #: [T, B] state values
    action_mean: torch.Tensor  #: [T, B, A] raw Gaussian means (behaviour cloning)
    embedding: torch.Tensor  #: [T, B, embed_dim] encoder outputs
    final_state: torch.Tensor  #: [B, S] state after the last step
    later_means: torch.Tensor | None = None  #: [T, B, H-1, A] predicted later mean actions; None if H = 1
    #: [T, B, F] logits of the predicted visit features (policy.visit_prediction); None without
    visit_logits: torch.Tensor | None = None


class NaviPolicy(nn.Module):
    """The drone policy: one topology with selectable encoder and temporal core."""

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = build_encoder(cfg)
        self.core = build_core(cfg)
        self.actor = GaussianActorHead(
            cfg.embed_dim,
            cfg.action_dim,
            cfg.init_log_std,
            (cfg.log_std_min, cfg.log_std_max),
            # the setting is the executed forward action: a tanh policy starts at its atanh
            init_forward_mean=float(raw_action(torch.tensor(cfg.init_forward_mean), cfg.action_squash)),
            state_dependent_std=cfg.log_std_mode == "state",
            action_chunk=cfg.action_chunk,
            chunk_mode=cfg.action_chunk_mode,
        )
        self.critic = ValueHead(cfg.embed_dim, zero_init=cfg.value_head_init == "zero")
        self.memory_projection: nn.Linear | None = None
        if cfg.memory_input:
            # zero at the start: a memory-reading policy begins as the same function as one without
            self.memory_projection = nn.Linear(1, cfg.embed_dim, bias=False)
            nn.init.zeros_(self.memory_projection.weight)
        self.action_projection: nn.Linear | None = None
        if cfg.previous_action_input:
            # zero at the start, as the memory's: a new policy is the same function as one without
            self.action_projection = nn.Linear(cfg.action_dim, cfg.embed_dim, bias=False)
            nn.init.zeros_(self.action_projection.weight)
        self.visit_projection: nn.Linear | None = None
        if cfg.visit_input:
            self.visit_projection = nn.Linear(cfg.visits.features, cfg.embed_dim, bias=False)
            nn.init.zeros_(self.visit_projection.weight)
        self.visit_head: nn.Linear | None = None
        if cfg.visit_prediction:
            # linear: the core's output itself must hold where the drone has been, not a deeper head
            self.visit_head = nn.Linear(cfg.embed_dim, cfg.visits.features)
        self._obs_shape = (cfg.in_channels, cfg.azimuth, cfg.elevation)

    @property
    def action_squash(self) -> str:
        """``clip`` or ``tanh``: how raw actions become physics actions (the evaluator reads it)."""
        return self.cfg.action_squash

    def physics_action(self, raw: torch.Tensor) -> torch.Tensor:
        """The physics action in [-1, 1] for raw actions ``[..., A]`` (samples, means or chunks)."""
        return physics_action(raw, self.cfg.action_squash)

    @property
    def state_size(self) -> int:
        """Size S of the flattened recurrent state (the core's, then the previous action if read)."""
        return self.core.state_size + (self.cfg.action_dim if self.cfg.previous_action_input else 0)

    @property
    def keeps_visit_features(self) -> bool:
        """Whether rollouts of this policy record the visit features (read: visit_input; predicted:
        visit_prediction)."""
        return self.cfg.visit_input or self.cfg.visit_prediction

    def new_visit_memory(
        self, batch_size: int, device: torch.device | str | None = None
    ) -> VisitMemory | FrontierMemory | None:
        """Empty visit memory (``visits.source``: past positions or the frontier map) of ``batch_size``
        drones for the ``visit_features`` of :meth:`act` (None without visit_input)."""
        if not self.cfg.visit_input:
            return None
        if device is None:
            device = next(self.parameters()).device
        return new_visit_reader(self.cfg.visits, batch_size, self.cfg.azimuth, self.cfg.elevation, device)

    def _split_state(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``state [B, S]`` -> the core's state and the previous executed action ``[B, A]`` (or None)."""
        if self.action_projection is None:
            return state, None
        return state[:, : self.core.state_size], state[:, self.core.state_size :]

    def _join_state(self, core_state: torch.Tensor, raw: torch.Tensor) -> torch.Tensor:
        """The recurrent state after a step whose raw action was ``raw [B, A]``."""
        if self.action_projection is None:
            return core_state
        return torch.cat([core_state, self.physics_action(raw).to(core_state.dtype)], dim=-1)

    def with_executed_action(self, state: torch.Tensor, raw: torch.Tensor) -> torch.Tensor:
        """``state [B, S]`` (from :meth:`act`) holding ``raw [B, A]`` as the step's executed action.

        Why: an open-loop rollout may execute a chunk entry instead of the action ``act`` drew; the
        next step must read what was executed, as learning does from the stored actions.
        """
        core_state, _ = self._split_state(state)
        return self._join_state(core_state, raw)

    def mirror_state(self, state: torch.Tensor) -> torch.Tensor:
        """``state [B, S]`` of the mirrored drone: its previous action mirrored (the core's is kept)."""
        core_state, previous = self._split_state(state)
        if previous is None:
            return state
        return torch.cat([core_state, mirror_action(previous)], dim=-1)

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Zero recurrent state ``[batch_size, S]`` on ``device`` (default: the policy's device)."""
        if device is None:
            device = next(self.parameters()).device
        return torch.zeros(batch_size, self.state_size, device=device)

    def new_memory(self, batch_size: int, device: torch.device | str | None = None) -> EpisodicMemory | None:
        """Empty episodic memory of ``batch_size`` drones for :meth:`act` (None without memory_input)."""
        if not self.cfg.memory_input:
            return None
        if device is None:
            device = next(self.parameters()).device
        return EpisodicMemory(self.cfg.memory, batch_size, self.cfg.embed_dim, device)

    def _core_input(
        self,
        embedding: torch.Tensor,
        loop_score: torch.Tensor | None,
        previous: torch.Tensor | None,
        visit_features: torch.Tensor | None,
    ) -> torch.Tensor:
        """The core input: ``embedding [..., D]`` plus the projected loop score, previous action and
        visit features (each only where the config reads it)."""
        if self.action_projection is not None:
            assert previous is not None
            embedding = embedding + self.action_projection(previous.to(embedding.dtype))
        if self.visit_projection is not None:
            if visit_features is None:
                raise ValueError(
                    "this policy reads its visit memory (policy.visit_input): pass visit_features= "
                    "(policy.new_visit_memory read with the drones' poses) to act, value and "
                    "evaluate_sequences"
                )
            self._check_shape(
                "visit features", visit_features, (*embedding.shape[:-1], self.cfg.visits.features)
            )
            embedding = embedding + self.visit_projection(
                VISIT_INPUT_GAIN * visit_features.to(embedding.dtype)
            )
        return self._with_memory(embedding, loop_score)

    def _with_memory(self, embedding: torch.Tensor, loop_score: torch.Tensor | None) -> torch.Tensor:
        """``embedding [..., D]`` plus the projected ``loop_score [...]`` (memory_input)."""
        if self.memory_projection is None:
            return embedding
        if loop_score is None:
            raise ValueError(
                "this policy reads its episodic memory (policy.memory_input): pass memory= to act "
                "(policy.new_memory) and loop_scores= to evaluate_sequences"
            )
        self._check_shape("loop scores", loop_score, tuple(embedding.shape[:-1]))
        score = MEMORY_INPUT_GAIN * loop_score.to(embedding.dtype).unsqueeze(-1)
        return embedding + self.memory_projection(score)

    def _check_obs(self, obs: torch.Tensor, leading: int) -> None:
        if obs.dim() != leading + 3 or tuple(obs.shape[leading:]) != self._obs_shape:
            raise ValueError(
                f"observation shape {tuple(obs.shape)} does not match {leading} batch axes "
                f"followed by {self._obs_shape} (channels, azimuth, elevation)"
            )

    def _check_shape(self, name: str, tensor: torch.Tensor, expected: tuple[int, ...]) -> None:
        if tuple(tensor.shape) != expected:
            raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {expected}")

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """Encode observations ``[B, C, Az, El]`` into embeddings ``[B, embed_dim]``."""
        self._check_obs(obs, 1)
        return self.encoder(scale_observation(obs, self.cfg.input_transform))

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        state: torch.Tensor,
        episode_start: torch.Tensor,
        deterministic: bool = False,
        *,
        memory: EpisodicMemory | None = None,
        visit_features: torch.Tensor | None = None,
    ) -> ActOutput:
        """Choose actions for one step (no gradients).

        Args:
            obs: ``[B, C, Az, El]`` observations.
            state: ``[B, S]`` recurrent state from the previous step.
            episode_start: ``[B]`` bool; True rows start a new episode (state zeroed first).
            deterministic: Return the Gaussian mean instead of a sample.
            memory: the drones' episodic memory (:meth:`new_memory`), required with memory_input:
                this step's observation is scored against it and then remembered.
            visit_features: ``[B, F]`` the drones' visit features at this step
                (:meth:`VisitMemory.observe` with their poses), required with visit_input; with
                visit_prediction only passed on (``ActOutput.visit_features``: the rollout's targets).

        Returns:
            :class:`ActOutput` with raw actions (:meth:`physics_action` maps them for physics).
        """
        embedding = self.encode(obs)
        batch = obs.shape[0]
        self._check_shape("state", state, (batch, self.state_size))
        self._check_shape("episode_start", episode_start, (batch,))
        state = state * (~episode_start.bool()).to(state.dtype)[:, None]
        loop_score = None
        if self.cfg.memory_input and memory is not None:
            loop_score = memory.observe(embedding, episode_start)
        core_state, previous = self._split_state(state)
        core_input = self._core_input(embedding, loop_score, previous, visit_features)
        features, new_state = self.core.step(core_input, core_state)
        mean, log_std = self.actor(features)
        action = mean if deterministic else mean + torch.exp(log_std) * torch.randn_like(mean)
        new_state = self._join_state(new_state, action)
        later = self.actor.later_means(features, mean)
        return ActOutput(
            action=action,
            log_prob=action_log_prob(action, mean, log_std, self.cfg.action_squash),
            value=self.critic(features),
            state=new_state,
            embedding=embedding,
            action_mean=mean,
            action_chunk=None if later is None else torch.cat([mean[:, None], later], dim=1),
            action_log_std=log_std,
            loop_score=loop_score,
            visit_features=visit_features if self.keeps_visit_features else None,
        )

    def evaluate_sequences(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        state0: torch.Tensor,
        episode_starts: torch.Tensor,
        lags: torch.Tensor | None = None,
        *,
        loop_scores: torch.Tensor | None = None,
        visit_features: torch.Tensor | None = None,
        noise_log_scales: torch.Tensor | None = None,
    ) -> SequenceEval:
        """Re-evaluate a rollout window from the state stored at its start (with gradients).

        Args:
            obs: ``[T, B, C, Az, El]`` observations.
            actions: ``[T, B, A]`` raw actions that were taken.
            state0: ``[B, S]`` recurrent state before step 0 (as stored by the rollout).
            episode_starts: ``[T, B]`` bool; True where the state is zeroed before that step.
            lags: ``[T, B]`` long, the chunk entry each action was drawn from (open-loop rollouts,
                :mod:`navi_actor.models.open_loop`); None or all 0: every tick's own distribution.
            loop_scores: ``[T, B]`` episodic loop scores recorded at acting time (``ActOutput.loop_score``);
                required with memory_input, ignored without.
            visit_features: ``[T, B, F]`` visit features recorded at acting time
                (``ActOutput.visit_features``); required with visit_input, ignored without.
            noise_log_scales: ``[T, B]`` log of the share of the std each action was drawn with
                (quiet drones, :mod:`navi_actor.models.quiet_drones`); the log-probabilities are those
                of that narrower Gaussian, the entropies the policy's own. None: 0 everywhere.

        Returns:
            :class:`SequenceEval` with ``[T, B]`` log-probabilities, entropies and values.
        """
        self._check_obs(obs, 2)
        T, B = obs.shape[:2]
        self._check_shape("actions", actions, (T, B, self.cfg.action_dim))
        self._check_shape("state0", state0, (B, self.state_size))
        self._check_shape("episode_starts", episode_starts, (T, B))
        episode_starts = episode_starts.bool()
        scaled = scale_observation(obs.flatten(0, 1), self.cfg.input_transform)
        embedding = self.encoder(scaled).unflatten(0, (T, B))  # [T*B, D] -> [T, B, D]
        core_state0, previous0 = self._split_state(state0)
        previous = None
        if previous0 is not None:  # step t read the action executed at t-1, 0 after an episode start
            executed = self.physics_action(actions).to(embedding.dtype)
            previous = torch.cat([previous0[None].to(embedding.dtype), executed[:-1]], dim=0)
            previous = previous * (~episode_starts).to(previous.dtype)[..., None]
        loop_scores = loop_scores if self.cfg.memory_input else None
        core_input = self._core_input(embedding, loop_scores, previous, visit_features)
        features, final_state = self.core.sequence(core_input, core_state0, episode_starts)
        final_state = self._join_state(final_state, actions[-1])
        mean, log_std = self.actor(features)
        later = self.actor.later_means(features, mean)
        drawn_mean, drawn_log_std = mean, log_std
        if lags is not None and later is not None:
            self._check_shape("lags", lags, (T, B))
            chunk = torch.cat([mean.unsqueeze(2), later], dim=2)  # [T, B, H, A]
            drawn_mean, drawn_log_std = lagged_distribution(chunk, log_std, lags.long())
        elif lags is not None and bool(lags.any()):
            raise ValueError("lagged actions need a chunk head (policy.action_chunk >= 2)")
        sampled_log_std = drawn_log_std
        if noise_log_scales is not None:
            self._check_shape("noise_log_scales", noise_log_scales, (T, B))
            sampled_log_std = drawn_log_std + noise_log_scales[..., None]
        return SequenceEval(
            log_prob=action_log_prob(actions, drawn_mean, sampled_log_std, self.cfg.action_squash),
            entropy=action_entropy(actions, drawn_mean, drawn_log_std, self.cfg.action_squash),
            value=self.critic(features),
            action_mean=mean,
            embedding=embedding,
            final_state=final_state,
            later_means=later,
            visit_logits=None if self.visit_head is None else self.visit_head(features),
        )

    @torch.no_grad()
    def value(
        self,
        obs: torch.Tensor,
        state: torch.Tensor,
        episode_start: torch.Tensor,
        memory: EpisodicMemory | None = None,
        visit_features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Bootstrap value ``[B]`` for ``obs [B, C, Az, El]`` after ``state [B, S]`` (no gradients).

        With memory_input, ``obs`` is scored against ``memory`` without being remembered
        (:meth:`EpisodicMemory.peek`): the step that acts on it later scores and remembers it.
        With visit_input, ``visit_features [B, F]`` are those of ``obs``'s pose (:meth:`VisitMemory.peek`).
        """
        embedding = self.encode(obs)
        self._check_shape("state", state, (obs.shape[0], self.state_size))
        self._check_shape("episode_start", episode_start, (obs.shape[0],))
        state = state * (~episode_start.bool()).to(state.dtype)[:, None]
        loop_score = None
        if self.cfg.memory_input and memory is not None:
            loop_score = memory.peek(embedding, episode_start)
        core_state, previous = self._split_state(state)
        core_input = self._core_input(embedding, loop_score, previous, visit_features)
        features, _ = self.core.step(core_input, core_state)
        return self.critic(features)

"""Open-loop chunk entries during PPO rollouts: the policy acts, some ticks, as a real-time brain does.

A real-time brain (issue 20) executes chunk entry ``k`` of the chunk it computed ``k`` ticks ago,
never the fresh mean. Trained only as an auxiliary regression of the policy's own later means, the
chunk head learns the average of what the policy may do next: shrunk toward the average where the
future is uncertain (on a 12-minute policy the yaw entries 2-6 ticks ahead had 0.5-0.8x the spread of
the yaw the policy then chose), which is the best squared error and not the best open-loop flight.

So PPO may execute chunk entries itself. At tick ``t`` a drone with *lag* ``j > 0`` executes a sample
of ``N(chunk_{t-j}[j], std_{t-j})``: the entry ``j`` of the chunk its policy output ``j`` ticks ago,
with that tick's noise. That is still a policy, one that decides ``j`` ticks ahead from the history
it had then (a recurrent policy may ignore its latest observations), so PPO's maths holds unchanged
when the log-probability of each executed action is taken under the distribution it was drawn from:
at collection (:class:`OpenLoopSchedule`) and, with gradients, when the learner re-evaluates the
window (:func:`lagged_distribution`). The reward then trains the chunk entries for what they do when
executed open loop. Lags restart at 0 (a fresh closed-loop action) at every episode start and every
training-sequence start, so the source tick is always in the same episode and the same window.

Which ticks are open loop: at a closed-loop tick a drone starts, with probability ``fraction``, a
segment that executes entries ``1 .. g`` of this tick's chunk on the next ``g`` ticks, ``g`` uniform in
``1 .. H-1``, then acts closed loop again.
"""

from __future__ import annotations

import torch

from navi_actor.models.heads import action_log_prob


def lagged_distribution(
    chunk_means: torch.Tensor, log_std: torch.Tensor, lags: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean and log-std each tick's action was drawn from: entry ``lag`` of the chunk ``lag`` ticks ago.

    Args:
        chunk_means: ``[T, B, H, A]`` raw means of every tick's chunk (entry 0: the tick's mean).
        log_std: ``[T, B, A]`` every tick's log-std.
        lags: ``[T, B]`` long, ``0 <= lags[t] <= t`` and ``< H`` (0: the tick's own distribution).

    Returns:
        ``([T, B, A], [T, B, A])`` means and log-stds (gathered, gradients flow to the sources).

    Raises:
        ValueError: a lag reaches before the window or beyond the chunk.
    """
    T, B, H = chunk_means.shape[:3]
    steps = torch.arange(T, device=lags.device)[:, None]
    if lags.shape != (T, B) or bool((lags < 0).any() | (lags >= H).any() | (lags > steps).any()):
        raise ValueError(f"lags must be [T, B] = [{T}, {B}] within 0 .. min(t, H-1) = {H - 1}")
    source = steps - lags  # [T, B]
    drones = torch.arange(B, device=lags.device)[None, :].expand(T, B)
    return chunk_means[source, drones, lags], log_std[source, drones]


class OpenLoopSchedule:
    """Per-drone lags of one collector: which ticks execute a chunk entry instead of a fresh action.

    Args:
        num_drones: B.
        horizon: the policy's H (chunk entries ``0 .. H-1``).
        fraction: probability that a closed-loop tick starts an open-loop segment.
        sequence_length: the learner's window length L (lags restart at every window start).
        squash: the policy's ``action_squash`` (log-probabilities of the executed action).
        device: where the state lives.
        generator: random draws (segments and noise); None: torch's global generator.
    """

    def __init__(
        self,
        num_drones: int,
        horizon: int,
        *,
        fraction: float,
        sequence_length: int,
        squash: str,
        device: torch.device,
        generator: torch.Generator | None = None,
    ) -> None:
        if horizon < 2:
            raise ValueError(f"open-loop rollouts need a chunk head (action_chunk >= 2), got H = {horizon}")
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"the open-loop fraction must be in [0, 1], got {fraction}")
        self.horizon, self.fraction, self.length, self.squash = horizon, fraction, sequence_length, squash
        self.device, self.generator = device, generator
        self.lag = torch.zeros(num_drones, dtype=torch.long, device=device)
        self.segment_end = torch.zeros(num_drones, dtype=torch.long, device=device)
        self.source_means: torch.Tensor | None = None  # [B, H, A] the chunk being executed
        self.source_log_std: torch.Tensor | None = None  # [B, A]

    def step(
        self,
        step: int,
        *,
        episode_start: torch.Tensor,
        action: torch.Tensor,
        log_prob: torch.Tensor,
        chunk_means: torch.Tensor,
        log_std: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """This tick's executed raw action, its log-probability and lag ``([B, A], [B], [B] long)``.

        Args:
            step: the rollout step (its position in the learner's window is ``step % L``).
            episode_start: ``[B]`` bool, this tick starts an episode.
            action: ``[B, A]`` the fresh sample of this tick (executed at lag 0).
            log_prob: ``[B]`` its log-probability.
            chunk_means: ``[B, H, A]`` this tick's raw chunk means.
            log_std: ``[B, A]`` this tick's log-std.
        """
        B = action.shape[0]
        window_start = step % self.length == 0
        lag = self.lag + 1
        go_on = (self.lag > 0) | (self.segment_end > 0)  # inside a segment (its source tick included)
        go_on = go_on & (lag <= self.segment_end) & ~episode_start.bool() & (not window_start)
        lag = torch.where(go_on, lag, torch.zeros_like(lag))
        fresh = lag == 0
        if self.source_means is None or self.source_log_std is None:
            self.source_means, self.source_log_std = chunk_means.clone(), log_std.clone()
        self.source_means = torch.where(fresh[:, None, None], chunk_means, self.source_means)
        self.source_log_std = torch.where(fresh[:, None], log_std, self.source_log_std)
        draw = torch.rand(B, device=self.device, generator=self.generator)
        length = torch.randint(1, self.horizon, (B,), device=self.device, generator=self.generator)
        started = fresh & (draw < self.fraction)
        self.segment_end = torch.where(fresh, torch.where(started, length, 0), self.segment_end)
        rows = torch.arange(B, device=self.device)
        mean = self.source_means[rows, lag]
        noise = torch.randn(action.shape, device=self.device, generator=self.generator)
        lagged = mean + torch.exp(self.source_log_std) * noise
        lagged_log_prob = action_log_prob(lagged, mean, self.source_log_std, self.squash)
        self.lag = lag
        executed = torch.where(fresh[:, None], action, lagged)
        return executed, torch.where(fresh, log_prob, lagged_log_prob), lag

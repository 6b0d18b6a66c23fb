"""The real-time brain's arithmetic replayed tick by tick in one process: deterministic delayed flight.

``navi-actor serve --inference realtime`` answers an observation some ticks after it was taken, and the
environment goes on meanwhile. Wall-clock runs of the real processes (``scripts/bench_realtime.py``)
are what users get, but their timing varies from run to run. :class:`DelayedBrain` replays the same
arithmetic without clocks: it consumes the observation before tick ``t`` every ``interval`` ticks (its
recurrent state stepped only on those, as the real-time brain's), and its answer takes effect
``delay`` ticks later; until then the previous answer goes on. Variants:

- ``hold``: the answer is the mean action, held until the next answer (sequential inference against a
  real-time world);
- ``chunks``: chunk entry ``tau - t`` at tick ``tau`` (the real-time brain without blending);
- ``chunks_blend``: the same, blended into the schedule in force over ``blend_ticks`` ticks (default:
  the delay) with :func:`navi_actor.service.chunk_schedule.blend_weights`, the brain's blending.

``delay = 0`` is closed loop (a fresh mean every tick). Users: ``scripts/bench_delayed_flight.py``
(delayed flight measured) and :mod:`navi_actor.bc.delayed_corrections` (delayed flight relabelled by
the frontier planner).
"""

from __future__ import annotations

from typing import Any

import torch

from navi_actor.inference.stepper import MISSING_POSES
from navi_actor.service.chunk_schedule import blend_weights

VARIANTS = ("hold", "chunks", "chunks_blend")


def delayed_actions(chunk: torch.Tensor, answered: int, tick: int, variant: str) -> torch.Tensor:
    """The action ``[B, A]`` a schedule from the chunk ``[B, H, A]`` for ``answered`` executes at ``tick``."""
    if variant == "hold":
        return chunk[:, 0]
    return chunk[:, min(tick - answered, chunk.shape[1] - 1)]


class DelayedBrain:
    """A policy with a chunk head, answering ``delay`` ticks late; :meth:`action` gives each tick's action."""

    def __init__(
        self, policy: Any, drones: int, *, delay: int, variant: str, blend_ticks: int | None = None
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        if delay < 0:
            raise ValueError(f"delay must be >= 0 ticks, got {delay}")
        self.policy, self.delay, self.variant = policy, delay, variant
        self.interval = max(1, delay)
        self.span = max(1, delay if blend_ticks is None else blend_ticks)  # blended ticks after a new chunk
        self.state = policy.initial_state(drones)  # on the policy's device, as every tensor below
        self.start = torch.ones(drones, dtype=torch.bool, device=self.state.device)
        memory = policy.new_memory(drones, self.state.device) if hasattr(policy, "new_memory") else None
        self.act_options: dict[str, Any] = {} if memory is None else {"memory": memory}  # memory_input
        reads_visits = hasattr(policy, "new_visit_memory")
        self.visits = policy.new_visit_memory(drones, self.state.device) if reads_visits else None
        self.current: tuple[torch.Tensor, int] | None = None  # (chunk, answered tick) in force
        self.pending: list[tuple[int, torch.Tensor, int]] = []  # (effective tick, chunk, answered tick)
        self.blend_from: tuple[torch.Tensor, int, int] | None = None  # old schedule, its tick, blend start

    def action(
        self, tick: int, obs: torch.Tensor, poses: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> torch.Tensor:
        """The physics action ``[B, A]`` executed at ``tick``; ``obs`` is the observation before it,
        ``poses`` the drones' ``(position [B, 3], yaw [B])`` then (needed by a policy that reads its
        visit memory, which folds in the observations the brain consumes, as the real-time brain's).

        Ticks must be called in order from 0. The first answer takes effect at once (nothing is
        scheduled before it), as the brain's first chunk does.
        """
        if tick % self.interval == 0:
            options = dict(self.act_options)
            if self.visits is not None:
                if poses is None:
                    raise ValueError(MISSING_POSES)
                options["visit_features"] = self.visits.observe(*poses, self.start, obs)
            acted = self.policy.act(obs, self.state, self.start, deterministic=True, **options)
            self.state, self.start = acted.state, torch.zeros_like(self.start)
            chunk = acted.action_chunk if acted.action_chunk is not None else acted.action.unsqueeze(1)
            self.pending.append((tick + self.delay, self.policy.physics_action(chunk), tick))
        while self.pending and (self.pending[0][0] <= tick or self.current is None):
            _, chunk, answered = self.pending.pop(0)
            if self.current is not None and self.variant == "chunks_blend":
                self.blend_from = (self.current[0], self.current[1], tick)
            self.current = (chunk, answered)
        assert self.current is not None
        action = delayed_actions(self.current[0], self.current[1], tick, self.variant)
        if self.blend_from is not None and tick - self.blend_from[2] < self.span:
            j, weights = tick - self.blend_from[2], blend_weights(self.span, action.device)
            old = delayed_actions(self.blend_from[0], self.blend_from[1], tick, self.variant)
            action = weights[j] * old + (1.0 - weights[j]) * action
        return action

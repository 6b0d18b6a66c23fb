"""DAgger during PPO: the policy's own mean-action flights, labelled by the frontier planner.

Why: the deployed policy acts with its mean action, and the mean action of a PPO policy circles its
first room where the sampled policy's noise carries it through the doorways
(docs/experiments/2026-12-self-imitation.md). Every loss on the rollout teaches the mean in the
states the NOISY policy visits; the states the mean reaches by itself (its orbit) are seen only
through the noise around them. Here the policy flies those states: every ``ppo.dagger_every_steps``
it flies ``ppo.dagger_steps`` over the training scenes with its mean action while the frontier planner
(as :data:`LABELLER`: at the drone's height, replanning every step) maps the same observations from
the same poses (:func:`~navi_actor.bc.frontier_recording.record_frontier`
with a pilot), and the planner's action at every step becomes that frame's label. PPO's minibatches
then add the squared error between the mean action and those labels on windows of all flights so far
(DAgger's aggregated data set), weighted by ``ppo.dagger_coef``.

The flights are demonstration files under ``<run>/dagger/`` (``ppo<k>-r<round>-d<drone>-<scene>.npz``,
metadata ``labels: "frontier_on_pilot_flight"``), so ``navi-auditor demo-info`` reads them. A resumed
run starts a new folder: the term restarts with the resumed run's first flight.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from navi_actor.bc.dataset import DemoData, find_demonstration_files, load_demonstrations
from navi_actor.bc.frontier_recording import Recording, record_frontier
from navi_actor.bc.visit_features import demo_visit_features
from navi_actor.models import NaviPolicy, raw_action

LABELLER = {"follow_height": True, "layers": False, "replan_steps": 1}
"""The labelling planner's tunables. Why: the planner as it flies holds the height its map started at,
maps no free space from outside that slab, and follows a path planned up to 5 steps earlier. On the
PPO policy's own mean-action flights (seeds 1 and 2, 40,960 steps into PPO) 62-86 % of its labels
had a vertical component of 0.2 or more ("climb back"), mostly with no forward part, and 58 % of the
others flew backwards (docs/experiments/2026-12-dagger-during-ppo.md). This labeller keeps its slab
at the drone's height and replans from the drone's pose every step (about 25 % more planner time)."""


class LabelledFlights:
    """The labelled mean-action flights of one run and the loss on random windows of them.

    Args:
        folder: where the flights' files go (created).
        window: frames scored per window (``rollout.sequence_length``); each window starts
            ``window // 2`` frames earlier with a fresh recurrent state (burn-in, not scored), so the
            scored frames see the history a flying policy would have had.
        streams: windows per loss (``ppo.dagger_streams``).
        device: where the windows are evaluated.
        seed: seeds the window draws (its own generator: PPO's minibatch shuffle is not disturbed).

    The flights' frames move to ``device`` once per flight (half-precision observations), so a
    minibatch's windows are gathered there without a host copy.
    """

    def __init__(self, folder: Path, *, window: int, streams: int, device: torch.device, seed: int) -> None:
        self.folder, self.window, self.burn_in = folder, window, window // 2
        self.streams, self.device = streams, device
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.data: DemoData | None = None
        self._frames: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None  # on ``device``
        self._visits: torch.Tensor | None = None
        self.rounds = 0

    def fly(self, env: Any, policy: NaviPolicy, steps: int, *, seed: int) -> Recording:
        """The policy flies ``steps`` over every scene of ``env`` with its mean action while the planner
        labels; the aggregated flights are reloaded. ``env`` is reset: its trainer restarts its drones.
        """
        self.rounds += 1
        policy.eval()
        prefix = f"ppo{self.rounds}"
        recording = record_frontier(
            env, steps, self.folder, seed=seed, pilot=policy, prefix=prefix, planner_options=LABELLER
        )
        self.data = data = load_demonstrations(find_demonstration_files(self.folder))
        device = self.device
        self._frames = (data.observations.to(device), data.actions.to(device), data.episode_starts.to(device))
        keeps = policy.keeps_visit_features
        self._visits = demo_visit_features(data, policy.cfg.visits).to(self.device) if keeps else None
        return recording

    def loss(self, policy: NaviPolicy) -> torch.Tensor:
        """Mean squared error between the raw mean action and the planner's label (in the policy's raw
        action space, as behaviour cloning fits it) on ``streams`` random windows; 0 before any flight.

        A window may cross an episode or file boundary: the recorded episode starts reset the
        recurrent state there, and the first frame of every window starts from a fresh state.
        """
        if self._frames is None:
            return torch.zeros((), device=self.device)
        observations, actions, starts = self._frames
        frames, device = int(actions.shape[0]), self.device
        length = min(self.window + self.burn_in, frames)
        first = torch.randint(
            0, frames - length + 1, (self.streams,), generator=self.generator, device=device
        )
        index = torch.arange(length, device=device)[:, None] + first[None, :]  # [L, S]
        resets = starts[index].clone()
        resets[0] = True
        targets = raw_action(actions[index], policy.action_squash)
        out = policy.evaluate_sequences(
            observations[index].float(),
            targets,
            policy.initial_state(self.streams, device),
            resets,
            loop_scores=torch.zeros(resets.shape, device=device),  # as cloning: memory is PPO's
            visit_features=None if self._visits is None else self._visits[index],
        )
        scored = slice(length - min(self.window, length), length)
        return (out.action_mean[scored] - targets[scored]).square().mean()

"""Collect-ahead: the in-process collector steps the next rollout while the learner updates.

Why: on 2 CPU cores the PPO update leaves a core partly idle (its kernels are small), and the
collector is mostly single-threaded simulator and Python work. Running the two at once on two
Python threads (torch and numba release the GIL in their kernels) fills that gap.

What changes for learning: each rollout is acted with the weights of one update earlier, the same
one-version lag as Ray's ``collect_ahead`` workers (``navi_actor.distributed``). The rollout is
tagged with that version (``RolloutStorage.acting_version``), and the learner replays it once under
its current weights and learns with decoupled PPO (``algorithms.losses.clipped_surrogate_loss``):
the clip and the KL early stop measure each update's own step, as in the serial trainer, and an
importance weight corrects for the older weights that acted. Advantages are recomputed with the
current discount (``rollout.gamma_final`` schedules) when a rollout is handed to the learner.

How it stays race-free: the collector acts with its own copy of the policy and of the reward
shaper (RND, episodic memory) and writes into its own storage. The copies are synchronised only at
the hand-over, when neither thread runs: the learner's new weights and RND predictor go to the
acting copies, the RND running statistics the collector updated come back to the learner (whose
checkpoint stores them), and the two storages swap. Sparse observation telemetry is sent from the
training thread (ZeroMQ sockets are not thread-safe). Random draws while acting come from torch's
global generator, which only the collector thread uses during training, so a run is reproducible
from its seed; a resumed run continues but not bit for bit (the checkpoint catches the generator
mid-rollout).
"""

from __future__ import annotations

import copy
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import torch

from navi_actor.runners.env_factory import BuiltEnvironment
from navi_actor.runners.rollout_collector import RolloutStats
from navi_actor.runners.rollout_source import LocalRollouts

if TYPE_CHECKING:
    from navi_actor.runners.on_policy_runner import OnPolicyRunner
    from navi_actor.runners.shaping_adapter import ShaperHook


class AheadRollouts(LocalRollouts):
    """:class:`LocalRollouts` whose collector runs one rollout ahead on a background thread.

    Args:
        built: the environment and its corpus summary.
    """

    def __init__(self, built: BuiltEnvironment) -> None:
        super().__init__(built)
        self._pool: ThreadPoolExecutor | None = None  # made at the first collect, shut at finish
        self._pending: Future[RolloutStats] | None = None
        self._latest_obs: torch.Tensor | None = None
        self._hook: ShaperHook | None = None  # the collector's reward shaper (set by start)

    def start(self, runner: OnPolicyRunner) -> None:
        self._runner = runner
        self._hook = hook = copy.deepcopy(runner.shaping.hook)  # its own RND copy and episodic memory
        acting = copy.deepcopy(runner.policy).requires_grad_(False)
        storage = self.new_storage(runner.state)  # the learner keeps runner.storage; they swap
        memory = hook.shaper.memory if hook is not None else None
        self.collector = self._collector(runner, acting, storage, hook, memory)

    def _on_step(self, obs: torch.Tensor) -> None:
        """Collector thread: remember the newest observation for :meth:`publish` (no socket here)."""
        self._latest_obs = obs

    def collect(self, gamma: float, gae_lambda: float) -> RolloutStats:
        """Hand over the rollout collected during the last update and start the next one.

        The first call collects twice (the rollout it returns, then the one ahead).
        """
        runner, collector = self._runner, self.collector
        assert runner is not None and collector is not None, "start() first"
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="navi-collect-ahead")
        if self._pending is None:
            self._submit(runner, gamma, gae_lambda)
        assert self._pending is not None
        stats = self._pending.result()  # re-raises what the collector thread raised
        self._pending = None
        filled, last_values = collector.storage, collector.last_values
        assert last_values is not None, "a finished collect leaves its bootstrap values"
        collector.storage, runner.storage = runner.storage, filled
        filled.compute_returns(last_values, gamma, gae_lambda)  # today's discount
        self._synchronise(runner)
        self._submit(runner, gamma, gae_lambda)
        return stats

    def _submit(self, runner: OnPolicyRunner, gamma: float, gae_lambda: float) -> None:
        """Start collecting the next rollout with the acting copy's weights, tagged with the learner
        update they come from (the learner replays older ones for decoupled PPO's proximal policy)."""
        assert self._pool is not None and self.collector is not None
        self.collector.storage.acting_version = runner.learner.update_index
        self._pending = self._pool.submit(self.collector.collect, gamma, gae_lambda)

    def _synchronise(self, runner: OnPolicyRunner) -> None:
        """Neither thread runs: the learner's weights to the acting copies, RND statistics back."""
        assert self.collector is not None
        self.collector.policy.load_state_dict(runner.policy.state_dict())
        if self._hook is not None and runner.shaping.hook is not None:
            acting, learning = self._hook.shaper.rnd, runner.shaping.hook.shaper.rnd
            acting.predictor.load_state_dict(learning.predictor.state_dict())
            learning.obs_stats.load_state_dict(acting.obs_stats.state_dict())
            learning.reward_stats.load_state_dict(acting.reward_stats.state_dict())

    def publish(self) -> None:
        """Send the newest observation the collector saw (the training thread owns the socket)."""
        runner, obs = self._runner, self._latest_obs
        if runner is not None and runner.telemetry is not None and obs is not None:
            runner.telemetry.maybe_publish_observation(obs, runner.counters.step_id)

    def manifest(self) -> dict[str, object]:
        return {"backend": self.backend, "collect_ahead": True}

    def settle(self) -> None:
        """Wait for the rollout in flight and keep it: the next :meth:`collect` hands it over at once
        and only then starts collecting again, so the simulator is free until that call."""
        if self._pending is not None:
            self._pending.exception()  # waits; an error is re-raised by collect's result()

    def finish(self) -> None:
        """Training stopped: wait for the rollout in flight (at most one rollout's time), drop it and
        stop the thread, so nothing steps the environment or draws random numbers after the final
        checkpoint. A later collect starts afresh."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.exception()  # waits; an error there no longer matters
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def close(self) -> None:
        """Nothing left once training has finished; the environment belongs to the caller."""
        self.finish()

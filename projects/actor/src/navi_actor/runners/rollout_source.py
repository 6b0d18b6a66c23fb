"""Where the training loop's rollouts come from: the in-process collector, or Ray rollout workers.

:class:`~navi_actor.runners.on_policy_runner.OnPolicyRunner` owns everything a run does once
(learner state, storage, run folder, the loop, checkpoints, the summary); a :class:`RolloutSource`
only fills the learner's storage with one rollout whose returns are computed, and says what it
adds to the manifest, the metrics and the summary. :class:`LocalRollouts` steps an environment in
this process; ``navi_actor.distributed.ray_source.RayRollouts`` lays fragments from Ray workers
into the storage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import torch

from navi_actor.runners.env_factory import BuiltEnvironment
from navi_actor.runners.rollout_collector import RewardShaping, RolloutCollector, RolloutStats
from navi_actor.storage import RolloutStorage

if TYPE_CHECKING:
    from navi_actor.memory.episodic import EpisodicMemory
    from navi_actor.models import NaviPolicy
    from navi_actor.runners.learner_state import LearnerState
    from navi_actor.runners.on_policy_runner import OnPolicyRunner


class RolloutSource(Protocol):
    """What the runner needs from a way of collecting rollouts.

    Attributes:
        observation_shape: ``(3, Az, El)`` of the environment.
        corpus_summary: what the environment simulates (stored in checkpoints).
        shaping_actors: drones the learner's reward shaper is sized for.
        columns: drones per update: the width of the learner's ``[T, columns]`` storage.
        backend: ``local`` or ``ray`` (manifest and log).
    """

    observation_shape: tuple[int, ...]
    corpus_summary: dict[str, Any]
    shaping_actors: int
    columns: int
    backend: str

    def new_storage(self, state: LearnerState) -> RolloutStorage:
        """The learner's rollout buffers (a data-parallel rank holds only its columns)."""
        ...

    def start(self, runner: OnPolicyRunner) -> None:
        """Attach to the runner's learner state and storage (called once, before the first collect)."""

    def collect(self, gamma: float, gae_lambda: float) -> RolloutStats:
        """Fill ``runner.storage`` with one rollout and compute its returns."""
        ...

    def before_update(self) -> None:
        """The learner is about to update (data-parallel ranks: share the time budget spent)."""

    def learned(self) -> None:
        """The learner finished an update (Ray: broadcast the new weights)."""

    def manifest(self) -> dict[str, Any]:
        """Extra fields for the run's manifest."""
        ...

    def record(self) -> dict[str, float]:
        """Extra metrics for the update just learned."""
        ...

    def publish(self) -> None:
        """Send this update's sparse live telemetry (an observation) if the source has one."""

    def counters(self) -> dict[str, int]:
        """Fault counts for the summary (empty for the in-process collector)."""
        ...

    def settle(self) -> None:
        """Something else is about to step the simulator (DAgger's labelled flights): wait until no
        collection runs; a rollout collected ahead is kept for the next :meth:`collect`."""

    def finish(self) -> None:
        """Training stopped: settle work started ahead of the learner before the final checkpoint."""

    def close(self) -> None:
        """Release what the source started."""


class LocalRollouts:
    """The in-process :class:`RolloutCollector` stepping one environment with the learner's policy.

    Args:
        built: the environment and its corpus summary.
    """

    backend = "local"

    def __init__(self, built: BuiltEnvironment) -> None:
        self.env, self.corpus_summary = built.env, built.corpus_summary
        self.observation_shape = tuple(self.env.observation_shape)
        self.shaping_actors = self.columns = self.env.num_actors
        self.collector: RolloutCollector | None = None
        self._runner: OnPolicyRunner | None = None

    def new_storage(self, state: LearnerState) -> RolloutStorage:
        return state.new_storage(self.observation_shape, self.columns)

    def start(self, runner: OnPolicyRunner) -> None:
        self._runner = runner
        self.collector = self._collector(
            runner, runner.policy, runner.storage, runner.shaping.reward, runner.shaping.memory
        )

    def _collector(
        self,
        runner: OnPolicyRunner,
        policy: NaviPolicy,
        storage: RolloutStorage,
        shaping: RewardShaping | None,
        memory: EpisodicMemory | None,
    ) -> RolloutCollector:
        """A collector stepping this environment with ``policy`` into ``storage``, as the run's
        rollout settings say."""
        chunked = policy.actor.chunk is not None
        rollout = runner.settings.rollout
        return RolloutCollector(
            self.env,
            policy,
            storage,
            shaping=shaping,
            seed=runner.settings.train.seed + runner.counters.step_id,
            on_step=self._on_step,
            open_loop_fraction=runner.settings.ppo.open_loop_fraction if chunked else 0.0,
            memory=memory,
            noise_correlation=rollout.noise_correlation,
            quiet_drones=rollout.quiet_drones,
            quiet_noise_scale=rollout.quiet_noise_scale,
        )

    def _on_step(self, obs: torch.Tensor) -> None:
        runner = self._runner
        if runner is not None and runner.telemetry is not None:
            runner.telemetry.maybe_publish_observation(obs, runner.counters.step_id)

    def collect(self, gamma: float, gae_lambda: float) -> RolloutStats:
        assert self.collector is not None, "start() first"
        return self.collector.collect(gamma, gae_lambda)

    def before_update(self) -> None:
        """One learner: nothing to share."""

    def learned(self) -> None:
        """Nothing to broadcast: the collector acts with the learner's own policy object."""

    def manifest(self) -> dict[str, Any]:
        return {"backend": self.backend}

    def record(self) -> dict[str, float]:
        return {}

    def publish(self) -> None:
        """Observations went out while stepping (``on_step``)."""

    def counters(self) -> dict[str, int]:
        return {}

    def settle(self) -> None:
        """Nothing runs between two collects."""

    def finish(self) -> None:
        """Nothing runs ahead: each rollout is collected when the learner asks for it."""

    def close(self) -> None:
        """The environment belongs to the caller."""

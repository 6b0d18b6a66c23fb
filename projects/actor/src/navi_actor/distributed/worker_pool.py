"""Ray actors that collect fragments: dispatch, staleness filter, crash recovery, hang detection.

Every worker has at most one ``collect`` call in flight. :meth:`WorkerPool.gather` waits (in
bounded ``ray.wait`` slices: nothing here waits forever) until ``count`` fresh fragments arrived:

* a fragment collected with weights more than ``max_staleness`` updates older than the learner's
  (or with another run's weights) is dropped and counted;
* a call that fails because its worker died starts a *recovery*: it is counted once as a restart
  (a restart between two calls, which fails no call, is noticed by the worker's new process id),
  Ray restarts the actor (``max_restarts``), and the pool retries that worker with a growing delay
  (calls to a restarting actor fail fast with ``ActorUnavailableError``) until one succeeds. A
  worker that died more often than Ray restarts it, or that does not come back within
  ``startup_timeout_s``, is replaced by a new actor;
* a worker silent for ``fragment_timeout_s`` is killed, which turns into the recovery above.

With ``collect_ahead`` a worker starts its next fragment as soon as one arrives, so collection
overlaps the PPO update; without it, only as many calls as the update still needs are issued, all
with the newest weights: synchronous PPO, the local algorithm.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from navi_actor.config import ActorSettings
from navi_actor.distributed.config import DistributedConfig
from navi_actor.distributed.fragment import RolloutFragment
from navi_actor.distributed.ray_runtime import require_ray
from navi_actor.distributed.worker import RolloutWorker

log = structlog.get_logger()

_FIRST_RETRY_S, _MAX_RETRY_S = 0.2, 5.0


@dataclass
class PoolCounters:
    """Fault and staleness accounting (cumulative over the pool's life)."""

    dropped_fragments: int = 0
    dropped_steps: int = 0
    worker_restarts: int = 0
    workers_replaced: int = 0
    hung_workers_killed: int = 0
    staleness: list[int] = field(default_factory=list)  # of the fragments accepted by the last gather


@dataclass
class _Slot:
    """One worker position: its actor handle and recovery state."""

    handle: Any
    deaths: int = 0  # recoveries of the current actor (Ray restarts it max_restarts times)
    pid: int = 0  # process that delivered the slot's last fragment
    recovering_since: float | None = None
    retry_at: float = 0.0
    retry_delay: float = _FIRST_RETRY_S


@dataclass
class _InFlight:
    slot: int
    started: float


class WorkerPool:
    """``config.num_workers`` :class:`RolloutWorker` Ray actors.

    Args:
        settings: the run's settings (shipped to every worker).
        config: distributed settings.
    """

    def __init__(self, settings: ActorSettings, config: DistributedConfig) -> None:
        self.ray = require_ray()
        self.settings, self.config = settings, config
        self.counters = PoolCounters()
        self._remote_class: Any = self.ray.remote(RolloutWorker)
        self.slots = [_Slot(self._spawn(index)) for index in range(config.num_workers)]
        self._in_flight: dict[Any, _InFlight] = {}
        self._failure_budget = config.num_workers * (config.max_restarts + 1)

    @property
    def handles(self) -> list[Any]:
        """The current actor handle of every slot."""
        return [slot.handle for slot in self.slots]

    def _spawn(self, index: int) -> Any:
        cfg = self.config
        return self._remote_class.options(
            num_cpus=cfg.worker_cpus,
            num_gpus=cfg.worker_gpus,
            max_restarts=cfg.max_restarts,
            max_task_retries=0,  # a lost fragment is re-requested by the pool, with fresh weights
        ).remote(self.settings, index, cfg.worker_device, cfg.worker_torch_threads)

    def probe(self) -> tuple[tuple[int, int, int], dict[str, Any]]:
        """Observation shape and corpus summary from worker 0 (waits for its environment)."""
        handle = self.slots[0].handle
        refs = [handle.observation_shape.remote(), handle.corpus_summary.remote()]
        ready, _ = self.ray.wait(refs, num_returns=2, timeout=self.config.startup_timeout_s)
        if len(ready) < 2:
            raise TimeoutError(
                f"worker 0 did not build its environment within {self.config.startup_timeout_s:.0f} s"
            )
        shape, summary = self.ray.get(refs)
        return tuple(shape), summary

    def pid(self, index: int, timeout_s: float = 120.0) -> int:
        """Process id of worker ``index``, waiting (with back-off) while Ray restarts it."""
        deadline, delay = time.monotonic() + timeout_s, _FIRST_RETRY_S
        while True:
            try:
                return int(self.ray.get(self.slots[index].handle.pid.remote(), timeout=timeout_s))
            except self.ray.exceptions.ActorUnavailableError:
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)  # back-off: Ray offers no "wait until restarted" without its state API
                delay = min(2 * delay, _MAX_RETRY_S)

    def _top_up(self, bundle_ref: Any, still_needed: int, collect_ahead: bool) -> None:
        busy = {flight.slot for flight in self._in_flight.values()}
        now = time.monotonic()
        for index, slot in enumerate(self.slots):
            if index in busy or now < slot.retry_at:
                continue
            if not collect_ahead and len(self._in_flight) >= still_needed:
                return
            ref = slot.handle.collect.remote(bundle_ref)
            self._in_flight[ref] = _InFlight(index, now)

    def _wait_one(self) -> list[Any]:
        if not self._in_flight:  # every worker is backing off after a failure
            wake = min(slot.retry_at for slot in self.slots)
            time.sleep(min(max(wake - time.monotonic(), 0.0), _MAX_RETRY_S))
            return []
        ready, _ = self.ray.wait(list(self._in_flight), num_returns=1, timeout=_MAX_RETRY_S)
        return ready

    def gather(
        self,
        count: int,
        run_id: str,
        version: int,
        bundle_ref: Any,
        *,
        max_staleness: int,
        collect_ahead: bool,
        on_wait: Callable[[], None] | None = None,
    ) -> list[RolloutFragment]:
        """Return ``count`` fragments of run ``run_id`` at most ``max_staleness`` versions old.

        Args:
            count: fragments needed for one update.
            run_id: the learner's run.
            version: the learner's current weights version.
            bundle_ref: Ray object reference of the current weights bundle.
            max_staleness: drop fragments whose weights are more updates old than this.
            collect_ahead: keep every idle worker busy (else issue only what the update still needs).
            on_wait: called on every pass of the wait loop (at least every 5 s): heartbeats.

        Returns:
            The accepted fragments, ordered by worker slot.

        Raises:
            RuntimeError: the workers failed more often than the pool's failure budget allows.
        """
        accepted: list[RolloutFragment] = []
        self.counters.staleness = []
        while len(accepted) < count:
            self._top_up(bundle_ref, count - len(accepted), collect_ahead)
            ready = self._wait_one()
            self._kill_hung()  # every pass: one hung worker must not hide behind busy ones
            if on_wait is not None:
                on_wait()
            for ref in ready:
                fragment = self._receive(ref, self._in_flight.pop(ref).slot)
                if fragment is None:
                    continue
                staleness = version - fragment.version
                if fragment.run_id != run_id or staleness > max_staleness:
                    self.counters.dropped_fragments += 1
                    self.counters.dropped_steps += fragment.env_steps
                    log.info(
                        "actor.distributed.fragment_dropped",
                        worker=fragment.worker_index,
                        staleness=staleness,
                    )
                elif len(accepted) < count:
                    accepted.append(fragment)
                    self.counters.staleness.append(staleness)
        # Worker order, not arrival order: a synchronous run is then reproducible from its seeds.
        order = sorted(range(len(accepted)), key=lambda i: accepted[i].worker_index)
        self.counters.staleness = [self.counters.staleness[i] for i in order]
        return [accepted[i] for i in order]

    def _receive(self, ref: Any, index: int) -> RolloutFragment | None:
        slot = self.slots[index]
        try:
            fragment: RolloutFragment = self.ray.get(ref)
        except self.ray.exceptions.RayActorError as error:
            self._on_failure(index, error)
            return None
        if slot.recovering_since is not None:
            log.info("actor.distributed.worker_recovered", worker=index)
        elif slot.pid and fragment.pid and fragment.pid != slot.pid:
            # Ray restarted the actor between two calls, so no call failed: count it here.
            slot.deaths += 1
            self.counters.worker_restarts += 1
            log.warning("actor.distributed.worker_restarted", worker=index, deaths=slot.deaths)
        slot.recovering_since, slot.retry_delay, slot.pid = None, _FIRST_RETRY_S, fragment.pid
        return fragment

    def _on_failure(self, index: int, error: Exception) -> None:
        slot, counters, now = self.slots[index], self.counters, time.monotonic()
        if slot.recovering_since is None:  # a new death: count it once, however many retries follow
            slot.recovering_since, slot.deaths = now, slot.deaths + 1
            counters.worker_restarts += 1
            log.warning(
                "actor.distributed.worker_failed", worker=index, deaths=slot.deaths, reason=str(error)
            )
            if counters.worker_restarts + counters.workers_replaced > self._failure_budget:
                failures, budget = counters.worker_restarts, self._failure_budget
                raise RuntimeError(
                    f"rollout workers failed {failures} times (budget {budget}); last error: {error}"
                ) from error
        given_up = slot.deaths > self.config.max_restarts
        if given_up or now - slot.recovering_since > self.config.startup_timeout_s:
            self.ray.kill(slot.handle, no_restart=True)
            self.slots[index] = _Slot(self._spawn(index), recovering_since=now)
            counters.workers_replaced += 1
            log.warning("actor.distributed.worker_replaced", worker=index)
            return
        slot.retry_at, slot.retry_delay = now + slot.retry_delay, min(2 * slot.retry_delay, _MAX_RETRY_S)

    def _kill_hung(self) -> None:
        now = time.monotonic()
        for flight in self._in_flight.values():
            if now - flight.started > self.config.fragment_timeout_s:
                log.warning("actor.distributed.worker_hung", worker=flight.slot, seconds=now - flight.started)
                self.counters.hung_workers_killed += 1
                self.ray.kill(self.slots[flight.slot].handle, no_restart=False)
                flight.started = now  # its call now fails with RayActorError: a recovery starts there

    def shutdown(self) -> None:
        """Kill every worker (no restart) and forget in-flight calls."""
        for slot in self.slots:
            try:
                self.ray.kill(slot.handle, no_restart=True)
            except Exception as error:  # already dead: nothing to stop
                log.debug("actor.distributed.worker_kill_skipped", reason=str(error))
        self._in_flight.clear()

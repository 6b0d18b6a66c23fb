"""WorkerPool.gather against a scripted stand-in for Ray: staleness, restarts, replacement, hangs.

The stand-in implements the few calls the pool makes (``remote``, ``wait``, ``get``, ``kill``) and
lets each worker's calls be scripted: return a fragment, die, or hang until killed. This pins the
pool's bookkeeping down deterministically and in milliseconds; the real-Ray tests cover the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from navi_actor.config import ActorSettings
from navi_actor.distributed import worker_pool
from navi_actor.distributed.config import DistributedConfig
from navi_actor.distributed.fragment import RolloutFragment
from navi_actor.runners.rollout_collector import RolloutStats


class FakeActorDiedError(Exception):
    """Stands in for ``ray.exceptions.RayActorError``."""


class FakeUnavailableError(FakeActorDiedError):
    """Stands in for ``ray.exceptions.ActorUnavailableError`` (a subclass, as in Ray)."""


@dataclass(eq=False)  # hashed by identity, like an ObjectRef
class Ref:
    worker: FakeWorker
    outcome: str  # "ok", "die", "hang"
    bundle: Any
    killed: bool = False


@dataclass
class FakeWorker:
    index: int
    script: list[str] = field(default_factory=list)  # outcomes of the next calls; then "ok"
    calls: int = 0

    @property
    def collect(self) -> SimpleNamespace:
        def remote(bundle: Any) -> Ref:
            self.calls += 1
            outcome = self.script.pop(0) if self.script else "ok"
            return Ref(self, outcome, bundle)

        return SimpleNamespace(remote=remote)


def fragment(index: int, bundle: Any) -> RolloutFragment:
    stats = RolloutStats(8, [], [], [], [], 0.0, 0.0, {}, {})
    return RolloutFragment(index, bundle.run_id, bundle.version, {}, np.zeros(2), stats, np.zeros(1))


class FakeRay:
    exceptions = SimpleNamespace(RayActorError=FakeActorDiedError, ActorUnavailableError=FakeUnavailableError)

    def __init__(self, scripts: dict[int, list[str]]) -> None:
        self.scripts, self.workers, self.kills = scripts, [], []
        self.pending: list[Ref] = []

    def remote(self, _cls: type) -> Any:
        def spawn(_settings: Any, index: int, *_args: Any) -> FakeWorker:
            worker = FakeWorker(index, list(self.scripts.get(index, [])))
            self.scripts[index] = []  # a replacement actor starts healthy
            self.workers.append(worker)
            return worker

        return SimpleNamespace(options=lambda **_: SimpleNamespace(remote=spawn))

    def wait(self, refs: list[Ref], num_returns: int, timeout: float) -> tuple[list[Ref], list[Ref]]:
        ready = [ref for ref in refs if ref.outcome != "hang" or ref.killed][:num_returns]
        return ready, [ref for ref in refs if ref not in ready]

    def get(self, ref: Ref) -> RolloutFragment:
        if ref.outcome == "die" or ref.killed:
            raise FakeActorDiedError(f"worker {ref.worker.index} died")
        if ref.outcome == "unavailable":
            raise FakeUnavailableError("restarting")
        return fragment(ref.worker.index, ref.bundle)

    def kill(self, handle: FakeWorker, no_restart: bool) -> None:
        self.kills.append((handle.index, no_restart))
        for ref in self.pending:
            if ref.worker is handle:
                ref.killed = True


def make_pool(
    monkeypatch: pytest.MonkeyPatch, scripts: dict[int, list[str]], **config: Any
) -> tuple[worker_pool.WorkerPool, FakeRay]:
    fake = FakeRay(scripts)
    monkeypatch.setattr(worker_pool, "require_ray", lambda: fake)
    pool = worker_pool.WorkerPool(ActorSettings(), DistributedConfig(num_workers=2, **config))
    original_wait: Callable[..., Any] = fake.wait

    def tracking_wait(refs: list[Ref], num_returns: int, timeout: float) -> Any:
        fake.pending = refs
        return original_wait(refs, num_returns, timeout)

    fake.wait = tracking_wait  # type: ignore[method-assign]
    return pool, fake


def bundle(version: int, run_id: str = "run") -> SimpleNamespace:
    return SimpleNamespace(version=version, run_id=run_id)


def test_synchronous_gather_issues_only_what_the_update_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    pool, fake = make_pool(monkeypatch, {})
    waits: list[int] = []
    for version in range(3):
        got = pool.gather(
            2,
            "run",
            version,
            bundle(version),
            max_staleness=0,
            collect_ahead=False,
            on_wait=lambda: waits.append(1),
        )
        assert [f.version for f in got] == [version, version] and [f.worker_index for f in got] == [0, 1]
    assert [w.calls for w in fake.workers] == [3, 3] and pool.counters.dropped_fragments == 0
    assert len(waits) >= 3  # the heartbeat hook runs while the learner waits


def test_collect_ahead_fragments_beyond_the_bound_are_dropped_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool, _ = make_pool(monkeypatch, {})
    pool.gather(2, "run", 0, bundle(0), max_staleness=0, collect_ahead=True)
    got = pool.gather(2, "run", 1, bundle(1), max_staleness=0, collect_ahead=True)
    assert [f.version for f in got] == [1, 1]
    assert pool.counters.dropped_fragments == 1 and pool.counters.dropped_steps == 8  # the v0 leftover
    got = pool.gather(2, "other-run", 2, bundle(2, "other-run"), max_staleness=5, collect_ahead=True)
    assert pool.counters.dropped_fragments >= 2 and {f.run_id for f in got} == {"other-run"}


def gather_until(pool: worker_pool.WorkerPool, done: Callable[[], bool]) -> list[RolloutFragment]:
    """Synchronous gathers until ``done()`` (retries wait out real back-off delays; 10 s cap)."""
    got: list[RolloutFragment] = []
    deadline = time.monotonic() + 10.0
    while not done() and time.monotonic() < deadline:
        got += pool.gather(2, "run", 0, bundle(0), max_staleness=0, collect_ahead=False)
    return got


def test_a_death_is_counted_once_and_the_worker_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    pool, fake = make_pool(monkeypatch, {0: ["die", "unavailable", "unavailable"]}, max_restarts=3)
    got = gather_until(pool, lambda: fake.workers[0].calls >= 4)
    assert fake.workers[0].calls >= 4 and 0 in {f.worker_index for f in got}  # slot 0 serves again
    assert pool.counters.worker_restarts == 1 and pool.counters.workers_replaced == 0


def test_a_worker_dead_beyond_max_restarts_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    pool, fake = make_pool(monkeypatch, {0: ["die", "ok", "die"]}, max_restarts=1)
    gather_until(pool, lambda: len(fake.workers) == 3)
    assert pool.counters.worker_restarts == 2 and pool.counters.workers_replaced == 1
    assert (0, True) in fake.kills and len(fake.workers) == 3 and pool.handles[0] is fake.workers[2]


def test_a_hung_worker_is_killed_and_the_other_takes_over(monkeypatch: pytest.MonkeyPatch) -> None:
    # Synchronous, so no idle call of the healthy worker lingers long enough to look hung too.
    pool, fake = make_pool(monkeypatch, {0: ["hang"]}, fragment_timeout_s=0.05, max_restarts=2)
    got = pool.gather(1, "run", 0, bundle(0), max_staleness=0, collect_ahead=False)
    assert [f.worker_index for f in got] == [1]
    assert fake.kills == [(0, False)]  # killed with restart allowed
    assert pool.counters.hung_workers_killed == 1 and pool.counters.worker_restarts == 1


def test_the_failure_budget_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    pool, _ = make_pool(monkeypatch, {0: ["die"] * 20, 1: ["die"] * 20}, max_restarts=0)
    with pytest.raises(RuntimeError, match="rollout workers failed"):
        pool.gather(2, "run", 0, bundle(0), max_staleness=0, collect_ahead=False)

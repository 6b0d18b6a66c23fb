"""Rollout fragments: what a worker sends back, and how the learner lays them into its storage.

A fragment is one worker's filled :class:`~navi_actor.storage.RolloutStorage` (``T`` steps of its
``B`` drones) as CPU numpy arrays, plus ``V(s_T)`` for the bootstrap, the weights version it was
collected with, and the collector's :class:`RolloutStats`. numpy rather than torch tensors because
Ray places numpy arrays in its shared-memory object store and the learner reads them without
another copy. The learner stacks ``K`` fragments side by side into a ``[T, K*B]`` storage and runs
:meth:`RolloutStorage.compute_returns` on the whole batch, so advantages are normalised over the
same set of transitions the local trainer would normalise over with ``K*B`` drones.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from navi_actor.runners.rollout_collector import RolloutStats
from navi_actor.storage import RolloutStorage

# Buffers copied verbatim, [T, B, ...] (sequence_states is [T/L, B, S]).
STORAGE_FIELDS = (
    "obs",
    "actions",
    "log_probs",
    "values",
    "rewards",
    "final_values",
    "terminated",
    "truncated",
    "episode_starts",
    "sequence_states",
    "lags",
)
VISIT_FIELD = "visit_features"  # [T, B, F], only in the rollouts of a policy that reads or predicts them


def storage_fields(storage: RolloutStorage) -> tuple[str, ...]:
    """The buffers a fragment of ``storage`` carries: ``STORAGE_FIELDS``, and the visit features the
    policy read (``policy.visit_input``) or predicts (``visit_prediction``) when the storage keeps them."""
    return STORAGE_FIELDS + ((VISIT_FIELD,) if storage.visit_features is not None else ())


@dataclass
class RolloutFragment:
    """One worker's rollout.

    Attributes:
        worker_index: slot of the worker that collected it.
        run_id: the learner run whose weights acted.
        version: weights version (learner update index) the behaviour policy had.
        buffers: ``STORAGE_FIELDS`` arrays, time-major ``[T, B, ...]``.
        last_values: ``[B]`` V(observation after the last step) for GAE.
        stats: the collector's summary of the rollout.
        observation: ``[3, Az, El]`` drone 0's last observation (sparse live telemetry).
        pid: process id of the worker (a change reveals a restart no failed call reported).
    """

    worker_index: int
    run_id: str
    version: int
    buffers: dict[str, np.ndarray]
    last_values: np.ndarray
    stats: RolloutStats
    observation: np.ndarray
    pid: int = 0

    @property
    def env_steps(self) -> int:
        """Environment steps (all drones) in this fragment."""
        return int(self.stats.env_steps)


def fragment_from_storage(
    storage: RolloutStorage,
    last_values: torch.Tensor,
    stats: RolloutStats,
    *,
    worker_index: int,
    run_id: str,
    version: int,
) -> RolloutFragment:
    """Snapshot a filled storage as a fragment (copies, so the worker may overwrite its buffers).

    Args:
        storage: storage after :meth:`RolloutCollector.collect`.
        last_values: ``[B]`` bootstrap values.
        stats: the rollout's statistics.
        worker_index: the worker's slot.
        run_id: the learner run whose weights acted.
        version: weights version used for acting.

    Returns:
        The :class:`RolloutFragment`.
    """
    fields = storage_fields(storage)
    buffers = {name: getattr(storage, name).detach().to("cpu").numpy().copy() for name in fields}
    return RolloutFragment(
        worker_index=worker_index,
        run_id=run_id,
        version=version,
        buffers=buffers,
        last_values=last_values.detach().to("cpu").numpy().copy(),
        stats=stats,
        observation=buffers["obs"][-1, 0].copy(),
        pid=os.getpid(),
    )


def _tensor(array: np.ndarray, device: torch.device) -> torch.Tensor:
    # Arrays read from Ray's object store are read-only; they are only copied from, never written.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(array).to(device, non_blocking=True)


def load_fragments(storage: RolloutStorage, fragments: list[RolloutFragment]) -> torch.Tensor:
    """Write ``K`` fragments side by side into ``storage`` (``[T, K*B]``) and return their bootstrap values.

    The storage's ``acting_version`` becomes the oldest fragment's weights version.

    Args:
        storage: learner storage with ``num_envs == K * B``.
        fragments: ``K`` fragments of ``B`` drones and ``T`` steps each.

    Returns:
        ``[K*B]`` last values, in the same column order.

    Raises:
        ValueError: the fragments do not tile the storage exactly.
    """
    widths = [int(f.last_values.shape[0]) for f in fragments]
    if sum(widths) != storage.num_envs or len(set(widths)) != 1:
        raise ValueError(
            f"{len(fragments)} fragments of {widths} drones do not fill a storage of {storage.num_envs}"
        )
    width, device = widths[0], storage.device
    storage.acting_version = min(fragment.version for fragment in fragments)
    for index, fragment in enumerate(fragments):
        columns = slice(index * width, (index + 1) * width)
        for name in storage_fields(storage):
            target = getattr(storage, name)
            source = fragment.buffers.get(name)
            if source is None:
                raise ValueError(f"fragment has no {name}: its worker's policy does not keep them")
            if tuple(source.shape) != (target.shape[0], width, *target.shape[2:]):
                raise ValueError(f"fragment field {name} has shape {source.shape}, storage {target.shape}")
            target[:, columns].copy_(_tensor(source, device))
    return torch.cat([_tensor(f.last_values, device) for f in fragments])


def whole_buffers(
    fragments: list[RolloutFragment], device: torch.device, fields: tuple[str, ...] = STORAGE_FIELDS
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The ``K`` fragments side by side as ``[T, K*B, ...]`` tensors (``fields``, those of
    :func:`storage_fields`) and ``[K*B]`` bootstrap values: what :func:`load_fragments` writes into a
    storage, for a learner that shares the columns out among data-parallel ranks."""
    buffers = {
        name: torch.cat([_tensor(f.buffers[name], device) for f in fragments], dim=1) for name in fields
    }
    return buffers, torch.cat([_tensor(f.last_values, device) for f in fragments])


def merge_stats(fragments: list[RolloutFragment]) -> RolloutStats:
    """One :class:`RolloutStats` for the update: episode lists joined, per-step means averaged.

    Per-step means are weighted by each fragment's steps; stage timings are the mean per fragment
    (workers collect in parallel, so summing them would not be wall time).
    """
    stats = [f.stats for f in fragments]
    weights = [s.env_steps for s in stats]
    total = max(sum(weights), 1)

    def weighted(values: list[float]) -> float:
        return sum(v * w for v, w in zip(values, weights, strict=True)) / total

    def mean_of(dicts: list[dict[str, float]], weighting: bool) -> dict[str, float]:
        keys = sorted({key for d in dicts for key in d})
        if weighting:
            return {key: weighted([d.get(key, 0.0) for d in dicts]) for key in keys}
        return {key: sum(d.get(key, 0.0) for d in dicts) / len(dicts) for key in keys}

    merged = dataclasses.replace(
        stats[0],
        env_steps=sum(weights),
        finished_returns=[v for s in stats for v in s.finished_returns],
        finished_shaped_returns=[v for s in stats for v in s.finished_shaped_returns],
        finished_lengths=[v for s in stats for v in s.finished_lengths],
        finished_coverage=[v for s in stats for v in s.finished_coverage],
        collision_rate=weighted([s.collision_rate for s in stats]),
        mean_speed=weighted([s.mean_speed for s in stats]),
        reward_terms=mean_of([s.reward_terms for s in stats], weighting=True),
        timings=mean_of([s.timings for s in stats], weighting=False),
    )
    if hasattr(merged, "num_actors"):  # drones that fed this update, over all workers
        merged.num_actors = sum(int(getattr(s, "num_actors", 0)) for s in stats)
    return merged

"""Demonstration data for behaviour cloning: load ``.npz`` files, split by episode, lay out BPTT streams.

The file schema is documented in ``docs/demonstrations.md`` (written by ``navi-auditor explore
--record``). navi-actor reads it with numpy alone (the schema's constants come from
``navi_common.demonstrations``; the dependency rule forbids importing the auditor): this module
checks the few arrays it needs and names the file and rule broken.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from navi_common.demonstrations import DEMO_SCHEMA_VERSION

REQUIRED_ARRAYS = ("observations", "actions", "episode_starts", "metadata")


class DemonstrationError(ValueError):
    """A demonstration folder or file is missing, empty or breaks the schema."""


@dataclass(frozen=True)
class DemoData:
    """Frames of one or more demonstrations, concatenated (CPU tensors).

    Attributes:
        observations: [N, 3, Az, El] float16: half the memory of the files' float32 (a recording of
            32,768 frames holds 2.4 GB instead of 4.8 GB, twice over while it is split); the values
            are depth fractions, class ids and a mask, which half precision keeps (to 1 part in 2,048,
            ids exactly). The trainer widens each window to float32.
        actions: [N, 4] float32 executed actions in [-1, 1].
        episode_starts: [N] bool (the first frame of every file is a start).
        episode_bounds: [E, 2] int64 ``[start, end)`` frame ranges of the episodes.
        sources: the files, with their frame counts and scenes (for checkpoint provenance).
        positions: [N, 3] float32 pose of each frame (before its action), or None when a file
            lacks it (only a policy reading its visit memory needs it).
        yaws: [N] float32 heading of each frame, with ``positions``.
    """

    observations: torch.Tensor
    actions: torch.Tensor
    episode_starts: torch.Tensor
    episode_bounds: torch.Tensor
    sources: list[dict[str, Any]]
    positions: torch.Tensor | None = None
    yaws: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.actions.shape[0])

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        """``(C, Az, El)``."""
        return tuple(self.observations.shape[1:])  # type: ignore[return-value]

    def select_episodes(self, episodes: torch.Tensor) -> DemoData:
        """The frames of the given episode indices (in that order)."""
        ranges = [torch.arange(int(s), int(e)) for s, e in self.episode_bounds[episodes].tolist()]
        index = torch.cat(ranges) if ranges else torch.zeros(0, dtype=torch.long)
        lengths = self.episode_bounds[episodes, 1] - self.episode_bounds[episodes, 0]
        ends = torch.cumsum(lengths, 0)
        bounds = torch.stack([ends - lengths, ends], dim=1)
        starts = torch.zeros(index.shape[0], dtype=torch.bool)
        starts[bounds[:, 0]] = True
        posed = self.positions is not None and self.yaws is not None
        return DemoData(
            self.observations[index], self.actions[index], starts, bounds, self.sources,
            positions=self.positions[index] if posed else None,  # type: ignore[index]
            yaws=self.yaws[index] if posed else None,  # type: ignore[index]
        )  # fmt: skip


def _load_file(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [name for name in REQUIRED_ARRAYS if name not in archive.files]
            if missing:
                raise DemonstrationError(f"{path}: missing arrays {missing} (see docs/demonstrations.md)")
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError) as error:
        if isinstance(error, DemonstrationError):
            raise
        raise DemonstrationError(f"{path} is not a readable .npz: {error}") from error
    metadata = json.loads(str(arrays.pop("metadata")))
    if metadata.get("schema_version") != DEMO_SCHEMA_VERSION:
        version = metadata.get("schema_version")
        raise DemonstrationError(f"{path}: schema_version {version!r}, expected {DEMO_SCHEMA_VERSION}")
    obs, actions, starts = arrays["observations"], arrays["actions"], arrays["episode_starts"]
    n = actions.shape[0]
    if obs.dtype != np.float32 or obs.ndim != 4 or obs.shape[0] != n or obs.shape[1] != 3:
        raise DemonstrationError(
            f"{path}: observations must be float32 (N, 3, Az, El), got {obs.dtype} {obs.shape}"
        )
    if actions.dtype != np.float32 or actions.shape != (n, 4):
        raise DemonstrationError(
            f"{path}: actions must be float32 (N, 4), got {actions.dtype} {actions.shape}"
        )
    if n and (not np.isfinite(actions).all() or np.abs(actions).max() > 1.0):
        raise DemonstrationError(f"{path}: actions must be finite and in [-1, 1] (the executed space)")
    if starts.dtype != np.bool_ or starts.shape != (n,):
        raise DemonstrationError(
            f"{path}: episode_starts must be bool (N,), got {starts.dtype} {starts.shape}"
        )
    return arrays, metadata


def load_demonstrations(paths: list[Path]) -> DemoData:
    """Load and concatenate demonstrations (all must share one sensor shape).

    Args:
        paths: ``.npz`` files.

    Returns:
        :class:`DemoData`.

    Raises:
        DemonstrationError: no frames, a bad file, or files with different sensor shapes.
    """
    observations: list[np.ndarray] = []
    actions: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    positions: list[np.ndarray] | None = []
    yaws: list[np.ndarray] = []
    sources: list[dict[str, Any]] = []
    for path in paths:
        arrays, metadata = _load_file(path)
        if not len(arrays["actions"]):
            continue
        if observations and arrays["observations"].shape[1:] != observations[0].shape[1:]:
            raise DemonstrationError(
                f"{path}: sensor {arrays['observations'].shape[1:]} differs from {observations[0].shape[1:]}"
            )
        file_starts = arrays["episode_starts"].copy()
        file_starts[0] = True  # files never continue each other's episodes
        observations.append(arrays["observations"].astype(np.float16))
        actions.append(arrays["actions"])
        starts.append(file_starts)
        if positions is not None and {"positions", "yaw"} <= set(arrays):
            positions.append(np.asarray(arrays["positions"], np.float32))
            yaws.append(np.asarray(arrays["yaw"], np.float32))
        else:
            positions = None  # one file without poses: the data has none
        scenes = arrays.get("segment_scenes", np.array([], dtype=np.str_)).tolist()
        sources.append({"file": str(path), "frames": len(arrays["actions"]), "scenes": scenes,
                        "pilot": metadata.get("pilot")})  # fmt: skip
    if not observations:
        raise DemonstrationError(f"no demonstration frames in {[str(p) for p in paths]}")
    all_starts = torch.from_numpy(np.concatenate(starts))
    begin = torch.nonzero(all_starts).squeeze(1)
    end = torch.cat([begin[1:], torch.tensor([all_starts.shape[0]])])
    return DemoData(
        observations=torch.from_numpy(np.concatenate(observations)),
        actions=torch.from_numpy(np.concatenate(actions)),
        episode_starts=all_starts,
        episode_bounds=torch.stack([begin, end], dim=1),
        sources=sources,
        positions=torch.from_numpy(np.concatenate(positions)) if positions else None,
        yaws=torch.from_numpy(np.concatenate(yaws)) if positions else None,
    )


def find_demonstration_files(folder: Path) -> list[Path]:
    """The ``.npz`` files of ``folder`` (sorted), or a clear error."""
    if not folder.is_dir():
        raise DemonstrationError(
            f"demonstration folder {folder} does not exist; record with `uv run explore --record`"
        )
    files = sorted(folder.glob("*.npz"))
    if not files:
        raise DemonstrationError(f"no .npz demonstrations in {folder}; record with `uv run explore --record`")
    return files


def split_episodes(
    data: DemoData, holdout_fraction: float, generator: torch.Generator
) -> tuple[DemoData, DemoData]:
    """Split whole episodes into training and held-out sets (held-out frames are never trained on).

    Args:
        data: all frames.
        holdout_fraction: share of episodes held out (at least one when > 0 and there are >= 2).
        generator: shuffles the episodes.

    Returns:
        ``(train, holdout)``; holdout may be empty.
    """
    count = data.episode_bounds.shape[0]
    order = torch.randperm(count, generator=generator)
    held = min(
        count - 1, max(1 if holdout_fraction > 0 and count > 1 else 0, round(count * holdout_fraction))
    )
    return data.select_episodes(order[held:]), data.select_episodes(order[:held])


def stream_indices(
    episode_bounds: torch.Tensor, streams: int, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lay the episodes (shuffled when a generator is given) end to end into ``streams`` parallel rows.

    The layout is the rollout's ``[T, B]``: truncated BPTT then walks ``T`` in windows, carrying the
    recurrent state across windows, exactly as the PPO learner does on its rollouts.

    Args:
        episode_bounds: [E, 2] ``[start, end)`` frame ranges.
        streams: B, parallel rows.
        generator: shuffles the episode order; None keeps it.

    Returns:
        ``(index [T, B] long, starts [T, B] bool)``: frame index per slot, and where the state
        resets (episode starts, and the first step of every row). ``T = N // B`` (a remainder of
        fewer than B frames is left out).
    """
    count = episode_bounds.shape[0]
    order = torch.randperm(count, generator=generator) if generator is not None else torch.arange(count)
    lengths = episode_bounds[order, 1] - episode_bounds[order, 0]
    index = torch.cat([torch.arange(int(s), int(e)) for s, e in episode_bounds[order].tolist()])
    first = torch.zeros(index.shape[0], dtype=torch.bool)
    first[torch.cumsum(lengths, 0) - lengths] = True
    T = index.shape[0] // streams
    if T == 0:
        raise DemonstrationError(f"{index.shape[0]} frames cannot fill {streams} streams; lower --streams")
    index = index[: T * streams].reshape(streams, T).T  # [B*T] -> [B, T] -> [T, B]
    starts = first[: T * streams].reshape(streams, T).T.clone()
    starts[0] = True
    return index, starts

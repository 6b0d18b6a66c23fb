"""BC data: loading demonstration files, episode splits, and the BPTT stream layout."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from navi_actor.bc.dataset import (
    DemonstrationError,
    find_demonstration_files,
    load_demonstrations,
    split_episodes,
    stream_indices,
)


def write_demo(
    path: Path, frames: int, episode_every: int, shape: tuple[int, int] = (16, 8), seed: int = 0
) -> Path:
    """A schema-1 demonstration with random observations and actions (frame i's obs[0,0,0] = i)."""
    rng = np.random.default_rng(seed)
    obs = rng.random((frames, 3, *shape), dtype=np.float32)
    obs[:, 0, 0, 0] = np.arange(frames)
    starts = np.arange(frames) % episode_every == 0
    np.savez(
        path,
        observations=obs,
        actions=rng.uniform(-1, 1, (frames, 4)).astype(np.float32),
        episode_starts=starts,
        segment_scenes=np.array(["room"]),
        metadata=np.array(json.dumps({"schema_version": 1, "matrix_shape": list(shape), "pilot": "test"})),
    )
    return path


def test_files_concatenate_and_never_continue_episodes(tmp_path) -> None:
    a = write_demo(tmp_path / "a.npz", 10, episode_every=4)  # episodes 0-3, 4-7, 8-9
    b = write_demo(tmp_path / "b.npz", 5, episode_every=100)  # one episode, start forced
    data = load_demonstrations(find_demonstration_files(tmp_path))
    assert len(data) == 15 and data.observation_shape == (3, 16, 8)
    assert data.episode_bounds.tolist() == [[0, 4], [4, 8], [8, 10], [10, 15]]
    assert data.sources[0]["file"] == str(a) and data.sources[1]["frames"] == 5 and b.exists()


def test_frames_are_held_in_half_precision_and_windows_widened_to_float32(tmp_path) -> None:
    """Half the memory of a recording; the values survive to half precision's 1 part in 2,048 (and
    to its finest step, 2**-24, below its smallest normal number, 2**-14)."""
    from navi_actor.bc.trainer import _windows

    write_demo(tmp_path / "a.npz", 12, episode_every=4)
    with np.load(tmp_path / "a.npz") as archive:
        stored = torch.from_numpy(archive["observations"])
    data = load_demonstrations([tmp_path / "a.npz"])
    assert data.observations.dtype == torch.float16
    assert torch.allclose(data.observations.float(), stored, rtol=2**-11, atol=2**-24)
    index, starts = stream_indices(data.episode_bounds, streams=2, generator=None)
    obs, *_ = next(_windows(data, index, starts, 3, device=torch.device("cpu"), visits=None))
    assert obs.dtype == torch.float32 and obs.shape == (3, 2, 3, 16, 8)


def test_split_keeps_whole_episodes_apart(tmp_path) -> None:
    write_demo(tmp_path / "a.npz", 40, episode_every=5)
    data = load_demonstrations([tmp_path / "a.npz"])
    train, holdout = split_episodes(data, 0.25, torch.Generator().manual_seed(0))
    assert len(train) + len(holdout) == 40 and len(holdout) == 10
    ids = lambda d: set(d.observations[:, 0, 0, 0].long().tolist())  # noqa: E731 - frame ids
    assert ids(train).isdisjoint(ids(holdout))
    for part in (train, holdout):  # episodes stay contiguous and start where they should
        for start, end in part.episode_bounds.tolist():
            frame_ids = part.observations[start:end, 0, 0, 0].long()
            assert (frame_ids.diff() == 1).all() and int(frame_ids[0]) % 5 == 0
        assert part.episode_starts.nonzero().squeeze(1).tolist() == part.episode_bounds[:, 0].tolist()


def test_stream_layout_is_the_rollout_layout() -> None:
    bounds = torch.tensor([[0, 3], [3, 8], [8, 10]])
    index, starts = stream_indices(bounds, streams=2, generator=None)
    # frames 0..9 end to end, split into 2 rows of 5: row 0 = 0..4, row 1 = 5..9 -> [T=5, B=2]
    assert index.T.tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert starts.T.tolist() == [[True, False, False, True, False], [True, False, False, True, False]]


def test_shuffled_streams_cover_every_frame_once() -> None:
    bounds = torch.tensor([[0, 7], [7, 9], [9, 20], [20, 24]])
    index, starts = stream_indices(bounds, streams=4, generator=torch.Generator().manual_seed(3))
    assert sorted(index.flatten().tolist()) == list(range(24))
    assert starts[0].all()
    episode_first = set(bounds[:, 0].tolist())
    for t in range(1, index.shape[0]):
        for b in range(4):
            assert bool(starts[t, b]) == (int(index[t, b]) in episode_first)


def test_bad_inputs_fail_with_the_rule(tmp_path) -> None:
    with pytest.raises(DemonstrationError, match="does not exist"):
        find_demonstration_files(tmp_path / "none")
    with pytest.raises(DemonstrationError, match=r"no \.npz"):
        find_demonstration_files(tmp_path)
    path = write_demo(tmp_path / "bad.npz", 4, 2)
    arrays = dict(np.load(path))
    np.savez(path, **{**arrays, "actions": arrays["actions"] * 3})
    with pytest.raises(DemonstrationError, match=r"\[-1, 1\]"):
        load_demonstrations([path])
    np.savez(path, **{k: v for k, v in arrays.items() if k != "episode_starts"})
    with pytest.raises(DemonstrationError, match="missing arrays"):
        load_demonstrations([path])
    write_demo(tmp_path / "wide.npz", 4, 2, shape=(32, 8))
    write_demo(tmp_path / "narrow.npz", 4, 2, shape=(16, 8))
    with pytest.raises(DemonstrationError, match="differs"):
        load_demonstrations([tmp_path / "wide.npz", tmp_path / "narrow.npz"])

"""Demonstration files: schema, crash-safe parts, streaming merge, validation errors."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from navi_auditor.cli import main
from navi_auditor.demos import (
    DEMO_SCHEMA_VERSION,
    FRAME_FIELDS,
    DemoFormatError,
    DemoWriter,
    load_demonstration,
    parts_folder,
)

SHAPE = (16, 8)


def fill(writer: DemoWriter, frames: int, segment_every: int = 7, seed: int = 0) -> np.random.Generator:
    rng = np.random.default_rng(seed)
    for i in range(frames):
        if i % segment_every == 0:
            writer.begin_segment(f"scene-{i // segment_every}", 100 + i)
        writer.add(
            rng.random((3, *SHAPE), dtype=np.float32), rng.uniform(-1, 1, 4).astype(np.float32),
            episode_start=i % segment_every == 0 or i % 5 == 0, reward=float(i), terminated=False,
            truncated=i % 5 == 4, collision=i % 3 == 0, position=np.array([i, 0, 1], np.float32),
            yaw=0.1 * i, timestamp=1000.0 + i,
        )  # fmt: skip
    return rng


def test_schema_of_a_finished_file(tmp_path) -> None:
    path = tmp_path / "demo.npz"
    writer = DemoWriter(path, SHAPE, {"pilot": "test", "seed": 3}, part_frames=4)
    fill(writer, 17)
    writer.close()
    assert not parts_folder(path).exists()
    with zipfile.ZipFile(path) as archive:
        names = {name.removesuffix(".npy") for name in archive.namelist()}
    assert names == {*FRAME_FIELDS, "segment_scenes", "segment_seeds", "metadata"}
    demo = load_demonstration(path)
    assert len(demo) == 17
    assert demo.observations.dtype == np.float32 and demo.observations.shape == (17, 3, *SHAPE)
    assert demo.actions.dtype == np.float32 and demo.actions.shape == (17, 4)
    assert demo.episode_starts.dtype == np.bool_ and demo.episode_starts[0]
    assert demo.frames["segment_ids"].tolist() == [i // 7 for i in range(17)]
    assert demo.segment_scenes.tolist() == ["scene-0", "scene-1", "scene-2"]
    assert demo.segment_seeds.tolist() == [100, 107, 114]
    # episode ids count episode starts; timestamps and positions kept per frame
    np.testing.assert_array_equal(demo.frames["episode_ids"], np.cumsum(demo.episode_starts) - 1)
    np.testing.assert_array_equal(demo.frames["timestamps"], 1000.0 + np.arange(17))
    assert demo.metadata["schema_version"] == DEMO_SCHEMA_VERSION
    assert demo.metadata["matrix_shape"] == list(SHAPE) and demo.metadata["pilot"] == "test"


def test_merged_file_equals_what_was_written(tmp_path) -> None:
    path = tmp_path / "demo.npz"
    writer = DemoWriter(path, SHAPE, {}, part_frames=3)
    fill(writer, 10, seed=5)
    writer.close()
    rng = np.random.default_rng(5)
    expected_first_obs = rng.random((3, *SHAPE), dtype=np.float32)
    expected_first_action = rng.uniform(-1, 1, 4).astype(np.float32)
    demo = load_demonstration(path)
    np.testing.assert_array_equal(demo.observations[0], expected_first_obs)
    np.testing.assert_array_equal(demo.actions[0], expected_first_action)


def test_a_crash_keeps_every_flushed_part(tmp_path) -> None:
    path = tmp_path / "demo.npz"
    writer = DemoWriter(path, SHAPE, {"pilot": "crashy"}, part_frames=4)
    fill(writer, 10)  # two parts flushed (8 frames), 2 frames still in memory: "crash" now
    writer.sync()  # parts are written by a background thread: wait until both are on disk
    del writer
    parts = parts_folder(path)
    assert not path.exists() and parts.is_dir()
    recovered = load_demonstration(parts)
    assert len(recovered) == 8 and recovered.metadata["pilot"] == "crashy"
    result = CliRunner().invoke(main, ["demo-merge", str(parts)])
    assert result.exit_code == 0, result.output
    merged = load_demonstration(path)
    np.testing.assert_array_equal(merged.observations, recovered.observations)
    assert not parts.exists()


def test_out_of_range_or_nan_actions_are_refused(tmp_path) -> None:
    writer = DemoWriter(tmp_path / "d.npz", SHAPE, {})
    writer.begin_segment("s", 0)
    for bad in ([1.5, 0, 0, 0], [np.nan, 0, 0, 0]):
        with pytest.raises(ValueError, match=r"\[-1, 1\]"):
            writer.add(
                np.zeros((3, *SHAPE), np.float32), np.array(bad, np.float32), episode_start=True,
                reward=0.0, terminated=False, truncated=False, collision=False, position=np.zeros(3),
                yaw=0.0, timestamp=0.0,
            )  # fmt: skip


def test_existing_demo_is_never_overwritten(tmp_path) -> None:
    path = tmp_path / "d.npz"
    path.write_bytes(b"keep")
    with pytest.raises(FileExistsError):
        DemoWriter(path, SHAPE, {})


def test_validation_names_the_broken_rule(tmp_path) -> None:
    path = tmp_path / "demo.npz"
    writer = DemoWriter(path, SHAPE, {}, part_frames=4)
    fill(writer, 6)
    writer.close()
    arrays = dict(np.load(path))
    broken = tmp_path / "broken.npz"
    np.savez(broken, **{**arrays, "actions": arrays["actions"].astype(np.float64)})
    with pytest.raises(DemoFormatError, match="actions must be float32"):
        load_demonstration(broken)
    np.savez(broken, **{k: v for k, v in arrays.items() if k != "episode_starts"})
    with pytest.raises(DemoFormatError, match="missing array 'episode_starts'"):
        load_demonstration(broken)
    meta = json.loads(str(arrays["metadata"]))
    np.savez(broken, **{**arrays, "metadata": np.array(json.dumps({**meta, "schema_version": 9}))})
    with pytest.raises(DemoFormatError, match="schema_version 9"):
        load_demonstration(broken)
    with pytest.raises(DemoFormatError, match="does not exist"):
        load_demonstration(tmp_path / "nope.npz")


def test_demo_info_command(tmp_path) -> None:
    path = tmp_path / "demo.npz"
    writer = DemoWriter(path, SHAPE, {"pilot": "autopilot"}, part_frames=4)
    fill(writer, 9)
    writer.close()
    result = CliRunner().invoke(main, ["demo-info", str(path)])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output.strip().splitlines()[-1])
    assert info["frames"] == 9 and info["segments"] == 2 and info["pilot"] == "autopilot"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frames=st.integers(min_value=1, max_value=23), part_frames=st.integers(min_value=1, max_value=9))
def test_streamed_merge_equals_concatenation_for_any_part_size(tmp_path_factory, frames, part_frames) -> None:
    folder = tmp_path_factory.mktemp("merge")
    reference = DemoWriter(folder / "whole.npz", SHAPE, {}, part_frames=1000)  # one part: no merging
    fill(reference, frames, seed=frames)
    parted = DemoWriter(folder / "parted.npz", SHAPE, {}, part_frames=part_frames)
    fill(parted, frames, seed=frames)
    whole, merged = load_demonstration(reference.close()), load_demonstration(parted.close())
    for name in FRAME_FIELDS:
        np.testing.assert_array_equal(merged.frames[name], whole.frames[name], err_msg=name)
    assert merged.segment_seeds.tolist() == whole.segment_seeds.tolist()


def test_parts_and_final_file_are_deflated_and_exact(tmp_path) -> None:
    """Issue 23: demonstrations were stored raw (147 KB per frame at 256x48)."""
    path = tmp_path / "demo.npz"
    writer = DemoWriter(path, SHAPE, {}, part_frames=4)
    fill(writer, 6)
    writer.sync()
    with zipfile.ZipFile(parts_folder(path) / "part_000000.npz") as part:
        assert {info.compress_type for info in part.infolist()} == {zipfile.ZIP_DEFLATED}
    writer.close()
    with zipfile.ZipFile(path) as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}
    first = np.random.default_rng(0).random((3, *SHAPE), dtype=np.float32)
    np.testing.assert_array_equal(load_demonstration(path).observations[0], first)


def _hover(writer: DemoWriter, frames: int, moving: int) -> None:
    writer.begin_segment("scene", 0)
    for i in range(frames):
        x = float(min(i, moving))  # moves 1 m per frame for ``moving`` frames, then hovers
        writer.add(
            np.zeros((3, *SHAPE), np.float32), np.zeros(4, np.float32), episode_start=i == 0, reward=0.0,
            terminated=False, truncated=False, collision=False, position=np.array([x, 0, 1], np.float32),
            yaw=0.0, timestamp=float(i),
        )  # fmt: skip


def test_a_mostly_stationary_recording_is_warned_about(tmp_path) -> None:
    hovering = DemoWriter(tmp_path / "hover.npz", SHAPE, {})
    _hover(hovering, 40, moving=5)
    hovering.close()
    assert hovering.stationary_share == 34 / 40  # frames 6..39 did not move since the previous one
    assert "stood still in 85% of the 40 recorded frames" in (hovering.stationary_warning() or "")
    flying = DemoWriter(tmp_path / "fly.npz", SHAPE, {})
    _hover(flying, 40, moving=40)
    flying.close()
    assert flying.stationary_share == 0.0 and flying.stationary_warning() is None

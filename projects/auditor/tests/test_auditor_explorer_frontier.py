"""``explore --autopilot frontier --record``: the frontier planner flies a compiled two-room scene and
the flight is a demonstration (executed actions in [-1, 1]); a plain ``--autopilot`` is still the
scripted pilot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from navi_auditor.cli import main
from navi_auditor.demos import load_demonstration
from navi_environment.gmdag.writer import compile_sdf_to_gmdag, write_gmdag
from navi_environment.runtime.analytic import RoomSpec, room_query

pytestmark = pytest.mark.slow
# 6 m tall: the compiled field is a lower bound in pruned void blocks, and spawns need 0.8 m of it.
TWO_ROOMS = RoomSpec(hi=(10.0, 8.0, 6.0), thin_wall_x=6.0, thin_wall_thickness=0.3, thin_wall_gap=(3.0, 5.5))
SMALL_SENSOR = {"NAVI_ENV_SENSOR__AZIMUTH_BINS": "64", "NAVI_ENV_SENSOR__ELEVATION_BINS": "16"}


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two rooms compiled to a .gmdag file (exact SDF sampled at voxel centres)."""
    path = tmp_path_factory.mktemp("scene") / "two_rooms.gmdag"
    resolution = 64
    bmin, voxel = TWO_ROOMS.cube(resolution)
    axis = (np.arange(resolution) + 0.5) * voxel
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3) + bmin
    sdf, semantic = room_query(TWO_ROOMS, voxel)(grid.astype(np.float32))
    shape = (resolution,) * 3
    asset = compile_sdf_to_gmdag(
        sdf.reshape(shape), semantic.reshape(shape), bmin, voxel, far_tolerance_voxels=0.0, source=str(path)
    )
    write_gmdag(asset, path)
    return path


def explore(scene: Path, out: Path, *autopilot: str, steps: int) -> list[str]:
    args = ["explore", "--gmdag-file", str(scene), *autopilot, "--record", "--out", str(out),
            "--max-steps", str(steps), "--max-scenes", "1", "--publish", "none", "--seed", "4"]  # fmt: skip
    result = CliRunner().invoke(main, args, env=SMALL_SENSOR)
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_a_recorded_frontier_flight_is_a_demonstration_with_actions_in_range(
    scene: Path, tmp_path: Path
) -> None:
    out = tmp_path / "frontier.npz"
    lines = explore(scene, out, "--autopilot", "frontier", steps=120)
    assert "flew 120 steps in 1 scene(s), 0 collisions" in lines
    demo = load_demonstration(out)
    assert len(demo) == 120 and demo.metadata["pilot"] == "frontier"
    assert np.abs(demo.actions).max() <= 1.0 and np.abs(demo.actions[:, [0, 2]]).max() > 0.2
    positions = demo.frames["positions"]
    assert np.linalg.norm(positions - positions[0], axis=1).max() > 2.0  # it explored, not hovered
    assert not demo.frames["collisions"].any()


def test_plain_autopilot_is_still_the_scripted_pilot_and_a_bad_choice_is_one_line(
    scene: Path, tmp_path: Path
) -> None:
    out = tmp_path / "scripted.npz"
    explore(scene, out, "--autopilot", steps=5)
    assert load_demonstration(out).metadata["pilot"] == "autopilot"
    arguments = ["explore", "--autopilot", "astar", "--publish", "none"]
    result = CliRunner().invoke(main, arguments, env=SMALL_SENSOR)
    assert result.exit_code == 2 and "'astar' is not one of 'scripted', 'frontier'" in result.output

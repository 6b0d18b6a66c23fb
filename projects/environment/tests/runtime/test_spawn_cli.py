"""Spawn qualification verdicts and the runtime CLI commands."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from navi_environment.cli import main
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.analytic import RoomSpec, room_distance, room_scene
from navi_environment.runtime.scene import build_runtime_scene
from navi_environment.runtime.spawn import qualify_scene

SPEC = RoomSpec(hi=(8.0, 6.0, 3.0), pillars=((4.0, 3.0, 0.5),))


def test_room_passes_with_clear_deterministic_spawns() -> None:
    scene = room_scene(SPEC, 64)
    settings = EnvironmentSettings()
    report = qualify_scene(scene, settings, seed=4)
    assert report.passed and report.verdict == "PASS"
    assert len(report.positions) > 10 and report.positions.shape[1] == 3
    true_clearance = room_distance(SPEC, report.positions)[0]
    assert true_clearance.min() >= settings.scene.spawn_clearance_m - scene.voxel_size
    assert np.all(report.starvation == 0.0)  # closed room: every probe ray hits
    assert np.all(np.diff(report.starvation) >= 0)  # best first
    again = qualify_scene(scene, settings, seed=4)
    assert np.array_equal(report.positions, again.positions)


def test_solid_scene_fails_without_free_space() -> None:
    def solid(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(len(points), -1.0, np.float32), np.zeros(len(points), np.uint16)

    scene = build_runtime_scene(solid, np.zeros(3), 0.1, 32)
    report = qualify_scene(scene)
    assert report.verdict == "FAIL" and "no free-space candidate" in report.reason
    assert len(report.positions) == 0


def test_void_scene_fails_on_starvation() -> None:
    def void(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(len(points), 50.0, np.float32), np.zeros(len(points), np.uint16)

    report = qualify_scene(build_runtime_scene(void, np.zeros(3), 0.1, 32))
    assert report.verdict == "FAIL" and "starves" in report.reason


def _gmdag(tmp_path: Path) -> Path:
    from navi_environment.gmdag.writer import compile_sdf_to_gmdag, write_gmdag

    bmin, voxel = SPEC.cube(32)
    axis = (np.arange(32) + 0.5) * voxel
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3) + bmin
    sdf, ids = room_distance(SPEC, grid)
    semantic = np.where(np.abs(sdf) < 2 * voxel, ids, 0).astype(np.uint16).reshape(32, 32, 32)
    path = tmp_path / "room.gmdag"
    write_gmdag(compile_sdf_to_gmdag(sdf.astype(np.float32).reshape(32, 32, 32), semantic, bmin, voxel), path)
    return path


def test_bench_sdfdag_prints_one_json_line(tmp_path: Path) -> None:
    path = _gmdag(tmp_path)
    result = CliRunner().invoke(
        main, ["bench-sdfdag", "--gmdag-file", str(path), "--actors", "2", "--steps", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.output.strip().splitlines()[-1])
    assert record["actors"] == 2 and record["ms_per_step"] > 0 and 0 < record["trace_share"] < 5
    assert 0 < record["in_step_trace_share"] <= 1


def test_serve_rejects_two_sources_and_explains_itself(tmp_path: Path) -> None:
    path = _gmdag(tmp_path)
    runner = CliRunner()
    help_text = runner.invoke(main, ["serve", "--help"]).output
    assert "--gmdag-file" in help_text and "StepRequest" in help_text
    both = runner.invoke(main, ["serve", "--gmdag-file", str(path), "--corpus", str(tmp_path)])
    assert both.exit_code == 2 and "either --gmdag-file or --corpus" in both.output


def test_spawns_stay_inside_an_enclosed_building_not_around_it() -> None:
    """A closed room floating in a big empty cube: exterior points have clearance but see open sky."""
    centre, half, wall = np.array([0.0, 0.0, 0.0]), np.array([5.0, 4.0, 1.5]), 0.3  # 2.4-voxel walls

    def shell(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = np.abs(points - centre) - half
        box = np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)
        return (np.abs(box) - wall).astype(np.float32), np.ones(len(points), np.uint16)

    scene = build_runtime_scene(shell, np.full(3, -8.0), 0.25, 64)
    report = qualify_scene(scene, EnvironmentSettings(), seed=1, candidates=4096)
    assert report.passed
    inside = (np.abs(report.positions - centre) < half).all(axis=1)
    assert len(report.positions) > 5 and inside.all(), f"{(~inside).sum()} spawns outside the room"
    assert np.all(report.starvation <= 0.15)

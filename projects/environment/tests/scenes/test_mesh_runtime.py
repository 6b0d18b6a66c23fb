"""Mesh scenes at runtime: one spawn qualification shared by ``qualify-gmdag`` and the backend, many
distinct spawns, open-sky scenes told apart from scenes that cannot host drones."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from navi_environment.backend import SdfDagBackend
from navi_environment.cli import main
from navi_environment.config import EnvironmentSettings
from navi_environment.corpus.qualify import qualify_asset
from navi_environment.corpus.settings import CompileSettings
from navi_environment.corpus.sources import compile_source
from navi_environment.gmdag.reader import load_gmdag
from navi_environment.gmdag.writer import write_gmdag
from navi_environment.runtime.spawn import SceneRejectedError, _Candidates, _judge

SMALL_SENSOR = {"azimuth_bins": 16, "elevation_bins": 8}


@pytest.fixture(scope="module")
def mesh_scenes(tmp_path_factory: pytest.TempPathFactory, scene_meshes: SimpleNamespace) -> dict[str, Path]:
    """The fixture room (y-up OBJ, so auto orientation is exercised) and the open site, at 64^3."""
    folder = tmp_path_factory.mktemp("mesh_scenes")
    to_y_up = np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])
    mesh = scene_meshes.room()
    mesh.vertices = mesh.vertices @ to_y_up.T
    mesh.export(folder / "room.obj")
    scene_meshes.site().export(folder / "site.stl")
    paths = {}
    for name, source in (("room", folder / "room.obj"), ("site", folder / "site.stl")):
        compiled = compile_source(str(source), CompileSettings(resolution=64))
        paths[name] = folder / f"{name}.gmdag"
        write_gmdag(compiled.asset, paths[name])
    return paths


def test_four_drones_on_a_mesh_scene_start_apart_from_the_qualified_spawns(
    mesh_scenes: dict[str, Path],
) -> None:
    settings = EnvironmentSettings(sensor=SMALL_SENSOR)
    summary = CliRunner().invoke(main, ["qualify-gmdag", "--gmdag-file", str(mesh_scenes["room"]), "--json"])
    assert summary.exit_code == 0, summary.output
    backend = SdfDagBackend(settings, 4, scene_paths=[mesh_scenes["room"]])
    backend.reset(seed=3)
    starts = backend.position.numpy()
    assert len({tuple(p) for p in starts.round(4)}) == 4, starts
    # the runtime's spawn table is the qualify-gmdag report: same implementation, same defaults
    report = backend.scenes.report(0)
    table = backend.scenes.spawn_table.numpy()
    assert len(table) == len(report.positions) >= 100
    reference = qualify_asset(load_gmdag(mesh_scenes["room"]), settings)
    assert reference["viable"] == len(table) and reference["reason"] == report.reason
    assert all((np.abs(table - p).sum(axis=1) < 1e-6).any() for p in starts)


def test_spawn_draws_are_distinct_within_a_reset_and_uniform_over_the_table(
    mesh_scenes: dict[str, Path],
) -> None:
    backend = SdfDagBackend(EnvironmentSettings(sensor=SMALL_SENSOR), 1, scene_paths=[mesh_scenes["room"]])
    count = len(backend.scenes.spawn_table)
    generator = torch.Generator().manual_seed(0)
    ids = torch.zeros(count, dtype=torch.int32)
    once = backend.scenes.sample_spawns(ids, generator)
    assert len(torch.unique(once, dim=0)) == count  # as many drones as spawns: every spawn once
    firsts = torch.stack([backend.scenes.sample_spawns(ids[:1], generator)[0] for _ in range(400)])
    assert len(torch.unique(firsts, dim=0)) > count // 2  # single draws spread over the table


def test_open_site_is_open_to_the_sky_not_refused(mesh_scenes: dict[str, Path]) -> None:
    summary = qualify_asset(load_gmdag(mesh_scenes["site"]), EnvironmentSettings())
    assert summary["verdict"] == "PASS" and summary["sky"] == "open", summary
    assert summary["reason"].startswith("open to the sky") and summary["viable"] >= 100


def test_starving_candidates_that_see_the_ground_pass_as_open_sky() -> None:
    """Every free candidate misses >= 0.7 of its rays (a small platform, a short horizon): those that
    see the ground below pass as open sky; with no ground below either, the scene cannot host drones."""
    settings = EnvironmentSettings()
    rng = np.random.default_rng(0)
    points = rng.uniform(0, 10, size=(300, 3)).astype(np.float32)
    clearance = rng.uniform(0.8, 3.0, size=300).astype(np.float32)
    starving = np.full(300, 0.8, dtype=np.float32)
    ground = np.where(np.arange(300) < 150, 0.1, 0.95).astype(np.float32)
    report = _judge("platform", _Candidates(points, clearance, starving, ground, 1000), settings)
    assert report.passed and report.sky == "open" and report.reason.startswith("open to the sky")
    assert len(report.positions) == settings.scene.spawn_max  # only the ground-seeing half
    assert set(map(tuple, report.positions)) <= set(map(tuple, points[:150]))
    no_ground = _judge(
        "void", _Candidates(points, clearance, starving, np.ones(300, np.float32), 1000), settings
    )
    assert not no_ground.passed and no_ground.reason.startswith("cannot host drones")
    with pytest.raises(SceneRejectedError, match=r"^void: cannot host drones: "):
        no_ground.require_pass()


def test_a_scene_that_cannot_host_drones_is_refused_with_one_reason(tmp_path: Path) -> None:
    settings = EnvironmentSettings(sensor={**SMALL_SENSOR, "horizon_m": 0.5})
    compiled = compile_source("procedural:hall:seed=0", CompileSettings(resolution=32))
    path = tmp_path / "hall.gmdag"
    write_gmdag(compiled.asset, path)
    with pytest.raises(SceneRejectedError, match=r"hall\.gmdag: cannot host drones: "):
        SdfDagBackend(settings, 1, scene_paths=[path])

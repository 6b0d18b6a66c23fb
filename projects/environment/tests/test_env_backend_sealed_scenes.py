"""Every procedural family is sealed at the coarsest supported resolution: no ray leaks outside."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.corpus.settings import CompileSettings
from navi_environment.corpus.sources import compile_source
from navi_environment.gmdag.writer import write_gmdag
from navi_environment.scenes.registry import FAMILIES


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_ray_hits_inside_a_procedural_scene_at_resolution_64(family: str, tmp_path: Path) -> None:
    """At 64^3 a voxel is 0.25-0.45 m, wider than the scenes' 10-20 cm walls and slabs."""
    compiled = compile_source(f"procedural:{family}:seed=1", CompileSettings(), resolution=64)
    path = tmp_path / f"{family}.gmdag"
    write_gmdag(compiled.asset, path)
    backend = SdfDagBackend(EnvironmentSettings(), 4, scene_paths=[path])
    valid = [backend.reset(seed=0)[:, 2]]
    generator = torch.Generator().manual_seed(0)
    for _ in range(10):
        valid.append(backend.step(torch.rand(4, 4, generator=generator) * 2 - 1).obs[:, 2])
    leaked = 1.0 - torch.stack(valid).mean().item()
    assert leaked == 0.0, f"{family}: {100 * leaked:.2f}% of rays saw nothing inside a closed scene"


@pytest.mark.slow
@pytest.mark.parametrize("family", ["maze", "apartment"])
def test_compiled_scenes_spawn_inside_the_building_not_on_its_roof(family: str, tmp_path: Path) -> None:
    """Void octants make the field query loose far from walls; spawns must still be found inside."""
    from navi_environment.runtime.loader import scene_from_asset
    from navi_environment.runtime.spawn import qualify_scene

    compiled = compile_source(f"procedural:{family}:seed=0", CompileSettings(), resolution=128)
    settings = EnvironmentSettings()
    report = qualify_scene(scene_from_asset(compiled.asset, settings), settings, seed=0)
    lo, hi = (torch.tensor(corner) for corner in compiled.source_bounds)
    positions = torch.from_numpy(report.positions)
    inside = ((positions > lo) & (positions < hi)).all(dim=1)
    assert report.passed and len(positions) >= 16
    assert inside.all(), f"{int((~inside).sum())} of {len(positions)} spawns outside {lo} .. {hi}"

"""Scene families: a corpus manifest's ``family``, else the file name without its number."""

from __future__ import annotations

import json
from pathlib import Path

from navi_environment.corpus.manifest import (
    MANIFEST_NAME,
    CorpusManifest,
    ManifestEntry,
    QualificationSummary,
    family_of_name,
    manifest_json,
    scene_families,
)


def test_a_name_without_its_number_is_the_family() -> None:
    assert [family_of_name(n) for n in ("apartment_003", "office_1", "hall", "my_building_7b")] == [
        "apartment", "office", "hall", "my_building_7b",
    ]  # fmt: skip


def test_families_come_from_the_manifest_else_the_file_name(tmp_path: Path) -> None:
    scenes = [tmp_path / "a.gmdag", tmp_path / "warehouse_012.gmdag", tmp_path / "odd.gmdag"]
    # no manifest: the name without its number
    assert scene_families(scenes, tmp_path) == ["a", "warehouse", "odd"]
    (tmp_path / "manifest.json").write_text(json.dumps({"broken": True}))
    assert scene_families(scenes, tmp_path) == ["a", "warehouse", "odd"]


def test_manifest_families_win_over_file_names(tmp_path: Path) -> None:
    def entry(name: str, family: str) -> ManifestEntry:
        return ManifestEntry(
            id=name, file=f"{name}.gmdag", family=family, seed=None, source=f"/meshes/{name}.obj",
            resolution=64, voxel_size_m=0.2, bmin_m=(0, 0, 0), node_count=1, bytes=40,
            compression_ratio=1.0, compile_seconds=0.1, sha256="0" * 64,
            qualification=QualificationSummary(verdict="PASS"),
        )  # fmt: skip

    manifest = CorpusManifest(
        created_utc="2026-01-01T00:00:00Z", git_revision="x", versions={}, settings={},
        scenes=[entry("office_1", "mesh"), entry("hall_000", "hall")],
    )  # fmt: skip
    (tmp_path / MANIFEST_NAME).write_text(manifest_json(manifest))
    scenes = [tmp_path / "office_1.gmdag", tmp_path / "hall_000.gmdag", tmp_path / "maze_004.gmdag"]
    assert scene_families(scenes, tmp_path) == ["mesh", "hall", "maze"]


def test_each_scene_reads_its_own_folders_manifest_by_default(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    entry = ManifestEntry(
        id="x_1", file="x_1.gmdag", family="apartment", seed=None, source="/meshes/x.obj",
        resolution=64, voxel_size_m=0.2, bmin_m=(0, 0, 0), node_count=1, bytes=40,
        compression_ratio=1.0, compile_seconds=0.1, sha256="0" * 64,
        qualification=QualificationSummary(verdict="PASS"),
    )  # fmt: skip
    manifest = CorpusManifest(
        created_utc="2026-01-01T00:00:00Z", git_revision="x", versions={}, settings={}, scenes=[entry]
    )
    (tmp_path / "a" / MANIFEST_NAME).write_text(manifest_json(manifest))
    scenes = [tmp_path / "a" / "x_1.gmdag", tmp_path / "b" / "x_1.gmdag"]
    assert scene_families(scenes) == ["apartment", "x"]

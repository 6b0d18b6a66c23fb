"""Which scenes the explorer flies: file checks, corpus folders, manifest verdicts."""

from __future__ import annotations

import pytest

from navi_auditor.explorer.scenes import SceneSourceError, resolve_scene_files
from navi_environment.corpus.manifest import (
    MANIFEST_NAME,
    CorpusManifest,
    ManifestEntry,
    QualificationSummary,
    manifest_json,
)


def entry(name: str, verdict: str) -> ManifestEntry:
    return ManifestEntry(
        id=name, file=f"{name}.gmdag", family="maze", seed=0, source="procedural:maze:seed=0", resolution=64,
        voxel_size_m=0.2, bmin_m=(0, 0, 0), node_count=1, bytes=40, compression_ratio=1.0,
        compile_seconds=0.1, sha256="0" * 64,
        qualification=QualificationSummary(verdict=verdict),  # type: ignore[arg-type]
    )  # fmt: skip


def test_single_file_rules(tmp_path, small_env_settings) -> None:
    scene = tmp_path / "a.gmdag"
    with pytest.raises(SceneSourceError, match="does not exist"):
        resolve_scene_files(scene, None, small_env_settings)
    scene.write_bytes(b"x")
    assert resolve_scene_files(scene, None, small_env_settings) == [scene.resolve()]
    mesh = tmp_path / "a.obj"
    mesh.write_text("v 0 0 0")
    with pytest.raises(SceneSourceError, match="compile-gmdag"):
        resolve_scene_files(mesh, None, small_env_settings)
    with pytest.raises(SceneSourceError, match="exclusive"):
        resolve_scene_files(scene, tmp_path, small_env_settings)


def test_corpus_folder_without_and_with_a_manifest(tmp_path, small_env_settings) -> None:
    with pytest.raises(SceneSourceError, match="no usable"):
        resolve_scene_files(None, tmp_path, small_env_settings)
    for name in ("b", "a", "c"):
        (tmp_path / f"{name}.gmdag").write_bytes(b"x")
    assert [p.name for p in resolve_scene_files(None, tmp_path, small_env_settings)] == [
        "a.gmdag",
        "b.gmdag",
        "c.gmdag",
    ]
    manifest = CorpusManifest(
        created_utc="2026-01-01T00:00:00Z", git_revision="x", versions={}, settings={},
        scenes=[entry("c", "PASS"), entry("a", "FAIL"), entry("b", "SKIPPED")],
    )  # fmt: skip
    (tmp_path / MANIFEST_NAME).write_text(manifest_json(manifest))
    assert [p.name for p in resolve_scene_files(None, tmp_path, small_env_settings)] == ["c.gmdag", "b.gmdag"]

"""``corpus prepare --source DIR`` / ``--mesh FILE``: user meshes (mixed with a procedural family)
compile the right way up, qualify, and land in the same manifest; broken files are listed, not fatal."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from navi_environment.cli import main
from navi_environment.corpus import load_manifest
from navi_environment.corpus.check import check_root
from navi_environment.corpus.prepare import mesh_files
from navi_environment.corpus.provenance import provenance_path


@pytest.fixture(scope="module")
def mesh_folder(tmp_path_factory: pytest.TempPathFactory, scene_meshes: SimpleNamespace) -> Path:
    folder = tmp_path_factory.mktemp("meshes")
    mesh = scene_meshes.room()
    mesh.vertices = mesh.vertices @ np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]]).T  # y up
    (folder / "buildings").mkdir()
    mesh.export(folder / "buildings" / "room.obj")
    scene_meshes.site().export(folder / "site.stl")
    (folder / "broken.ply").write_bytes(b"ply\nformat nonsense\n")
    (folder / "notes.txt").write_text("not a mesh")
    return folder


def test_mesh_files_are_found_recursively_and_sorted(mesh_folder: Path, tmp_path: Path) -> None:
    assert [p.relative_to(mesh_folder).as_posix() for p in mesh_files(mesh_folder)] == [
        "broken.ply", "buildings/room.obj", "site.stl"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="no mesh file"):
        mesh_files(tmp_path)


@pytest.mark.slow
def test_corpus_from_a_mesh_folder_mixed_with_a_family(mesh_folder: Path, tmp_path: Path) -> None:
    output = tmp_path / "corpus"
    result = CliRunner().invoke(
        main,
        ["corpus", "prepare", "--source", str(mesh_folder), "--families", "hall", "--count-per-family", "1",
         "--resolution", "32", "--output", str(output)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = load_manifest(output)
    assert [entry.id for entry in manifest.scenes] == ["hall_000", "mesh_room", "mesh_site"]
    by_id = {entry.id: entry for entry in manifest.scenes}
    assert by_id["mesh_room"].mesh_import is not None and by_id["mesh_room"].mesh_import["up_axis"] == "y"
    assert by_id["mesh_site"].mesh_import is not None and by_id["mesh_site"].mesh_import["up_axis"] == "z"
    assert by_id["hall_000"].mesh_import is None
    assert all(entry.qualification.verdict == "PASS" for entry in manifest.scenes)
    assert (by_id["mesh_site"].qualification.model_extra or {}).get("sky") == "open"
    assert [r["source"] for r in manifest.rejected] == [str(mesh_folder / "broken.ply")]
    assert "broken.ply: not a readable mesh" in manifest.rejected[0]["reason"]
    assert manifest.settings["mesh_sources"]["up_axis"] == "auto"
    assert "rejected " in result.output and "mesh_room: " in result.output
    reports, problems = check_root(output)
    assert not problems and all(report["ok"] for report in reports)


def test_a_corpus_of_only_broken_meshes_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.obj"
    bad.write_text("this is not an obj file\n")
    result = CliRunner().invoke(
        main, ["corpus", "prepare", "--mesh", str(bad), "--resolution", "32", "--output", str(tmp_path / "c")]
    )
    assert result.exit_code == 1 and "no scene qualified" in result.output and "bad.obj" in result.output
    assert not (tmp_path / "c").exists()


def test_compile_gmdag_says_what_the_import_did_and_records_the_transform(
    mesh_folder: Path, tmp_path: Path
) -> None:
    output = tmp_path / "room.gmdag"
    arguments = [
        "compile-gmdag",
        "--source",
        str(mesh_folder / "buildings" / "room.obj"),
        "--output",
        str(output),
    ]
    result = CliRunner().invoke(main, [*arguments, "--resolution", "32", "--scale", "2"])
    assert result.exit_code == 0, result.output
    assert "triangles: 96 of 96 kept (dropped: 0 NaN/infinite, 0 degenerate, 0 duplicate)" in result.output
    assert "up axis: auto: y up (" in result.output and "scale 2.0" in result.output
    record = json.loads(provenance_path(output).read_text())
    assert record["mesh_import"]["up_axis"] == "y" and record["mesh_import"]["scale"] == 2.0
    assert record["mesh_import"]["rotation"] == [[1, 0, 0], [0, 0, -1], [0, 1, 0]]
    assert record["source"] == str(mesh_folder / "buildings" / "room.obj") and record["resolution"] == 32
    np.testing.assert_allclose(
        np.ptp(np.array(record["source_bounds_m"]), axis=0), [14.0, 10.0, 6.8], atol=1e-6
    )
    sideways = CliRunner().invoke(main, [*arguments, "--resolution", "32", "--up-axis", "z"])
    assert sideways.exit_code == 0 and "warning: the geometry suggests y up, not z" in sideways.output
    assert "--up-axis y" in sideways.output

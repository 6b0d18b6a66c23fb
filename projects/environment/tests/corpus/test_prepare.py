"""Corpus building: manifest contents, atomic swap, failure leaves the old corpus, ensure/load API."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from navi_environment.corpus import ensure_default_corpus, load_manifest, prepare_corpus
from navi_environment.corpus import prepare as prepare_module
from navi_environment.corpus.check import check_root
from navi_environment.corpus.manifest import ManifestError
from navi_environment.corpus.settings import CompileSettings
from navi_environment.gmdag.reader import load_gmdag

TINY = CompileSettings(resolution=32, count_per_family=1, qualify=False)


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("corpus") / "corpus"
    prepare_corpus(folder, TINY, families=("maze", "hall"), progress=False)
    return folder


def test_manifest_describes_every_scene(tiny_corpus: Path) -> None:
    manifest = load_manifest(tiny_corpus)
    assert [entry.id for entry in manifest.scenes] == ["maze_000", "hall_000"]
    assert manifest.settings["resolution"] == 32 and manifest.git_revision
    assert "numba" in manifest.versions
    for entry in manifest.scenes:
        data = (tiny_corpus / entry.file).read_bytes()
        assert entry.sha256 == hashlib.sha256(data).hexdigest() and entry.bytes == len(data)
        asset = load_gmdag(tiny_corpus / entry.file)
        assert entry.node_count == asset.nodes.shape[0] and entry.resolution == 32
        assert entry.voxel_size_m == pytest.approx(asset.voxel_size)
        assert entry.compression_ratio == pytest.approx(2 * 32**3 / len(data), rel=1e-2)
        assert entry.source == f"procedural:{entry.family}:seed={entry.seed}"
        assert entry.qualification.verdict == "SKIPPED"
        lo, hi = np.array(entry.source_bounds_m)
        assert (lo >= asset.bmin).all() and (hi <= asset.bmax).all()
    assert sorted(p.name for p in tiny_corpus.parent.iterdir()) == ["corpus"]  # no staging left


def test_same_settings_give_identical_files(tiny_corpus: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    prepare_corpus(again, TINY, families=("maze",), progress=False)
    assert (again / "maze_000.gmdag").read_bytes() == (tiny_corpus / "maze_000.gmdag").read_bytes()


def test_check_root_passes_then_catches_tampering(tiny_corpus: Path, tmp_path: Path) -> None:
    reports, problems = check_root(tiny_corpus)
    assert not problems and all(report["ok"] for report in reports) and len(reports) == 2
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in tiny_corpus.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    data = bytearray((copy / "maze_000.gmdag").read_bytes())
    data[-3] ^= 0x01  # a valid-looking flip in the last leaf or pointer
    (copy / "maze_000.gmdag").write_bytes(bytes(data))
    (copy / "hall_000.gmdag").unlink()
    reports, problems = check_root(copy)
    assert not reports[0]["ok"] and any("missing" in problem for problem in problems)


def test_rebuild_swaps_in_and_failure_keeps_the_old_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "corpus"
    prepare_corpus(folder, TINY, families=("maze",), progress=False)
    before = (folder / "manifest.json").read_text()

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(prepare_module, "compile_source", explode)
    with pytest.raises(RuntimeError, match="disk on fire"):
        prepare_corpus(folder, TINY, families=("apartment",), progress=False)
    assert (folder / "manifest.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus"]
    monkeypatch.undo()
    prepare_corpus(folder, TINY, families=("apartment",), progress=False)
    assert [entry.id for entry in load_manifest(folder).scenes] == ["apartment_000"]
    assert not (folder / "maze_000.gmdag").exists()


def _scripted(monkeypatch: pytest.MonkeyPatch, script: list[tuple[str, int]]) -> None:
    """Replace qualification by a script of (verdict, viable spawns inside the building)."""
    steps = iter(script)

    def fake_qualify(compiled: object, env_settings: object, enabled: bool) -> dict[str, object]:
        verdict, inside = next(steps)
        return {"verdict": verdict, "reason": "scripted", "viable": 3, "viable_inside": inside}

    monkeypatch.setattr(prepare_module, "_qualify", fake_qualify)


def test_failed_qualification_rejects_and_tries_the_next_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _scripted(monkeypatch, [("FAIL", 0), ("PASS", 0), ("PASS", 2)])
    manifest = prepare_corpus(tmp_path / "c", TINY, families=("maze",), progress=False)
    assert [entry.id for entry in manifest.scenes] == ["maze_002"]  # inside spawns preferred
    assert [r["source"] for r in manifest.rejected] == ["procedural:maze:seed=0", "procedural:maze:seed=1"]
    assert manifest.rejected[1]["reason"].startswith("spare")


def test_outside_only_scenes_fill_up_when_seeds_run_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _scripted(monkeypatch, [("PASS", 0), ("FAIL", 0), ("PASS", 0)])
    manifest = prepare_corpus(tmp_path / "c", TINY, families=("hall",), progress=False)
    assert [entry.id for entry in manifest.scenes] == ["hall_000"]
    assert manifest.scenes[0].qualification.model_extra == {"viable_inside": 0}
    _scripted(monkeypatch, [("FAIL", 0)] * 3)
    with pytest.raises(ValueError, match="only 0 of 1 scenes qualified"):
        prepare_corpus(tmp_path / "d", TINY, families=("hall",), progress=False)


def test_unknown_family_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown scene families"):
        prepare_corpus(tmp_path / "c", TINY, families=("castle",), progress=False)


def test_load_manifest_errors(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="no corpus manifest"):
        load_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ManifestError, match="unreadable manifest"):
        load_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"schema_version": 1, "scenes": []}))
    with pytest.raises(ManifestError, match="invalid manifest"):
        load_manifest(tmp_path)


def test_ensure_default_corpus_builds_once(tmp_path: Path) -> None:
    from navi_environment.config import EnvironmentSettings

    settings = EnvironmentSettings(
        compile={"resolution": 32, "count_per_family": 1, "families": ["hall"], "qualify": False}
    )
    folder = ensure_default_corpus(tmp_path / "default", env_settings=settings, progress=False)
    stamp = (folder / "manifest.json").stat().st_mtime_ns
    assert ensure_default_corpus(tmp_path / "default", env_settings=settings, progress=False) == folder
    assert (folder / "manifest.json").stat().st_mtime_ns == stamp
    (folder / "hall_000.gmdag").unlink()  # incomplete -> rebuilt
    ensure_default_corpus(tmp_path / "default", env_settings=settings, progress=False)
    assert (folder / "hall_000.gmdag").is_file()


def test_a_corpus_compiled_by_the_old_void_rule_is_rebuilt(tmp_path: Path) -> None:
    """A manifest without ``exact_clearance_m`` (compiled before doorways were fixed) or with another
    value counts as incomplete, so the default corpus is rebuilt with the current rule."""
    import json

    from navi_environment.config import EnvironmentSettings

    settings = EnvironmentSettings(
        compile={"resolution": 32, "count_per_family": 1, "families": ["hall"], "qualify": False}
    )
    folder = ensure_default_corpus(tmp_path / "default", env_settings=settings, progress=False)
    manifest = folder / "manifest.json"
    record = json.loads(manifest.read_text())
    del record["settings"]["exact_clearance_m"]
    manifest.write_text(json.dumps(record))
    ensure_default_corpus(tmp_path / "default", env_settings=settings, progress=False)
    assert load_manifest(folder).settings["exact_clearance_m"] == settings.compile.exact_clearance_m

"""CLI smoke tests (click CliRunner, tiny resolutions): compile, check, qualify, export, corpus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from click.testing import CliRunner

from navi_environment.cli import main


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """The commands configure structlog for the process; put the defaults back for other tests."""
    yield
    structlog.reset_defaults()


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


def test_compile_check_and_qualify_a_procedural_scene(runner: CliRunner, tmp_path: Path) -> None:
    output = tmp_path / "apartment.gmdag"
    result = runner.invoke(
        main,
        [
            "compile-gmdag",
            "--source",
            "procedural:apartment:seed=2",
            "--output",
            str(output),
            "--resolution",
            "64",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "64^3" in result.output and output.is_file()
    checked = runner.invoke(main, ["check-sdfdag", "--gmdag-file", str(output), "--json"])
    assert checked.exit_code == 0
    report = json.loads(checked.stdout.strip().splitlines()[-1])
    assert report["ok"] and report["files"][0]["resolution"] == 64
    qualified = runner.invoke(main, ["qualify-gmdag", "--gmdag-file", str(output), "--json"])
    summary = json.loads(qualified.stdout.strip().splitlines()[-1])
    assert summary["verdict"] in {"PASS", "FAIL"} and "best_starvation" in summary
    assert qualified.exit_code == (0 if summary["verdict"] == "PASS" else 1)


def test_compile_a_mesh_file_with_repair(runner: CliRunner, tmp_path: Path) -> None:
    mesh = tmp_path / "maze.obj"
    exported = runner.invoke(
        main, ["export-scene", "--source", "procedural:maze:seed=1", "--output", str(mesh)]
    )
    assert exported.exit_code == 0 and mesh.is_file()
    output = tmp_path / "maze.gmdag"
    result = runner.invoke(
        main,
        ["compile-gmdag", "--source", str(mesh), "--output", str(output), "--resolution", "32", "--repair"],
    )
    assert result.exit_code == 0, result.output
    assert runner.invoke(main, ["check-sdfdag", "--gmdag-file", str(output)]).exit_code == 0


def test_bad_sources_fail_with_clear_messages(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(
        main, ["compile-gmdag", "--source", "procedural:castle", "--output", str(tmp_path / "x.gmdag")]
    )
    assert result.exit_code != 0 and "unknown scene family" in result.output
    result = runner.invoke(
        main, ["compile-gmdag", "--source", str(tmp_path / "none.glb"), "--output", str(tmp_path / "y")]
    )
    assert result.exit_code != 0 and "none.glb: file not found" in result.output
    result = runner.invoke(
        main,
        [
            "compile-gmdag",
            "--source",
            "procedural:maze",
            "--output",
            str(tmp_path / "z"),
            "--resolution",
            "48",
        ],
    )
    assert result.exit_code != 0 and "power of two" in result.output


def test_check_rejects_broken_files_and_bad_usage(runner: CliRunner, tmp_path: Path) -> None:
    broken = tmp_path / "broken.gmdag"
    broken.write_bytes(b"GDAX" + bytes(40))
    result = runner.invoke(main, ["check-sdfdag", "--gmdag-file", str(broken)])
    assert result.exit_code == 1 and "wrong magic" in result.output and "FAIL" in result.output
    result = runner.invoke(main, ["check-sdfdag", "--gmdag-file", str(broken), "--gmdag-root", str(tmp_path)])
    assert result.exit_code == 2 and "exactly one" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    assert runner.invoke(main, ["check-sdfdag", "--gmdag-root", str(empty)]).exit_code == 1


def test_corpus_prepare_then_check_root(runner: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    args = ["corpus", "prepare", "--families", "maze,warehouse", "--count-per-family", "1"]
    args += ["--resolution", "32"]
    result = runner.invoke(main, [*args, "--output", str(folder), "--no-qualify"])
    assert result.exit_code == 0, result.output
    assert "2 scenes" in result.output
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [scene["family"] for scene in manifest["scenes"]] == ["maze", "warehouse"]
    assert runner.invoke(main, ["check-sdfdag", "--gmdag-root", str(folder)]).exit_code == 0
    bad = runner.invoke(main, ["corpus", "prepare", "--families", "castle", "--output", str(folder)])
    assert bad.exit_code != 0 and "unknown scene families" in bad.output


def test_help_explains_every_command(runner: CliRunner) -> None:
    for command in (
        ["compile-gmdag"],
        ["check-sdfdag"],
        ["qualify-gmdag"],
        ["export-scene"],
        ["corpus", "prepare"],
    ):
        result = runner.invoke(main, [*command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output
    assert "procedural:<family>" in runner.invoke(main, ["compile-gmdag", "--help"]).output


def test_compile_options_are_the_compile_settings(runner: CliRunner, tmp_path: Path) -> None:
    """``--exact-clearance-m`` reaches the compiler (0 prunes every void block: fewer nodes), and a
    bad value is one usage line naming the setting."""
    from navi_environment.gmdag.reader import load_gmdag

    sizes = {}
    for clearance in ("0", "0.4"):
        out = tmp_path / f"hall-{clearance}.gmdag"
        args = ["compile-gmdag", "--source", "procedural:apartment:seed=0", "--resolution", "64"]
        result = runner.invoke(main, [*args, "--exact-clearance-m", clearance, "--output", str(out)])
        assert result.exit_code == 0, result.output
        sizes[clearance] = load_gmdag(out).nodes.shape[0]
    assert sizes["0"] < sizes["0.4"]
    bad_args = ["compile-gmdag", "--source", "procedural:hall", "--output", str(tmp_path / "x")]
    bad = runner.invoke(main, [*bad_args, "--exact-clearance-m", "-1"])
    assert bad.exit_code == 2 and "compile.exact_clearance_m" in bad.output and "Traceback" not in bad.output

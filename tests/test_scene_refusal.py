"""A scene that cannot host drones is refused with one line by every command that flies drones
(``explore``, ``navi-actor train``/``evaluate``, ``navi-environment serve``); a mesh scene trains."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh
from click.testing import CliRunner, Result

SMALL = {
    "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
    "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
    "NAVI_ENV_EPISODE__MAX_STEPS": "12",
    "NAVI_ACTOR_POLICY__EMBED_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_LAYERS": "1",
    "NAVI_ACTOR_POLICY__SSM_HEAD_DIM": "16",
    "NAVI_ACTOR_ROLLOUT__SEQUENCE_LENGTH": "8",
    "NAVI_ACTOR_PPO__NUM_MINIBATCHES": "2",
}


pytestmark = pytest.mark.usefixtures("restore_process_state")


@pytest.fixture(scope="module")
def solid_scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scene that is solid everywhere: no place a drone can start."""
    from navi_environment.gmdag.writer import compile_sdf_to_gmdag, write_gmdag

    sdf = np.full((16, 16, 16), -1.0, dtype=np.float32)
    asset = compile_sdf_to_gmdag(sdf, np.ones_like(sdf, dtype=np.uint16), np.zeros(3, np.float32), 0.25)
    path = tmp_path_factory.mktemp("solid") / "solid.gmdag"
    write_gmdag(asset, path)
    return path


def _error_line(result: Result) -> str:
    """The one ``Error:`` line of a command refused by a ClickException (no traceback)."""
    assert isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def _refused(result: Result, scene: Path) -> None:
    assert result.exit_code == 1, result.output
    assert f"unusable scene: {scene}: cannot host drones: " in _error_line(result), result.output


def _train(scene: Path, tmp_path: Path, **env: str) -> Result:
    from navi_actor.cli import main

    arguments = [
        "train",
        "--gmdag-file",
        str(scene),
        "--num-actors",
        "2",
        "--total-steps",
        "8",
        "--no-telemetry",
    ]
    return CliRunner().invoke(
        main, arguments, env={**SMALL, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path), **env}
    )


def _explore(scene: Path, **env: str) -> Result:
    from navi_auditor.cli import main

    arguments = [
        "explore",
        "--gmdag-file",
        str(scene),
        "--autopilot",
        "--max-steps",
        "2",
        "--publish",
        "none",
    ]
    return CliRunner().invoke(main, arguments, env={**SMALL, **env})


def test_serve_refuses_a_scene_that_cannot_host_drones(solid_scene: Path) -> None:
    from navi_environment.cli import main

    result = CliRunner().invoke(main, ["serve", "--gmdag-file", str(solid_scene), "--actors", "1"], env=SMALL)
    _refused(result, solid_scene)


def test_explore_refuses_a_scene_that_cannot_host_drones(solid_scene: Path) -> None:
    _refused(_explore(solid_scene), solid_scene)


def test_train_refuses_a_scene_that_cannot_host_drones(solid_scene: Path, tmp_path: Path) -> None:
    _refused(_train(solid_scene, tmp_path), solid_scene)


def test_evaluate_refuses_a_scene_that_cannot_host_drones(solid_scene: Path, tmp_path: Path) -> None:
    from navi_actor.cli import main

    result = CliRunner().invoke(
        main,
        ["evaluate", "--policy", "random", "--gmdag-file", str(solid_scene), "--num-actors", "1"],
        env={**SMALL, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)},
    )
    _refused(result, solid_scene)


BAD_SETTING = {"NAVI_ENV_REWARD__NOVELTY_COLUMNS": "maybe"}


def test_train_names_a_bad_environment_setting_not_the_scene(solid_scene: Path, tmp_path: Path) -> None:
    """A bad ``NAVI_ENV_*`` value is one line naming the setting, not an "unusable scene"."""
    result = _train(solid_scene, tmp_path, **BAD_SETTING)
    assert result.exit_code == 2, result.output  # a usage error, as explore and serve report it
    assert "invalid settings: reward.novelty_columns: " in _error_line(result), result.output
    assert "unusable scene" not in result.output


def test_explore_names_a_bad_environment_setting(solid_scene: Path) -> None:
    """``explore`` read ``NAVI_ENV_*`` unguarded: a bad value ended in a traceback."""
    result = _explore(solid_scene, **BAD_SETTING)
    assert result.exit_code == 2, result.output  # a usage error
    assert "invalid settings: reward.novelty_columns: " in _error_line(result), result.output


@pytest.mark.slow
def test_train_on_a_y_up_mesh_then_evaluate_refuses_a_solid_scene(solid_scene: Path, tmp_path: Path) -> None:
    """An ordinary y-up OBJ compiles the right way up, trains, and evaluation refuses a bad scene."""
    from navi_actor.cli import main as actor
    from navi_environment.cli import main as environment

    box = trimesh.creation.box(bounds=np.array([[0.0, 0.0, 0.0], [8.0, 3.0, 6.0]]))  # 3 m tall along y
    hall = trimesh.Trimesh(box.vertices, box.faces[:, ::-1], process=False)  # inside-facing walls
    mesh = tmp_path / "hall.obj"
    hall.export(mesh)
    scene = tmp_path / "hall.gmdag"
    runner = CliRunner()
    compiled = runner.invoke(
        environment,
        [
            "compile-gmdag",
            "--source",
            str(mesh),
            "--output",
            str(scene),
            "--resolution",
            "32",
            "--up-axis",
            "y",
        ],
    )
    assert compiled.exit_code == 0, compiled.output
    env = {**SMALL, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}
    common = ["--num-actors", "2", "--torch-threads", "1"]
    trained = runner.invoke(
        actor,
        ["train", "--gmdag-file", str(scene), *common, "--total-steps", "32", "--rollout-length", "16",
         "--no-telemetry", "--warm-start-steps", "0"],  # PPO alone: the warm start is tested on its own
        env=env,
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    from navi_auditor.cli import main as auditor

    flown = runner.invoke(
        auditor,
        ["explore", "--gmdag-file", str(scene), "--autopilot", "--max-steps", "20", "--publish", "none"],
        env=SMALL,
    )
    assert flown.exit_code == 0 and "flew 20 steps" in flown.output, flown.output
    checkpoint = next(tmp_path.glob("runs/*/checkpoints/step_*.pt"))
    evaluated = runner.invoke(
        actor, ["evaluate", str(checkpoint), "--gmdag-file", str(solid_scene), *common], env=env
    )
    _refused(evaluated, solid_scene)


@pytest.mark.slow
def test_train_on_a_corpus_built_from_a_mesh_folder(tmp_path: Path) -> None:
    """``corpus prepare --source DIR`` then ``navi-actor train --corpus DIR``."""
    from navi_actor.cli import main as actor
    from navi_environment.cli import main as environment

    folder = tmp_path / "meshes"
    folder.mkdir()
    for name, top in (("hall", [8.0, 6.0, 3.0]), ("tall", [5.0, 5.0, 4.0])):
        box = trimesh.creation.box(bounds=np.array([[0.0, 0.0, 0.0], top]))
        trimesh.Trimesh(box.vertices, box.faces[:, ::-1], process=False).export(folder / f"{name}.ply")
    corpus = tmp_path / "corpus"
    runner = CliRunner()
    arguments = ["corpus", "prepare", "--source", str(folder), "--resolution", "32"]
    prepared = runner.invoke(environment, [*arguments, "--output", str(corpus)])
    assert prepared.exit_code == 0, prepared.output
    trained = runner.invoke(
        actor,
        ["train", "--corpus", str(corpus), "--num-actors", "2", "--torch-threads", "1", "--total-steps", "32",
         "--rollout-length", "16", "--no-telemetry", "--warm-start-steps", "0"],  # PPO alone, as above
        env={**SMALL, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)},
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    assert "finished: " in trained.output

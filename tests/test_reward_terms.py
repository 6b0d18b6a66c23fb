"""scripts/reward_terms.py: the environment's return split into its ten terms, per policy, on one plan.

The split is what a reward study reads (does the reward pay the planner's flight more than the
policy's?), so it must add up: with one drone there is no idle drone-step, and the terms' sum is
exactly the evaluator's mean return.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
from click.testing import CliRunner

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "reward_terms.py"

pytestmark = pytest.mark.usefixtures("restore_process_state")


@pytest.fixture(scope="module")
def hall(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    path = tmp_path_factory.mktemp("scene") / "hall_000.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=0", CompileSettings(), resolution=32).asset, path)
    return path


def test_the_terms_of_each_policy_add_up_to_its_return(hall: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from navi_environment.step.rewards.terms import REWARD_TERMS

    for name, value in {"NAVI_ENV_SENSOR__AZIMUTH_BINS": "32", "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
                        "NAVI_ENV_EPISODE__MAX_STEPS": "30"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    main = runpy.run_path(str(SCRIPT))["main"]
    args = ["--gmdag-file", str(hall), "--policy", "random", "--policy", "heuristic", "--seed", "3",
            "--episodes-per-scene", "2", "--num-actors", "1", "--torch-threads", "1"]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert [row["policy"] for row in rows] == ["random", "heuristic"]
    for row in rows:
        assert row["episodes"] == 2 and row["scene"] == "hall_000" and row["coverage_cells"] > 0
        assert tuple(row["terms"]) == REWARD_TERMS
        assert sum(row["terms"].values()) == pytest.approx(row["terms_total"], abs=0.06)  # rounded terms
        assert row["terms_total"] == pytest.approx(row["return"], abs=0.011)
    assert rows[0]["terms"] != rows[1]["terms"]  # two different flights, not one repeated


def test_a_bad_setting_is_one_line_not_a_traceback(hall: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAVI_ENV_REWARD__NOVELTY_COLUMNS", "maybe")
    main = runpy.run_path(str(SCRIPT))["main"]
    result = CliRunner().invoke(main, ["--gmdag-file", str(hall), "--policy", "random"])
    assert result.exit_code == 2 and "invalid settings: reward.novelty_columns" in result.output
    assert "Traceback" not in result.output


def test_a_broken_scene_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gmdag"
    broken.write_bytes(b"not a gmdag asset")
    main = runpy.run_path(str(SCRIPT))["main"]
    result = CliRunner().invoke(main, ["--gmdag-file", str(broken), "--policy", "random"])
    assert result.exit_code == 1 and "unusable scene: " in result.output, result.output
    assert "Traceback" not in result.output

"""scripts/bench_learning.py end to end on a two-scene corpus: train, judge, re-judge the checkpoint.

The benchmark's numbers are what the issue's learning targets are judged on, so the script itself is
tested: one JSON line with every policy's results, a checkpoint that ``--checkpoint`` judges again to
the same numbers (same seeds, same drones), and a refusal to call a scene the checkpoint trained on
"held out".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "bench_learning.py"
TINY = {
    "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
    "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
    "NAVI_ACTOR_TEMPORAL_CORE": "gru",
    "NAVI_ACTOR_POLICY__EMBED_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_LAYERS": "1",
    "NAVI_ACTOR_ROLLOUT__ROLLOUT_LENGTH": "16",
    "NAVI_ACTOR_ROLLOUT__SEQUENCE_LENGTH": "8",
    "OMP_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}
ARGS = ["--split", "tail", "--holdout", "0.5", "--episodes", "1", "--episode-steps", "20", "--threads", "1"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small procedural halls (32^3): hall_000 trains, hall_001 is held out."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    folder = tmp_path_factory.mktemp("corpus")
    for seed in (0, 1):
        asset = compile_source(f"procedural:hall:seed={seed}", CompileSettings(), resolution=32).asset
        write_gmdag(asset, folder / f"hall_{seed:03d}.gmdag")
    return folder


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *ARGS, *args],
        env={**os.environ, **TINY},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def json_line(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = [row for row in result.stdout.splitlines() if row.startswith("{")]
    parsed: dict[str, Any] = json.loads(line)
    return parsed


@pytest.fixture(scope="module")
def trained(corpus: Path) -> dict[str, Any]:
    """The JSON line of a 3-second training run on hall_000."""
    return json_line(bench("--minutes", "0.05", "--corpus", str(corpus)))


def test_bench_trains_judges_and_rejudges_its_checkpoint_to_the_same_numbers(
    corpus: Path,
    trained: dict[str, Any],
) -> None:
    assert trained["heldout_scenes"] == ["hall_001"] and trained["train_scenes"] == 1
    assert trained["train_steps"] > 0 and Path(trained["checkpoint"]).is_file()
    policies = {"learned_mean_action", "learned_sampled", "random", "heuristic", "frontier"}
    assert set(trained["results"]) == policies
    for block in trained["results"].values():  # every policy flew the same plan: 1 episode x 1 scene
        assert block["episodes"] == 1 and block["scenes"] == 1
        assert block["coverage_cells"]["ci95_low"] <= block["coverage_cells"]["value"]
    assert set(trained["targets_met"]) == {
        "mean_action_coverage_3x_random",
        "mean_action_collisions_0.3x_random",
        "sampled_coverage_3x_random",
        "mean_action_coverage_0.7x_frontier",
    }
    ratio = trained["ratios"]["frontier_coverage_vs_random"]
    frontier, random = trained["results"]["frontier"], trained["results"]["random"]
    expected = frontier["coverage_cells"]["value"] / random["coverage_cells"]["value"]
    assert ratio["value"] == pytest.approx(expected, rel=1e-4)
    assert trained["results"]["heuristic"]["path_m"]["value"] > 0.0  # it leaves its spawn

    again = json_line(bench("--corpus", str(corpus), "--checkpoint", trained["checkpoint"]))
    assert again["train_minutes"] is None and again["train_steps"] == trained["train_steps"]
    assert again["results"] == trained["results"]
    assert again["targets_met"] == trained["targets_met"]


def test_bench_refuses_to_judge_a_checkpoint_on_a_scene_it_trained_on(
    corpus: Path,
    trained: dict[str, Any],
    tmp_path: Path,
) -> None:
    leaky = tmp_path / "leaky"
    leaky.mkdir()
    shutil.copy(corpus / "hall_001.gmdag", leaky / "aaa_000.gmdag")
    shutil.copy(corpus / "hall_000.gmdag", leaky / "hall_000.gmdag")  # the training scene, now held out
    result = bench("--corpus", str(leaky), "--checkpoint", trained["checkpoint"])
    assert result.returncode != 0
    assert "trained on held-out scenes ['hall_000.gmdag']" in result.stderr

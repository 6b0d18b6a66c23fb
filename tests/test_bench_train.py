"""scripts/bench_train.py end to end on one small hall: the throughput benchmark of issue 16's
300 steps/s target prints its JSON line alone on stdout and leaves no run folder behind.

Before this test the script never configured structlog, whose default prints every event (debug
included) on stdout, ahead of the JSON line a reader parses; and each run left a ``navi-bench-*``
folder in the temporary directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_settings import TINY

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "bench_train.py"


@pytest.mark.parametrize("ahead", ["--no-collect-ahead", "--collect-ahead"])
def test_bench_train_prints_its_json_line_alone_and_keeps_no_run_folder(tmp_path: Path, ahead: str) -> None:
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    scene = tmp_path / "hall_000.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=0", CompileSettings(), resolution=32).asset, scene)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--gmdag-file", str(scene), "--iterations", "1", "--num-actors", "2",
         "--threads", "1", ahead],
        env={**os.environ, **TINY, "TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = result.stdout.splitlines()  # the JSON line alone: logs go to stderr
    report = json.loads(line)
    assert report["benchmark"] == "train"
    assert report["env_steps_timed"] == 16 * 2  # one timed rollout of 16 steps x 2 drones
    assert report["actors"] == 2 and report["observation_shape"] == [3, 32, 8]
    assert report["steps_per_second"] > 0 and report["update_efficiency"] > 0
    split = {"env", "policy_forward", "shaping", "ppo_update", "collect_wait", "other"}
    assert set(report["split_seconds"]) == split and report["collect_ahead"] == (ahead == "--collect-ahead")
    assert 0 < report["minibatches_per_update"] <= report["scheduled_minibatches_per_update"]
    assert report["split_seconds"]["env"] > 0  # the collector's own seconds, on its thread when ahead
    assert list(scratch.glob("navi-bench-*")) == []  # the run folder went with the run

"""scripts/bench_realtime.py end to end, tiny: the real-time environment loop, a real brain process
per variant, one JSON line whose figures come from what was executed.

The issue's closing table is measured with this script, so the script itself is tested: the hold
baseline and the chunked brain both act on the planned episodes, the chunked brain leaves no tick to
the fallback at zero latency, and a checkpoint without a chunk head is refused in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from realtime_policy import SMALL_REALTIME_POLICY

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.models import NaviPolicy, PolicyConfig

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "bench_realtime.py"
TINY = SMALL_REALTIME_POLICY


def checkpoint(path: Path, chunk: int) -> Path:
    torch.manual_seed(0)
    config = PolicyConfig(action_chunk=chunk, **TINY)  # type: ignore[arg-type]
    return save_checkpoint(Checkpoint(model=NaviPolicy(config).state_dict(), policy_config=config), path)


def run_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--resolution", "32", "--drones", "2", "--ticks", "10", *args],
        capture_output=True, text=True, timeout=400, cwd=ROOT, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_the_bench_measures_the_hold_baseline_and_the_chunked_brain(tmp_path: Path) -> None:
    chunked = checkpoint(tmp_path / "chunked.pt", 6)
    result = run_bench(
        "--checkpoint", str(chunked), "--latencies", "0", "--variants", "sequential,realtime_chunks"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["bench"] == "realtime" and line["action_chunk"] == 6 and line["sensor"] == [32, 8]
    rows = line["results"]["0"]
    assert set(rows) == {"sequential", "realtime_chunks"}
    for row in rows.values():
        assert row["ticks"] == 10 and 0.0 <= row["fallback_fraction"] <= 1.0
        assert row["mean_action_age"] >= 1.0 and row["jerk"] >= 0.0 and 0.0 <= row["coverage"] <= 1.0
        flown, flown_abs = row["action_mean"], row["action_abs_mean"]
        assert len(flown) == len(flown_abs) == 4
        assert all(abs(m) <= a + 1e-9 <= 1.0 + 1e-9 for m, a in zip(flown, flown_abs, strict=True))
        assert flown[0] > 0.1  # a fresh policy cruises forward (init_forward_mean): what was executed
    assert rows["sequential"]["brain_missed_periods"] is None  # no control loop to miss anything
    assert rows["realtime_chunks"]["brain_missed_periods"] is not None
    assert rows["realtime_chunks"]["fallback_fraction"] == 0.0  # the chunk always covered the next tick
    assert "realtime_chunks" in result.stderr  # the readable table


@pytest.mark.slow
def test_a_checkpoint_without_a_chunk_head_is_refused_in_one_line(tmp_path: Path) -> None:
    result = run_bench("--checkpoint", str(checkpoint(tmp_path / "plain.pt", 1)), "--latencies", "0")
    assert result.returncode == 2
    assert "has no chunk head" in result.stderr and "Traceback" not in result.stderr

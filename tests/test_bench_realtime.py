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
from typing import Any

import pytest
import torch
from click.testing import CliRunner, Result
from realtime_policy import SMALL_REALTIME_POLICY
from script_module import load_script

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.models import NaviPolicy, PolicyConfig

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "bench_realtime.py"
TINY = SMALL_REALTIME_POLICY


def checkpoint(path: Path, chunk: int) -> Path:
    torch.manual_seed(0)
    config = PolicyConfig(visit_input=False, action_chunk=chunk, **TINY)  # type: ignore[arg-type]
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
        "--checkpoint", str(chunked), "--latencies", "0", "--variants", "sequential,realtime_chunks",
        "--guard",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["bench"] == "realtime" and line["action_chunk"] == 6 and line["sensor"] == [32, 8]
    assert line["guard"] is True  # the environment's collision guard ran in every variant
    rows = line["results"]["0"]
    assert set(rows) == {"sequential", "realtime_chunks"}
    for row in rows.values():
        assert row["ticks"] == 10 and 0.0 <= row["fallback_fraction"] <= 1.0
        assert 0.0 <= row["guarded_fraction"] <= 1.0
        assert row["mean_action_age"] >= 1.0 and row["jerk"] >= 0.0 and 0.0 <= row["coverage"] <= 1.0
        flown, flown_abs = row["action_mean"], row["action_abs_mean"]
        assert len(flown) == len(flown_abs) == 4
        assert all(abs(m) <= a + 1e-9 <= 1.0 + 1e-9 for m, a in zip(flown, flown_abs, strict=True))
        assert len(row["cells_per_drone"]) == 2 and all(cells >= 1 for cells in row["cells_per_drone"])
        assert flown[0] > 0.1  # a fresh policy cruises forward (init_forward_mean): what was executed
    assert rows["sequential"]["brain_missed_periods"] is None  # no control loop to miss anything
    assert rows["realtime_chunks"]["brain_missed_periods"] is not None
    assert rows["realtime_chunks"]["fallback_fraction"] == 0.0  # the chunk always covered the next tick
    assert "realtime_chunks" in result.stderr  # the readable table


def test_a_checkpoint_without_a_chunk_head_is_refused_in_one_line(tmp_path: Path) -> None:
    result = invoke("--checkpoint", str(checkpoint(tmp_path / "plain.pt", 1)), "--latencies", "0")
    assert result.exit_code == 2
    assert "has no chunk head" in result.output and "Traceback" not in result.output


def _script_module() -> Any:
    return load_script("bench_realtime")


def invoke(*args: str) -> Result:
    """The bench's command run in-process, as click runs it (refusals come before anything is built)."""
    tiny = ["--resolution", "32", "--drones", "2", "--ticks", "10"]
    return CliRunner().invoke(_script_module().main, [*tiny, *args])


def _row(cells: list[float], **figures: float) -> dict[str, object]:
    base = {"brain_missed_periods": 0.0, "collision_rate": 0.0, "jerk": 0.1}
    return base | figures | {"cells_per_drone": cells, "coverage": sum(cells) / len(cells) / 100.0}


def test_the_coverage_ratios_are_paired_over_the_planned_episodes() -> None:
    bench = _script_module()
    zero = _row([10.0, 20.0, 30.0, 40.0])
    chunks = _row([9.0, 18.0, 27.0, 36.0])  # 0.9x on every episode: a paired interval of width 0
    hold = _row([3.0, 4.0, 5.0, 6.0])
    targets = bench._targets(
        {"0": {"realtime_chunks": zero}, "2": {"realtime_chunks": chunks, "sequential": hold}}
    )
    to_zero = targets["coverage_ratio_chunks_to_zero_latency"]
    assert to_zero["value"] == to_zero["ci95_low"] == to_zero["ci95_high"] == pytest.approx(0.9)
    assert targets["coverage_at_least_0_8x_zero_latency"] is True
    to_hold = targets["coverage_ratio_chunks_to_hold"]
    assert (
        to_hold["value"] == pytest.approx(90.0 / 18.0)
        and to_hold["ci95_low"] < to_hold["value"] < to_hold["ci95_high"]
    )
    # drones that disagree widen the interval around the same point ratio
    noisy = _row([5.0, 25.0, 20.0, 40.0])
    spread = bench.coverage_ratio(noisy, zero)
    assert spread["value"] == pytest.approx(0.9) and spread["ci95_low"] < 0.8 < spread["ci95_high"]


def _run_row(cells: list[float], collision_rate: float, **figures: object) -> dict[str, object]:
    base: dict[str, object] = {
        "brain_missed_periods": 0.0, "env_missed_ticks": 0, "fallback_fraction": 0.0, "guarded_fraction": 0.0,
        "mean_action_age": 3.0,
        "jerk": 0.02, "coverage": sum(cells) / len(cells) / 100.0, "collision_rate": collision_rate,
        "ticks": 10, "brain_delay_ticks": 4.0, "action_mean": [0.5, 0.0, 0.0, 0.1],
        "action_abs_mean": [0.5, 0.0, 0.2, 0.2],
    }  # fmt: skip
    return base | figures | {"cells_per_drone": cells}


def test_plans_pool_into_one_row_whose_ratios_stay_paired_within_a_plan() -> None:
    bench = _script_module()
    first = _run_row([10.0, 20.0], 0.0, env_missed_ticks=1)
    second = _run_row([30.0, 40.0, 50.0, 60.0], 0.3, brain_missed_periods=2.0, brain_delay_ticks=5.0,
                      guarded_fraction=0.6)  # fmt: skip
    row = bench.pooled([first, second])
    assert row["guarded_fraction"] == pytest.approx(0.4)
    assert row["cells_per_drone"] == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    assert row["plan_per_drone"] == [0, 0, 1, 1, 1, 1]
    assert row["collision_rate"] == pytest.approx(0.2)  # weighted by drone-ticks: 20 and 40
    assert row["brain_missed_periods"] == 2.0 and row["env_missed_ticks"] == 1 and row["ticks"] == 20
    assert row["brain_delay_ticks"] == 5.0 and row["action_mean"] == pytest.approx([0.5, 0.0, 0.0, 0.1])
    sequential = bench.pooled([first | {"brain_missed_periods": None}, second])
    assert sequential["brain_missed_periods"] is None  # no control loop in some run: nothing to add
    # one plan scales by 0.5, the other by 1.0: resampling within plans keeps both in every resample
    later = bench.pooled([_run_row([5.0, 10.0], 0.0), _run_row([30.0, 40.0, 50.0, 60.0], 0.0)])
    ratio = bench.coverage_ratio(later, row)
    assert ratio["value"] == pytest.approx(195.0 / 210.0)
    assert 185.0 / 210.0 < ratio["ci95_low"] <= ratio["value"] <= ratio["ci95_high"] < 1.0
    assert bench.pooled([first])["plan_per_drone"] == [0, 0]


def test_bad_seed_and_latency_lists_are_refused_in_one_line() -> None:
    result = invoke("--seed", "0,x", "--latencies", "0")
    assert result.exit_code == 2
    assert "--seed takes comma-separated integers" in result.output and "Traceback" not in result.output
    empty = invoke("--seed", ",", "--latencies", "0")
    assert empty.exit_code == 2 and "--seed needs at least one value" in empty.output
    latency = invoke("--latencies", "0,two")
    assert latency.exit_code == 2 and "--latencies takes comma-separated integers" in latency.output
    assert "Traceback" not in latency.output

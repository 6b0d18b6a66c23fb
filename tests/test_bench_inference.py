"""scripts/bench_inference.py on the CPU: one JSON line with the brain's inference time per drone count,
and the delay it means in control periods."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
from click.testing import CliRunner

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_inference.py"

pytestmark = pytest.mark.usefixtures("restore_process_state")


def test_bench_inference_reports_the_cpu_reference_per_drone_count() -> None:
    main = runpy.run_path(str(SCRIPT))["main"]
    result = CliRunner().invoke(
        main, ["--drones", "1,2", "--calls", "3", "--warmup", "1", "--chunk", "3", "--hz", "1000"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["benchmark"] == "inference" and report["chunk"] == 3 and report["sensor"] == [256, 48]
    assert list(report["results"]) == ["cpu"] and "speedup_p50" not in report
    for count in ("1", "2"):
        timing = report["results"]["cpu"][count]
        assert 0 < timing["p50_ms"] <= timing["p95_ms"]
        # at 1000 Hz a period is 1 ms: the delay in periods is the 95th percentile rounded up
        assert timing["periods_p95"] == -(-timing["p95_ms"] // 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--drones", "abc"], "comma-separated whole numbers"),
        (["--drones", "0"], "each >= 1"),
        (["--calls", "0"], "0 is not in the range x>=1"),
        (["--device", "bogus"], "--device bogus: not a torch device"),
    ],
)
def test_bad_options_are_one_line(args: list[str], message: str) -> None:
    main = runpy.run_path(str(SCRIPT))["main"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and message in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)

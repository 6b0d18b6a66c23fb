"""``train --logger`` and ``export-metrics``: TensorBoard event files (read back with tensorboard's own
EventAccumulator) and W&B offline runs hold metrics.jsonl's scalar names and values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tiny_cli import TINY_POLICY_ENV

from navi_actor.cli import main
from navi_actor.metrics_loggers import EXPORT_DIR, TENSORBOARD_DIR, read_metrics, scalars, wandb_mode

TINY_ENV = dict(TINY_POLICY_ENV)
TRAIN = [
    "train", "--environment-backend", "point", "--num-actors", "2", "--torch-threads", "1",
    "--temporal-core", "gru",
    "--total-steps", "48", "--rollout-length", "8", "--no-telemetry", "--no-auto-resume", "--seed", "1",
]  # fmt: skip


pytestmark = pytest.mark.usefixtures("restore_process_state")


def invoke(artifacts: Path, *args: str, **extra_env: str) -> Result:
    env = TINY_ENV | {"NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(artifacts)} | extra_env
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def read_events(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar series of an event folder, through tensorboard's own reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    accumulator.Reload()
    return {
        tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
        for tag in accumulator.Tags()["scalars"]
    }


def expected_series(run: Path) -> dict[str, list[tuple[int, float]]]:
    """What metrics.jsonl says the curves are: finite values at each line's charts/step_id."""
    series: dict[str, list[tuple[int, float]]] = {}
    for record in read_metrics(run / "metrics.jsonl"):
        for tag, value in scalars(record).items():
            series.setdefault(tag, []).append((int(record["charts/step_id"]), value))
    return series


def assert_same_curves(actual: dict[str, list[tuple[int, float]]], run: Path) -> None:
    expected = expected_series(run)
    assert set(actual) == set(expected)
    for tag, points in expected.items():
        steps, values = zip(*actual[tag], strict=True)
        assert list(steps) == [step for step, _ in points], tag
        assert all(
            math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6) for a, (_, b) in zip(values, points, strict=True)
        )


@pytest.mark.slow  # ~15 s on the loaded 2-core box, most of it importing torch and tensorboard
def test_train_with_tensorboard_logger_writes_the_metrics_names(tmp_path: Path) -> None:
    result = invoke(tmp_path, *TRAIN, "--logger", "tensorboard")
    assert result.exit_code == 0, result.output
    (run,) = tmp_path.glob("runs/*")
    assert json.loads((run / "manifest.json").read_text())["settings"]["train"]["logger"] == "tensorboard"
    curves = read_events(run / TENSORBOARD_DIR)
    for tag in ("charts/step_id", "charts/sps", "charts/reward_ema", "losses/policy_loss", "losses/entropy"):
        assert tag in curves, sorted(curves)
    assert any(tag.startswith("reward/") for tag in curves) and any(tag.startswith("time/") for tag in curves)
    assert [step for step, _ in curves["charts/step_id"]] == [16, 32, 48]
    assert_same_curves(curves, run)


def test_export_metrics_converts_a_finished_run(tmp_path: Path) -> None:
    assert invoke(tmp_path, *TRAIN).exit_code == 0
    (run,) = tmp_path.glob("runs/*")
    assert not (run / TENSORBOARD_DIR).exists()  # --logger none (the default) writes no events
    exported = invoke(tmp_path, "export-metrics", run.name, "--format", "tensorboard")
    assert exported.exit_code == 0, exported.output
    assert "wrote 3 metrics lines" in exported.output
    assert_same_curves(read_events(run / EXPORT_DIR), run)
    again = CliRunner().invoke(main, ["export-metrics", str(run)])
    assert again.exit_code == 1 and "already holds TensorBoard event files" in again.output
    missing = CliRunner().invoke(
        main,
        ["export-metrics", str(tmp_path / "nope")],
        env={"NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)},
    )
    assert missing.exit_code == 2 and "neither a folder nor a run id" in missing.output


def test_read_metrics_skips_a_torn_last_line_only(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"charts/step_id": 8}\n{"charts/step_id": 16, "x": nu')
    assert read_metrics(path) == [{"charts/step_id": 8}]
    path.write_text('{"charts/step_id": 8\n{"charts/step_id": 16}\n')
    with pytest.raises(ValueError, match=r"metrics\.jsonl:1"):
        read_metrics(path)


def test_wandb_mode_is_offline_without_a_login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / ".netrc"))
    assert wandb_mode() == "offline"
    (tmp_path / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password secret\n")
    (tmp_path / ".netrc").chmod(0o600)
    assert wandb_mode() == "online"
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert wandb_mode() == "disabled"


@pytest.mark.slow
def test_train_with_wandb_logger_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """W&B without a login: an offline run in <run>/wandb/ holding the same scalar names."""
    pytest.importorskip("wandb")
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / ".netrc"))
    result = invoke(tmp_path, *TRAIN, "--logger", "wandb")
    assert result.exit_code == 0, result.output
    (run,) = tmp_path.glob("runs/*")
    (offline,) = (run / "wandb").glob("offline-run-*/run-*.wandb")
    history = wandb_history(offline)
    lines = read_metrics(run / "metrics.jsonl")
    assert [row["_step"] for row in history] == [line["charts/step_id"] for line in lines] == [16, 32, 48]
    for row, line in zip(history, lines, strict=True):
        assert set(row) - {"_step", "_runtime", "_timestamp"} == set(scalars(line))
        assert math.isclose(row["losses/policy_loss"], line["losses/policy_loss"], rel_tol=1e-6)


def wandb_history(path: Path) -> list[dict[str, float]]:
    """The history rows of an offline ``run-*.wandb`` file.

    The file is W&B's record log (``:W&B`` header, then LevelDB-log chunks of protobuf ``Record``s in
    32 KiB blocks); wandb ships the protobuf classes but no Python reader any more, so this is one.
    """
    from wandb.proto import wandb_internal_pb2

    data, block, position, pending = path.read_bytes(), 32768, 7, b""
    assert data[:4] == b":W&B"
    rows = []
    while position + 7 <= len(data):
        if block - position % block < 7:  # too little room left for a chunk header: block padding
            position += block - position % block
            continue
        length, kind = int.from_bytes(data[position + 4 : position + 6], "little"), data[position + 6]
        chunk, position = data[position + 7 : position + 7 + length], position + 7 + length
        if kind == 0:
            break
        pending = chunk if kind in (1, 2) else pending + chunk  # FULL / FIRST start a record
        if kind in (1, 4):  # FULL / LAST end one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            if record.WhichOneof("record_type") == "history":
                items = {
                    item.key or "/".join(item.nested_key): json.loads(item.value_json)
                    for item in record.history.item
                }
                rows.append(items | {"_step": record.history.step.num})
    return rows


@pytest.mark.slow
def test_wandb_falls_back_to_offline_when_the_server_is_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key that points at no server must not stop training: the run logs offline instead."""
    pytest.importorskip("wandb")
    from navi_actor import metrics_loggers

    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WANDB_API_KEY", "a" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # discard port: connection refused
    monkeypatch.setattr(metrics_loggers, "ONLINE_INIT_TIMEOUT_S", 2.0)
    logger = metrics_loggers.WandbLogger(tmp_path / "run", "fallback", {})
    assert logger.mode == "offline"
    logger.log({"charts/step_id": 8.0, "losses/value_loss": 0.5})
    logger.close()
    (offline,) = (tmp_path / "run" / "wandb").glob("offline-run-*/run-*.wandb")
    (row,) = wandb_history(offline)
    assert row["_step"] == 8 and row["losses/value_loss"] == 0.5

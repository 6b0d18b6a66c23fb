"""What a person sees from ``navi-actor train``: plain first lines, one compact progress line with
time, ETA, reward (no NaN) and the last checkpoint, and the whole structured log in the run folder."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import structlog
from click.testing import CliRunner
from tiny_cli import TINY_POLICY_ENV

from navi_actor.cli import main
from navi_actor.runners.console import TerminalSink
from navi_actor.runners.progress import RunProgress, TrainingCounters, carry_forward, progress_line
from navi_actor.runners.rollout_collector import RolloutStats
from navi_common.logging import configure_logging, log_to_file

TINY_ENV = dict(TINY_POLICY_ENV)
TRAIN = ["train", "--environment-backend", "point", "--num-actors", "2", "--torch-threads", "1",
         "--temporal-core", "gru", "--total-steps", "64", "--rollout-length", "16",
         "--no-telemetry"]  # fmt: skip


pytestmark = pytest.mark.usefixtures("restore_process_state")


def _first_words(output: str, count: int = 4) -> str:
    """The first lines meant for people (CliRunner is no terminal, so JSON log lines interleave)."""
    return "\n".join([line for line in output.splitlines() if not line.startswith("{")][:count])


def _stats(returns: list[float]) -> RolloutStats:
    n = len(returns)
    return RolloutStats(32, returns, returns, [10.0] * n, [0.5] * n, 0.0, 1.0, {}, {})


def test_reward_ema_starts_from_the_mean_of_the_first_episodes_not_the_first_one() -> None:
    counters = TrainingCounters()
    counters.record(_stats([-152.9, -10.0, -20.0, -21.1]), alpha=0.05, seconds=1.0)
    assert counters.reward_ema == pytest.approx(-51.0)
    counters.record(_stats([0.0]), alpha=0.05, seconds=1.0)
    assert counters.reward_ema == pytest.approx(-51.0 * 4 / 5)  # still the running mean (n < 1/alpha)
    counters.episode_count = 100  # long after: the EMA weight
    counters.record(_stats([0.0]), alpha=0.05, seconds=1.0)
    assert counters.reward_ema == pytest.approx(-51.0 * 4 / 5 * 0.95)


def test_progress_line_shows_time_eta_checkpoint_and_no_nan_before_episodes_end() -> None:
    record = {"charts/step_id": 12288.0, "charts/sps": 98.4, "charts/episodes": 0.0,
              "charts/reward_ema": float("nan"), "charts/coverage": float("nan"),
              "charts/collision_rate": 0.012, "losses/policy_loss": -0.01, "losses/value_loss": 0.45,
              "losses/entropy": 5.6, "losses/approx_kl": 0.008}  # fmt: skip
    run = RunProgress(elapsed_seconds=83, steps_this_run=4096, eta_seconds=3725, last_checkpoint_step=8192)
    line = progress_line(record, run)
    assert "nan" not in line.lower()
    for part in ("0:01:23", "ETA 1:02:05", "step 12,288 (+4,096) 98/s", "episodes 0", "reward \u2013",
                 "collisions 1.2%", "pi -0.010", "ckpt 8,192"):  # fmt: skip
        assert part in line, (part, line)
    assert "ETA" not in progress_line(record, RunProgress(83, 4096))


def test_terminal_sink_rewrites_one_status_in_place_and_keeps_notes() -> None:
    stream = io.StringIO()
    sink = TerminalSink(stream, width=200)
    sink.note("resuming from model v003")
    sink.status("step 1")
    sink.status("step 2")
    sink.close()
    text = stream.getvalue()
    assert text.count("\n") == 2  # the note and the final line end; status updates do not scroll
    assert text.endswith("\r\x1b[2Kstep 2\n")


def test_a_narrow_terminal_wraps_the_status_at_separators_and_rewrites_every_line() -> None:
    stream = io.StringIO()
    sink = TerminalSink(stream, width=25)
    sink.status("0:00:29 | step 2,304 | reward -1.5 | ckpt 256")
    assert stream.getvalue().endswith("0:00:29 | step 2,304\nreward -1.5 | ckpt 256")
    sink.status("0:00:30 | step 2,400 | reward -1.4 | ckpt 256")
    assert "\r\x1b[2K\x1b[1A\x1b[2K0:00:30 | step 2,400\nreward -1.4 | ckpt 256" in stream.getvalue()


def test_console_floor_keeps_info_in_the_run_log_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("info", json=True, production=False, console_level="warning")
    log = structlog.get_logger()
    with log_to_file(tmp_path / "events.jsonl"):
        log.info("quiet.info")
        log.warning("loud.warning")
    console = capsys.readouterr().err
    assert "loud.warning" in console and "quiet.info" not in console
    events = [json.loads(line)["event"] for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert events == ["quiet.info", "loud.warning"]


def test_train_says_what_it_starts_from_and_logs_every_event_to_the_run_folder(tmp_path: Path) -> None:
    env = {**TINY_ENV, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}
    first = CliRunner().invoke(main, TRAIN, env=env, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    lines = _first_words(first.output, 99).splitlines()
    assert lines[0].startswith("navi-actor train: building the point environment")
    assert "a fresh rayvit/gru policy" in "\n".join(lines[:4]), lines[:4]
    assert any(" | ETA " in line and "ckpt" in line for line in lines), first.output
    (run,) = tmp_path.glob("runs/*")
    events = [json.loads(line)["event"] for line in (run / "logs" / "events.jsonl").read_text().splitlines()]
    assert events[0] == "actor.train.started" and events[-1] == "actor.train.finished"
    assert "actor.checkpoint.saved" in events
    second = CliRunner().invoke(main, TRAIN, env=env, catch_exceptions=False)
    head = _first_words(second.output)
    assert f"resuming from model v001 (run {run.name}, step 64, trained on the point environment)" in head
    (resumed_run,) = set(tmp_path.glob("runs/*")) - {run}
    log_lines = (resumed_run / "logs" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line)["event"] for line in log_lines]
    assert events[:2] == ["actor.train.resuming", "actor.train.started"]  # decided before the folder existed


@pytest.mark.parametrize("ending", ["killed", "interrupted"])
def test_auto_resume_continues_a_killed_or_interrupted_run_skipping_a_torn_checkpoint(
    tmp_path: Path, ending: str
) -> None:
    env = {**TINY_ENV, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}
    env |= {"NAVI_ACTOR_CHECKPOINT__AUTO_PROMOTE": "false", "NAVI_ACTOR_CHECKPOINT__EVERY_STEPS": "32"}
    assert CliRunner().invoke(main, TRAIN, env=env, catch_exceptions=False).exit_code == 0
    (run,) = tmp_path.glob("runs/*")
    older = run / "checkpoints" / "step_000000000032.pt"
    assert CliRunner().invoke(main, ["promote", str(older)], env=env).exit_code == 0  # registry: step 32
    marker = run / "finished.json"
    assert json.loads(marker.read_text())["interrupted"] is False  # it spent its budget ...
    if ending == "killed":
        marker.unlink()  # ... as after kill -9: the run never finished
    else:
        marker.write_text(json.dumps({"step_id": 64, "interrupted": True}))  # ... as after Ctrl+C
    (run / "checkpoints" / "step_000000000096.pt").write_bytes(b"torn")  # a newer file, torn mid-write
    resumed = CliRunner().invoke(main, TRAIN, env=env, catch_exceptions=False)
    assert resumed.exit_code == 0, resumed.output
    head = _first_words(resumed.output)
    assert f"continuing run {run.name}, which was {ending}, from its newest valid checkpoint " in head
    assert "step_000000000064.pt (step 64" in head and "skipped unreadable step_000000000096.pt" in head
    (newest,) = set(tmp_path.glob("runs/*")) - {run}
    manifest = json.loads((newest / "manifest.json").read_text())
    assert manifest["start_step_id"] == 64 and manifest["resumed_from"].endswith("step_000000000064.pt")
    assert (newest / "finished.json").is_file()


def test_a_run_that_spent_its_budget_is_left_to_the_registry(tmp_path: Path) -> None:
    env = {**TINY_ENV, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}
    env |= {"NAVI_ACTOR_CHECKPOINT__AUTO_PROMOTE": "false", "NAVI_ACTOR_CHECKPOINT__EVERY_STEPS": "32"}
    assert CliRunner().invoke(main, TRAIN, env=env, catch_exceptions=False).exit_code == 0
    (run,) = tmp_path.glob("runs/*")
    CliRunner().invoke(main, ["promote", str(run / "checkpoints" / "step_000000000032.pt")], env=env)
    resumed = CliRunner().invoke(main, TRAIN, env=env, catch_exceptions=False)
    assert "resuming from model v001" in _first_words(resumed.output)


def test_episode_metrics_are_carried_forward_while_no_episode_ends() -> None:
    shown = carry_forward({}, {"charts/coverage": 0.4, "charts/step_id": 1.0})
    shown = carry_forward(shown, {"charts/coverage": float("nan"), "charts/step_id": 2.0})
    assert shown == {"charts/coverage": 0.4, "charts/step_id": 2.0}
    assert carry_forward(shown, {"charts/coverage": 0.5})["charts/coverage"] == 0.5


def test_a_signal_while_the_environment_builds_ends_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from navi_actor.runners import env_factory

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # what Ctrl+C / SIGTERM raise during a minutes-long corpus build

    monkeypatch.setattr(env_factory, "build_environment", interrupted)
    env = {**TINY_ENV, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}
    result = CliRunner().invoke(main, TRAIN, env=env)
    assert result.exit_code == 0 and result.exception is None
    assert result.output.splitlines()[-1] == "train: stopped before training started; nothing to save"
    assert not list(tmp_path.glob("runs/*"))


def test_train_turns_sigterm_into_the_ctrl_c_path(tmp_path: Path) -> None:
    import signal

    env = {**TINY_ENV, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}
    assert CliRunner().invoke(main, TRAIN, env=env, catch_exceptions=False).exit_code == 0
    handler = signal.getsignal(signal.SIGTERM)
    assert callable(handler)
    with pytest.raises(KeyboardInterrupt):
        handler(signal.SIGTERM, None)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN  # a second SIGTERM cannot break the save

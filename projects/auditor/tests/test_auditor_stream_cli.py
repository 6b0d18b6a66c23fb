"""``navi-auditor record`` / ``replay`` wiring: files, refusals and messages."""

from __future__ import annotations

import json

from click.testing import CliRunner

from navi_auditor.cli import main
from navi_auditor.streams import StreamReader, StreamWriter
from navi_common import free_tcp_endpoint


def test_record_with_a_duration_writes_a_closed_empty_recording(tmp_path) -> None:
    out = tmp_path / "quiet.navirec"
    result = CliRunner().invoke(
        main, ["record", "--sub-endpoints", free_tcp_endpoint(), "--out", str(out), "--duration", "0.3"]
    )
    assert result.exit_code == 0, result.output
    assert "recorded 0 messages" in result.output
    report = StreamReader(out).scan()
    assert report.messages == 0 and report.has_index
    again = CliRunner().invoke(
        main, ["record", "--sub-endpoints", free_tcp_endpoint(), "--out", str(out), "--duration", "0.1"]
    )
    assert again.exit_code != 0 and "exists" in again.output


def test_record_refuses_a_malformed_endpoint_in_one_line(tmp_path) -> None:
    args = ["record", "--sub-endpoints", "garbage", "--out", str(tmp_path / "r.navirec"), "--duration", "0.1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and result.exception is not None
    assert isinstance(result.exception, SystemExit)  # a ClickException, not a traceback
    assert "cannot subscribe to garbage" in result.output


def test_replay_flat_out_without_waiting(tmp_path) -> None:
    path = tmp_path / "s.navirec"
    with StreamWriter(path, fsync=False) as writer:
        for i in range(3):
            writer.append("telemetry_event_v2", b"payload", 100.0 + 10 * i)
    args = ["replay", "--input", str(path), "--pub-endpoint", free_tcp_endpoint(), "--speed", "0"]
    result = CliRunner().invoke(main, [*args, "--subscriber-wait-ms", "0"])
    assert result.exit_code == 0, result.output
    assert "replayed 3 messages" in result.output  # 20 s of recorded time sent at once
    negative = CliRunner().invoke(main, ["replay", "--input", str(path), "--speed", "-1"])
    assert negative.exit_code != 0 and "--speed" in negative.output
    waiting = CliRunner().invoke(main, [*args[:-2], "--speed", "1", "--subscriber-wait-ms", "50"])
    assert waiting.exit_code != 0 and "subscribers" in waiting.output  # a REQ never waits forever


def test_inspect_reports_a_torn_tail(tmp_path) -> None:
    path = tmp_path / "s.navirec"
    with StreamWriter(path, chunk_bytes=1024, fsync=False) as writer:
        for i in range(30):
            writer.append("t", bytes(100), float(i))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    result = CliRunner().invoke(main, ["inspect", str(path)])
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert 0 < summary["messages"] < 30 and summary["damage"] and not summary["closed_cleanly"]


def test_a_taken_port_is_explained(tmp_path) -> None:
    from navi_common import Publisher

    path = tmp_path / "s.navirec"
    StreamWriter(path, fsync=False).close()
    endpoint = free_tcp_endpoint()
    with Publisher(endpoint):
        result = CliRunner().invoke(main, ["replay", "--input", str(path), "--pub-endpoint", endpoint])
    assert result.exit_code != 0 and f"cannot bind {endpoint}" in result.output


def test_record_and_replay_endpoints_come_from_the_settings(tmp_path, monkeypatch) -> None:
    """Without the options, record subscribes to ``recording.sub_endpoints`` and replay binds
    ``recording.pub_endpoint`` (here from the environment); a given option wins."""
    from navi_auditor.settings import AuditorSettings, ExploreSettings
    from navi_contracts import limits as contract_limits

    monkeypatch.setattr(contract_limits, "dotenv_path", lambda: tmp_path / "absent.env")
    defaults = AuditorSettings().recording
    assert defaults.sub_endpoints == ["tcp://localhost:5559", "tcp://localhost:5557"]
    assert defaults.pub_endpoint == "tcp://127.0.0.1:5559"
    path = tmp_path / "s.navirec"
    StreamWriter(path, fsync=False).close()
    monkeypatch.setenv("NAVI_AUDITOR_RECORDING__PUB_ENDPOINT", "tcp://no-such-host-xyz:1")
    args = ["replay", "--input", str(path), "--speed", "0", "--subscriber-wait-ms", "0"]
    from_env = CliRunner().invoke(main, args)
    assert from_env.exit_code != 0 and "cannot bind tcp://no-such-host-xyz:1" in from_env.output
    given = CliRunner().invoke(main, [*args, "--pub-endpoint", free_tcp_endpoint()])
    assert given.exit_code == 0, given.output
    assert [ExploreSettings(publish=off).publish for off in ("none", "None", "", "null")] == [None] * 4

"""structlog setup: JSON lines when stderr is not a TTY, console rendering on request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from navi_common import configure_logging
from navi_common.logging import log_to_file


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def test_json_when_stderr_is_not_a_tty(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(level="info", production=False)  # pytest's captured stderr is not a TTY
    structlog.get_logger().info("contracts.test.happened", answer=42)
    structlog.get_logger().debug("contracts.test.hidden")
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["event"] == "contracts.test.happened"
    assert record["answer"] == 42
    assert record["level"] == "info"
    assert "timestamp" in record


def test_console_rendering_when_forced(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(level="debug", json=False, production=False)
    structlog.get_logger().debug("contracts.test.console", where="here")
    err = capsys.readouterr().err
    assert "contracts.test.console" in err
    with pytest.raises(json.JSONDecodeError):
        json.loads(err)


def test_unknown_level_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure_logging(level="loud")


def test_log_to_file_keeps_the_events_of_the_block_as_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(level="info", production=False)
    log = structlog.get_logger()
    log.info("contracts.test.before")
    path = tmp_path / "run" / "logs" / "events.jsonl"
    with log_to_file(path):
        log.info("contracts.test.inside", where=Path("/x"))
        log.debug("contracts.test.filtered")
    log.info("contracts.test.after")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["event"] for r in records] == ["contracts.test.inside"]
    assert records[0]["where"] == "/x" and records[0]["level"] == "info" and "timestamp" in records[0]
    assert "contracts.test.after" in capsys.readouterr().err  # the console still gets everything


def test_log_to_file_works_without_configure_logging(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with log_to_file(path):
        structlog.get_logger().warning("contracts.test.unconfigured", n=1)
    with log_to_file(path):  # appends, never truncates
        structlog.get_logger().info("contracts.test.again")
    assert [json.loads(line)["event"] for line in path.read_text().splitlines()] == [
        "contracts.test.unconfigured",
        "contracts.test.again",
    ]

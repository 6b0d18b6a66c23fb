"""structlog setup: JSON lines when stderr is not a TTY, console rendering on request."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import structlog

from navi_contracts import configure_logging


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

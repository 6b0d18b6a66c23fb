"""The ``navi-dashboard`` command, its settings, and the runner it starts."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from navi_dashboard.cli import main, settings_kwargs
from navi_dashboard.runner import run_dashboard
from navi_dashboard.settings import DashboardSettings


def test_help_names_every_option() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for option in (
        "--matrix-sub",
        "--actor-sub",
        "--step-endpoint",
        "--port",
        "--host",
        "--stream-max-frame-hz",
    ):
        assert option in result.output


def test_flat_options_become_nested_settings() -> None:
    kwargs = settings_kwargs(
        {
            "port": 0,
            "host": None,
            "stream__status_hz": 2.0,
            "stream__max_frame_hz": None,
            "control__rate_hz": 5.0,
        }
    )
    assert kwargs == {"port": 0, "stream": {"status_hz": 2.0}, "control": {"rate_hz": 5.0}}
    settings = DashboardSettings(**kwargs)
    assert settings.stream.status_hz == 2.0 and settings.stream.max_frame_hz == 20.0


def test_dotenv_is_read_and_init_values_win(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("NAVI_DASHBOARD_PORT=9000\nNAVI_DASHBOARD_STREAM__STATUS_HZ=3\n")
    from_file = DashboardSettings(_env_file=env_file)
    assert from_file.port == 9000 and from_file.stream.status_hz == 3.0
    assert DashboardSettings(_env_file=env_file, port=8123).port == 8123


def test_bad_values_fail_loudly(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not a ZeroMQ endpoint"):
        DashboardSettings(matrix_sub="localhost:5559")
    with pytest.raises(ValidationError):
        DashboardSettings(port=70000)
    env_file = tmp_path / ".env"
    env_file.write_text("NAVI_DASHBOARD_PROT=1\n")  # a typo
    with pytest.raises(ValidationError, match="prot"):
        DashboardSettings(_env_file=env_file)
    result = CliRunner().invoke(main, ["--actor-sub", "nonsense"])
    assert result.exit_code == 2 and "not a ZeroMQ endpoint" in result.output


def test_cli_reports_a_taken_port_clearly() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["--port", str(port), "--stream-poll-timeout-ms", "20"])
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.output and "--port" in result.output


def test_runner_serves_until_stopped(kit) -> None:
    settings = kit.settings()

    async def scenario() -> list[str]:
        stop = asyncio.Event()
        urls: list[str] = []
        runner = asyncio.create_task(run_dashboard(settings, urls.append, stop))
        await kit.wait_until(lambda: bool(urls) or runner.done(), what="the URL")
        async with aiohttp.ClientSession() as http, http.get(urls[0] + "api/status") as response:
            assert (await response.json())["mode"] == "WAITING"
        stop.set()
        await asyncio.wait_for(runner, timeout=10)
        return urls

    urls = asyncio.run(scenario())
    assert urls[0].startswith("http://127.0.0.1:") and urls[0].endswith("/")

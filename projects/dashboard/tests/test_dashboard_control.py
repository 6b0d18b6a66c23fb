"""Keyboard flight: key mapping, step requests against a fake environment REP, failures."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import numpy as np
import pytest

from navi_common import free_tcp_endpoint
from navi_dashboard.control import KeyboardPilot, keys_to_command
from navi_dashboard.server import control_url
from navi_dashboard.settings import ControlSettings, HistorySettings, StreamSettings
from navi_dashboard.state import DashboardState


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (set(), [0, 0, 0, 0]),
        ({"w"}, [1, 0, 0, 0]),
        ({"s"}, [-1, 0, 0, 0]),
        ({"w", "s"}, [0, 0, 0, 0]),
        ({"space", "a", "q"}, [0, 1, 1, 1]),
        ({"shift", "d", "e", "w"}, [1, -1, -1, -1]),
    ],
)
def test_keys_map_to_the_action_axes(keys: set[str], expected: list[int]) -> None:
    np.testing.assert_array_equal(keys_to_command(frozenset(keys)), np.array(expected, dtype=np.float32))


def test_throttle_scales_and_stays_in_range() -> None:
    command = keys_to_command(frozenset({"w", "q"}), throttle=0.5)
    assert command.dtype == np.float32 and command.tolist() == [0.5, 0.0, 0.0, 0.5]


@pytest.fixture
def state() -> DashboardState:
    return DashboardState(StreamSettings(), HistorySettings())


def test_step_flies_drone_zero_and_shows_the_reply(environment, state: DashboardState) -> None:
    endpoint, env = environment
    pilot = KeyboardPilot(endpoint, ControlSettings(timeout_ms=2000), state)
    wakes: list[int] = []
    pilot.wake = lambda: wakes.append(1)
    command = keys_to_command(frozenset({"w", "q"}))
    assert pilot.step_once(command) is not None
    assert pilot.step_once(command) is not None  # now knows the server has 2 drones
    first, second = (r.actions for r in env.requests)
    assert first.actions.shape == (1, 4) and second.actions.shape == (2, 4)
    np.testing.assert_array_equal(second.actions[0], command)
    np.testing.assert_array_equal(second.actions[1], np.zeros(4, np.float32))  # others hold still
    assert second.policy_id == "keyboard" and len(wakes) == 2
    status = state.status()
    assert status["obs_source"] == "control" and status["obs_step"] == 2
    assert status["reward_terms"] == {"exploration": 0.1, "collision": -0.2}
    assert status["latest"]["step_reward"] == 0.25
    assert pilot.status()["steps"] == 2 and pilot.status()["last_error"] is None
    pilot._close()


def test_dead_endpoint_times_out_with_an_error_not_a_hang(state: DashboardState) -> None:
    pilot = KeyboardPilot(free_tcp_endpoint(), ControlSettings(timeout_ms=150, retries=1), state)
    started = time.monotonic()
    assert pilot.step_once(keys_to_command(frozenset({"w"}))) is None
    assert time.monotonic() - started < 3.0
    assert "PeerTimeoutError" in (pilot.last_error or "")
    pilot._close()


def test_error_reply_is_reported(kit, state: DashboardState) -> None:
    endpoint = free_tcp_endpoint()
    with kit.FakeEnvironment(endpoint, fail=True):
        pilot = KeyboardPilot(endpoint, ControlSettings(timeout_ms=2000, retries=0), state)
        assert pilot.step_once(keys_to_command(frozenset({"w"}))) is None
        pilot._close()
    assert "RemoteError" in (pilot.last_error or "") and "physics exploded" in (pilot.last_error or "")


def test_newest_holding_tab_flies_and_closed_tabs_let_go(state: DashboardState) -> None:
    pilot = KeyboardPilot("tcp://127.0.0.1:1", ControlSettings(), state)
    pilot.set_keys(1, frozenset({"w"}))
    pilot.set_keys(2, frozenset({"s"}))
    assert pilot.command()[0] == -1.0 and pilot.status()["state"] == "flying"
    pilot.set_keys(1, frozenset({"w", "space"}))  # tab 1 pressed last: it flies now
    assert pilot.command().tolist() == [1.0, 1.0, 0.0, 0.0]
    pilot.release(1)
    pilot.set_keys(2, frozenset())
    assert pilot.command().tolist() == [0.0] * 4 and pilot.status()["state"] == "idle"


def test_keys_from_a_page_step_the_environment(kit, environment) -> None:
    endpoint, env = environment
    settings = kit.settings(step_endpoint=endpoint, control={"rate_hz": 50.0, "timeout_ms": 2000})

    async def scenario() -> None:
        pilot_state = DashboardState(settings.stream, settings.history)
        pilot = KeyboardPilot(endpoint, settings.control, pilot_state)
        async with (
            kit.running_dashboard(settings, pilot=pilot, state=pilot_state) as (url, _state, app),
            aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        ):
            async with http.get(control_url(app, url)) as page:  # the startup URL sets the token cookie
                assert page.status == 200 and str(page.url) == url
            origin = url.rstrip("/")
            async with http.ws_connect(url + "ws", origin=origin) as ws:
                hello = await ws.receive_json(timeout=5)
                assert hello["control"] is True
                await ws.send_str('{"type": "keys", "down": ["w", "e"]}')
                await kit.wait_until(lambda: len(env.requests) >= 3, what="steps while a key is held")
                await ws.send_str('{"type": "keys", "down": []}')
                await kit.wait_until(lambda: pilot.status()["state"] == "idle", what="release")
                status = await kit.receive_until(ws, lambda m: kit.is_status(m) and '"steps"' in m.data)
                assert '"control"' in status.data
            sent = env.requests[-1].actions
            np.testing.assert_array_equal(sent.actions[0], [1.0, 0.0, 0.0, -1.0])

    asyncio.run(scenario())

"""The dashboard refuses foreign Hosts, foreign Origins and flight without the run's token (real server).

The DNS-rebinding attack of issue 19: a page from ``evil.example`` whose name resolves to 127.0.0.1
sends ``Host: evil.example:PORT`` and ``Origin: http://evil.example:PORT``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from navi_dashboard.guard import AccessPolicy, RateLimiter, host_name
from navi_dashboard.server import control_url
from navi_dashboard.state import DashboardState


class RecordingPilot:
    """A pilot that records which tabs held keys (no environment needed)."""

    def __init__(self) -> None:
        self.wake: Any = lambda: None
        self.held: dict[int, frozenset[str]] = {}

    def set_keys(self, client_id: int, keys: frozenset[str]) -> None:
        self.held[client_id] = keys

    def release(self, client_id: int) -> None:
        self.held.pop(client_id, None)

    def status(self) -> dict[str, object]:
        return {"state": "idle"}

    async def run(self) -> None:
        await asyncio.Event().wait()


def _port(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


async def _hello_and_notice(ws: aiohttp.ClientWebSocketResponse) -> tuple[dict[str, Any], str | None]:
    hello = await ws.receive_json(timeout=5)
    notice = None
    for _ in range(20):
        message = await ws.receive_json(timeout=5)
        if message["type"] == "notice":
            notice = message["text"]
            break
    return hello, notice


def test_host_names_are_parsed_like_browsers_send_them() -> None:
    assert host_name("127.0.0.1:8050") == "127.0.0.1" and host_name("[::1]:8050") == "::1"
    assert host_name("LocalHost") == "localhost" and host_name("::1") == "::1"
    policy = AccessPolicy("0.0.0.0", ["robot.lan"], None)
    assert policy.host_allowed("robot.lan:8050") and policy.host_allowed("localhost:1")
    assert not policy.host_allowed("0.0.0.0:8050") and not policy.host_allowed("evil.example:8050")
    assert not policy.host_allowed(None) and not policy.host_allowed("")
    assert AccessPolicy("192.168.1.5", [], None).host_allowed("192.168.1.5:8050")


def test_rate_limiter_allows_one_second_of_burst_then_the_rate() -> None:
    limiter = RateLimiter(10.0, now=0.0)
    assert sum(limiter.allow(0.0) for _ in range(30)) == 10 and limiter.dropped == 20
    assert limiter.allow(0.1) and not limiter.allow(0.1)  # one token per 1/rate seconds


def test_a_foreign_host_is_refused_on_every_route(kit) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        async with kit.running_dashboard(kit.settings()) as (url, _s, _a), aiohttp.ClientSession() as http:
            evil = {"Host": f"evil.example:{_port(url)}"}
            for path in ("", "api/status", "static/app.js"):
                async with http.get(url + path, headers=evil) as response:
                    assert response.status == 403, path
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(url + "ws", headers=evil, origin=f"http://evil.example:{_port(url)}")
            assert refused.value.status == 403
            async with http.get(url + "api/status", headers={"Host": f"localhost:{_port(url)}"}) as response:
                assert response.status == 200
            async with http.get(url + "api/status") as response:
                assert response.status == 200  # Host: 127.0.0.1:PORT

    asyncio.run(scenario())


def test_allowed_host_option_admits_that_name(kit) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        settings = kit.settings(allowed_hosts=("robot.lan",))
        async with (
            kit.running_dashboard(settings) as (url, _s, _a),
            aiohttp.ClientSession() as http,
            http.get(url + "api/status", headers={"Host": f"robot.lan:{_port(url)}"}) as response,
        ):
            assert response.status == 200

    asyncio.run(scenario())


def test_control_needs_a_matching_origin_and_the_token(kit) -> None:  # type: ignore[no-untyped-def]
    settings = kit.settings(step_endpoint="tcp://127.0.0.1:1")
    pilot = RecordingPilot()

    async def scenario() -> None:
        state = DashboardState(settings.stream, settings.history)
        async with (
            kit.running_dashboard(settings, pilot=pilot, state=state) as (url, _s, app),
            aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        ):
            origin = url.rstrip("/")
            keys = '{"type": "keys", "down": ["w"]}'
            # no token, own origin: may watch, may not fly
            async with http.ws_connect(url + "ws", origin=origin) as ws:
                hello, notice = await _hello_and_notice(ws)
                assert hello["control"] is False and notice and "token" in notice
                await ws.send_str(keys)
            # a wrong token sets no cookie
            async with http.get(url + "?token=wrong") as page:
                assert page.status == 200
            assert not list(http.cookie_jar)
            async with http.get(control_url(app, url)) as page:
                assert page.status == 200 and str(page.url) == url  # the token left the address bar
            assert len(list(http.cookie_jar)) == 1
            # token but no Origin (not the page) or a foreign one: no flight
            async with http.ws_connect(url + "ws") as ws:
                hello, notice = await _hello_and_notice(ws)
                assert hello["control"] is False and notice and "Origin" in notice
                await ws.send_str(keys)
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(url + "ws", origin="http://evil.example")
            assert refused.value.status == 403
            assert pilot.held == {}  # nothing above reached the pilot
            # token cookie + own origin: flies
            async with http.ws_connect(url + "ws", origin=origin) as ws:
                assert (await ws.receive_json(timeout=5))["control"] is True
                await ws.send_str(keys)
                await kit.wait_until(
                    lambda: frozenset({"w"}) in pilot.held.values(), what="keys reach the pilot"
                )

    asyncio.run(scenario())


def test_tabs_are_capped_and_page_messages_rate_limited(kit) -> None:  # type: ignore[no-untyped-def]
    settings = kit.settings(
        stream={"max_clients": 2, "poll_timeout_ms": 50}, control={"max_messages_hz": 5.0}
    )

    async def scenario() -> None:
        async with kit.running_dashboard(settings) as (url, _s, _a), aiohttp.ClientSession() as http:
            async with http.ws_connect(url + "ws") as first, http.ws_connect(url + "ws") as _second:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(url + "ws")
                assert refused.value.status == 503
                await first.receive_json(timeout=5)  # hello
                for _ in range(20):
                    await first.send_str('{"type": "keys", "down": []}')
                notice = None
                for _ in range(50):
                    message = await first.receive_json(timeout=5)
                    if message["type"] == "notice":
                        notice = message["text"]
                        break
                assert notice is not None and "too many messages" in notice
            async with http.ws_connect(url + "ws") as again:  # closed tabs free their places
                assert (await again.receive_json(timeout=5))["type"] == "hello"

    asyncio.run(scenario())

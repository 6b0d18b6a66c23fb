"""The aiohttp application: page, static assets, websocket, and two small JSON/PNG endpoints.

Routes:
  * ``GET /``               the page (offline: everything it loads is served from the package).
  * ``GET /static/{file}``  JavaScript and CSS shipped as package data.
  * ``GET /ws``             the live websocket (see :mod:`navi_dashboard.protocol`).
  * ``GET /api/status``     the status as JSON (scripts, health checks).
  * ``GET /api/frame.png``  the newest panorama (404 until an observation arrived).

Background work (socket feeds, keyboard pilot, render and status pumps) starts with the app and
stops with it, so the same app object runs under tests and under the CLI. Every request passes the
Host allowlist; websockets, flight and the rate limit follow :mod:`navi_dashboard.guard`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any, Protocol

import structlog
from aiohttp import WSMsgType, web

from navi_contracts import telemetry_names
from navi_dashboard.guard import TOKEN_QUERY, AccessPolicy, RateLimiter, cookie_name, new_control_token
from navi_dashboard.hub import ClientFeed, Hub, ThreadWaker
from navi_dashboard.protocol import MAX_CLIENT_MESSAGE_BYTES, ProtocolError, parse_client_message
from navi_dashboard.render import legend_ticks
from navi_dashboard.settings import DashboardSettings
from navi_dashboard.state import DashboardState

log = structlog.get_logger()

STATIC_DIR = Path(str(files("navi_dashboard") / "static"))


class Feed(Protocol):
    """A background source that writes into the state and wakes the render pump."""

    def start(self, wake: Callable[[], None]) -> None:
        """Start receiving; call ``wake`` after storing an observation."""

    def stop(self) -> None:
        """Stop receiving and release sockets (bounded wait)."""


class Pilot(Protocol):
    """Keyboard flight: held keys per tab in, step requests out."""

    wake: Callable[[], None]

    def set_keys(self, client_id: int, keys: frozenset[str]) -> None:
        """Record the keys a tab holds."""

    def release(self, client_id: int) -> None:
        """Forget a closed tab's keys."""

    def status(self) -> dict[str, object]:
        """JSON-ready flight status for the page."""

    async def run(self) -> None:
        """Fly until cancelled."""


class DashboardStartError(RuntimeError):
    """The web server could not start (typically: the port is taken)."""


HUB = web.AppKey("hub", Hub)
STATE = web.AppKey("state", DashboardState)
PILOT = web.AppKey("pilot", object)
POLICY = web.AppKey("policy", AccessPolicy)
SETTINGS = web.AppKey("settings", DashboardSettings)


def hello_message(settings: DashboardSettings, *, control: bool) -> dict[str, Any]:
    """What each new tab is told once: keyboard flight on/off, colour legend, chart list and size.

    The charts come from :data:`navi_contracts.telemetry_names.CHARTS`, the list producers name
    their metrics from, so a page never waits for a name nobody publishes.
    """
    return {
        "control": control,
        "legend": legend_ticks(8),
        "max_points": settings.history.max_points,
        "charts": [[title, list(series)] for title, series in telemetry_names.CHARTS],
    }


def create_app(
    settings: DashboardSettings,
    state: DashboardState | None = None,
    feeds: Sequence[Feed] = (),
    pilot: Pilot | None = None,
    control_token: str | None = None,
) -> web.Application:
    """Build the web application.

    Args:
        settings: dashboard settings (push rates, history bounds, host allowlist, limits).
        state: shared state; a fresh one when None.
        feeds: background sources started and stopped with the app.
        pilot: keyboard flight, or None when no step endpoint is configured.
        control_token: the token that lets a page fly; a fresh random one when None and a pilot
            is given (read it back with :func:`control_url`).

    Returns:
        An aiohttp application ready for ``AppRunner`` or the aiohttp test client.
    """
    state = state or DashboardState(settings.stream, settings.history)
    hello = hello_message(settings, control=pilot is not None)
    app = web.Application(client_max_size=64 * 1024, middlewares=[_host_guard])
    app[STATE] = state
    app[PILOT] = pilot
    app[SETTINGS] = settings
    token = (control_token or new_control_token()) if pilot is not None else None
    app[POLICY] = AccessPolicy(settings.host, settings.allowed_hosts, token)
    app.router.add_get("/", _index)
    app.router.add_get("/ws", _websocket)
    app.router.add_get("/api/status", _api_status)
    app.router.add_get("/api/frame.png", _api_frame)
    app.router.add_static("/static", STATIC_DIR, follow_symlinks=False)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        hub = app[HUB] = Hub(state, settings.stream, hello)
        waker = ThreadWaker(asyncio.get_running_loop(), hub.frame_ready)
        tasks = [asyncio.create_task(hub.frame_pump()), asyncio.create_task(hub.status_pump())]
        if pilot is not None:
            pilot.wake = waker
            hub.status_extras.append(lambda: {"control": pilot.status()})
            tasks.append(asyncio.create_task(pilot.run()))
        for feed in feeds:
            feed.start(waker)
        log.info("dashboard.started", feeds=len(feeds), control=pilot is not None)
        yield
        for feed in feeds:
            await asyncio.to_thread(feed.stop)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in list(hub.clients):
            await client.ws.close()
        log.info("dashboard.stopped")

    app.cleanup_ctx.append(lifecycle)
    return app


def control_url(app: web.Application, url: str) -> str:
    """The page URL to print: with ``?token=`` when the page can fly (opening it sets the cookie)."""
    token = app[POLICY].control_token
    return f"{url}?{TOKEN_QUERY}={token}" if token is not None else url


@web.middleware
async def _host_guard(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Refuse requests whose ``Host`` is not ours: a DNS-rebinding page names its own domain there."""
    host = request.headers.get("Host")
    if not request.app[POLICY].host_allowed(host):
        log.warning("dashboard.request.foreign_host", host=host, path=request.path)
        raise web.HTTPForbidden(text="unknown Host; to use that name, start with --allowed-hosts NAME")
    return await handler(request)


async def _index(request: web.Request) -> web.StreamResponse:
    token = request.query.get(TOKEN_QUERY)
    if token is not None:  # the startup URL: keep the token in a cookie, not in the address bar
        response = web.HTTPSeeOther(location="/")
        if request.app[POLICY].token_valid(token):
            response.set_cookie(
                cookie_name(request.url.port), token, httponly=True, samesite="Strict", path="/"
            )
        else:
            log.warning("dashboard.control.bad_token")
        raise response
    return web.FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


async def _api_status(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    status = hub.state.status()
    for extra in hub.status_extras:
        status.update(extra())
    status.update(clients=len(hub.clients), frames_rendered=hub.frames_rendered)
    return web.json_response(status, dumps=lambda obj: json.dumps(obj, allow_nan=False))


async def _api_frame(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    hub.render_latest()
    if hub.latest_png is None:
        raise web.HTTPNotFound(text="no observation received yet")
    return web.Response(body=hub.latest_png, content_type="image/png", headers={"Cache-Control": "no-store"})


async def _websocket(request: web.Request) -> web.WebSocketResponse:
    """One tab: the hub sends; this loop reads held keys (when this tab may fly) and reports problems."""
    policy, hub, settings = request.app[POLICY], request.app[HUB], request.app[SETTINGS]
    origin, host = request.headers.get("Origin"), request.headers.get("Host")
    if policy.origin_matches(origin, host) is False:
        log.warning("dashboard.client.foreign_origin", origin=origin)
        raise web.HTTPForbidden(text="websocket connections are only accepted from the dashboard's own page")
    if len(hub.clients) >= settings.stream.max_clients:
        log.warning("dashboard.client.refused_full", clients=len(hub.clients))
        raise web.HTTPServiceUnavailable(text=f"at most {settings.stream.max_clients} tabs at once")
    refusal = policy.control_refusal(origin, host, request.cookies.get(cookie_name(request.url.port)))
    pilot: Pilot | None = request.app[PILOT] if refusal is None else None  # type: ignore[assignment]
    ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=MAX_CLIENT_MESSAGE_BYTES)
    await ws.prepare(request)
    client = await hub.serve_client(ws, {"control": pilot is not None})
    if refusal is not None and request.app[PILOT] is not None:
        client.notify(refusal)
    limiter = RateLimiter(settings.control.max_messages_hz, time.monotonic())
    try:
        async for message in ws:
            if not limiter.allow(time.monotonic()):
                if limiter.dropped == 1 or limiter.dropped % 100 == 0:
                    log.warning("dashboard.client.rate_limited", dropped=limiter.dropped)
                    client.notify("too many messages: some were dropped")
                continue
            if message.type == WSMsgType.TEXT:
                _handle_text(client, pilot, refusal, message.data)
            elif message.type == WSMsgType.BINARY:
                client.notify("binary messages are not part of the protocol")
    finally:
        if pilot is not None:
            pilot.release(id(client))
        await hub.drop_client(client)
    return ws


def _handle_text(client: ClientFeed, pilot: Pilot | None, refusal: str | None, text: str) -> None:
    try:
        keys = parse_client_message(text)
    except ProtocolError as exc:
        log.warning("dashboard.client.bad_message", error=str(exc))
        client.notify(str(exc))
        return
    if pilot is None:
        if keys:
            client.notify(refusal or "keyboard flight is off: start the dashboard with --step-endpoint")
        return
    pilot.set_keys(id(client), keys)


@contextlib.asynccontextmanager
async def serve(app: web.Application, host: str, port: int) -> AsyncIterator[str]:
    """Run ``app`` on ``host:port`` for the duration of the block.

    Args:
        app: the application from :func:`create_app`.
        host: interface to bind.
        port: TCP port; 0 picks a free one.

    Yields:
        The page URL (with the real port).
    """
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        try:
            await site.start()
        except OSError as exc:
            raise DashboardStartError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                "pick another --port (0 chooses a free one)"
            ) from exc
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        bound_port = sockets[0].getsockname()[1] if sockets else port
        shown_host = "127.0.0.1" if host in {"0.0.0.0", ""} else host
        yield f"http://{shown_host}:{bound_port}/"
    finally:
        await runner.cleanup()

"""The aiohttp application: page, static assets, websocket, and two small JSON/PNG endpoints.

Routes:
  * ``GET /``               the page (offline: everything it loads is served from the package).
  * ``GET /static/{file}``  JavaScript and CSS shipped as package data.
  * ``GET /ws``             the live websocket (see :mod:`navi_dashboard.protocol`).
  * ``GET /api/status``     the status as JSON (scripts, health checks).
  * ``GET /api/frame.png``  the newest panorama (404 until an observation arrived).

Background work (socket feeds, keyboard pilot, render and status pumps) starts with the app and
stops with it, so the same app object runs under tests and under the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import structlog
from aiohttp import WSMsgType, web

from navi_contracts import telemetry_names
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
) -> web.Application:
    """Build the web application.

    Args:
        settings: dashboard settings (push rates, history bounds).
        state: shared state; a fresh one when None.
        feeds: background sources started and stopped with the app.
        pilot: keyboard flight, or None when no step endpoint is configured.

    Returns:
        An aiohttp application ready for ``AppRunner`` or the aiohttp test client.
    """
    state = state or DashboardState(settings.stream, settings.history)
    hello = hello_message(settings, control=pilot is not None)
    app = web.Application(client_max_size=64 * 1024)
    app[STATE] = state
    app[PILOT] = pilot
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


async def _index(request: web.Request) -> web.FileResponse:
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


def _same_origin(request: web.Request) -> bool:
    """Browsers let any site open a websocket to localhost; only our own page may (it can fly).

    Non-browser clients send no ``Origin`` and are allowed.
    """
    origin = request.headers.get("Origin")
    return origin is None or urlsplit(origin).netloc == request.host


async def _websocket(request: web.Request) -> web.WebSocketResponse:
    """One tab: the hub sends; this loop reads held keys and reports bad messages back."""
    if not _same_origin(request):
        log.warning("dashboard.client.foreign_origin", origin=request.headers.get("Origin"))
        raise web.HTTPForbidden(text="websocket connections are only accepted from the dashboard's own page")
    ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=MAX_CLIENT_MESSAGE_BYTES)
    await ws.prepare(request)
    hub = request.app[HUB]
    pilot: Pilot | None = request.app[PILOT]  # type: ignore[assignment]
    client = await hub.serve_client(ws)
    try:
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                _handle_text(client, pilot, message.data)
            elif message.type == WSMsgType.BINARY:
                client.notify("binary messages are not part of the protocol")
    finally:
        if pilot is not None:
            pilot.release(id(client))
        await hub.drop_client(client)
    return ws


def _handle_text(client: ClientFeed, pilot: Pilot | None, text: str) -> None:
    try:
        keys = parse_client_message(text)
    except ProtocolError as exc:
        log.warning("dashboard.client.bad_message", error=str(exc))
        client.notify(str(exc))
        return
    if pilot is None:
        if keys:
            client.notify("keyboard flight is off: start the dashboard with --step-endpoint")
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

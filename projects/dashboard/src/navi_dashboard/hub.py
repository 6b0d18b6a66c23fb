"""Fan-out from the shared state to every open tab, with bounded memory per tab.

Each tab owns a :class:`ClientFeed`: a reference to the newest frame message (never a queue), a
chart cursor, and a wake-up event. One sender task per tab sends the newest frame and a status
update, then waits for the next wake-up. A slow tab therefore skips frames instead of piling them
up, and its chart cursor simply falls behind (the bounded rings decide what is still there).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import structlog
from aiohttp import web

from navi_dashboard.png import encode_png
from navi_dashboard.protocol import pack_frame
from navi_dashboard.render import render_panorama
from navi_dashboard.settings import StreamSettings
from navi_dashboard.state import DashboardState, ObservationFrame

log = structlog.get_logger()

MAX_NOTICES = 8


class ThreadWaker:
    """Sets an asyncio event from any thread, scheduling at most one loop callback at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        """Bind to a loop and the event to set.

        Args:
            loop: the event loop that owns ``event``.
            event: the event to set.
        """
        self._loop = loop
        self._event = event
        self._pending = threading.Event()

    def __call__(self) -> None:
        """Wake the loop; cheap to call for every received message."""
        if self._pending.is_set():
            return
        self._pending.set()
        try:
            self._loop.call_soon_threadsafe(self._fire)
        except RuntimeError:  # loop already closed during shutdown: nobody is waiting any more
            self._pending.clear()

    def _fire(self) -> None:
        self._pending.clear()
        self._event.set()


class ClientFeed:
    """What one tab is owed: the newest frame, a status, and where its charts are."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        """Start a feed that has seen nothing.

        Args:
            ws: the tab's websocket.
        """
        self.ws = ws
        self.wake = asyncio.Event()
        self.frame_message: bytes | None = None
        self.frame_version_sent = -1
        self.frame_version_owed = -1
        self.status_due = True
        self.chart_cursor = -1
        self.frames_sent = 0
        self.frames_skipped = 0
        self.sender: asyncio.Task[None] | None = None
        self.notices: deque[str] = deque(maxlen=MAX_NOTICES)

    def offer_frame(self, version: int, message: bytes) -> None:
        """Replace whatever frame is owed with a newer one (the old one is simply dropped)."""
        if self.frame_version_owed > self.frame_version_sent:
            self.frames_skipped += 1
        self.frame_message, self.frame_version_owed = message, version
        self.wake.set()

    def notify(self, text: str) -> None:
        """Queue a short message for the tab (bounded: the oldest notices fall off)."""
        self.notices.append(text)
        self.wake.set()

    def offer_status(self) -> None:
        """Mark a status update as due."""
        self.status_due = True
        self.wake.set()


class Hub:
    """Renders frames once, builds status once per tick, and drives one sender per tab."""

    def __init__(self, state: DashboardState, stream: StreamSettings, hello: dict[str, Any]) -> None:
        """Create a hub with no tabs.

        Args:
            state: the shared dashboard state.
            stream: push rates.
            hello: the capabilities message sent to each new tab.
        """
        self.state = state
        self.stream = stream
        self.hello = hello
        self.clients: set[ClientFeed] = set()
        self.frame_ready = asyncio.Event()
        self.latest_png: bytes | None = None
        self.latest_frame_message: bytes | None = None
        self.latest_frame_version = -1
        self.status_extras: list[Callable[[], dict[str, Any]]] = []
        self.render_seconds = 0.0
        self.frames_rendered = 0

    def render_latest(self) -> bool:
        """Render the frame to show if it changed since the last render.

        Returns:
            True when a new frame message was built and offered to every tab.
        """
        frame, version = self.state.display_frame()
        if frame is None or version == self.latest_frame_version:
            return False
        started = time.perf_counter()
        png = encode_png(render_panorama(frame.depth, frame.valid))
        message = pack_frame(_frame_header(frame, version), png)
        self.render_seconds += time.perf_counter() - started
        self.frames_rendered += 1
        self.latest_png, self.latest_frame_message, self.latest_frame_version = png, message, version
        for client in self.clients:
            client.offer_frame(version, message)
        return True

    async def frame_pump(self) -> None:
        """Render new observations at most ``max_frame_hz`` times per second, forever."""
        period = 1.0 / self.stream.max_frame_hz
        while True:
            await self.frame_ready.wait()
            self.frame_ready.clear()
            self.render_latest()
            await asyncio.sleep(period)  # rate limit: frames arriving meanwhile coalesce into one

    async def status_pump(self) -> None:
        """Mark a status update due on every tab ``status_hz`` times per second, forever."""
        period = 1.0 / self.stream.status_hz
        while True:
            for client in self.clients:
                client.offer_status()
            await asyncio.sleep(period)

    def status_message(self, client: ClientFeed) -> str:
        """The status JSON for one tab, with the chart points it has not seen yet."""
        status = self.state.status()
        charts, cursor = self.state.chart_delta(client.chart_cursor)
        client.chart_cursor = cursor
        for extra in self.status_extras:
            status.update(extra())
        status.update(type="status", charts=charts, server_wall=time.time())
        return json.dumps(status, separators=(",", ":"), allow_nan=False, default=_json_fallback)

    async def serve_client(
        self, ws: web.WebSocketResponse, hello: dict[str, Any] | None = None
    ) -> ClientFeed:
        """Register a tab and start its sender; the caller reads the tab's messages.

        Args:
            ws: a prepared websocket.
            hello: entries of this tab's hello that differ from the hub's (e.g. ``control``).

        Returns:
            The tab's feed (pass it to :meth:`drop_client` when the socket closes).
        """
        client = ClientFeed(ws)
        if self.latest_frame_message is not None:
            client.offer_frame(self.latest_frame_version, self.latest_frame_message)
        self.clients.add(client)
        await ws.send_str(json.dumps({"type": "hello", **self.hello, **(hello or {})}))
        client.sender = asyncio.create_task(self._send_loop(client))
        log.info("dashboard.client.connected", clients=len(self.clients))
        return client

    async def drop_client(self, client: ClientFeed) -> None:
        """Forget a tab and stop its sender."""
        self.clients.discard(client)
        if client.sender is not None:
            client.sender.cancel()
            await asyncio.gather(client.sender, return_exceptions=True)
        log.info("dashboard.client.disconnected", clients=len(self.clients), frames_sent=client.frames_sent)

    async def _send_loop(self, client: ClientFeed) -> None:
        """Send what the tab is owed; awaiting each send is what throttles a slow tab."""
        try:
            while not client.ws.closed:
                await client.wake.wait()
                client.wake.clear()
                if client.frame_version_owed > client.frame_version_sent and client.frame_message:
                    version, message = client.frame_version_owed, client.frame_message
                    await client.ws.send_bytes(message)
                    client.frame_version_sent = version
                    client.frames_sent += 1
                while client.notices:
                    notice = client.notices.popleft()
                    await client.ws.send_str(json.dumps({"type": "notice", "text": notice}))
                if client.status_due:
                    client.status_due = False
                    await client.ws.send_str(self.status_message(client))
        except (ConnectionError, RuntimeError) as exc:  # tab went away mid-send
            log.info("dashboard.client.send_failed", error=str(exc))


def _frame_header(frame: ObservationFrame, version: int) -> dict[str, Any]:
    azimuth_bins, elevation_bins = frame.depth.shape
    return {
        "version": version,
        "source": frame.source,
        "step": frame.step_id,
        "batch": frame.batch_size,
        "width": azimuth_bins,
        "height": elevation_bins,
        "valid_fraction": round(float((frame.valid != 0).mean()), 4),
    }


def _json_fallback(value: object) -> object:
    """numpy scalars sneak into payloads; everything else is a bug worth a clear error."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot send {type(value).__name__} to the page")

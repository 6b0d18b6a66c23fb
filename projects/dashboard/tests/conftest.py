"""Shared fixtures for the dashboard tests: fake producers on real sockets, a running dashboard,
and a headless Chromium driven over the DevTools protocol (no download: Debian's chromium)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import shutil
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from navi_common import Publisher, RepServer, free_tcp_endpoint
from navi_contracts import StepRequest, StepResult, topics
from navi_dashboard.ingest import build_feeds
from navi_dashboard.server import create_app, serve
from navi_dashboard.settings import DashboardSettings
from navi_dashboard.state import DashboardState
from navi_dashboard.synthetic import TRAINING_EVENT, room_matrix, training_event

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


class FakeProducer:
    """A PUB socket publishing room observations and telemetry from its own thread until stopped."""

    def __init__(
        self,
        endpoint: str,
        *,
        event_type: str | None = TRAINING_EVENT,
        batch: int = 1,
        shape: tuple[int, int] = (64, 16),
        rate_hz: float = 50.0,
        first_step: int = 0,
    ) -> None:
        self.endpoint = endpoint
        self.event_type = event_type
        self.batch = batch
        self.shape = shape
        self.period = 1.0 / rate_hz
        self.step = first_step
        self.published = 0
        self._stop = threading.Event()
        self._bound = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> FakeProducer:
        if not self._thread.is_alive() and not self._bound.is_set():  # the factory already started it
            self._thread.start()
        assert self._bound.wait(5.0), f"producer could not bind {self.endpoint}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5.0)

    def _run(self) -> None:
        with Publisher(self.endpoint, bind=True) as publisher:
            self._bound.set()
            # Pacing a producer at its nominal rate (not synchronisation: tests poll for effects).
            while not self._stop.wait(self.period):
                self.step += 1
                matrix = room_matrix(self.batch, *self.shape, step_id=self.step, yaw=self.step * 0.05)
                publisher.publish(topics.DISTANCE_MATRIX, matrix)
                if self.event_type is not None:
                    publisher.publish(topics.TELEMETRY_EVENT, training_event(self.step, self.event_type))
                self.published += 1


def dashboard_settings(**overrides: Any) -> DashboardSettings:
    """Settings on free ports with fast pushes, built like the CLI builds them (init kwargs)."""
    values: dict[str, Any] = {
        "matrix_sub": free_tcp_endpoint(),
        "actor_sub": free_tcp_endpoint(),
        "port": 0,
        "stream": {"max_frame_hz": 50.0, "status_hz": 20.0, "poll_timeout_ms": 50, "mode_timeout_s": 2.0},
    }
    values.update(overrides)
    return DashboardSettings(**values)


@contextlib.asynccontextmanager
async def running_dashboard(
    settings: DashboardSettings, pilot: Any = None, state: DashboardState | None = None
) -> AsyncIterator[tuple[str, DashboardState, Any]]:
    """The real app on a free port with real socket feeds; yields (url, state, app)."""
    state = state or DashboardState(settings.stream, settings.history)
    app = create_app(settings, state, build_feeds(settings, state), pilot)
    async with serve(app, "127.0.0.1", 0) as url:
        yield url, state, app


async def wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until true; fail with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.02)


async def receive_until(
    ws: aiohttp.ClientWebSocketResponse,
    predicate: Callable[[aiohttp.WSMessage], bool],
    timeout_s: float = 10.0,
) -> aiohttp.WSMessage:
    """Read websocket messages until one satisfies ``predicate`` (each read has a timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no matching websocket message within {timeout_s} s")
        message = await ws.receive(timeout=left)
        if message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            raise AssertionError(f"websocket closed: {message}")
        if predicate(message):
            return message


def is_status(message: aiohttp.WSMessage, **expected: Any) -> bool:
    """A status message whose fields equal ``expected``."""
    if message.type != aiohttp.WSMsgType.TEXT:
        return False
    body = json.loads(message.data)
    return body.get("type") == "status" and all(body.get(k) == v for k, v in expected.items())


def chromium_path() -> str | None:
    """Debian's chromium (installed by .ci/run from .ci/apt-packages), or None."""
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class DevToolsPage:
    """A minimal Chrome DevTools Protocol client for one page (flattened target session)."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, session_id: str) -> None:
        self._ws = ws
        self._session_id = session_id

    async def call(self, method: str, timeout_s: float = 15.0, **params: Any) -> dict[str, Any]:
        return await cdp_call(self._ws, method, params, self._session_id, timeout_s)

    async def evaluate(self, expression: str) -> Any:
        reply = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in reply:
            raise AssertionError(f"page script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")


_CDP_IDS = itertools.count(1)


async def cdp_call(
    ws: aiohttp.ClientWebSocketResponse,
    method: str,
    params: dict[str, Any],
    session_id: str | None = None,
    timeout_s: float = 15.0,
) -> dict[str, Any]:
    """Send one CDP command and read until its reply (events in between are ignored)."""
    message_id = next(_CDP_IDS)
    command: dict[str, Any] = {"id": message_id, "method": method, "params": params}
    if session_id is not None:
        command["sessionId"] = session_id
    await ws.send_str(json.dumps(command))
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"CDP {method} got no reply within {timeout_s} s")
        reply = await ws.receive_json(timeout=left)
        if reply.get("id") == message_id:
            if "error" in reply:
                raise AssertionError(f"CDP {method} failed: {reply['error']}")
            return reply.get("result", {})


@contextlib.asynccontextmanager
async def chromium_page(executable: str, profile: Path, url: str) -> AsyncIterator[DevToolsPage]:
    """Start headless Chromium, open ``url`` in a 1400x1500 page, and close everything afterwards."""
    args = [
        executable,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "--window-size=1400,1500",
        "about:blank",
    ]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        endpoint = await _devtools_endpoint(profile, process)
        async with aiohttp.ClientSession() as session, session.ws_connect(endpoint, max_msg_size=0) as ws:
            target = await cdp_call(ws, "Target.createTarget", {"url": "about:blank"})
            attached = await cdp_call(
                ws, "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
            )
            page = DevToolsPage(ws, attached["sessionId"])
            await page.call(
                "Emulation.setDeviceMetricsOverride",
                width=1400,
                height=1500,
                deviceScaleFactor=1,
                mobile=False,
            )
            await page.call("Page.navigate", url=url)
            yield page
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


async def _devtools_endpoint(profile: Path, process: subprocess.Popen[bytes], timeout_s: float = 30.0) -> str:
    """Chromium writes its DevTools port and browser path to ``DevToolsActivePort`` when ready."""
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout_s
    while True:
        if marker.is_file():
            lines = marker.read_text().split()
            if len(lines) >= 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        if process.poll() is not None:
            raise AssertionError(f"chromium exited with {process.returncode} before DevTools was ready")
        if time.monotonic() > deadline:
            raise AssertionError(f"chromium DevTools not ready after {timeout_s} s")
        await asyncio.sleep(0.05)


@pytest.fixture
def producer_factory() -> Iterator[Callable[..., FakeProducer]]:
    """Start fake producers that are stopped when the test ends."""
    started: list[FakeProducer] = []

    def start(endpoint: str, **kwargs: Any) -> FakeProducer:
        producer = FakeProducer(endpoint, **kwargs).__enter__()
        started.append(producer)
        return producer

    yield start
    for producer in started:
        producer.__exit__(None, None, None)


class FakeEnvironment:
    """A REP server answering StepRequests with a room observation of ``batch`` drones."""

    def __init__(self, endpoint: str, batch: int = 2, fail: bool = False) -> None:
        self.batch, self.fail = batch, fail
        self.requests: list[StepRequest] = []
        self._stop = threading.Event()
        self._server = RepServer(endpoint, handler=self._handle, accepts=(StepRequest,))
        self._thread = threading.Thread(target=self._server.serve, args=(self._stop,), daemon=True)

    def _handle(self, request: StepRequest) -> StepResult:
        self.requests.append(request)
        if self.fail:
            raise RuntimeError("physics exploded")
        b = self.batch
        return StepResult(
            request_id=request.request_id,
            reward=np.full(b, 0.25, np.float32),
            terminated=np.zeros(b, bool),
            truncated=np.zeros(b, bool),
            episode_return=np.full(b, 1.5, np.float32),
            episode_length=np.full(b, 7, np.int32),
            observation=room_matrix(b, 32, 8, step_id=len(self.requests)),
            info={"exploration": 0.1, "reward/collision": -0.2},
        )

    def __enter__(self) -> FakeEnvironment:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5.0)
        self._server.close()


class Kit:
    """Helpers the test modules reach through the ``kit`` fixture (test files cannot import each
    other or this conftest under ``--import-mode=importlib``)."""

    settings = staticmethod(dashboard_settings)
    running_dashboard = staticmethod(running_dashboard)
    wait_until = staticmethod(wait_until)
    receive_until = staticmethod(receive_until)
    is_status = staticmethod(is_status)
    chromium_path = staticmethod(chromium_path)
    chromium_page = staticmethod(chromium_page)
    FakeEnvironment = FakeEnvironment


@pytest.fixture
def kit() -> type[Kit]:
    """The shared test helpers."""
    return Kit


@pytest.fixture
def environment() -> Iterator[tuple[str, FakeEnvironment]]:
    """A fake environment REP server on a free endpoint: (endpoint, server)."""
    endpoint = free_tcp_endpoint()
    with FakeEnvironment(endpoint) as env:
        yield endpoint, env

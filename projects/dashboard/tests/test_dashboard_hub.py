"""The hub's fan-out: one render shared by every tab, and no backlog behind a stalled tab."""

from __future__ import annotations

import asyncio
import time

import numpy as np

from navi_dashboard.hub import Hub
from navi_dashboard.settings import HistorySettings, StreamSettings
from navi_dashboard.state import DashboardState, ObservationFrame


class StalledSocket:
    """A websocket whose sends never complete (a browser that stopped reading)."""

    closed = False

    def __init__(self) -> None:
        self.text: list[str] = []
        self.started_binary_sends = 0
        self._never = asyncio.Event()

    async def send_str(self, data: str) -> None:
        self.text.append(data)

    async def send_bytes(self, data: bytes) -> None:
        self.started_binary_sends += 1
        await self._never.wait()


class RecordingSocket:
    """A websocket that accepts everything instantly."""

    closed = False

    def __init__(self) -> None:
        self.binary: list[bytes] = []
        self.text: list[str] = []

    async def send_str(self, data: str) -> None:
        self.text.append(data)

    async def send_bytes(self, data: bytes) -> None:
        self.binary.append(data)


def _frame(step: int) -> ObservationFrame:
    depth = np.full((32, 8), 0.05, dtype=np.float32)
    return ObservationFrame("actor", depth, np.ones((32, 8), bool), 1, time.monotonic(), step_id=step)


def test_stalled_tab_holds_one_frame_while_others_get_every_frame() -> None:
    async def scenario() -> None:
        state = DashboardState(StreamSettings(), HistorySettings())
        hub = Hub(state, StreamSettings(), hello={})
        stalled, healthy = StalledSocket(), RecordingSocket()
        stalled_feed = await hub.serve_client(stalled)  # type: ignore[arg-type]
        healthy_feed = await hub.serve_client(healthy)  # type: ignore[arg-type]
        for step in range(200):
            state.add_observation(_frame(step))
            assert hub.render_latest()
            await asyncio.sleep(0)  # let the senders run between renders
        await asyncio.sleep(0)
        assert stalled.started_binary_sends == 1  # stuck in its first send, forever
        assert stalled_feed.frames_skipped >= 198  # everything after it was replaced, not queued
        assert stalled_feed.frame_version_owed == hub.latest_frame_version
        assert len(healthy.binary) == 200 and healthy_feed.frames_skipped == 0
        for feed in (stalled_feed, healthy_feed):
            await hub.drop_client(feed)
        assert not hub.clients

    asyncio.run(scenario())


def test_unchanged_state_is_not_rendered_twice() -> None:
    state = DashboardState(StreamSettings(), HistorySettings())
    hub = Hub(state, StreamSettings(), hello={})
    assert not hub.render_latest()  # nothing yet
    state.add_observation(_frame(1))
    assert hub.render_latest()
    assert not hub.render_latest()
    assert hub.frames_rendered == 1 and hub.latest_png is not None

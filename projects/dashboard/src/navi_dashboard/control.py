"""Keyboard flight: held keys in the page become StepRequests to the environment's REP socket.

The page sends the set of held keys whenever it changes. While any tab holds a key, the pilot sends
one step per ``1 / rate_hz`` seconds with the newest command; releasing every key stops stepping.
Requests go through ``ReqClient`` (timeout + reconnect) on one worker thread, so a dead server costs
a timeout and an error on the page, never a hung dashboard. The reply's observation is shown at once
(source ``control``) and its reward terms go to the charts.

Axis conventions (body frame, x forward, y left, z up): W/S forward/back, Space/Shift up/down,
A/D left/right (lateral + is left), Q/E yaw left/right (yaw rate + turns left, counter-clockwise).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import structlog

from navi_common import NaviTransportError, ReqClient
from navi_common.transport.curve import CurveKeys
from navi_contracts import Action, StepRequest, StepResult
from navi_dashboard.ingest import frame_from_matrix
from navi_dashboard.settings import ControlSettings
from navi_dashboard.state import (
    REWARD_TERM_PREFIX,
    SOURCE_CONTROL,
    DashboardState,
    TelemetrySample,
)

log = structlog.get_logger()

CONTROL_EVENT_TYPE = "dashboard.control.step"
POLICY_ID = "keyboard"
# key -> (action column, sign); columns: 0 forward, 1 vertical, 2 lateral, 3 yaw rate.
KEY_AXES: dict[str, tuple[int, float]] = {
    "w": (0, 1.0),
    "s": (0, -1.0),
    "space": (1, 1.0),
    "shift": (1, -1.0),
    "a": (2, 1.0),
    "d": (2, -1.0),
    "q": (3, 1.0),
    "e": (3, -1.0),
}


def keys_to_command(keys: frozenset[str], throttle: float = 1.0) -> np.ndarray:
    """Combine held keys into one command; opposite keys cancel.

    Args:
        keys: held key names (see :data:`KEY_AXES`; others are ignored).
        throttle: magnitude of a held key, in (0, 1].

    Returns:
        float32 array of shape (4,), each entry in {-throttle, 0, throttle}.
    """
    command = np.zeros(4, dtype=np.float32)
    for key in keys:
        if key in KEY_AXES:
            column, sign = KEY_AXES[key]
            command[column] += sign
    return np.clip(command, -1.0, 1.0) * np.float32(throttle)


class KeyboardPilot:
    """Steps drone 0 of the environment server from the keys held in the newest active tab."""

    def __init__(
        self,
        endpoint: str,
        settings: ControlSettings,
        state: DashboardState,
        wake: Callable[[], None] = lambda: None,
        curve: CurveKeys | None = None,
    ) -> None:
        """Prepare the pilot; the REQ socket opens on the first step.

        Args:
            endpoint: the environment's REP endpoint.
            settings: rate, timeout, retries, throttle.
            state: where the returned observations and reward terms go.
            wake: called after storing an observation (wakes the render pump).
            curve: CURVE keys (secure mode), or None for a plain socket.
        """
        self._endpoint = endpoint
        self._curve = curve
        self._settings = settings
        self._state = state
        self.wake = wake
        self._held: dict[int, frozenset[str]] = {}  # tab id -> keys, newest tab last
        self._request_ids = itertools.count(1)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="navi-dashboard-pilot")
        self._client: ReqClient | None = None
        self._batch_size = 1
        self.steps = 0
        self.last_latency_ms: float | None = None
        self.last_error: str | None = None

    def set_keys(self, client_id: int, keys: frozenset[str]) -> None:
        """Record a tab's held keys; the tab that pressed last is the one that flies."""
        self._held.pop(client_id, None)
        if keys:
            self._held[client_id] = keys

    def release(self, client_id: int) -> None:
        """Forget a closed tab."""
        self._held.pop(client_id, None)

    def command(self) -> np.ndarray:
        """The command to send now: the newest holding tab's keys, shape (4,)."""
        if not self._held:
            return np.zeros(4, dtype=np.float32)
        keys = next(reversed(self._held.values()))
        return keys_to_command(keys, self._settings.throttle)

    def status(self) -> dict[str, object]:
        """Flight status for the page."""
        flying = bool(self._held)
        return {
            "state": "error" if self.last_error and flying else ("flying" if flying else "idle"),
            "steps": self.steps,
            "last_latency_ms": self.last_latency_ms,
            "last_error": self.last_error,
            "endpoint": self._endpoint,
        }

    async def run(self) -> None:
        """Step at ``rate_hz`` while keys are held, until cancelled."""
        period = 1.0 / self._settings.rate_hz
        loop = asyncio.get_running_loop()
        try:
            while True:
                started = loop.time()
                if self._held:
                    await loop.run_in_executor(self._executor, self.step_once, self.command())
                await asyncio.sleep(max(0.0, period - (loop.time() - started)))  # fixed control rate
        finally:
            await loop.run_in_executor(self._executor, self._close)
            self._executor.shutdown(wait=False)

    def step_once(self, command: np.ndarray) -> StepResult | None:
        """Send one step with ``command`` for drone 0 (other drones hold still); blocking.

        Args:
            command: float32 (4,) in [-1, 1].

        Returns:
            The reply, or None after a timeout or an error reply (recorded in ``last_error``).
        """
        if self._client is None:
            self._client = ReqClient(
                self._endpoint,
                timeout_ms=self._settings.timeout_ms,
                retries=self._settings.retries,
                curve=self._curve,
            )
        actions = np.zeros((self._batch_size, 4), dtype=np.float32)  # [B, 4], drone 0 is ours
        actions[0] = command
        request = StepRequest(
            request_id=next(self._request_ids),
            actions=Action(
                env_ids=np.arange(self._batch_size, dtype=np.int32),
                actions=actions,
                policy_id=POLICY_ID,
                step_id=0,
                timestamp=time.time(),
            ),
        )
        started = time.perf_counter()
        try:
            result = self._client.request(request, expected=StepResult)
        except (NaviTransportError, ValueError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"[:300]
            log.warning("dashboard.control.step_failed", error=self.last_error)
            return None
        self.last_latency_ms = round((time.perf_counter() - started) * 1000.0, 2)
        self.last_error = None
        self.steps += 1
        self._record(result)
        return result

    def _record(self, result: StepResult) -> None:
        self._batch_size = result.observation.batch_size
        now = time.monotonic()
        self._state.add_observation(frame_from_matrix(result.observation, SOURCE_CONTROL, now))
        payload = {
            name if name.startswith(REWARD_TERM_PREFIX) else REWARD_TERM_PREFIX + name: value
            for name, value in (result.info or {}).items()
        }
        payload.update(
            step_reward=float(result.reward[0]),
            episode_return=float(result.episode_return[0]),
            episode_length=float(result.episode_length[0]),
        )
        self._state.add_telemetry(TelemetrySample(CONTROL_EVENT_TYPE, payload, now, time.time()))
        self.wake()

    def _close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

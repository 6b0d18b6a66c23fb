"""End to end in headless Chromium: a live producer, the real server, the real page.

Checks what a person would look at: the mode badge, a ticking freshness, a panorama with real
colours in it (not a blank canvas), charts with data. Saves a screenshot to
``artifacts/dashboard/e2e.png`` for a human to look at.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time

import pytest

from navi_contracts.paths import artifacts_root

PAGE_STATE = """(() => {
  const canvas = document.getElementById("panorama");
  // still parsing: the canvas may exist before the elements below it (#control): read them later
  if (!canvas || document.readyState === "loading") return { mode: null, frames: 0, loading: location.href };
  const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  const colours = new Set();
  let lit = 0;
  for (let i = 0; i < pixels.length; i += 4 * 7) {
    colours.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
    if (pixels[i] + pixels[i + 1] + pixels[i + 2] > 60) lit += 1;
  }
  return {
    mode: document.getElementById("mode").textContent,
    freshness: document.getElementById("freshness").textContent,
    sps: document.getElementById("sps").textContent,
    actors: document.getElementById("actors").textContent,
    frames: Number(canvas.dataset.frames),
    colours: colours.size,
    litFraction: lit / (pixels.length / (4 * 7)),
    charts: document.querySelectorAll("#charts canvas").length,
    connection: document.getElementById("connection").textContent,
    control: !document.getElementById("control").classList.contains("hidden"),
    controlText: document.getElementById("control-state").textContent,
  };
})()"""


@pytest.mark.slow
def test_page_in_headless_chromium_shows_live_training(kit, producer_factory, tmp_path) -> None:
    executable = kit.chromium_path()
    if executable is None:
        pytest.skip("chromium is not installed (CI installs it from .ci/apt-packages)")
    settings = kit.settings(stream={"max_frame_hz": 20.0, "status_hz": 10.0, "poll_timeout_ms": 50})

    async def scenario() -> tuple[dict, dict, bytes]:
        async with kit.running_dashboard(settings) as (url, _state, _app):
            producer_factory(settings.actor_sub, shape=(256, 48), rate_hz=20.0)
            async with kit.chromium_page(executable, tmp_path / "profile", url) as page:
                first = await _poll_page(page, lambda s: s["mode"] == "TRAINING" and s["frames"] >= 3)
                # More frames drawn = the view is live; charts meanwhile collect points for the shot.
                second = await _poll_page(page, lambda s: s["frames"] >= first["frames"] + 8)
                shot = await page.call("Page.captureScreenshot", format="png")
        return first, second, base64.b64decode(shot["data"])

    first, second, screenshot = asyncio.run(scenario())
    freshness_ms = int(first["freshness"].split()[0])
    assert 0 <= freshness_ms < 2000, first
    assert first["connection"] == "live"
    assert first["colours"] > 10 and first["litFraction"] > 0.5, f"panorama looks blank: {first}"
    assert first["sps"] not in ("–", "") and first["actors"] == "64"
    assert second["frames"] > first["frames"], "the panorama stopped updating"
    assert second["charts"] >= 10
    out = artifacts_root() / "dashboard" / "e2e.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_bytes(screenshot)
    os.replace(temporary, out)
    assert screenshot[:8] == b"\x89PNG\r\n\x1a\n"


async def _poll_page(page, done, timeout_s: float = 30.0) -> dict:
    """Evaluate the page state until ``done(state)``; fail with the last state seen."""
    deadline = time.monotonic() + timeout_s
    state: dict = {}
    while time.monotonic() < deadline:
        state = await page.evaluate(PAGE_STATE)
        if done(state):
            return state
        await asyncio.sleep(0.1)
    raise AssertionError(f"page never reached the expected state; last: {state}")


@pytest.mark.slow
def test_keys_pressed_in_the_page_fly_the_drone(kit, environment, tmp_path) -> None:
    executable = kit.chromium_path()
    if executable is None:
        pytest.skip("chromium is not installed (CI installs it from .ci/apt-packages)")
    from navi_dashboard.control import KeyboardPilot
    from navi_dashboard.server import control_url
    from navi_dashboard.state import DashboardState

    endpoint, env = environment
    settings = kit.settings(step_endpoint=endpoint, control={"rate_hz": 30.0, "timeout_ms": 2000})
    pilot_state = DashboardState(settings.stream, settings.history)
    pilot = KeyboardPilot(endpoint, settings.control, pilot_state)

    async def scenario() -> dict:
        async with (
            kit.running_dashboard(settings, pilot=pilot, state=pilot_state) as (url, _state, app),
            kit.chromium_page(executable, tmp_path / "profile", control_url(app, url)) as page,
        ):
            await _poll_page(page, lambda s: s.get("connection") == "live")
            await _poll_page(page, lambda s: s.get("control") is True)
            await _key(page, "keyDown", "KeyW", "w")
            await kit.wait_until(lambda: len(env.requests) >= 3, what="steps while W is held")
            await _key(page, "keyUp", "KeyW", "w")
            await kit.wait_until(lambda: pilot.status()["state"] == "idle", what="W released")
            # Only the flight's observations arrive, so the page must settle on OBSERVER with a picture.
            return await _poll_page(page, lambda s: s["frames"] >= 1 and s["mode"] == "OBSERVER")

    state = asyncio.run(scenario())
    command = env.requests[-1].actions.actions[0]
    assert command.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert "steps" in state["controlText"] and "error" not in state["controlText"]


async def _key(page, kind: str, code: str, key: str) -> None:
    await page.call(
        "Input.dispatchKeyEvent", type=kind, code=code, key=key, windowsVirtualKeyCode=ord(key.upper())
    )


REALTIME_TEXT = """(() => {
  const stat = document.getElementById("realtime-stat");
  if (!stat) return { hidden: null, text: "" };
  return { hidden: stat.classList.contains("hidden"), text: document.getElementById("realtime").textContent };
})()"""


@pytest.mark.slow
def test_the_status_bar_shows_realtime_figures_when_a_realtime_environment_reports(kit, tmp_path) -> None:
    executable = kit.chromium_path()
    if executable is None:
        pytest.skip("chromium is not installed (CI installs it from .ci/apt-packages)")
    from navi_contracts import TelemetryEvent
    from navi_dashboard.ingest import sample_from_event

    settings = kit.settings(stream={"status_hz": 10.0})
    payload = {
        "mean_action_age_ticks": 3.5, "max_action_age_ticks": 6.0, "missed_ticks": 2.0, "fallback_ticks": 9.0,
        "fallback_fraction": 0.25, "control_hz": 20.0,
    }  # fmt: skip
    stats = TelemetryEvent(
        event_type="environment.realtime.stats",
        source="environment",
        step_id=40,
        payload=payload,
        timestamp=1.0,
    )

    async def scenario() -> tuple[dict, dict]:
        async with (
            kit.running_dashboard(settings) as (url, state, _app),
            kit.chromium_page(executable, tmp_path / "profile", url) as page,
        ):
            await _poll_page(page, lambda s: s.get("connection") == "live")
            before = await page.evaluate(REALTIME_TEXT)
            state.add_telemetry(sample_from_event(stats, time.monotonic()))
            deadline, after = time.monotonic() + 30, before
            while time.monotonic() < deadline and (
                after["hidden"] is not False or "missed" not in after["text"]
            ):
                await asyncio.sleep(0.1)
                after = await page.evaluate(REALTIME_TEXT)
        return before, after

    before, after = asyncio.run(scenario())
    assert before["hidden"] is True  # nothing real-time reported yet: no figure shown
    assert after["hidden"] is False, after
    assert after["text"] == "20.00 Hz · action age 3.50 / 6.00 ticks · missed 2 · fallback 25%"

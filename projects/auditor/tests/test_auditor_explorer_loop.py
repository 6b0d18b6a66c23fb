"""The explorer loop with a scripted terminal: keys, Esc to the next scene, scene and step limits,
autopilot toggle, drawing."""

from __future__ import annotations

from collections import deque

from navi_auditor.explorer.autopilot import Autopilot
from navi_auditor.explorer.runner import ExplorerLoop
from navi_auditor.explorer.session import ExplorerSession
from navi_auditor.settings import AutopilotSettings, ExploreSettings


class ScriptedTerminal:
    """Feeds one scripted chunk of input per loop iteration; records what was drawn.

    The loop reads keys at the top of each iteration (timeout 0) and, when a step finished early,
    again while it paces (timeout > 0). Only the first kind consumes the script, so the script
    advances once per iteration however fast a step is (a fast step once made the pacing reads eat
    keys and the test count the wrong steps).
    """

    interactive = True

    def __init__(self, script: list[bytes]) -> None:
        self.script = deque(script)
        self.frames: list[list[str]] = []

    def read(self, timeout_s: float) -> bytes:
        if timeout_s > 0:
            return b""
        return self.script.popleft() if self.script else b""

    def draw(self, lines: list[str]) -> None:
        self.frames.append(lines)

    def columns(self) -> int:
        return 120


def make_loop(env, room, script, **explore):
    session = ExplorerSession(env, [room, room], base_seed=3)
    values = {"step_hz": 1000.0, "autopilot_hz": 1000.0, "color": False, "view_width": 24, "view_rows": 4}
    settings = ExploreSettings(**(values | explore))
    sensor = env.sensor
    autopilot = Autopilot(AutopilotSettings(), sensor.horizon_m, sensor.azimuth_bins, sensor.elevation_bins)
    terminal = ScriptedTerminal(script)
    return ExplorerLoop(session, terminal, settings, autopilot, use_autopilot=False), session, terminal  # type: ignore[arg-type]


def test_escape_moves_to_the_next_scene_and_ctrl_c_quits(small_env_settings, room) -> None:
    script = [b"w", b"", b"\x1b", b"", b"", b"\x03"]
    loop, session, terminal = make_loop(small_env_settings, room, script, max_steps=100)
    summary = loop.run()
    assert summary.quit_by_user and summary.scenes == 2
    assert session.scene_step == 2 and summary.steps == 4  # 2 steps in scene 0, Esc, 2 steps in scene 1
    assert len(terminal.frames) == 4
    assert "step 2/100" in terminal.frames[-1][-2] and "keyboard" in terminal.frames[-1][-2]


def test_max_steps_advance_scenes_until_done(small_env_settings, room) -> None:
    loop, _, _ = make_loop(small_env_settings, room, [], max_steps=3)
    summary = loop.run()
    assert not summary.quit_by_user and summary.scenes == 2 and summary.steps == 6


def test_scene_limit_and_autopilot_toggle(small_env_settings, room) -> None:
    loop, _, terminal = make_loop(small_env_settings, room, [b"t"], max_steps=4, max_scenes=1)
    summary = loop.run()
    assert summary.scenes == 1 and summary.steps == 4
    assert loop.use_autopilot and "AUTOPILOT" in terminal.frames[0][-2]


def test_a_narrow_terminal_gets_a_narrower_view_and_no_wrapped_lines(small_env_settings, room) -> None:
    loop, _, terminal = make_loop(small_env_settings, room, [b"\x03"], max_steps=5, view_width=96)
    terminal.columns = lambda: 30  # type: ignore[method-assign]
    loop.session.next_scene()
    loop._draw(loop.manual.step())
    assert terminal.frames and all(len(line) <= 30 for line in terminal.frames[-1])

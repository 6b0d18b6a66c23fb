"""The explorer loop: keys -> pilot -> session step -> view, paced, until scenes run out or Ctrl+C."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import structlog
import torch

from navi_auditor.explorer.keys import Command, ManualPilot, parse_keys
from navi_auditor.explorer.session import ExplorerSession, scene_label
from navi_auditor.explorer.terminal import Terminal
from navi_auditor.explorer.view import HELP_LINE, render_depth, status_line
from navi_auditor.settings import ExploreSettings

log = structlog.get_logger()

_VIEW_PERIOD_S = 1.0 / 15.0  # repaint at most this often on autopilot (drawing costs more than a step)
_PROGRESS_PERIOD_S = 5.0  # progress log period when no terminal view is shown


@dataclass(frozen=True)
class ExploreSummary:
    """What a flight did."""

    steps: int
    scenes: int
    collisions: int
    quit_by_user: bool


class ExplorerLoop:
    """Drives an :class:`ExplorerSession` from the keyboard or the autopilot.

    Args:
        session: the drone and its recorder/publisher.
        terminal: keyboard and screen.
        settings: pacing, view and scene limits.
        autopilot: the pilot used while autopilot is on: observation [1, 3, Az, El] -> action [1, 4]
            (the scripted :class:`Autopilot` or the frontier planner's ``FrontierPilot``).
        use_autopilot: start on autopilot.
        stop: set (by the Ctrl+C/SIGTERM/SIGHUP handler) to end the flight after the current step,
            so the frame being recorded is never torn.
    """

    def __init__(
        self,
        session: ExplorerSession,
        terminal: Terminal,
        settings: ExploreSettings,
        autopilot: Callable[[torch.Tensor], torch.Tensor],
        use_autopilot: bool,
        *,
        stop: threading.Event | None = None,
    ) -> None:
        self.session, self.terminal, self.settings = session, terminal, settings
        self.autopilot, self.use_autopilot = autopilot, use_autopilot
        self.manual = ManualPilot(hold_steps=settings.key_hold_steps)
        self._pending = b""
        self._last_draw = 0.0
        self.stop = stop or threading.Event()  # also the pacing wait, so a stop cuts it short

    def _period(self) -> float:
        hz = self.settings.autopilot_hz if self.use_autopilot else self.settings.step_hz
        return 1.0 / hz if hz > 0 else 0.0

    def _scene_limit_reached(self) -> bool:
        limit = self.settings.max_scenes
        return limit is not None and self.session.scene_number + 1 >= limit

    def _advance_scene(self) -> bool:
        if self._scene_limit_reached():
            return False
        return self.session.next_scene()

    def run(self) -> ExploreSummary:
        """Fly until every scene is done, the scene limit is reached, or the user quits."""
        quit_by_user = False
        if not self.session.next_scene():
            return ExploreSummary(0, 0, 0, False)
        while not self.stop.is_set():
            tick = time.monotonic()
            commands = self.manual.press(parse_keys(self._pending + self.terminal.read(0.0)))
            self._pending = b""
            if Command.QUIT in commands:
                quit_by_user = True
                break
            if Command.TOGGLE_AUTOPILOT in commands:
                self.use_autopilot = not self.use_autopilot
            if Command.NEXT_SCENE in commands or self.session.scene_step >= self.settings.max_steps:
                if not self._advance_scene():
                    break
                continue
            if self.use_autopilot:
                action = self.autopilot(self.session.observation)[0].cpu().numpy()
            else:
                action = self.manual.step()
            report = self.session.step(action)
            self._draw(report.action)
            self._log_progress()
            wait = tick + self._period() - time.monotonic()
            if wait > 0:  # wait for keys (TTY) or just pace (no TTY)
                if self.terminal.interactive:
                    self._pending = self.terminal.read(wait)
                else:
                    self.stop.wait(wait)
        return ExploreSummary(
            self.session.total_steps, self.session.scene_number + 1, self.session.collisions, quit_by_user
        )

    def _log_progress(self) -> None:
        now = time.monotonic()
        if self.terminal.interactive or now - self._last_draw < _PROGRESS_PERIOD_S:
            return
        self._last_draw = now
        session = self.session
        log.info(
            "auditor.explore.progress", scene=session.scene_number, scene_step=session.scene_step,
            steps=session.total_steps, collisions=session.collisions,
        )  # fmt: skip

    def _draw(self, action: np.ndarray) -> None:
        now = time.monotonic()
        if not self.terminal.interactive or (self.use_autopilot and now - self._last_draw < _VIEW_PERIOD_S):
            return
        self._last_draw = now
        obs = self.session.observation[0].cpu().numpy()
        columns = self.terminal.columns()
        width = max(8, min(self.settings.view_width, columns))  # never wrap: a wrapped frame scrolls
        view = render_depth(obs[0], obs[2] > 0.5, width, self.settings.view_rows, self.settings.color)
        pilot = "AUTOPILOT" if self.use_autopilot else "keyboard"
        session = self.session
        status = status_line(
            Path(scene_label(session.scene)).name, scene_number=session.scene_number, step=session.scene_step,
            max_steps=self.settings.max_steps, action=action, pilot=pilot,
            extra=f"collisions {session.collisions}",
        )  # fmt: skip
        self.terminal.draw([*view, status[:columns], HELP_LINE[:columns]])

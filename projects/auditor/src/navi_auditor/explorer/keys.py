"""Keyboard input for the explorer: byte parsing and the key -> action mapping (pure functions).

Terminals deliver bytes, not key-down/key-up events, so:

* a key press engages its axis for ``hold_steps`` steps; the terminal's auto-repeat refreshes it
  while the key stays down, and the axis drops to zero soon after it is released;
* Shift alone sends nothing, so "down" is ``C`` (also ``Z`` and ``F``) and "up" is Space (also
  ``R``);
* Esc is one ``0x1b`` byte, while arrow keys are ``ESC [ A`` .. ``ESC [ D`` (or ``ESC O A``): an
  ``0x1b`` followed by ``[`` or ``O`` starts an escape sequence, anything else is Esc.

Mapping (action axes: forward, vertical, lateral, yaw; positive = ahead, up, left, turn left)::

    W / Up      forward        S / Down     backward
    A           strafe left    D            strafe right
    Q / Left    yaw left       E / Right    yaw right
    Space / R   up             C / Z / F    down
    X           stop (all axes zero)         T   toggle autopilot
    Esc         next scene     Ctrl+C       quit
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np


class Command(Enum):
    """Non-flight keys."""

    NEXT_SCENE = "next_scene"
    QUIT = "quit"
    STOP = "stop"
    TOGGLE_AUTOPILOT = "toggle_autopilot"


AXIS_KEYS: dict[str, tuple[int, float]] = {
    "w": (0, 1.0), "up": (0, 1.0), "s": (0, -1.0), "down": (0, -1.0),
    " ": (1, 1.0), "r": (1, 1.0), "c": (1, -1.0), "z": (1, -1.0), "f": (1, -1.0),
    "a": (2, 1.0), "d": (2, -1.0),
    "q": (3, 1.0), "left": (3, 1.0), "e": (3, -1.0), "right": (3, -1.0),
}  # fmt: skip
"""Key name -> (action axis, value)."""

COMMAND_KEYS: dict[str, Command] = {
    "esc": Command.NEXT_SCENE,
    "ctrl+c": Command.QUIT,
    "x": Command.STOP,
    "t": Command.TOGGLE_AUTOPILOT,
}

_ARROWS = {"A": "up", "B": "down", "C": "right", "D": "left"}
_ESC, _CTRL_C = 0x1B, 0x03


def parse_keys(data: bytes) -> list[str]:
    """Split raw terminal input into key names.

    Args:
        data: bytes read from the terminal in one go.

    Returns:
        Key names: lower-case letters, ``" "``, ``"up"``/``"down"``/``"left"``/``"right"``,
        ``"esc"``, ``"ctrl+c"``; unknown sequences are skipped.
    """
    keys: list[str] = []
    i = 0
    while i < len(data):
        byte = data[i]
        if byte == _CTRL_C:
            keys.append("ctrl+c")
            i += 1
        elif byte == _ESC:
            i = _parse_escape(data, i, keys)
        else:
            char = chr(byte)
            if char.isprintable():
                keys.append(char.lower())
            i += 1
    return keys


def _parse_escape(data: bytes, start: int, keys: list[str]) -> int:
    """Parse from an ESC byte at ``start``; append what it was; return the next index."""
    if start + 1 >= len(data) or chr(data[start + 1]) not in "[O":
        keys.append("esc")
        return start + 1
    i = start + 2
    while i < len(data) and not 0x40 <= data[i] <= 0x7E:  # CSI parameters up to the final byte
        i += 1
    if i >= len(data):
        return i  # an unfinished sequence: drop it
    final = chr(data[i])
    if final in _ARROWS:
        keys.append(_ARROWS[final])
    return i + 1


@dataclass
class ManualPilot:
    """Turns key presses into held axis commands.

    Args:
        hold_steps: steps an axis stays engaged after its key was last seen.
    """

    hold_steps: int = 5
    values: np.ndarray = field(default_factory=lambda: np.zeros(4, dtype=np.float32))
    holds: np.ndarray = field(default_factory=lambda: np.zeros(4, dtype=np.int64))

    def press(self, keys: list[str]) -> list[Command]:
        """Apply flight keys; return the non-flight commands in order."""
        commands: list[Command] = []
        for key in keys:
            if key in AXIS_KEYS:
                axis, value = AXIS_KEYS[key]
                self.values[axis], self.holds[axis] = value, self.hold_steps
            elif key in COMMAND_KEYS:
                command = COMMAND_KEYS[key]
                if command is Command.STOP:
                    self.values[:], self.holds[:] = 0.0, 0
                commands.append(command)
        return commands

    def step(self) -> np.ndarray:
        """The action for this step ([4] float32 in [-1, 1]); counts the holds down."""
        action = np.where(self.holds > 0, self.values, 0.0).astype(np.float32)
        self.holds = np.maximum(self.holds - 1, 0)
        return action

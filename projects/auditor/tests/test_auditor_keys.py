"""Keyboard parsing and the manual pilot: known answers for every mapped key and escape handling."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from navi_auditor.explorer.keys import AXIS_KEYS, Command, ManualPilot, parse_keys


def test_letters_space_and_case() -> None:
    assert parse_keys(b"wW aDq e") == ["w", "w", " ", "a", "d", "q", " ", "e"]


def test_arrows_both_encodings_and_lone_escape() -> None:
    assert parse_keys(b"\x1b[A\x1b[B\x1bOC\x1b[D") == ["up", "down", "right", "left"]
    assert parse_keys(b"\x1b") == ["esc"]
    assert parse_keys(b"\x1bw") == ["esc", "w"]
    assert parse_keys(b"\x1b[1;5A") == ["up"]  # modified arrow (Ctrl+Up) still an arrow
    assert parse_keys(b"\x1b[2~x") == ["x"]  # Insert key: a known sequence without a mapping is skipped
    assert parse_keys(b"\x1b[") == []  # unfinished sequence dropped


def test_ctrl_c_is_quit_and_controls_are_ignored() -> None:
    assert parse_keys(b"\x03") == ["ctrl+c"]
    assert parse_keys(b"\x01\x02w\r\n") == ["w"]


@given(st.binary(max_size=64))
def test_parser_never_fails_on_arbitrary_bytes(data: bytes) -> None:
    keys = parse_keys(data)
    assert all(isinstance(key, str) and key for key in keys)


def test_every_axis_key_moves_its_axis_with_its_sign() -> None:
    expected = {
        "w": [1, 0, 0, 0], "s": [-1, 0, 0, 0], " ": [0, 1, 0, 0], "r": [0, 1, 0, 0], "c": [0, -1, 0, 0],
        "z": [0, -1, 0, 0], "f": [0, -1, 0, 0], "a": [0, 0, 1, 0], "d": [0, 0, -1, 0], "q": [0, 0, 0, 1],
        "e": [0, 0, 0, -1], "up": [1, 0, 0, 0], "down": [-1, 0, 0, 0], "left": [0, 0, 0, 1],
        "right": [0, 0, 0, -1],
    }  # fmt: skip
    assert set(expected) == set(AXIS_KEYS)
    for key, action in expected.items():
        pilot = ManualPilot(hold_steps=2)
        assert pilot.press([key]) == []
        np.testing.assert_array_equal(pilot.step(), np.array(action, dtype=np.float32), err_msg=key)


def test_hold_expires_and_repeat_refreshes() -> None:
    pilot = ManualPilot(hold_steps=3)
    pilot.press(["w"])
    assert [pilot.step()[0] for _ in range(2)] == [1.0, 1.0]
    pilot.press(["w"])  # terminal auto-repeat
    assert [pilot.step()[0] for _ in range(4)] == [1.0, 1.0, 1.0, 0.0]


def test_combined_axes_latest_wins_and_stop() -> None:
    pilot = ManualPilot(hold_steps=5)
    pilot.press(["w", "a", "q", "s"])
    np.testing.assert_array_equal(pilot.step(), [-1.0, 0.0, 1.0, 1.0])
    assert pilot.press(["x"]) == [Command.STOP]
    np.testing.assert_array_equal(pilot.step(), [0.0, 0.0, 0.0, 0.0])


def test_commands_in_order() -> None:
    pilot = ManualPilot()
    assert pilot.press(parse_keys(b"t\x1bw\x03")) == [
        Command.TOGGLE_AUTOPILOT,
        Command.NEXT_SCENE,
        Command.QUIT,
    ]

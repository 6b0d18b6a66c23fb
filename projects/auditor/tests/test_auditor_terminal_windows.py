"""Windows key input: msvcrt's two-byte arrow codes reach the key parser as POSIX ANSI arrows."""

from __future__ import annotations

from navi_auditor.explorer.keys import parse_keys
from navi_auditor.explorer.terminal import windows_keys_to_ansi


def test_msvcrt_arrows_become_ansi_arrows() -> None:
    raw = b"\xe0H\xe0P\x00M\xe0K"  # up, down (extended prefix), right (numpad prefix), left
    assert windows_keys_to_ansi(raw) == b"\x1b[A\x1b[B\x1b[C\x1b[D"
    assert parse_keys(windows_keys_to_ansi(raw)) == ["up", "down", "right", "left"]


def test_plain_keys_pass_through_and_unknown_scan_codes_are_dropped() -> None:
    assert windows_keys_to_ansi(b"w\xe0;a\x00\x3bq") == b"waq"  # F1 twice (no ANSI twin): dropped
    assert windows_keys_to_ansi(b"\x1b") == b"\x1b"  # Esc itself is untouched
    assert windows_keys_to_ansi(b"\xe0") == b""  # a lone prefix (never seen alone) is not a key

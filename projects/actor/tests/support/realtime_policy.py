"""The small policy the real-time brain's tests run (shared so the two test files cannot drift)."""

from __future__ import annotations

#: PolicyConfig fields of a tiny GRU policy on a 32 x 8 sensor
SMALL_REALTIME_POLICY: dict[str, int | str] = {
    "azimuth": 32,
    "elevation": 8,
    "embed_dim": 32,
    "vit_dim": 32,
    "vit_layers": 1,
    "temporal_core": "gru",
}

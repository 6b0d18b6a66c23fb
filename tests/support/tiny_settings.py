"""Environment variables that shrink the default policy and sensor for script tests run as subprocesses.

A 32 x 8 ray grid, a GRU core and 32-wide layers make a scripted training run take seconds; the tests
that use them check the scripts' plumbing and output, not what a full-size policy learns.
"""

from __future__ import annotations

TINY = {
    "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
    "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
    "NAVI_ACTOR_TEMPORAL_CORE": "gru",
    "NAVI_ACTOR_POLICY__EMBED_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_LAYERS": "1",
    "NAVI_ACTOR_ROLLOUT__ROLLOUT_LENGTH": "16",
    "NAVI_ACTOR_ROLLOUT__SEQUENCE_LENGTH": "8",
    "OMP_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}
